# Sourced by build.sh and cluster.sh: the one place where the test
# cluster's component versions are pinned. Changing a version here changes the cache
# directory, so a new version is built beside the old one, never over it.
#
# The Go modules in components/ must agree with these numbers; build.sh checks that they do.

# k8s.io/kubernetes: the newest release the Go module proxy serves that builds with the
# Go on the machine (1.37 needs go >= 1.26.0). Its staging modules (k8s.io/api,
# k8s.io/client-go, ...) carry the same minor and patch as v0.X.Y.
GS_K8S_VERSION=v1.37.2
GS_K8S_STAGING_VERSION=v0.37.2

# etcd: a 3.6 server (the issue asks for 3.5 or 3.6; Debian's 3.4.23 is too old).
GS_ETCD_VERSION=v3.6.16

# containerd 2.x: Debian's 1.6 cannot apply CDI specs.
GS_CONTAINERD_VERSION=v2.4.2

# helm 3: the tests render and lint gpuslice's chart (integrations/k8s/chart) with it.
GS_HELM_VERSION=v3.22.0

# kwok's controller: plays the kubelet of the scale replay's 1,213 fake nodes. v0.8.0 is the
# newest on the proxy; it needs go >= 1.26.0 and builds against k8s.io v0.36.1 (its own
# module graph, apart from the cluster's 1.37 components: it only talks to the apiserver).
GS_KWOK_VERSION=v0.8.0
