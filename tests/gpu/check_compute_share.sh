#!/usr/bin/env bash
# Compute shares on a real NVIDIA GPU, checked with PyTorch: two matmul loops as tenants of
# `gpuslice run --compute 70` and `--compute 30` (share policy) run at once, and their
# throughputs should stand at 70:30 (a ratio of 2.33). Needs a GPU, its driver, PyTorch with
# CUDA, and python3; it is not part of ctest and runs only where a GPU is lent. See README.md.
#
# Run from anywhere: tests/gpu/check_compute_share.sh. The build directory is $GS_BUILD_DIR
# (default build/ at the repository root); when it lacks the CLI or the interposer, they are
# built first (cmake + Ninja, -DGS_BUILD_TESTS=OFF). $GS_GPU_CHECK_SIZE sets the matrix size
# (default 8192, float16) and $GS_GPU_CHECK_SECONDS the measured window (default 8 s).
#
# Runs, each loop started by one signal once all are ready and measured over one window:
#   1. one loop alone, no gpuslice: the device's throughput (the reference);
#   2. 70 and 30 under gpuslice: the ratio, and that together they keep the device busy;
#   3. one loop under --compute 30 --compute-policy cap alone: held near 30% of the reference;
#   4. the same two loops without gpuslice: near 1:1, which shows that run 2 can fail.
# Prints a PASS/FAIL table. Exit status: 0 every check passed, 1 a check failed, 2 the checks
# cannot run here (no GPU, no PyTorch, no build). Bounded to ~5 minutes.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${GS_BUILD_DIR:-$ROOT/build}
SIZE=${GS_GPU_CHECK_SIZE:-8192}
WINDOW=${GS_GPU_CHECK_SECONDS:-8}
MATMUL=(python3 "$ROOT/tests/gpu/torch_matmul.py")
GPUSLICE=$BUILD/bin/gpuslice
DEADLINE=290        # seconds; every run must end by then
READY_MAX=150       # seconds for PyTorch to start and warm up

unset GPUSLICE_SIM GPUSLICE_TENANT LD_PRELOAD
WORK=$(mktemp -d /tmp/gs-gpu-compute.XXXXXX) || exit 2
export GPUSLICE_STATE_DIR=$WORK/state
mkdir -p "$GPUSLICE_STATE_DIR"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

CHECK=check_compute_share
# shellcheck source=check-lib.sh
. "$ROOT/tests/gpu/check-lib.sh"

# field JSON NAME: JSON's top-level NAME ("" when absent).
field() {
  python3 -c 'import json,sys
print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null
}

# calc EXPR: a Python expression, printed (floats to 3 places, booleans as 1/0).
calc() {
  python3 -c 'import sys
v = eval(sys.argv[1])
print(int(v) if isinstance(v, bool) else f"{v:.3f}" if isinstance(v, float) else v)' "$1"
}

preflight() {
  local out rc
  command -v python3 >/dev/null || cannot_run "python3 is missing"
  out=$(timeout 120 "${MATMUL[@]}" info 2>"$WORK/info.err")
  rc=$?
  [ "$rc" -eq 3 ] && cannot_run "$(field "$out" error)"
  [ "$rc" -ne 0 ] && cannot_run "PyTorch could not query the GPU (status $rc): $out $(tail -n 3 "$WORK/info.err")"
  echo "check_compute_share: $(field "$out" device_name), PyTorch $(field "$out" torch_version)" >&2
}

# group NAME SPEC [NAME SPEC...]: runs one loop per NAME at once. SPEC is "-" for no
# gpuslice, or the options of `gpuslice run`. Sets OUT_<NAME> to each loop's JSON line.
# Returns 1 (with ERR set) when a loop fails or the group runs out of time.
group() {
  local dir=$WORK/group.$RANDOM name spec n=0 left start
  mkdir -p "$dir"
  PIDS=()
  while [ "$#" -ge 2 ]; do
    name=$1 spec=$2
    shift 2
    local cmd=("${MATMUL[@]}" loop --sync-dir "$dir" --name "$name" --size "$SIZE" --seconds "$WINDOW")
    # shellcheck disable=SC2086  # SPEC is a list of options
    [ "$spec" = - ] || cmd=("$GPUSLICE" run $spec -- "${cmd[@]}")
    "${cmd[@]}" >"$dir/out.$name" 2>"$dir/err.$name" &
    PIDS+=($!)
    n=$((n + 1))
  done
  start=$SECONDS
  while [ "$(find "$dir" -name 'ready.*' | wc -l)" -lt "$n" ]; do
    for p in "${PIDS[@]}"; do
      kill -0 "$p" 2>/dev/null || { ERR="a loop exited before it was ready: $(cat "$dir"/out.* "$dir"/err.* | tail -n 4)"; return 1; }
    done
    [ $((SECONDS - start)) -gt "$READY_MAX" ] && { ERR="the loops were not ready within ${READY_MAX}s"; return 1; }
    sleep 0.2
  done
  python3 -c 'import time; print(time.monotonic_ns() + 300_000_000)' >"$dir/go.tmp" && mv "$dir/go.tmp" "$dir/go"
  for p in "${PIDS[@]}"; do
    left=$((DEADLINE - SECONDS))
    while kill -0 "$p" 2>/dev/null && [ "$left" -gt 0 ]; do sleep 0.2; left=$((DEADLINE - SECONDS)); done
    [ "$left" -le 0 ] && { ERR="out of time: the check is bounded to ~5 minutes"; return 1; }
    wait "$p" || { ERR="a loop failed: $(cat "$dir"/out.* "$dir"/err.* | tail -n 4)"; return 1; }
  done
  PIDS=()
  for f in "$dir"/out.*; do
    printf -v "OUT_${f##*.}" '%s' "$(tail -n 1 "$f")"
  done
}

rate() { field "$1" matmuls_per_second; }

check_alone() {
  if ! group alone -; then
    cannot_run "the reference loop failed: $ERR"
  fi
  ALONE=$(rate "$OUT_alone")
  echo "check_compute_share: alone $ALONE matmuls/s ($(field "$OUT_alone" tflops) TFLOPS)" >&2
  [ "$(calc "$ALONE > 0")" = 1 ] || cannot_run "the reference loop completed nothing: $OUT_alone"
}

check_shares() {
  local r70 r30 ratio sum
  if ! group t70 "--compute 70" t30 "--compute 30"; then
    record FAIL "70/30 under gpuslice: throughput ratio" "$ERR"
    return
  fi
  r70=$(rate "$OUT_t70") r30=$(rate "$OUT_t30")
  ratio=$(calc "$r70 / max($r30, 1e-9)")
  sum=$(calc "($r70 + $r30) / $ALONE")
  local detail="70: $r70/s ($(calc "100 * $r70 / $ALONE")% of alone), 30: $r30/s ($(calc "100 * $r30 / $ALONE")%), ratio $ratio"
  if [ "$(calc "abs($ratio - 7 / 3) <= 0.15 * 7 / 3")" = 1 ]; then
    record PASS "70/30 under gpuslice: ratio within 15% of 2.33" "$detail"
  else
    record FAIL "70/30 under gpuslice: ratio within 15% of 2.33" "$detail"
  fi
  if [ "$(calc "$sum >= 0.9")" = 1 ]; then
    record PASS "70/30 under gpuslice: together >= 90% of one alone" "$(calc "100 * $sum")%"
  else
    record FAIL "70/30 under gpuslice: together >= 90% of one alone" "$(calc "100 * $sum")%"
  fi
}

check_cap() {
  local r frac
  if ! group cap "--compute 30 --compute-policy cap"; then
    record FAIL "--compute 30 --compute-policy cap alone: ~30% of alone" "$ERR"
    return
  fi
  r=$(rate "$OUT_cap")
  frac=$(calc "100 * $r / $ALONE")
  if [ "$(calc "abs($frac - 30) <= 5")" = 1 ]; then
    record PASS "--compute 30 --compute-policy cap alone: 30% +- 5 of alone" "$r/s, $frac%"
  else
    record FAIL "--compute 30 --compute-policy cap alone: 30% +- 5 of alone" "$r/s, $frac%"
  fi
}

check_without() {
  local ra rb ratio
  if ! group a - b -; then
    record FAIL "two loops without gpuslice: near 1:1 (the control)" "$ERR"
    return
  fi
  ra=$(rate "$OUT_a") rb=$(rate "$OUT_b")
  ratio=$(calc "max($ra, $rb) / max(min($ra, $rb), 1e-9)")
  if [ "$(calc "$ratio < 1.5")" = 1 ]; then
    record PASS "two loops without gpuslice: near 1:1 (the control)" "$ra/s and $rb/s, ratio $ratio"
  else
    record FAIL "two loops without gpuslice: near 1:1 (the control)" "$ra/s and $rb/s, ratio $ratio"
  fi
}

main() {
  ensure_build "$WORK/build.log"
  preflight
  check_alone
  check_shares
  check_cap
  check_without

  finish "${SIZE}x${SIZE} float16 matmuls, ${WINDOW}s windows, ${SECONDS}s"
}

main "$@"
