# Sourced by demo.sh and test.sh: makes sure the Debian packages the build and the tests
# need are installed. As root it installs what is missing; otherwise it prints the
# command to run and exits 1.
#
# Each package is here for a reason:
#   cmake ninja-build gcc pkg-config  the build
#   libcmocka-dev                     unit tests
#   libjansson-dev                    `gpuslice demo` reads the workloads' JSON
#   python3 python3-pytest            integration tests (run through Debian's pytest-3)
#   binutils                          the tests inspect libgpuslice.so's symbols (nm, readelf)
#   procps                            process tools the tests use (ps, pgrep)
#   libc6-dev                         headers and libdl/libpthread
#   clang libclang-rt-dev             libFuzzer, for the parsers' fuzz tests (fuzz/)
#   libmicrohttpd-dev                 the daemon's HTTP server (Unix socket API and /metrics)
#   libsqlite3-dev sqlite3            the daemon's usage ledger; the tests inspect it with sqlite3
#   libcurl4-openssl-dev              the CLI's HTTP client for the daemon's socket
#   libncurses-dev                    `gpuslice top`
#   prometheus                        the metrics tests run promtool and a real Prometheus
#   chromium fonts-dejavu-core        the planner's HTML report is rendered headless in a test
#   zlib1g-dev                        `gpuslice plan` reads gzipped metrics files
#   clang-format                      tests/layering/test_format.py checks the C sources' format
#   slurmctld slurmd slurm-client     tests/integration/test_slurm_cluster.py starts a real one-node
#                                     Slurm 22.05 (integrations/slurm/hack/cluster.sh) and submits
#                                     with srun, sbatch, sacct, sinfo, scontrol
#   munge                             Slurm's authentication: the cluster script runs its own munged
#   libslurm-dev                      <slurm/spank.h>, for the SPANK plugin (integrations/slurm/)
#   runc containernetworking-plugins  tests/integration/test_k8s_cluster.py starts a real one-node
#   iptables                          Kubernetes (integrations/k8s/hack/cluster.sh): containerd runs
#                                     pods with runc, the CNI bridge gives them a network, kubelet
#                                     and the bridge plugin make iptables chains
#   busybox-static openssl curl       the cluster's workload image, certificates, health checks
#   tzdata                            time zones of the idle schedules (docs/idle.md)
# Go is the machine's own (1.26; Debian's is too old): it builds the Kubernetes components and
# helm and kwok (integrations/k8s/hack/build.sh, run by test.sh) and the agent gpuslice-k8s.
#
# The daemons' packages would start system munged, slurmctld and slurmd where no
# policy-rc.d forbids it; the install below forbids it for its own duration, since the tests
# start their own cluster and must not find another one.

GS_DEPS="cmake ninja-build gcc pkg-config libc6-dev libcmocka-dev libjansson-dev python3 python3-pytest binutils procps clang libclang-rt-dev libmicrohttpd-dev libsqlite3-dev sqlite3 libcurl4-openssl-dev libncurses-dev prometheus chromium fonts-dejavu-core zlib1g-dev clang-format slurmctld slurmd slurm-client munge libslurm-dev runc containernetworking-plugins iptables busybox-static openssl curl tzdata"

gs_missing_deps() {
  local p missing=""
  for p in $GS_DEPS; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
      missing="$missing $p"
    fi
  done
  echo "${missing# }"
}

gs_check_deps() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "scripts/deps.sh: dpkg-query not found; this script expects Debian 12. Install:" >&2
    echo "  $GS_DEPS" >&2
    return 1
  fi
  local missing
  missing="$(gs_missing_deps)"
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "Installing missing packages: $missing"
    local policy="" rc=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      policy=/usr/sbin/policy-rc.d
      printf '#!/bin/sh\n# scripts/deps.sh: no service starts while it installs\nexit 101\n' >"$policy"
      chmod 755 "$policy"
    fi
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing || rc=$?
    [ -n "$policy" ] && rm -f "$policy"
    return $rc
  fi
  echo "Missing packages: $missing" >&2
  echo "Install them with:" >&2
  echo "  sudo apt-get install -y --no-install-recommends $missing" >&2
  exit 1
}

gs_check_deps
