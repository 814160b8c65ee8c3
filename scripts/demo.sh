#!/usr/bin/env bash
# Builds gpuslice in build/ (what the demo needs, not the tests) and runs `gpuslice demo`.
# Extra arguments go to the demo, e.g. ./scripts/demo.sh --seconds 8
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target gpuslice_runtime
echo
exec build/bin/gpuslice demo "$@"
