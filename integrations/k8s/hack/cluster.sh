#!/usr/bin/env bash
# A one-node Kubernetes test cluster on this machine, from the components build.sh made:
#
#   cluster.sh up     start etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
#                     the gpuslice scheduler (profile gpuslice-scheduler),
#                     containerd and kubelet; wait for the node to be Ready; print
#                     `export KUBECONFIG=<file> PATH=<bin dir>:$PATH` as the last line
#   cluster.sh down   stop everything `up` started, unmount what kubelet and containerd
#                     mounted, remove the network namespaces, the bridge, the chains and
#                     the cgroups they made, and remove the cluster directory
#   cluster.sh smoke  check a running cluster: the node is Ready, and a pod of the
#                     workload image runs and says hello
#
# Everything lives in ${GS_K8S_CLUSTER:-/tmp/gs-k8s-cluster}: certificates, kubeconfigs,
# configs, data, logs, pids. The control plane listens on loopback; kubelet listens on
# the node's address (the source address of the default route), since kubelet refuses a
# loopback node IP. Pods get a bridge (gs-cni0, 10.213.0.0/24) from Debian's CNI plugins.
# No registry is reachable: the pause image (upstream's pause.c, built static) and the
# workload image gpuslice/workload:test (busybox and the host's glibc) are built here as
# OCI tarballs and imported into containerd. Needs root, runc, containernetworking-plugins,
# iptables, openssl, gcc with a static libc, busybox-static. Not run by CI yet; see
# docs/kubernetes.md, "The test cluster".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$here/versions.sh"

d="${GS_K8S_CLUSTER:-/tmp/gs-k8s-cluster}"
gs_build="$(cd "${GS_BUILD:-$here/../../../build}" 2>/dev/null && pwd || echo "${GS_BUILD:-build}")"
gs_sim="${GS_K8S_SIM:-h100-80gb}"
node=gpuslice-node
bridge=gs-cni0
subnet=10.213.0.0/24
pause_ref=docker.io/gpuslice/pause:test
workload_ref=docker.io/gpuslice/workload:test
nice=(nice -n "${GS_K8S_NICE:-19}")
t0=$SECONDS

say() { echo "cluster.sh: $*" >&2; }

die() {
	say "$1"
	[ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" >&2
	# What up started is left running for a look at its logs; down removes it all.
	[ -n "${in_up:-}" ] && say "up failed; logs in $d/logs; \`cluster.sh down\` stops and removes what it started"
	exit 1
}

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		(echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

# start NAME CMD...: starts a server in its own session, so that it outlives this script,
# with its log in logs/NAME.log and its pid and start time in pids/NAME: `down` stops a
# pid only while its start time is the same, so a reused pid is never killed.
start() {
	local name=$1
	shift
	setsid "${nice[@]}" "$@" >"$d/logs/$name.log" 2>&1 </dev/null &
	echo "$! $(start_time $!)" >"$d/pids/$name"
}

# Field 22 of /proc/PID/stat, after the parenthesised command name.
start_time() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

# wait_for WHAT SECONDS CMD...: retries CMD while the server WHAT lives.
wait_for() {
	local what=$1 secs=$2 pid
	shift 2
	read -r pid _ <"$d/pids/$what"
	for _ in $(seq 1 $((secs * 2))); do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || die "$what exited before it was ready; its log:" "$d/logs/$what.log"
		sleep 0.5
	done
	die "$what not ready after $secs s; its log:" "$d/logs/$what.log"
}

kc() { "$bin/kubectl" --kubeconfig "$d/kubeconfig/admin" "$@"; }
# ctr warns on stderr, at every call, that cgroup v1 is deprecated.
ctr() { "$bin/ctr" --address "$d/containerd/containerd.sock" -n k8s.io "$@" 2>/dev/null; }

node_ip() {
	ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -n1
}

# One CA signs the apiserver's serving certificate; the service accounts get their own key
# pair. Clients authenticate with bearer tokens from a static token file, the simplest
# thing all the components accept: no client certificates to make.
make_pki() {
	local p=$d/pki u
	(
		cd "$p"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
			-subj "/CN=gpuslice-test-ca"
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
			-subj "/CN=kube-apiserver"
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >apiserver.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out apiserver.crt -days 2 -extfile apiserver.ext
		openssl genrsa -out sa.key 2048
		openssl rsa -in sa.key -pubout -out sa.pub
	) >"$d/logs/openssl.log" 2>&1 || die "openssl failed; its log:" "$d/logs/openssl.log"
	# token,user,uid,"groups": the users the RBAC bootstrap roles (and the Node
	# authorizer, for kubelet) expect.
	: >"$p/tokens.csv"
	for u in admin kube-controller-manager kube-scheduler kubelet; do
		head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$p/$u.token"
	done
	{
		echo "$(cat "$p/admin.token"),admin,admin,\"system:masters\""
		echo "$(cat "$p/kube-controller-manager.token"),system:kube-controller-manager,kcm"
		echo "$(cat "$p/kube-scheduler.token"),system:kube-scheduler,ks"
		echo "$(cat "$p/kubelet.token"),system:node:$node,kubelet,\"system:nodes\""
	} >"$p/tokens.csv"
	chmod 0600 "$p"/*.key "$p"/*.token "$p/tokens.csv"
}

make_kubeconfig() {
	local who=$1 k=(--kubeconfig "$d/kubeconfig/$1")
	{
		"$bin/kubectl" "${k[@]}" config set-cluster gpuslice --server "https://127.0.0.1:$api_port" \
			--certificate-authority "$d/pki/ca.crt" --embed-certs
		"$bin/kubectl" "${k[@]}" config set-credentials "$who" --token "$(cat "$d/pki/$who.token")"
		"$bin/kubectl" "${k[@]}" config set-context gpuslice --cluster gpuslice --user "$who"
		"$bin/kubectl" "${k[@]}" config use-context gpuslice
	} >>"$d/logs/kubectl-config.log" 2>&1 || die "kubectl config failed; its log:" "$d/logs/kubectl-config.log"
	chmod 0600 "$d/kubeconfig/$who"
}

start_etcd() {
	local client peer
	client=$(free_port)
	peer=$(free_port)
	etcd_url="http://127.0.0.1:$client"
	start etcd "$bin/etcd" --name gpuslice --data-dir "$d/etcd" \
		--listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "gpuslice=http://127.0.0.1:$peer"
	wait_for etcd 60 etcd_healthy
}

etcd_healthy() { curl -fsS "$etcd_url/health" | grep -q '"health":"true"'; }

# The endpoint reconciler refuses a loopback advertise address, so it is off: the
# `kubernetes` service has no endpoints (and no kube-proxy runs to route it anyway).
start_apiserver() {
	local p=$d/pki
	start kube-apiserver "$bin/kube-apiserver" --etcd-servers "$etcd_url" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
		--tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
		--client-ca-file "$p/ca.crt" --token-auth-file "$p/tokens.csv" \
		--service-account-key-file "$p/sa.pub" \
		--service-account-signing-key-file "$p/sa.key" \
		--service-account-issuer https://kubernetes.default.svc \
		--service-cluster-ip-range 10.96.0.0/24 \
		--authorization-mode Node,RBAC \
		--endpoint-reconciler-type none \
		--allow-privileged \
		--kubelet-preferred-address-types InternalIP \
		--cert-dir "$d/apiserver-certs"
	wait_for kube-apiserver 120 apiserver_ready
}

apiserver_ready() { [ "$(kc get --raw /readyz)" = ok ]; }

# --secure-port 0: nothing needs their metrics or health endpoints, and it saves two
# ports and the authentication delegation they would set up.
start_controllers() {
	start kube-controller-manager "$bin/kube-controller-manager" \
		--kubeconfig "$d/kubeconfig/kube-controller-manager" \
		--service-account-private-key-file "$d/pki/sa.key" \
		--root-ca-file "$d/pki/ca.crt" \
		--use-service-account-credentials \
		--leader-elect=false --secure-port 0
	start kube-scheduler "$bin/kube-scheduler" \
		--kubeconfig "$d/kubeconfig/kube-scheduler" \
		--leader-elect=false --secure-port 0
	start_gpuslice_scheduler
}

# The gpuslice scheduler (../scheduler), beside the default one: pods that set
# schedulerName: gpuslice-scheduler are its. Its profile is the example's, with the policy
# from GS_K8S_POLICY (default fgd), the tie seed from GS_K8S_TIE_SEED (default 0) and FGD's
# workload from GS_K8S_WORKLOAD (an openb pod list; default none). It runs as admin: the
# built-in system:kube-scheduler role may not patch pods, which its PreBind does (the GPUs
# chosen, gpuslice.io/gpus).
# GS_K8S_GPUSLICE_SCHEDULER=0 leaves it out; build.sh builds it with the rest.
start_gpuslice_scheduler() {
	[ "${GS_K8S_GPUSLICE_SCHEDULER:-1}" = 0 ] && return 0
	[ -x "$bin/gpuslice-scheduler" ] || die "$bin/gpuslice-scheduler not found (build.sh builds it; GS_K8S_GPUSLICE_SCHEDULER=0 runs without it)"
	local workload=""
	[ -n "${GS_K8S_WORKLOAD:-}" ] && workload="\\n          workload: ${GS_K8S_WORKLOAD}"
	sed -e "s/policy: fgd\$/policy: ${GS_K8S_POLICY:-fgd}/" \
		-e "s|tieSeed: 0\$|tieSeed: ${GS_K8S_TIE_SEED:-0}$workload|" \
		"$here/../examples/gpuslice-scheduler-config.yaml" >"$d/gpuslice-scheduler.yaml"
	printf 'clientConnection:\n  kubeconfig: %s\n' "$d/kubeconfig/admin" >>"$d/gpuslice-scheduler.yaml"
	[ -n "${sched_qps:-}" ] && printf '  qps: %s\n  burst: %s\n' "$sched_qps" "$((sched_qps * 2))" >>"$d/gpuslice-scheduler.yaml"
	start gpuslice-scheduler "$bin/gpuslice-scheduler" \
		--config "$d/gpuslice-scheduler.yaml" --secure-port 0
}

# containerd's own configuration, everything under $d: root, state, socket, the opt
# plugin's directory, network namespaces (netns_mounts_under_state_dir) and CDI specs.
write_containerd_config() {
	local c=$d/containerd
	mkdir -p "$c" "$d/cdi" "$d/cni/net.d" "$d/cni/ipam"
	cat >"$c/config.toml" <<EOF
version = 3
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
[plugins."io.containerd.nri.v1.nri"]
  disable = true
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "$pause_ref"
[plugins."io.containerd.cri.v1.runtime"]
  # CDI is always on in containerd 2.x, which calls \`enable_cdi\` an unknown key.
  cdi_spec_dirs = ["$d/cdi"]
  netns_mounts_under_state_dir = true
  # This machine's kernel refuses any negative oom_score_adj (EIO), and runc fails the
  # sandbox's -998 as "can't get final child's PID from pipe: EOF": clamp scores at
  # containerd's own (0), as for rootless.
  restrict_oom_score_adj = true
[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = "$(command -v runc)"
  Root = "$c/runc"
  SystemdCgroup = false
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = "$d/cni/net.d"
EOF
	# No masquerading and no portmap: the pods need no way out, and so the plugins add
	# no iptables rules.
	cat >"$d/cni/net.d/10-gpuslice.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "gpuslice-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$d/cni/ipam",
        "ranges": [[{ "subnet": "$subnet" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    }
  ]
}
EOF
}

start_containerd() {
	write_containerd_config
	start containerd env PATH="$bin:$PATH" "$bin/containerd" --config "$d/containerd/config.toml"
	wait_for containerd 60 containerd_ready
}

containerd_ready() {
	[ "$("$bin/ctr" --address "$d/containerd/containerd.sock" plugins ls 2>/dev/null |
		awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { print $NF }')" = ok ]
}

# oci_image REF ROOTFS OUT.tar CMD_JSON: an OCI image layout, one uncompressed layer,
# named by the annotation containerd's importer reads.
oci_image() {
	local ref=$1 rootfs=$2 out=$3 cmd=$4 w layer cfg man ls cs ms
	w=$(mktemp -d "$d/images/oci.XXXXXX")
	mkdir -p "$w/blobs/sha256"
	tar -C "$rootfs" --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -cf "$w/layer.tar" .
	layer=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
	ls=$(stat -c %s "$w/layer.tar")
	mv "$w/layer.tar" "$w/blobs/sha256/$layer"
	printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin:/usr/bin:/sbin"],"Cmd":%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$cmd" "$layer" >"$w/config.json"
	cfg=$(sha256sum "$w/config.json" | cut -d' ' -f1)
	cs=$(stat -c %s "$w/config.json")
	mv "$w/config.json" "$w/blobs/sha256/$cfg"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
		"$cfg" "$cs" "$layer" "$ls" >"$w/manifest.json"
	man=$(sha256sum "$w/manifest.json" | cut -d' ' -f1)
	ms=$(stat -c %s "$w/manifest.json")
	mv "$w/manifest.json" "$w/blobs/sha256/$man"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$man" "$ms" "$ref" "${ref##*:}" >"$w/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
	tar -C "$w" -cf "$out" oci-layout index.json blobs
	rm -rf "$w"
}

# The pause image from upstream's own pause.c, in the module cache build.sh filled.
build_pause() {
	local src r=$d/images/pause-root
	src="$(go env GOMODCACHE)/k8s.io/kubernetes@$GS_K8S_VERSION/build/pause/linux/pause.c"
	[ -f "$src" ] || die "$src not found (build.sh downloads it with k8s.io/kubernetes)"
	mkdir -p "$r"
	"${nice[@]}" gcc -Os -Wall -Werror -static -DVERSION="$GS_K8S_VERSION-gpuslice" -o "$r/pause" "$src" \
		>"$d/logs/pause-build.log" 2>&1 || die "gcc failed on pause.c; its log:" "$d/logs/pause-build.log"
	oci_image "$pause_ref" "$r" "$d/images/pause.tar" '["/pause"]'
}

# The workload image: busybox's shell and tools, and the host's glibc, so that a
# dynamically linked program of the host (gpuslice's interposer, later) can run in it.
build_workload() {
	local r=$d/images/workload-root l
	mkdir -p "$r/bin" "$r/lib/x86_64-linux-gnu" "$r/lib64" "$r/tmp" "$r/etc"
	cp /bin/busybox "$r/bin/busybox"
	"$r/bin/busybox" --list | while read -r l; do
		[ "$l" = busybox ] || ln -sf busybox "$r/bin/$l"
	done
	for l in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 ld-linux-x86-64.so.2; do
		cp -L "/lib/x86_64-linux-gnu/$l" "$r/lib/x86_64-linux-gnu/$l"
	done
	ln -sf ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$r/lib64/ld-linux-x86-64.so.2"
	# What this build's interposer, simulated driver and workload link besides (a sanitizer
	# build's libasan and libubsan), at the host's paths.
	for l in $(ldd "$gs_build/lib/libgpuslice.so" "$gs_build/lib/sim/libcuda.so.1" \
		"$gs_build/lib/sim/libnvidia-ml.so.1" "$gs_build/bin/gpusim-workload" 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u); do
		mkdir -p "$r$(dirname "$l")"
		[ -e "$r$l" ] || cp -L "$l" "$r$l"
	done
	chmod 1777 "$r/tmp"
	oci_image "$workload_ref" "$r" "$d/images/workload.tar" '["/bin/sh"]'
}

import_images() {
	local i
	for i in pause workload; do
		ctr images import "$d/images/$i.tar" >>"$d/logs/ctr-import.log" ||
			die "ctr images import $i.tar failed; its log:" "$d/logs/ctr-import.log"
	done
}

write_kubelet_config() {
	local kport hport
	kport=$(free_port)
	hport=$(free_port)
	cat >"$d/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$d/containerd/containerd.sock
address: $node_ip
port: $kport
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hport
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
podLogsDir: $d/log/pods
rotateCertificates: false
serverTLSBootstrap: false
registerNode: true
# Its default, -999, cannot be set here (see restrict_oom_score_adj above).
oomScoreAdj: 0
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
	echo "$hport" >"$d/kubelet/healthz-port"
}

start_kubelet() {
	mkdir -p "$d/kubelet" "$d/log/pods"
	write_kubelet_config
	start kubelet "$bin/kubelet" --config "$d/kubelet/config.yaml" \
		--kubeconfig "$d/kubeconfig/kubelet" --root-dir "$d/kubelet/root" \
		--cert-dir "$d/kubelet/pki" \
		--hostname-override "$node" --node-ip "$node_ip"
	wait_for kubelet 120 node_ready
	# Pods are refused until the service account controller has made `default`.
	wait_for kube-controller-manager 60 kc get serviceaccount default -n default
}

# gpuslice on the node: its daemon on the simulated GPU (GS_K8S_SIM, one H100 by default)
# and the agent, gpuslice-k8s, whose DRA driver publishes the GPU and prepares the claims.
# Where NVIDIA's container toolkit would mount the driver into a pod, the agent's --cdi-mount
# and --cdi-env put the simulated driver and its shared state there, at the host's paths.
build_agent() {
	(cd "$here/../agent" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -mod=readonly -trimpath \
		-o "$d/gpuslice/gpuslice-k8s" ./cmd/gpuslice-k8s) >"$d/logs/build-agent.log" 2>&1 ||
		die "gpuslice-k8s failed to build; its log:" "$d/logs/build-agent.log"
}

start_gpuslice() {
	local g=$d/gpuslice port
	[ -x "$gs_build/bin/gpuslice" ] && [ -f "$gs_build/lib/libgpuslice.so" ] ||
		die "no gpuslice build in $gs_build (set GS_BUILD to a cmake build dir)"
	mkdir -p "$g/state" "$g/sim" "$g/k8s"
	port=$(free_port)
	echo "$port" >"$g/metrics-port"
	start gpuslice-daemon env GPUSLICE_SIM="$gs_sim" GPUSIM_STATE_DIR="$g/sim" \
		LD_LIBRARY_PATH="$gs_build/lib/sim" GPUSLICE_STATE_DIR="$g/state" \
		GPUSLICE_SOCKET="$g/state/gpuslice.sock" GPUSLICE_LEDGER_DB="$g/ledger.db" \
		GPUSLICE_METRICS_LISTEN="127.0.0.1:$port" GPUSLICE_INTERVAL=1 \
		"$gs_build/bin/gpuslice" daemon --foreground
	wait_for gpuslice-daemon 30 test -S "$g/state/gpuslice.sock"
	build_agent
	agent_identity
	start_agent
}

# The agent runs as the chart's service account, with the chart's RBAC (and its DeviceClass):
# what it may do here is what it may do on a real cluster.
agent_identity() {
	local ns=gpuslice-system
	kc create namespace "$ns" >/dev/null || die "cannot create namespace $ns"
	"$bin/helm" template gpuslice "$here/../chart/gpuslice" --namespace "$ns" --kube-version "$GS_K8S_VERSION" \
		--show-only templates/rbac.yaml --show-only templates/deviceclass.yaml \
		>"$d/gpuslice/chart-objects.yaml" 2>"$d/logs/helm.log" ||
		die "helm template failed; its log:" "$d/logs/helm.log"
	kc apply -f "$d/gpuslice/chart-objects.yaml" >/dev/null || die "the chart's RBAC or DeviceClass was refused"
	kc -n "$ns" create token gpuslice-k8s --duration 48h >"$d/pki/gpuslice-k8s.token" ||
		die "no token for the service account gpuslice-k8s"
	chmod 0600 "$d/pki/gpuslice-k8s.token"
	make_kubeconfig gpuslice-k8s
}

# kubelet's device manager listens at /var/lib/kubelet/device-plugins/kubelet.sock whatever
# its --root-dir (one of the fixed paths `down` removes when `up` did not find it).
# GS_K8S_AGENT_MODE: dra (the default: the DRA driver only) or device-plugin (the device
# plugin only, as on a cluster before DRA).
start_agent() {
	local g=$d/gpuslice mode=${GS_K8S_AGENT_MODE:-dra} flags ready
	case $mode in
	dra) flags=(--dra) ready=slice_published ;;
	device-plugin) flags=(--dra=false --device-plugin) ready=vram_allocatable ;;
	*) die "GS_K8S_AGENT_MODE '$mode': want dra or device-plugin" ;;
	esac
	# A sanitizer build's workload links ASan, which must then allow the interposer preloaded
	# ahead of it, as `gpuslice run` does; no leak check, which needs ptrace in the container.
	if LD_LIBRARY_PATH="$gs_build/lib/sim" ldd "$gs_build/bin/gpusim-workload" | grep -q libasan; then
		flags+=(--cdi-env "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0")
	fi
	start gpuslice-k8s "$g/gpuslice-k8s" "${flags[@]}" --kubeconfig "$d/kubeconfig/gpuslice-k8s" --node-name "$node" \
		--daemon-socket "$g/state/gpuslice.sock" --state-root "$g/k8s" --cdi-dir "$d/cdi" \
		--preload "$gs_build/lib/libgpuslice.so" \
		--kubelet-plugins-dir "$d/kubelet/root/plugins" \
		--kubelet-registry-dir "$d/kubelet/root/plugins_registry" \
		--kubelet-device-plugins-dir /var/lib/kubelet/device-plugins \
		--kubelet-pod-resources-socket "$d/kubelet/root/pod-resources/kubelet.sock" \
		--pod-labels "${GS_K8S_POD_LABELS:-app}" \
		--cdi-env "GPUSLICE_SIM=$gs_sim" --cdi-env "GPUSIM_STATE_DIR=$g/sim" \
		--cdi-env "LD_LIBRARY_PATH=$gs_build/lib/sim" \
		--cdi-mount "$gs_build:$gs_build:ro" --cdi-mount "$g/sim:$g/sim"
	# "ready": kubelet has registered every plugin the agent serves (a slice or a node's
	# allocatable left by the agent before a restart says nothing of this one).
	wait_for gpuslice-k8s 60 grep -q '"ready"' "$d/logs/gpuslice-k8s.log"
	wait_for gpuslice-k8s 60 "$ready"
}

slice_published() { [ -n "$(kc get resourceslices -o name)" ]; }
vram_allocatable() {
	[ -n "$(kc get node "$node" -o jsonpath='{.status.allocatable.gpuslice\.io/vram}' | grep -v '^0$')" ]
}

node_ready() {
	[ "$(kc get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# What `down` compares against, so that it removes only what came after `up`.
record_before() {
	[ -e /var/lib/kubelet ] && touch "$d/before.var-lib-kubelet"
	[ -e /var/log/containers ] && touch "$d/before.var-log-containers"
	[ -e /var/log/pods ] && touch "$d/before.var-log-pods"
	[ -e /run/containerd ] && touch "$d/before.run-containerd"
	[ -e /var/lib/cni ] && touch "$d/before.var-lib-cni"
	# The bridge plugin (isGateway) turns forwarding on for the whole machine.
	cat /proc/sys/net/ipv4/ip_forward >"$d/before.ip_forward"
	{ iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } | sed -n 's/^:\([^ ]*\) .*/\1/p' | sort -u >"$d/before.chains"
}

up() {
	if [ "${GS_K8S_CONTROL_ONLY:-0}" = 1 ]; then
		up_control_only
		return
	fi
	[ "$(id -u)" -eq 0 ] || die "needs root (containerd, kubelet, mounts, network namespaces)"
	local c
	for c in openssl curl gcc runc iptables busybox; do
		command -v "$c" >/dev/null || die "$c not found (see docs/kubernetes.md for the Debian packages)"
	done
	[ -x /usr/lib/cni/bridge ] || die "/usr/lib/cni/bridge not found (Debian package containernetworking-plugins)"
	[ -e "$d" ] && die "$d exists: run \`cluster.sh down\` first"
	in_up=1
	bin="${GS_K8S_BIN:-$("$here/build.sh" | tail -n1)}"
	node_ip="${GS_K8S_NODE_IP:-$(node_ip)}"
	[ -n "$node_ip" ] || die "no node address (no default route); set GS_K8S_NODE_IP"
	mkdir -p "$d"/{pki,kubeconfig,logs,pids,images,kubelet}
	echo "$bin" >"$d/bin"
	record_before
	api_port=$(free_port)
	make_pki
	for c in admin kube-controller-manager kube-scheduler kubelet; do make_kubeconfig "$c"; done
	build_pause
	build_workload
	say "certificates, kubeconfigs and images made at +$((SECONDS - t0))s"
	start_etcd
	start_apiserver
	say "etcd and kube-apiserver ready at +$((SECONDS - t0))s"
	start_controllers
	start_containerd
	import_images
	say "containerd ready, images imported at +$((SECONDS - t0))s"
	start_kubelet
	say "node $node Ready at +$((SECONDS - t0))s (kubelet on $node_ip)"
	start_gpuslice
	say "gpuslice daemon and agent running, ResourceSlice published at +$((SECONDS - t0))s"
	echo "export KUBECONFIG=$d/kubeconfig/admin PATH=$bin:\$PATH"
}

# GS_K8S_CONTROL_ONLY=1: etcd, kube-apiserver, kube-scheduler, the gpuslice scheduler and
# kwok's controller only, no kubelet, no controller-manager, no root needed. For the scale
# replay (bench/run-k8s-pack.py), whose nodes are kwok's: Node objects annotated
# kwok.x-k8s.io/node=fake, which kwok marks Ready and keeps heartbeating, and whose bound pods
# it marks Running. No controller-manager runs, so nothing would taint a node that missed a
# heartbeat (kwok's heartbeats are what a node lifecycle controller would read).
up_control_only() {
	[ -e "$d" ] && die "$d exists: run \`cluster.sh down\` first"
	bin="${GS_K8S_BIN:-$("$here/build.sh" | tail -n1)}"
	mkdir -p "$d"/{pki,kubeconfig,logs,pids}
	: >"$d/control-only"
	echo "$bin" >"$d/bin"
	api_port=$(free_port)
	make_pki
	for c in admin kube-scheduler; do make_kubeconfig "$c"; done
	[ -x "$bin/kwok" ] || die "$bin/kwok not found (build.sh builds it)"
	start_etcd
	start_apiserver
	# Both schedulers may send 1,000 requests a second (their default is 50, with bursts of
	# 100): the scheduler benchmark is to measure them, not their client's rate limiter. The
	# gpuslice scheduler makes two requests a pod (its PreBind's patch, then the binding), the
	# default one makes one.
	sched_qps=1000
	cat >"$d/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: $d/kubeconfig/kube-scheduler
  qps: $sched_qps
  burst: $((sched_qps * 2))
EOF
	start kube-scheduler "$bin/kube-scheduler" --config "$d/kube-scheduler.yaml" --secure-port 0
	start_gpuslice_scheduler
	start_kwok
	say "control plane and kwok ready at +$((SECONDS - t0))s"
	echo "export KUBECONFIG=$d/kubeconfig/admin PATH=$bin:\$PATH"
}

# kwok's controller, with the stages build.sh copied from its module (share/kwok/, beside
# bin/): a node is made Ready with its capacity kept (node-initialize) and heartbeats every
# 20 to 45 s (node-heartbeat, status only: no leases); a bound pod becomes Running
# (pod-ready) and a deleted one goes (pod-delete). Only nodes annotated
# kwok.x-k8s.io/node=fake are its. Pod IPs come from 10.0.0.0/8 (its default /24 is too
# small for the replay's pods); it serves nothing (no --node-port).
start_kwok() {
	local share s
	share="$(cd "$bin/.." && pwd)/share/kwok"
	: >"$d/kwok.yaml"
	for s in node-initialize node-heartbeat pod-ready pod-complete pod-delete; do
		[ -f "$share/$s.yaml" ] || die "$share/$s.yaml not found (build.sh copies kwok's stages there)"
		{ echo "---"; cat "$share/$s.yaml"; } >>"$d/kwok.yaml"
	done
	start kwok "$bin/kwok" --config "$d/kwok.yaml" --kubeconfig "$d/kubeconfig/admin" \
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--node-lease-duration-seconds 0 --cidr 10.0.0.0/8
	wait_for kwok 60 kwok_started
}

kwok_started() { grep -q '"msg":"Watch nodes"' "$d/logs/kwok.log"; }

# stop NAME: SIGTERM, then SIGKILL after 20 s.
stop() {
	local f=$d/pids/$1 p st s=$SECONDS
	[ -f "$f" ] || return 0
	read -r p st <"$f"
	if [ "$(start_time "$p")" != "$st" ]; then
		say "$1 (pid $p) had already exited"
	elif kill "$p" 2>/dev/null; then
		for _ in $(seq 1 40); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.5
		done
		if kill -9 "$p" 2>/dev/null; then
			say "$1 (pid $p) killed after 20 s"
		else
			say "$1 (pid $p) stopped in $((SECONDS - s))s"
		fi
	fi
	rm -f "$f"
}

# Pods first, while kubelet and containerd can still tear them down properly (CNI DEL,
# unmounts); then whatever tasks are left, through containerd.
stop_pods() {
	local id
	local p st
	[ -f "$d/pids/kubelet" ] && read -r p st <"$d/pids/kubelet"
	if [ -n "${p:-}" ] && [ "$(start_time "$p")" = "$st" ]; then
		kc delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
		for _ in $(seq 1 60); do
			[ -z "$(ctr tasks ls -q)" ] && break
			sleep 0.5
		done
	fi
	stop kubelet
	if [ -S "$d/containerd/containerd.sock" ]; then
		for id in $(ctr tasks ls -q); do
			ctr tasks kill -a -s SIGKILL "$id" || true
		done
		sleep 1
		for id in $(ctr tasks ls -q); do ctr tasks delete -f "$id" || true; done
		for id in $(ctr containers ls -q); do ctr containers delete "$id" || true; done
	fi
}

# Shims run apart from containerd (they are reparented when it stops); they are the
# processes whose command line names our containerd socket. Container processes are those
# in kubelet's kubepods cgroups.
kill_leftovers() {
	local sock=$d/containerd/containerd.sock p
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "-address $sock"; then
			say "killing leftover shim ${p#/proc/}"
			kill -9 "${p#/proc/}" 2>/dev/null || true
		elif grep -q ':/kubepods' "$p/cgroup" 2>/dev/null; then
			say "killing leftover container process ${p#/proc/}"
			kill -9 "${p#/proc/}" 2>/dev/null || true
		fi
	done
}

unmount_all() {
	local m n
	for n in 1 2 3; do
		# Deepest first; /proc/mounts escapes spaces as \040, which none of ours have.
		m=$(awk -v d="$d" 'index($2, d "/") == 1 || $2 == d { print $2 }' /proc/mounts | sort -r)
		[ -z "$m" ] && return 0
		for m in $m; do umount "$m" 2>/dev/null || { [ "$n" = 3 ] && umount -l "$m"; } || true; done
	done
}

remove_cgroups() {
	local h
	for h in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/kubepods.slice; do
		[ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	return 0
}

remove_chains() {
	local cmd t c
	for cmd in iptables ip6tables; do
		command -v "$cmd" >/dev/null || continue
		for t in filter nat mangle; do
			for c in $("$cmd"-save -t "$t" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\|CNI-[^ ]*\) .*/\1/p'); do
				grep -qxF "$c" "$d/before.chains" 2>/dev/null && continue
				"$cmd" -t "$t" -F "$c" 2>/dev/null || true
				# The jumps to it (kubelet's KUBE-FIREWALL is jumped to from INPUT and
				# OUTPUT), each `-A CHAIN RULE` of iptables-save deleted as `-D CHAIN RULE`.
				"$cmd"-save -t "$t" 2>/dev/null | grep -E -- "^-A .* -j $c( |\$)" |
					while read -r rule; do eval "$cmd -t $t -D ${rule#-A }" || true; done || true
			done
			for c in $("$cmd"-save -t "$t" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\|CNI-[^ ]*\) .*/\1/p'); do
				grep -qxF "$c" "$d/before.chains" 2>/dev/null && continue
				"$cmd" -t "$t" -X "$c" 2>/dev/null || say "could not remove $cmd chain $t/$c"
			done
		done
	done
}

# Paths kubelet and containerd use whatever their configuration says (see
# docs/kubernetes.md): removed only when `up` did not find them there.
remove_fixed_paths() {
	local l
	[ -e "$d/before.var-lib-kubelet" ] || rm -rf /var/lib/kubelet
	if [ -d /var/log/containers ]; then
		for l in /var/log/containers/*; do
			[ -L "$l" ] && case $(readlink "$l") in "$d"/*) rm -f "$l" ;; esac
		done
		[ -e "$d/before.var-log-containers" ] || rm -rf /var/log/containers
	fi
	[ -e "$d/before.var-log-pods" ] || rm -rf /var/log/pods
	[ -e "$d/before.run-containerd" ] || rm -rf /run/containerd
	rm -f /var/lib/cni/results/gpuslice-k8s-* 2>/dev/null || true
	[ -e "$d/before.var-lib-cni" ] || rm -rf /var/lib/cni
	[ -f "$d/before.ip_forward" ] && cat "$d/before.ip_forward" >/proc/sys/net/ipv4/ip_forward
	return 0
}

down() {
	[ -d "$d" ] || { say "$d does not exist: nothing to do"; return 0; }
	bin=$(cat "$d/bin" 2>/dev/null || true)
	local n
	if [ -f "$d/control-only" ]; then
		for n in kwok gpuslice-scheduler kube-scheduler kube-apiserver etcd; do stop "$n"; done
		rm -rf "$d"
		say "down in $((SECONDS - t0))s"
		return 0
	fi
	stop_pods
	stop gpuslice-k8s
	stop gpuslice-daemon
	stop containerd
	kill_leftovers
	# The control plane in reverse order of its start: the apiserver before its etcd.
	for n in gpuslice-scheduler kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$n"; done
	unmount_all
	ip link delete "$bridge" 2>/dev/null || true
	remove_cgroups
	remove_chains
	remove_fixed_paths
	rm -rf "$d"
	say "down in $((SECONDS - t0))s"
}

# The smoke check of a cluster `up` made: the node is Ready, and a pod of the workload
# image runs `sh -c 'echo hello; sleep 1'` to completion and its log says hello.
smoke() {
	bin=$(cat "$d/bin" 2>/dev/null) || die "no cluster in $d: run \`cluster.sh up\` first"
	local phase="" log
	node_ready || die "node $node is not Ready: $(kc get node "$node" 2>&1)"
	kc delete pod gs-hello --ignore-not-found --wait >/dev/null
	kc apply -f - >/dev/null <<'POD'
apiVersion: v1
kind: Pod
metadata:
  name: gs-hello
spec:
  restartPolicy: Never
  containers:
  - name: hello
    image: gpuslice/workload:test
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello; sleep 1"]
POD
	for _ in $(seq 1 120); do
		phase=$(kc get pod gs-hello -o jsonpath='{.status.phase}')
		case $phase in Succeeded | Failed) break ;; esac
		sleep 0.5
	done
	log=$(kc logs gs-hello 2>&1 || true)
	if [ "$phase" != Succeeded ] || [ "$log" != hello ]; then
		die "pod gs-hello: phase ${phase:-none}, log '$log'; $(kc describe pod gs-hello | sed -n '/^Events:/,$p')"
	fi
	kc delete pod gs-hello --wait >/dev/null
	say "smoke ok in $((SECONDS - t0))s: node $node Ready, pod gs-hello Succeeded and said hello"
}

case "${1:-}" in
up) up ;;
# restart-agent: kill -9 the agent and start it again, rebuilt if its source changed (the
# agent-restart test).
restart-agent)
	bin=$(cat "$d/bin")
	read -r p _ <"$d/pids/gpuslice-k8s"
	kill -9 "$p"
	build_agent
	start_agent
	;;
down) down ;;
smoke) smoke ;;
*)
	echo "usage: cluster.sh up|down|smoke" >&2
	exit 2
	;;
esac
