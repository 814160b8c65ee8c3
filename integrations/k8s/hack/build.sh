#!/usr/bin/env bash
# Builds the real components of the test cluster from source, once, into a cache outside
# the repository:
#
#   ${GS_K8S_CACHE:-~/.cache/gpuslice-k8s}/<kubernetes version>/bin/
#     etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl
#     containerd containerd-shim-runc-v2 ctr
#     helm
#     kwok                 (kwok's controller: the scale replay's nodes, with no kubelet)
#     gpuslice-scheduler   (kube-scheduler with gpuslice's plugin, ../scheduler; cgo)
#     gpuslice-k8s-replay  (the scale replay's tool, same module)
#
# Each comes from a small Go module in components/ that requires the upstream release at
# the version pinned in versions.sh, fetched through the Go module proxy, and is built with
# CGO_ENABLED=0 and its upstream version stamped in with -ldflags -X. A component is built
# only when its binaries are missing or its stamp (version, Go version, module files) has
# changed, so a second run with everything present takes a second or so.
#
# Prints the bin directory as its last line. A failed build prints one line naming the
# component and its log, and exits 1. runc and the CNI plugins come from Debian (see
# docs/kubernetes.md); this script does not build them.
#
# Concurrent runs on one cache take turns (flock on <version>/.lock).
#
# Environment: GS_K8S_CACHE (cache root), GS_K8S_ONLY (space-separated component names:
# etcd kube containerd helm kwok scheduler; default all). GOMODCACHE, GOCACHE, GOFLAGS and GOMAXPROCS are
# Go's own and are respected.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$here/versions.sh"

cache_root="${GS_K8S_CACHE:-$HOME/.cache/gpuslice-k8s}"
top="$cache_root/$GS_K8S_VERSION"
bin="$top/bin"
logs="$top/logs"
stamps="$top/stamps"

# The binaries each component module builds, from k8s.io/kubernetes/cmd/<name> and
# github.com/containerd/containerd/v2/cmd/<name>.
kube_tools="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
containerd_tools="containerd containerd-shim-runc-v2 ctr"

say() { echo "build.sh: $*" >&2; }

fail() {
	# One line, as the issue asks: which component, and where to look.
	echo "build.sh: $1 failed to build; see $2" >&2
	exit 1
}

# The stamp says what the binaries in bin/ were built from: the version, the Go that built
# them and the component's module files. This script is left out on purpose, so that
# editing it does not cost a half-hour rebuild; bump a version or delete stamps/ instead.
# It is cheap to compute: the warm path runs no Go command but `go env GOVERSION`.
stamp_of() {
	local comp=$1 version=$2
	local files=("$here/components/$comp/go.mod" "$here/components/$comp/go.sum")
	[ -f "$here/components/$comp/main.go" ] && files+=("$here/components/$comp/main.go")
	printf '%s %s %s\n' "$version" "$gover" \
		"$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)"
}

up_to_date() {
	local comp=$1 version=$2 b
	shift 2
	[ "$(cat "$stamps/$comp" 2>/dev/null)" = "$(stamp_of "$comp" "$version")" ] || return 1
	for b in "$@"; do [ -x "$bin/$b" ] || return 1; done
}

# The module must require what versions.sh names, or the stamp would lie. Read from
# go.mod itself, so that this needs neither the network nor the module cache.
check_module_version() {
	local comp=$1 module=$2 want=$3 got
	got="$(awk -v m="$module" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m { print $2 }' \
		"$here/components/$comp/go.mod")"
	if [ "$got" != "$want" ]; then
		echo "build.sh: components/$comp/go.mod requires $module ${got:-(nothing)} but versions.sh says $want" >&2
		exit 1
	fi
}

# Release time of a module version, from the proxy's .info (through `go list -m`, which
# reads it from the module cache), for a reproducible build date; upstream stamps the
# time of the build. Empty when it cannot be had: the build that follows then fails on its
# own, with its log.
release_time() {
	(cd "$here/components/$1" &&
		go list -m -f '{{with .Time}}{{.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' "$2" 2>/dev/null) || true
}

# go_build COMP NAME PKG TAGS LDFLAGS: builds one binary into bin/ through a temporary
# name, so that an interrupted build never leaves a half-written binary behind.
go_build() {
	local comp=$1 name=$2 pkg=$3 tags=$4 ldflags=$5 t0
	local log="$logs/$name.log"
	t0=$(date +%s)
	say "building $name ($pkg)"
	if ! (cd "$here/components/$comp" &&
		CGO_ENABLED=0 GOTOOLCHAIN=local go build -mod=readonly -trimpath \
			-tags "$tags" -ldflags "$ldflags" -o "$bin/.$name.tmp" "$pkg") >"$log" 2>&1; then
		rm -f "$bin/.$name.tmp"
		fail "$name" "$log"
	fi
	mv -f "$bin/.$name.tmp" "$bin/$name"
	echo "built in $(($(date +%s) - t0))s" >>"$log"
	say "built $name in $(($(date +%s) - t0))s"
}

build_etcd() {
	up_to_date etcd "$GS_ETCD_VERSION" etcd && return 0
	check_module_version etcd go.etcd.io/etcd/server/v3 "$GS_ETCD_VERSION"
	rm -f "$stamps/etcd"
	# etcd's version is a constant of go.etcd.io/etcd/api/v3/version; only the commit,
	# which the proxy does not give, is a link-time variable.
	go_build etcd etcd . "" \
		"-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$GS_ETCD_VERSION"
	stamp_of etcd "$GS_ETCD_VERSION" >"$stamps/etcd"
}

build_kube() {
	# shellcheck disable=SC2086
	up_to_date kube "$GS_K8S_VERSION" $kube_tools && return 0
	check_module_version kube k8s.io/kubernetes "$GS_K8S_VERSION"
	rm -f "$stamps/kube"
	local v=${GS_K8S_VERSION#v} major minor date ld="-s -w" key val t
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	date="$(release_time kube k8s.io/kubernetes)"
	# The same variables hack/lib/version.sh sets, in both packages it sets them in. The
	# proxy gives no commit: gitCommit is set empty rather than left at its placeholder
	# ("$Format:%H$").
	for kv in "gitVersion=$GS_K8S_VERSION" "gitMajor=$major" "gitMinor=$minor" \
		"gitCommit=" "gitTreeState=clean" "buildDate=$date"; do
		key=${kv%%=*}
		val=${kv#*=}
		ld="$ld -X k8s.io/client-go/pkg/version.$key=$val"
		ld="$ld -X k8s.io/component-base/version.$key=$val"
	done
	# Upstream's release tags (hack/lib/golang.sh).
	for t in $kube_tools; do
		go_build kube "$t" "k8s.io/kubernetes/cmd/$t" "selinux,notest,grpcnotrace" "$ld"
	done
	stamp_of kube "$GS_K8S_VERSION" >"$stamps/kube"
}

build_containerd() {
	# shellcheck disable=SC2086
	up_to_date containerd "$GS_CONTAINERD_VERSION" $containerd_tools && return 0
	check_module_version containerd github.com/containerd/containerd/v2 "$GS_CONTAINERD_VERSION"
	rm -f "$stamps/containerd"
	local pkg=github.com/containerd/containerd/v2 ld t tags
	ld="-s -w -X $pkg/version.Version=$GS_CONTAINERD_VERSION -X $pkg/version.Package=$pkg"
	# Upstream's Makefile: urfave_cli_no_docs everywhere, no_grpc for the shim. With cgo
	# off, the btrfs snapshotter (which needs it) drops out by its own build tag.
	for t in $containerd_tools; do
		tags=urfave_cli_no_docs
		[ "$t" = containerd-shim-runc-v2 ] && tags="$tags,no_grpc"
		go_build containerd "$t" "$pkg/cmd/$t" "$tags" "$ld"
	done
	stamp_of containerd "$GS_CONTAINERD_VERSION" >"$stamps/containerd"
}

# kwok's controller, and the stages it plays (its own node and pod stages, from the same
# module, copied beside the binaries into share/kwok/ for cluster.sh): kwok v0.x has no
# stages of its own without kwokctl, which supplies these.
kwok_stages="node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml"

build_kwok() {
	local s ok=1
	for s in $kwok_stages; do [ -f "$top/share/kwok/$(basename "$s")" ] || ok=0; done
	[ "$ok" = 1 ] && up_to_date kwok "$GS_KWOK_VERSION" kwok && return 0
	check_module_version kwok sigs.k8s.io/kwok "$GS_KWOK_VERSION"
	rm -f "$stamps/kwok"
	go_build kwok kwok sigs.k8s.io/kwok/cmd/kwok "" \
		"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${GS_KWOK_VERSION#v}"
	local src
	src="$(cd "$here/components/kwok" && GOTOOLCHAIN=local go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)" ||
		fail "kwok's stages" "(go list -m sigs.k8s.io/kwok)"
	mkdir -p "$top/share/kwok"
	for s in $kwok_stages; do
		install -m 0644 "$src/kustomize/stage/$s" "$top/share/kwok/$(basename "$s")"
	done
	stamp_of kwok "$GS_KWOK_VERSION" >"$stamps/kwok"
}

build_helm() {
	up_to_date helm "$GS_HELM_VERSION" helm && return 0
	check_module_version helm helm.sh/helm/v3 "$GS_HELM_VERSION"
	rm -f "$stamps/helm"
	go_build helm helm helm.sh/helm/v3/cmd/helm "" \
		"-s -w -X helm.sh/helm/v3/internal/version.version=$GS_HELM_VERSION"
	stamp_of helm "$GS_HELM_VERSION" >"$stamps/helm"
}

# The gpuslice scheduler is gpuslice's own code, not a pinned release: its stamp is the
# hash of its module and of the C placement core it compiles (lib/, include/), so an edit
# to either rebuilds it. cgo is on (the core is C), with the pure-Go resolvers (netgo,
# osusergo) so that the binary needs nothing but libc.
scheduler_stamp() {
	local root="$here/../../.."
	printf '%s %s %s\n' "$GS_K8S_VERSION" "$gover" "$(
		cd "$root" && find integrations/k8s/scheduler lib include -type f \
			\( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name 'go.mod' -o -name 'go.sum' \) \
			! -name '*_test.go' | LC_ALL=C sort | xargs cat | sha256sum | cut -d' ' -f1)"
}

build_scheduler() {
	local stamp
	stamp="$(scheduler_stamp)"
	[ "$(cat "$stamps/scheduler" 2>/dev/null)" = "$stamp" ] && [ -x "$bin/gpuslice-scheduler" ] &&
		[ -x "$bin/gpuslice-k8s-replay" ] && return 0
	check_module_version ../../scheduler k8s.io/kubernetes "$GS_K8S_VERSION"
	rm -f "$stamps/scheduler"
	local log="$logs/gpuslice-scheduler.log" t0 v=${GS_K8S_VERSION#v} ld="-s -w" kv key val
	t0=$(date +%s)
	# kube-scheduler's version variables, as build_kube sets them: the binary says which
	# kube-scheduler it is.
	for kv in "gitVersion=$GS_K8S_VERSION" "gitMajor=${v%%.*}" "gitMinor=$(echo "$v" | cut -d. -f2)" \
		"gitCommit=" "gitTreeState=clean" "buildDate=$(release_time kube k8s.io/kubernetes)"; do
		key=${kv%%=*}
		val=${kv#*=}
		ld="$ld -X k8s.io/client-go/pkg/version.$key=$val -X k8s.io/component-base/version.$key=$val"
	done
	say "building gpuslice-scheduler (integrations/k8s/scheduler)"
	if ! (cd "$here/../scheduler" &&
		CGO_ENABLED=1 GOTOOLCHAIN=local go build -mod=readonly -trimpath \
			-tags "selinux,notest,grpcnotrace,netgo,osusergo" -ldflags "$ld" \
			-o "$bin/.gpuslice-scheduler.tmp" ./cmd/gpuslice-scheduler) >"$log" 2>&1; then
		rm -f "$bin/.gpuslice-scheduler.tmp"
		fail gpuslice-scheduler "$log"
	fi
	# The scale replay's tool (bench/run-k8s-pack.py), from the same module.
	if ! (cd "$here/../scheduler" &&
		CGO_ENABLED=1 GOTOOLCHAIN=local go build -mod=readonly -trimpath -tags netgo,osusergo \
			-ldflags "-s -w" -o "$bin/.gpuslice-k8s-replay.tmp" ./cmd/gpuslice-k8s-replay) >>"$log" 2>&1; then
		rm -f "$bin/.gpuslice-scheduler.tmp" "$bin/.gpuslice-k8s-replay.tmp"
		fail gpuslice-k8s-replay "$log"
	fi
	mv -f "$bin/.gpuslice-k8s-replay.tmp" "$bin/gpuslice-k8s-replay"
	mv -f "$bin/.gpuslice-scheduler.tmp" "$bin/gpuslice-scheduler"
	echo "built in $(($(date +%s) - t0))s" >>"$log"
	say "built gpuslice-scheduler in $(($(date +%s) - t0))s"
	echo "$stamp" >"$stamps/scheduler"
}

main() {
	if ! command -v go >/dev/null 2>&1; then
		echo "build.sh: go not found; the components are built from source with Go >= 1.26.6" >&2
		exit 1
	fi
	gover="$(GOTOOLCHAIN=local go env GOVERSION)"
	mkdir -p "$bin" "$logs" "$stamps"
	# Tests run in parallel may all call this script: the first builds, the others wait
	# for it and then find everything up to date.
	exec 9>"$top/.lock"
	flock 9
	local c
	for c in ${GS_K8S_ONLY:-etcd kube containerd helm kwok scheduler}; do
		case $c in
		etcd) build_etcd ;;
		kube) build_kube ;;
		containerd) build_containerd ;;
		helm) build_helm ;;
		kwok) build_kwok ;;
		scheduler) build_scheduler ;;
		*)
			echo "build.sh: unknown component '$c' in GS_K8S_ONLY (etcd, kube, containerd, helm, kwok, scheduler)" >&2
			exit 2
			;;
		esac
	done
	echo "$bin"
}

main "$@"
