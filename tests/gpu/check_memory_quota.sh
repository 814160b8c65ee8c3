#!/usr/bin/env bash
# The memory quota on a real NVIDIA GPU, checked with PyTorch. Needs a GPU with more than
# VRAM + 4 GiB of memory, its driver, PyTorch with CUDA, and python3; it is not part of ctest
# (there is no GPU on the build machines) and runs only where a GPU is lent. See README.md.
#
# Run from anywhere: tests/gpu/check_memory_quota.sh. The build directory is $GS_BUILD_DIR
# (default build/ at the repository root); when it lacks the CLI or the interposer, they are
# built first (cmake + Ninja; the CLI needs jansson). The limit is $GS_GPU_CHECK_VRAM bytes
# (default 4000000000, i.e. --vram 4G, which is decimal).
#
# Each check runs PyTorch once, inside a tenant (`gpuslice run --vram ...`) or without
# gpuslice to show that the same workload gets far more, so that the checks can fail. Prints
# a PASS/FAIL/SKIP table. Exit status: 0 every check passed (SKIPs allowed), 1 a check
# failed, 2 the checks cannot run here (no GPU, no PyTorch, no build). Bounded to ~5 minutes:
# each step has a timeout, and steps that no longer fit are reported as failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${GS_BUILD_DIR:-$ROOT/build}
VRAM=${GS_GPU_CHECK_VRAM:-4000000000}
PROBE=(python3 "$ROOT/tests/gpu/torch_probe.py")
TENANT=("$BUILD/bin/gpuslice" run --vram "$VRAM" --)
CHUNK_MIB=256
SLACK=$((512 << 20))            # what the caching allocator may leave unused below the limit
EXTRA=$((4 << 30))              # how far past the limit the runs without gpuslice go
DEADLINE=285                    # seconds; every step must end by then
STEP_MAX=90

unset GPUSLICE_SIM GPUSLICE_TENANT LD_PRELOAD PYTORCH_CUDA_ALLOC_CONF
GPUSLICE_STATE_DIR=$(mktemp -d /tmp/gs-gpu-check.XXXXXX) || exit 2
export GPUSLICE_STATE_DIR
LOG=$GPUSLICE_STATE_DIR/log
trap 'rm -rf "$GPUSLICE_STATE_DIR"' EXIT

CHECK=check_memory_quota
# shellcheck source=check-lib.sh
. "$ROOT/tests/gpu/check-lib.sh"

# step SECONDS CMD...: runs CMD with a timeout that still fits the deadline; stdout is the
# command's, stderr goes to $LOG. Fails (124) without running when no time is left.
step() {
  local left=$((DEADLINE - SECONDS)) t=$1
  shift
  [ "$left" -lt 10 ] && { echo '{"error": "out of time: the check is bounded to ~5 minutes"}'; return 124; }
  [ "$t" -gt "$left" ] && t=$left
  timeout "$t" "$@" 2>"$LOG"
}

# field JSON NAME: prints JSON's top-level NAME ("" when absent, "null" for null).
field() {
  python3 -c 'import json,sys
v = json.loads(sys.argv[1]).get(sys.argv[2], "")
print("null" if v is None else str(v).lower() if isinstance(v, bool) else v)' "$1" "$2" 2>/dev/null
}

mib() { echo "$(($1 >> 20)) MiB ($1 bytes)"; }

# The GPU and PyTorch without gpuslice; sets REAL_TOTAL.
preflight() {
  local out rc
  command -v python3 >/dev/null || cannot_run "python3 is missing"
  out=$(step "$STEP_MAX" "${PROBE[@]}" info)
  rc=$?
  [ "$rc" -eq 3 ] && cannot_run "$(field "$out" error)"
  [ "$rc" -ne 0 ] && cannot_run "PyTorch could not query the GPU (status $rc): $out $(tail -n 3 "$LOG")"
  REAL_TOTAL=$(field "$out" total_bytes)
  echo "check_memory_quota: $(field "$out" device_name), $(mib "$REAL_TOTAL"), PyTorch $(field "$out" torch_version)" >&2
  [ "$REAL_TOTAL" -gt $((VRAM + EXTRA)) ] ||
    cannot_run "the GPU has $(mib "$REAL_TOTAL"); this check needs more than $(mib $((VRAM + EXTRA)))"
}

check_info_in_tenant() {
  local out total free devtotal
  if ! out=$(step "$STEP_MAX" "${TENANT[@]}" "${PROBE[@]}" info); then
    record FAIL "mem_get_info inside the tenant" "probe failed: $(field "$out" error) $(tail -n 2 "$LOG")"
    return
  fi
  total=$(field "$out" total_bytes)
  free=$(field "$out" free_bytes)
  devtotal=$(field "$out" device_total_memory)
  if [ "$total" -eq "$VRAM" ]; then
    record PASS "torch.cuda.mem_get_info() total = the limit" "$total bytes"
  else
    record FAIL "torch.cuda.mem_get_info() total = the limit" "$total bytes, want $VRAM"
  fi
  if [ "$free" -le "$total" ]; then
    record PASS "torch.cuda.mem_get_info() free <= total" "free $free bytes"
  else
    record FAIL "torch.cuda.mem_get_info() free <= total" "free $free > total $total"
  fi
  if [ "$devtotal" -eq "$VRAM" ]; then
    record PASS "get_device_properties().total_memory = the limit" "$devtotal bytes"
  else
    record FAIL "get_device_properties().total_memory = the limit" "$devtotal bytes, want $VRAM"
  fi
}

# check_oom_in_tenant LABEL [ENV=VALUE...]: allocation until OOM stays within the limit.
check_oom_in_tenant() {
  local label=$1 out alloc maxres expandable refusals
  shift
  if ! out=$(step "$STEP_MAX" env "$@" "${TENANT[@]}" "${PROBE[@]}" oom --chunk-mib "$CHUNK_MIB"); then
    record FAIL "$label: allocate ${CHUNK_MIB} MiB tensors until OOM" "probe failed: $(field "$out" error) $(tail -n 2 "$LOG")"
    return
  fi
  alloc=$(field "$out" allocated_bytes)
  maxres=$(field "$out" max_reserved_bytes)
  expandable=$(field "$out" expandable_segments)
  refusals=$(grep -c 'gpuslice: .*refused' "$LOG")
  if [ "$(field "$out" oom)" != true ]; then
    record FAIL "$label: torch.cuda.OutOfMemoryError under the limit" "no OOM after $(mib "$alloc")"
  elif [ "$alloc" -gt "$VRAM" ] || [ "$alloc" -lt $((VRAM - SLACK)) ]; then
    record FAIL "$label: held at OOM within [limit - 512 MiB, limit]" "$(mib "$alloc")"
  else
    record PASS "$label: held at OOM within [limit - 512 MiB, limit]" "$(mib "$alloc") in $(field "$out" tensors) tensors"
  fi
  if [ "$maxres" -le "$VRAM" ]; then
    record PASS "$label: max_memory_reserved() <= limit" "$(mib "$maxres")"
  else
    record FAIL "$label: max_memory_reserved() <= limit" "$(mib "$maxres")"
  fi
  if [ "$refusals" -eq 1 ]; then
    record PASS "$label: one gpuslice refusal line on stderr" "$(grep 'gpuslice: .*refused' "$LOG" | cut -c1-100)"
  else
    record FAIL "$label: one gpuslice refusal line on stderr" "$refusals lines"
  fi
  if [ "$#" -gt 0 ]; then
    case $expandable in
    true) record PASS "$label: PyTorch used expandable segments (VMM)" "memory snapshot says so" ;;
    false) record FAIL "$label: PyTorch used expandable segments (VMM)" "memory snapshot says it did not" ;;
    *) record SKIP "$label: PyTorch used expandable segments (VMM)" "this PyTorch's snapshot does not say" ;;
    esac
  fi
}

# check_oom_without LABEL [ENV=VALUE...]: the same workload, no gpuslice, passes the limit.
check_oom_without() {
  local label=$1 out alloc
  shift
  if ! out=$(step "$STEP_MAX" env "$@" "${PROBE[@]}" oom --chunk-mib "$CHUNK_MIB" --stop-after $((VRAM + EXTRA))); then
    record FAIL "$label without gpuslice: gets far more than the limit" "probe failed: $(field "$out" error)"
    return
  fi
  alloc=$(field "$out" allocated_bytes)
  if [ "$alloc" -gt $((VRAM + EXTRA / 2)) ]; then
    record PASS "$label without gpuslice: gets far more than the limit" "$(mib "$alloc") (stopped there)"
  else
    record FAIL "$label without gpuslice: gets far more than the limit" "only $(mib "$alloc")"
  fi
}

# nvidia-smi's view: MiB, rounded either way, on every GPU (--vram applies to all of them).
check_nvidia_smi() {
  local inside outside lo=$((VRAM >> 20)) hi=$(((VRAM + (1 << 20) - 1) >> 20)) bad="" total used
  if ! command -v nvidia-smi >/dev/null; then
    record SKIP "nvidia-smi inside the tenant shows the limit" "nvidia-smi is not installed"
    return
  fi
  local q=(nvidia-smi "--query-gpu=memory.total,memory.used" "--format=csv,noheader,nounits")
  if ! inside=$(step 60 "${TENANT[@]}" "${q[@]}") || [ -z "$inside" ]; then
    record FAIL "nvidia-smi inside the tenant shows the limit" "nvidia-smi failed: $(tail -n 2 "$LOG")"
    return
  fi
  while IFS=', ' read -r total used; do
    { [ "$total" -ge "$lo" ] && [ "$total" -le "$hi" ] && [ "$used" -le "$total" ]; } || bad="$bad [$total, $used]"
  done <<<"$inside"
  if [ -z "$bad" ]; then
    record PASS "nvidia-smi inside the tenant shows the limit" "total,used MiB: $(echo "$inside" | tr '\n' ' ')"
  else
    record FAIL "nvidia-smi inside the tenant shows the limit" "want total $lo..$hi MiB, got$bad"
  fi
  outside=$(step 60 "${q[@]}" | head -n 1)
  if [ "${outside%%,*}" -gt "$hi" ] 2>/dev/null; then
    record PASS "nvidia-smi without gpuslice shows more" "total,used MiB: $outside"
  else
    record FAIL "nvidia-smi without gpuslice shows more" "got '$outside'"
  fi
}

main() {
  ensure_build "$LOG"
  preflight
  check_info_in_tenant
  check_oom_in_tenant "plain (cudaMalloc)"
  check_oom_in_tenant "expandable segments" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  check_nvidia_smi
  check_oom_without "plain (cudaMalloc)"
  check_oom_without "expandable segments" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True

  finish "limit $VRAM bytes, ${SECONDS}s"
}

main "$@"
