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

GS_DEPS="cmake ninja-build gcc pkg-config libc6-dev libcmocka-dev libjansson-dev python3 python3-pytest binutils procps clang libclang-rt-dev libmicrohttpd-dev libsqlite3-dev sqlite3 libcurl4-openssl-dev libncurses-dev prometheus chromium fonts-dejavu-core zlib1g-dev clang-format"

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
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
    return
  fi
  echo "Missing packages: $missing" >&2
  echo "Install them with:" >&2
  echo "  sudo apt-get install -y --no-install-recommends $missing" >&2
  exit 1
}

gs_check_deps
