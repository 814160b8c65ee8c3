#!/usr/bin/env bash
# Suspending a tenant on a real NVIDIA GPU (docs/suspend.md), checked with PyTorch and
# nvidia-smi. Needs a driver with the checkpoint API (r570 or later), a GPU with more than
# 2 x $GS_GPU_CHECK_GIB + 4 GiB, PyTorch with CUDA, nvidia-smi and python3; run as root or as
# the user the tenants run as (the driver lets a process checkpoint only what it could ptrace).
# Not part of ctest; see README.md. It has not yet run on a real GPU.
#
# Run from anywhere: tests/gpu/check_suspend.sh. The build directory is $GS_BUILD_DIR (default
# build/); when it lacks the CLI or the interposer they are built first. Prints a PASS/FAIL/SKIP
# table. Exit status: 0 every check passed (SKIPs allowed), 1 a check failed, 2 the checks
# cannot run here. Takes a few minutes (PyTorch starts nine times).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${GS_BUILD_DIR:-$ROOT/build}
GIB=${GS_GPU_CHECK_GIB:-4}          # the tenant's memory, GiB
TIMING_GIB=${GS_GPU_CHECK_TIMING:-"1 8"}
PROBE=(python3 "$ROOT/tests/gpu/torch_suspend.py")

unset GPUSLICE_SIM GPUSLICE_TENANT LD_PRELOAD PYTORCH_CUDA_ALLOC_CONF
WORK=$(mktemp -d /tmp/gs-gpu-suspend.XXXXXX) || exit 2
chmod 0755 "$WORK"
export GPUSLICE_STATE_DIR=$WORK/state GPUSLICE_SOCKET=$WORK/state/gpuslice.sock
export GPUSLICE_LEDGER_DB=$WORK/ledger.db GPUSLICE_METRICS_LISTEN=off
GS=("$BUILD/bin/gpuslice")
DAEMON_PID=
cleanup() {
  [ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
  pkill -P $$ 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

CHECK=check_suspend
# shellcheck source=check-lib.sh
. "$ROOT/tests/gpu/check-lib.sh"

field() {
  python3 -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2:]:
    v = v.get(k, "") if isinstance(v, dict) else ""
print("null" if v is None else str(v).lower() if isinstance(v, bool) else v)' "$@" 2>/dev/null
}
calc() { python3 -c "import sys; print($1)"; }
used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | tr -d ' '; }
total_mib() { nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | tr -d ' '; }
on_gpu() { nvidia-smi --query-compute-apps=pid --format=csv,noheader | tr -d ' ' | grep -qx "$1"; }
state() { "${GS[@]}" ps --json |
  python3 -c 'import json,sys; print(next((t["state"] for t in json.load(sys.stdin)["tenants"] if t["name"] == sys.argv[1]), "none"))' "$1"; }

# start_daemon OPTIONS...: a daemon on this GPU with a private state dir, socket and ledger.
start_daemon() {
  stop_daemon
  mkdir -p "$GPUSLICE_STATE_DIR"
  "${GS[@]}" daemon --foreground "$@" >>"$WORK/daemon.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 100); do "${GS[@]}" ps >/dev/null 2>&1 && return; sleep 0.1; done
  cannot_run "the daemon did not start: $(tail -n 3 "$WORK/daemon.log")"
}
stop_daemon() {
  [ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
  DAEMON_PID=
}

# tenant NAME GIB: starts `gpuslice run --name NAME -- torch_suspend.py hold GIB` as a coprocess
# T_NAME; T_PID_NAME is the pid of its Python process, as it says.
tenant() {
  local name=$1 gib=$2 line
  coproc "T_$name" { "${GS[@]}" run --name "$name" -- "${PROBE[@]}" hold "$gib" 2>>"$WORK/$name.err"; }
  local -n fds="T_$name"
  read -r -t 120 line <&"${fds[0]}" || cannot_run "tenant $name did not start: $(tail -n 3 "$WORK/$name.err")"
  [ "$(field "$line" ready)" = true ] || cannot_run "tenant $name: $line"
  printf -v "T_PID_$name" '%s' "$(field "$line" pid)"
}
# ask NAME COMMAND: one command to the tenant, its JSON answer on stdout.
ask() {
  local -n fds="T_$1"
  local line
  echo "$2" >&"${fds[1]}"
  read -r -t 120 line <&"${fds[0]}" || line='{"error": "no answer"}'
  echo "$line"
}
end_tenant() { ask "$1" exit >/dev/null 2>&1; }

pass_if() { # pass_if CONDITION CHECK DETAIL
  if [ "$(calc "$1")" = True ]; then record PASS "$2" "$3"; else record FAIL "$2" "$3"; fi
}

preflight() {
  command -v nvidia-smi >/dev/null || cannot_run "nvidia-smi is missing"
  local bw
  bw=$("${PROBE[@]}" bandwidth) || cannot_run "PyTorch could not use the GPU: $bw"
  H2D=$(field "$bw" h2d) D2H=$(field "$bw" d2h)
  TOTAL=$(total_mib)
  [ "$TOTAL" -gt $(((2 * GIB + 4) * 1024)) ] || cannot_run "the GPU has $TOTAL MiB; this check needs more than $(((2 * GIB + 4) * 1024))"
  echo "check_suspend: $TOTAL MiB, pinned copies $(calc "$H2D / 1e9") GB/s to and $(calc "$D2H / 1e9") GB/s from the GPU" >&2
}

# Suspended: NVML shows the memory free and the process gone; the next kernel resumes it; the
# data and addresses are the same.
check_suspend_and_resume_on_demand() {
  tenant idle "$GIB"
  local sums0 before after out sec
  sums0=$(ask idle sums)
  before=$(used_mib)
  if ! out=$("${GS[@]}" suspend idle 2>&1); then
    record FAIL "gpuslice suspend of a $GIB GiB tenant" "$out"
    end_tenant idle
    return
  fi
  record PASS "gpuslice suspend of a $GIB GiB tenant" "$out"
  after=$(used_mib)
  pass_if "$before - $after >= $GIB * 1024" "NVML: the tenant's memory is free" "used $before -> $after MiB"
  if on_gpu "$T_PID_idle"; then record FAIL "NVML: the process is off the GPU" "pid $T_PID_idle listed"
  else record PASS "NVML: the process is off the GPU" "pid $T_PID_idle not listed"; fi
  out=$(ask idle kernel)
  sec=$(field "$out" seconds)
  pass_if "'$sec' != '' and '$(state idle)' == 'running'" "its next kernel resumes it" "waited ${sec}s: $out"
  pass_if "'$(ask idle sums)' == '$sums0'" "every tensor intact at the same address" "$GIB x 1 GiB, SHA-256 and data_ptr"
  end_tenant idle
}

check_lock_timeout() {
  tenant busy 1
  local sums0 out rc
  sums0=$(ask busy sums)
  ask busy "work 3000" >/dev/null
  out=$("${GS[@]}" suspend busy --lock-timeout 0.2 2>&1)
  rc=$?
  pass_if "$rc == 1 and 'CUDA_ERROR_NOT_READY' in '''$out''' and '$(state busy)' == 'running'" \
    "a lock that times out leaves the tenant running" "$out"
  pass_if "'$(field "$(ask busy kernel)" seconds)' != '' and '$(ask busy sums)' == '$sums0'" \
    "... untouched" "kernel and sums after"
  end_tenant busy
}

check_timing() {
  local gib s r out
  for gib in $TIMING_GIB; do
    [ "$TOTAL" -gt $(((gib + 2) * 1024)) ] || { record SKIP "suspend/resume of $gib GiB" "GPU too small"; continue; }
    tenant "t$gib" "$gib"
    s=$({ /usr/bin/time -f %e "${GS[@]}" suspend "t$gib" >/dev/null; } 2>&1 | tail -n 1)
    r=$({ /usr/bin/time -f %e "${GS[@]}" resume "t$gib" >/dev/null; } 2>&1 | tail -n 1)
    out="suspend ${s}s ($(calc "$gib * 2**30 / max($s, 1e-3) / 1e9") GB/s), resume ${r}s ($(calc "$gib * 2**30 / max($r, 1e-3) / 1e9") GB/s); pinned copies $(calc "$D2H / 1e9") / $(calc "$H2D / 1e9") GB/s"
    record PASS "suspend/resume of $gib GiB, against PCIe" "$out"
    end_tenant "t$gib"
  done
}

# With the memory lent (oversubscribe on), a resume that finds no room fails at its timeout
# naming the bytes missing; once the room is back, the tenant resumes intact.
check_oversubscribed_timeout() {
  tenant lent "$GIB"
  local sums0 out hog rc
  sums0=$(ask lent sums)
  "${GS[@]}" suspend lent >/dev/null 2>&1 || { record FAIL "oversubscribed resume times out" "suspend failed"; end_tenant lent; return; }
  python3 -c 'import sys, time, torch
free, _ = torch.cuda.mem_get_info(0)
held = torch.empty(free - (1 << 30) * int(sys.argv[1]) // 2, dtype=torch.uint8, device="cuda:0")
print("held", flush=True); sys.stdin.read()' "$GIB" >"$WORK/hog.out" 2>&1 &
  hog=$!
  for _ in $(seq 300); do grep -q held "$WORK/hog.out" && break; sleep 0.1; done
  out=$("${GS[@]}" resume lent 2>&1)
  rc=$?
  pass_if "$rc == 1 and 'bytes) missing' in '''$out''' and '$(state lent)' == 'suspended'" \
    "oversubscribed resume fails at its timeout, naming the bytes" "$out"
  kill "$hog" 2>/dev/null
  wait "$hog" 2>/dev/null
  pass_if "'$(field "$(ask lent kernel)" seconds)' != '' and '$(ask lent sums)' == '$sums0'" \
    "... and resumes intact once the room is back" "kernel and sums after"
  end_tenant lent
}

# Without oversubscription the daemon keeps the memory: NVML still counts it used.
check_kept() {
  tenant kept "$GIB"
  local before after
  before=$(used_mib)
  "${GS[@]}" suspend kept >/dev/null 2>&1
  after=$(used_mib)
  pass_if "abs($before - $after) < 512" "oversubscribe off: the suspended memory stays taken" "used $before -> $after MiB"
  pass_if "$("${GS[@]}" resume kept >/dev/null 2>&1; echo $?) == 0" "... and the resume does not wait" ""
  end_tenant kept
}

# Last: a driver that does not keep a process in a good state after refusing it (as r570's
# README warns for UVM) may leave this tenant broken.
check_managed_refused() {
  tenant uvm 1
  local out
  ask uvm "managed 64" >/dev/null
  out=$("${GS[@]}" suspend uvm 2>&1)
  pass_if "'CUDA_ERROR_NOT_SUPPORTED' in '''$out''' and '$(state uvm)' == 'running'" \
    "managed memory is refused with the reason, the tenant running" "$out"
  pass_if "'$(field "$(ask uvm kernel)" seconds)' != ''" "... and it still runs kernels" ""
  end_tenant uvm
}

main() {
  ensure_build "$WORK/build.log"
  preflight
  start_daemon --oversubscribe on --resume-timeout 5
  check_suspend_and_resume_on_demand
  check_lock_timeout
  check_timing
  check_oversubscribed_timeout
  start_daemon
  check_kept
  check_managed_refused
  stop_daemon
  finish "$GIB GiB tenants, ${SECONDS}s"
}

main "$@"
