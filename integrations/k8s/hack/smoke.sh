#!/usr/bin/env bash
# Smoke check of the components build.sh made: etcd starts on loopback and answers
# /health; kube-apiserver starts against it with certificates made here by openssl (a
# self-signed CA, a serving certificate for 127.0.0.1, an admin client certificate and a
# service-account key pair) and `kubectl get --raw /readyz` says ok; as root, containerd
# starts with its state in a temporary directory, its CRI plugin loads and `ctr version`
# reaches it. Then it stops them all and removes everything it made. The cluster itself
# (controller manager, scheduler, kubelet, pods) is cluster.sh's, and CI does not run
# this yet.
#
# Usage: smoke.sh [BIN_DIR]   (default: what build.sh prints, building what is missing)
# Needs openssl and curl. Exit status 0 when both answered, 1 otherwise; on failure the
# last lines of the failing component's log are printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-$("$here/build.sh" | tail -n1)}"
work="$(mktemp -d /tmp/gs-k8s-smoke.XXXXXX)"
pids=()
t0=$SECONDS

# Stops the servers in the reverse order of their start, each with SIGTERM and, after
# 20 s, SIGKILL; the apiserver is stopped before the etcd it talks to.
cleanup() {
	local i p
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[i]}
		kill "$p" 2>/dev/null || continue
		for _ in $(seq 1 40); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.5
		done
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
		echo "smoke.sh: stopped pid $p at +$((SECONDS - t0))s" >&2
	done
	rm -rf "$work"
}
trap cleanup EXIT

die() {
	echo "smoke.sh: $1" >&2
	[ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" >&2
	exit 1
}

# A loopback port nothing listens on now (a race with other programs is possible, and
# shows as a start failure with the port in the log).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		(echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

# wait_for WHAT LOG PID CMD...: retries CMD for up to 60 s while PID lives.
wait_for() {
	local what=$1 log=$2 pid=$3
	shift 3
	for _ in $(seq 1 120); do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || die "$what exited before it was ready; its log:" "$log"
		sleep 0.5
	done
	die "$what not ready after 60 s; its log:" "$log"
}

make_certs() {
	local d=$work/pki
	mkdir -p "$d"
	(
		cd "$d"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 \
			-subj "/CN=gpuslice-smoke-ca"
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
			-subj "/CN=kube-apiserver"
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1\nextendedKeyUsage=serverAuth\n' >apiserver.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out apiserver.crt -days 1 -extfile apiserver.ext
		# O=system:masters: the group RBAC lets do anything, for kubectl.
		openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
			-subj "/O=system:masters/CN=admin"
		printf 'extendedKeyUsage=clientAuth\n' >admin.ext
		openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out admin.crt -days 1 -extfile admin.ext
		openssl genrsa -out sa.key 2048
		openssl rsa -in sa.key -pubout -out sa.pub
	) >"$work/openssl.log" 2>&1 || die "openssl failed; its log:" "$work/openssl.log"
}

start_etcd() {
	local client peer
	client=$(free_port)
	peer=$(free_port)
	etcd_url="http://127.0.0.1:$client"
	"$bin/etcd" --name smoke --data-dir "$work/etcd" \
		--listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "smoke=http://127.0.0.1:$peer" \
		>"$work/etcd.log" 2>&1 &
	pids+=($!)
	wait_for etcd "$work/etcd.log" "$!" etcd_healthy
	echo "smoke.sh: etcd $("$bin/etcd" --version | sed -n 's/^etcd Version: //p') on $etcd_url: $(curl -fsS "$etcd_url/health")"
}

etcd_healthy() { curl -fsS "$etcd_url/health" | grep -q '"health":"true"'; }

# The endpoint reconciler would publish the advertise address as the endpoint of the
# `kubernetes` service, and refuses a loopback one; nothing here runs pods, so it is off.
start_apiserver() {
	local port d=$work/pki
	port=$(free_port)
	"$bin/kube-apiserver" --etcd-servers "$etcd_url" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
		--tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" \
		--client-ca-file "$d/ca.crt" \
		--service-account-key-file "$d/sa.pub" \
		--service-account-signing-key-file "$d/sa.key" \
		--service-account-issuer https://kubernetes.default.svc \
		--service-cluster-ip-range 10.0.0.0/24 \
		--authorization-mode Node,RBAC \
		--endpoint-reconciler-type none \
		--cert-dir "$work/apiserver-certs" \
		>"$work/apiserver.log" 2>&1 &
	pids+=($!)
	make_kubeconfig "$port"
	wait_for kube-apiserver "$work/apiserver.log" "$!" apiserver_ready
}

make_kubeconfig() {
	local k=(--kubeconfig "$work/kubeconfig") d=$work/pki
	{
		"$bin/kubectl" "${k[@]}" config set-cluster smoke --server "https://127.0.0.1:$1" \
			--certificate-authority "$d/ca.crt" --embed-certs
		"$bin/kubectl" "${k[@]}" config set-credentials admin \
			--client-certificate "$d/admin.crt" --client-key "$d/admin.key" --embed-certs
		"$bin/kubectl" "${k[@]}" config set-context smoke --cluster smoke --user admin
		"$bin/kubectl" "${k[@]}" config use-context smoke
	} >"$work/kubectl.log" 2>&1 || die "kubectl config failed; its log:" "$work/kubectl.log"
}

# containerd's own config, version 3 (2.x reads it), with everything under $work.
start_containerd() {
	local d=$work/containerd
	mkdir -p "$d/cni"
	cat >"$d/config.toml" <<EOF
version = 3
root = "$d/root"
state = "$d/state"
[grpc]
  address = "$d/containerd.sock"
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = "$d/cni"
EOF
	PATH="$bin:$PATH" "$bin/containerd" --config "$d/config.toml" >"$work/containerd.log" 2>&1 &
	pids+=($!)
	ctr_sock=$d/containerd.sock
	wait_for containerd "$work/containerd.log" "$!" containerd_ready
	echo "smoke.sh: containerd $(ctr_server_version) answers ctr; CRI plugin: $(cri_status)"
}

# ctr warns on stderr, at every call, that cgroup v1 is deprecated.
ctr() { "$bin/ctr" --address "$ctr_sock" "$@" 2>/dev/null; }
ctr_server_version() { ctr version | awk '/^Server:/ { s = 1 } s && $1 == "Version:" { print $2; exit }'; }
cri_status() { ctr plugins ls | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { print $NF }'; }
containerd_ready() { [ "$(cri_status)" = ok ]; }

apiserver_ready() { [ "$(readyz)" = ok ]; }
readyz() { "$bin/kubectl" --kubeconfig "$work/kubeconfig" get --raw /readyz; }

main() {
	command -v openssl >/dev/null || die "openssl not found (Debian package openssl)"
	command -v curl >/dev/null || die "curl not found (Debian package curl)"
	make_certs
	start_etcd
	start_apiserver
	echo "smoke.sh: $("$bin/kube-apiserver" --version) on loopback: /readyz says $(readyz)"
	echo "smoke.sh: $("$bin/kubectl" version --client | head -n1)"
	if [ "$(id -u)" -eq 0 ]; then
		start_containerd
	else
		echo "smoke.sh: containerd skipped (it needs root)"
	fi
	echo "smoke.sh: ok in $((SECONDS - t0))s"
}

main "$@"
