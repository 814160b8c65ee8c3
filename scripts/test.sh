#!/usr/bin/env bash
# Builds and runs the whole test suite twice: a normal build in build/, then an
# AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/. Between the two, the
# parsers that read untrusted input are fuzzed with libFuzzer for a few seconds each
# (build-fuzz/, clang). The output ends with the summary of the last ctest run.
#
# Tests run one at a time: the simulator's tests measure timings, and concurrent tests on a
# small machine would disturb them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

jobs="$(nproc)"

build_and_test() {
  local dir="$1"
  shift
  echo "==> $dir: configure and build"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "==> $dir: test"
  ctest --test-dir "$dir" --output-on-failure
}

fuzz() {
  echo "==> build-fuzz: configure, build and fuzz the parsers"
  CC=clang cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGS_SANITIZE=ON \
    -DGS_BUILD_TESTS=OFF -DGS_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j "$jobs" --target fuzz
  ctest --test-dir build-fuzz -L fuzz --output-on-failure
}

# The Kubernetes test cluster's components (kube-apiserver, kubelet, containerd, etcd, helm,
# kwok, the gpuslice scheduler), built from source once into ~/.cache/gpuslice-k8s (about 20
# minutes on 2 cores the first time, a second afterwards): tests/integration/test_k8s_*.py
# start clusters of them (test_k8s_kwok_replay.py a control plane with kwok's nodes).
k8s_components() {
  echo "==> Kubernetes components (integrations/k8s/hack/build.sh)"
  integrations/k8s/hack/build.sh
}

k8s_components
build_and_test build -DGS_SANITIZE=OFF
fuzz
build_and_test build-asan -DGS_SANITIZE=ON
