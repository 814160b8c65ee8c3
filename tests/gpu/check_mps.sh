#!/usr/bin/env bash
# MPS through the node daemon on a real NVIDIA GPU, with NVIDIA's own nvidia-cuda-mps-control:
# the daemon's control daemon for GPU 0, two PyTorch tenants with thread percentages 30 and 70
# connecting through it, its server's settings, and the daemon's shutdown stopping it. The
# tests in tests/integration/test_daemon_mps.py do the same against a stand-in; this is the
# check that the stand-in speaks for the real thing. Not part of ctest; runs where a GPU is
# lent. See README.md.
#
# The GPU's settings are left alone: the daemon runs with --mps-exclusive off (no compute
# mode change; MPS works without exclusive-process), and the check fails if the compute mode
# differs afterwards. Nothing here touches MIG.
#
# Exit status: 0 every check passed, 1 a check failed, 2 the checks cannot run here (no GPU,
# no nvidia-cuda-mps-control, no PyTorch, no build).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${GS_BUILD_DIR:-$ROOT/build}
unset GPUSLICE_SIM GPUSLICE_TENANT LD_PRELOAD CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
WORK=$(mktemp -d /tmp/gs-gpu-mps.XXXXXX) || exit 2
export GPUSLICE_STATE_DIR=$WORK/state GPUSLICE_SOCKET=$WORK/state/gpuslice.sock
export GPUSLICE_LEDGER_DB=$WORK/ledger.db GPUSLICE_METRICS_LISTEN=off
DAEMON=
cleanup() {
  [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

CHECK=check_mps
# shellcheck source=check-lib.sh
. "$ROOT/tests/gpu/check-lib.sh"

command -v nvidia-smi >/dev/null || cannot_run "no nvidia-smi: no NVIDIA driver here"
command -v nvidia-cuda-mps-control >/dev/null || cannot_run "no nvidia-cuda-mps-control on PATH"
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || cannot_run "no PyTorch with CUDA"
ensure_build "$WORK/build.log"
MODE_BEFORE=$(nvidia-smi -i 0 --query-gpu=compute_mode --format=csv,noheader)

"$BUILD/bin/gpuslice" daemon --foreground --sharing 0=mps --mps-exclusive off >"$WORK/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do [ -S "$GPUSLICE_SOCKET" ] && break; sleep 0.1; done
[ -S "$GPUSLICE_SOCKET" ] || { cat "$WORK/daemon.log" >&2; cannot_run "the daemon did not start"; }
PIPE=$GPUSLICE_STATE_DIR/mps/gpu0/pipe
LOGDIR=$GPUSLICE_STATE_DIR/mps/gpu0/log
CONTROL=$(cat "$PIPE/nvidia-cuda-mps-control.pid" 2>/dev/null)
if [ -n "$CONTROL" ] && kill -0 "$CONTROL" 2>/dev/null; then
  record PASS "a control daemon runs for GPU 0" "pid $CONTROL, pipes in $PIPE"
else
  record FAIL "a control daemon runs for GPU 0" "no live pid in $PIPE"
fi

ctl() { echo "$*" | CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_LOG_DIRECTORY=$LOGDIR nvidia-cuda-mps-control; }

# Two tenants: each creates its context through MPS and holds it for 20 s.
CLIENT='import os, time, torch; x = torch.ones(1, device="cuda"); print(os.getpid(), flush=True); time.sleep(20)'
"$BUILD/bin/gpuslice" run --name mps30 --gpu 0 --compute 30 -- python3 -c "$CLIENT" >"$WORK/a" 2>&1 &
A=$!
"$BUILD/bin/gpuslice" run --name mps70 --gpu 0 --compute 70 -- python3 -c "$CLIENT" >"$WORK/b" 2>&1 &
B=$!
for _ in $(seq 300); do [ -s "$WORK/a" ] && [ -s "$WORK/b" ] && break; sleep 0.1; done
SERVER=$(ctl get_server_list | head -1)
CLIENTS=$(ctl get_client_list "$SERVER" | tr '\n' ' ')
PA=$(head -1 "$WORK/a") PB=$(head -1 "$WORK/b")
case " $CLIENTS " in
  *" $PA "*" $PB "* | *" $PB "*" $PA "*) record PASS "both tenants are clients of the MPS server" "server $SERVER: $CLIENTS" ;;
  *) record FAIL "both tenants are clients of the MPS server" "server '$SERVER' lists '$CLIENTS', tenants $PA $PB" ;;
esac
PCT=$(ctl get_active_thread_percentage "$SERVER")
[ "${PCT%%.*}" = 70 ] && record PASS "the server has the larger tenant's 70%" "$PCT" ||
  record FAIL "the server has the larger tenant's 70%" "'$PCT'"
wait "$A" "$B"

kill "$DAEMON" && wait "$DAEMON"
DAEMON=
if [ -n "$CONTROL" ] && kill -0 "$CONTROL" 2>/dev/null; then
  record FAIL "the daemon's shutdown stops the control daemon" "pid $CONTROL still runs"
else
  record PASS "the daemon's shutdown stops the control daemon" ""
fi
MODE_AFTER=$(nvidia-smi -i 0 --query-gpu=compute_mode --format=csv,noheader)
[ "$MODE_AFTER" = "$MODE_BEFORE" ] && record PASS "the GPU's compute mode is left as it was" "$MODE_AFTER" ||
  record FAIL "the GPU's compute mode is left as it was" "$MODE_BEFORE -> $MODE_AFTER"
finish "GPU 0, two MPS tenants, ${SECONDS}s"
