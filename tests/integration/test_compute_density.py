"""Many tenants on one GPU's board (issue #17): most of them idle, as serving tenants are, each
launching a short kernel now and then with a small share, beside a few busy ones held to caps.
The scheduler looks only at the rows that compete (the board's busy bitmap), so the idle rows
cost the busy tenants nothing but the idle kernels themselves: each busy tenant still gets its
cap, and the GPU stays as busy as the caps allow. The full-size figures (1,024 tenants, 32 busy
at 3%, 60 s) are bench/run-density.py's; this is its shape at a size CI can start."""
import json
import subprocess
import time

import pytest

from compute_util import board_header, board_row
from quota_env import GPUSLICE, quota_env, state_dir
from wl_run import WORKLOAD

IDLE, BUSY, CAP = 120, 4, 20
TOLERANCE = 3.0


def argv(name, opts, workload, start, seconds, window):
    return [str(GPUSLICE), "run", "--name", name] + opts + ["--", str(WORKLOAD), "busy"] + workload + [
        "--seconds", f"{seconds:.3f}", "--start-at-ns", str(start), "--window-start-ns", str(window[0]),
        "--window-end-ns", str(window[1])]


def test_busy_tenants_keep_their_caps_among_many_idle_ones(tmp_path):
    env = quota_env(tmp_path)
    start = time.monotonic_ns() + int((0.08 * (IDLE + BUSY) + 3) * 1e9)
    window = (start + int(2e9), start + int(8e9))
    seconds = (window[1] - start) / 1e9 + 0.5
    procs = []
    try:
        for i in range(BUSY):
            procs.append(subprocess.Popen(
                argv(f"busy{i}", ["--compute", str(CAP), "--compute-policy", "cap"], ["--kernel-us", "1000"], start,
                     seconds, window), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for i in range(IDLE):
            procs.append(subprocess.Popen(
                argv(f"idle{i}", ["--compute", "1"], ["--kernel-us", "200", "--every", "1"], start, seconds, window),
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        assert time.monotonic_ns() < start, "spawning the tenants took longer than allowed"
        while time.monotonic_ns() < window[1] - int(1e9):
            time.sleep(0.1)
        [board] = list((state_dir(env) / "gpus").iterdir())
        raw = board.read_bytes()
        live = sum(board_row(raw, i)[0] == 2 for i in range(board_header(raw)["rows_used"]))
        lines = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            lines.append(next(json.loads(x) for x in out.splitlines() if x.startswith("{") and '"busy"' in x))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    span = (window[1] - window[0]) / 1e9
    shares = [100.0 * x["window_kernel_seconds"] / span for x in lines[:BUSY]]
    device = 100.0 * sum(x["window_kernel_seconds"] for x in lines) / span
    print(f"\n[compute] {IDLE} idle tenants, {BUSY} capped at {CAP}%: shares {[round(s, 2) for s in shares]}, "
          f"device busy {device:.1f}%, rows live {live}")
    assert live == IDLE + BUSY, live
    for s in shares:
        assert s == pytest.approx(CAP, abs=TOLERANCE), shares
    assert device >= BUSY * CAP - 2 * TOLERANCE, device
    assert all(x["kernels"] >= 5 for x in lines[BUSY:]), "an idle tenant was starved"
