#!/usr/bin/env python3
"""Ground truth for the idle detector (issue #19): the Alibaba GenAI sample (data/alibaba-genai:
143 pods, 22.8 h of GPU duty cycle and memory at 57 s steps) replayed as tenants on the
simulated GPU at accelerated time, against the idle intervals computed directly from the data.

Each pod is one tenant (`gpuslice run --label type=genai -- bench/idle_replay_tenant.py`) that,
at each step of the trace, holds the step's memory (scaled by --mem-scale, in 64 MiB chunks) and
runs a sim_busy kernel of its duty cycle (scaled by the duty scale, chosen so that no simulated
GPU's summed duty passes 90%: kernels of different pods on one GPU would otherwise queue and
spill into later steps) times the step's real length (--step-seconds). Pods go round robin over
16 simulated H200s. A thread moves the daemon's idle clock (the test-only
GPUSLICE_TEST_CLOCK_FILE) at the trace's pace, 57 s of trace per step, so the detector's
idle_seconds are trace seconds. The daemon samples every --interval seconds with one rule
(threshold --device-threshold of device time, duration 15 min, notify actions at 15, 30 and 60
min, dry run): the ledger records when each threshold was crossed.

Truth: a pod is idle at step k when its duty cycle is 0 and it holds memory; its idle time is
the trace time since its last step with a non-zero duty cycle (or since its series began, or
since it last held nothing). Flagged at threshold T: idle time >= T. The detector's flag at step
k: its idle_seconds (GET /v1/idle, read once per step, mid-step) >= T. Precision and recall are
over (pod, step) pairs; GPU-hours reclaimable: the flagged steps' trace time (each pod a GPU).

Prints a table and a JSON object. Exit status: 0 ran, 1 failed."""
import argparse
import bisect
import csv
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
from daemon_http import request  # noqa: E402

STEP = 57.0
GPUS = 16
THRESHOLDS = (15, 30, 60)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", type=pathlib.Path, default=REPO / "build")
    p.add_argument("--data", type=pathlib.Path, default=pathlib.Path("/work/shared/data/alibaba-genai"))
    p.add_argument("--step-seconds", type=float, default=0.5, help="real seconds per 57 s trace step (default 0.5)")
    p.add_argument("--interval", type=float, default=0.1, help="the daemon's sampling interval (default 0.1)")
    p.add_argument("--hours", type=float, default=0, help="replay only the first HOURS of the trace (default all)")
    p.add_argument("--pods", type=int, default=0, help="replay only the first N pods (default all)")
    p.add_argument("--mem-scale", type=float, default=1 / 64, help="memory scale (default 1/64)")
    p.add_argument("--device-threshold", type=float, default=0.001,
                   help="the rule's device-time fraction under which a tenant is idle (default 0.001)")
    return p.parse_args()


def load(data):
    duty, mem = defaultdict(dict), defaultdict(dict)
    with open(data / "pod_gpu_duty_cycle_anon.csv") as f:
        for r in csv.DictReader(f):
            duty[r["container_ip"]][float(r["timestamp_anon"])] = float(r["value"])
    with open(data / "pod_gpu_memory_used_bytes_anon.csv") as f:
        for r in csv.DictReader(f):
            mem[r["container_ip"]][float(r["timestamp_anon"])] = float(r["value"])
    return duty, mem


def series(duty, mem, grid):
    """Per pod, per grid step: (duty %, bytes), forward-filled inside the pod's life, (0, 0) outside."""
    out = {}
    for pod in sorted(duty):
        ts = sorted(set(duty[pod]) | set(mem[pod]))
        first, last = ts[0], ts[-1]
        d = m = 0.0
        steps = []
        for t in grid:
            if t < first or t > last:
                steps.append((0.0, 0.0))
                continue
            d = duty[pod].get(t, d)
            m = mem[pod].get(t, m)
            steps.append((d, m))
        out[pod] = steps
    return out


def truth_idle(steps):
    """Per step, the trace seconds the pod has been idle (0 when active or holding nothing)."""
    out, since = [], None
    for k, (d, m) in enumerate(steps):
        if d > 0 or m <= 0:
            since = k
            out.append(0.0)
        else:
            if since is None:
                since = k
            out.append((k - since) * STEP)
    return out


def duty_scale(ser, pods):
    worst = 0.0
    nsteps = len(next(iter(ser.values())))
    for g in range(GPUS):
        mine = [ser[p] for i, p in enumerate(pods) if i % GPUS == g]
        for k in range(nsteps):
            worst = max(worst, sum(s[k][0] for s in mine))
    return min(1.0, 90.0 / worst) if worst > 0 else 1.0


def env_for(build, root):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUSLICE_", "GPUSIM_")) and k != "LD_PRELOAD"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (root / "sim").mkdir()
    env.update(GPUSLICE_SIM=f"h200-141gb:{GPUS}", GPUSIM_STATE_DIR=str(root / "sim"),
               GPUSLICE_STATE_DIR=str(root / "state"), GPUSLICE_LEDGER_DB=str(root / "ledger.db"),
               GPUSLICE_SOCKET=str(root / "state" / "gpuslice.sock"), GPUSLICE_METRICS_LISTEN=f"127.0.0.1:{port}",
               GPUSIM_UTIL_PERIOD_MS="100", LD_LIBRARY_PATH=str(build / "lib" / "sim"),
               GPUSLICE_TEST_CLOCK_FILE=str(root / "clock"))
    return env


def write_clock(path, t):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{t:.3f}\n")
    os.replace(tmp, path)


def wait_for(pred, timeout=300.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.2)
    return False


def rules(args):
    n = [{"action": "notify", "after": f"{t - 15}m"} for t in THRESHOLDS]
    return {"rules": [{"name": "genai", "match": "type=genai", "threshold": args.device_threshold,
                       "duration": "15m", "actions": n}]}


def replay(args, root, ser, pods, scale, grid):
    env = env_for(args.build, root)
    sock = root / "state" / "gpuslice.sock"
    clock = root / "clock"
    write_clock(clock, grid[0])
    (root / "rules.json").write_text(json.dumps(rules(args)))
    daemon = subprocess.Popen([str(args.build / "bin" / "gpuslice"), "daemon", "--foreground", "--log-level", "warn",
                               "--interval", str(args.interval), "--idle-rules", str(root / "rules.json")], env=env)
    procs, seen = [], {p: [] for p in pods}
    try:
        if not wait_for(lambda: sock.exists()):
            raise SystemExit("the daemon did not start")
        for i, pod in enumerate(pods):
            f = root / f"pod{i}.json"
            f.write_text(json.dumps({"steps": [[d, m * args.mem_scale] for d, m in ser[pod]]}))
            e = dict(env, CUDA_VISIBLE_DEVICES=str(i % GPUS))
            cmd = [str(args.build / "bin" / "gpuslice"), "run", "--name", f"pod{i}", "--label", "type=genai", "--",
                   sys.executable, str(REPO / "bench" / "idle_replay_tenant.py"), str(f),
                   str(args.step_seconds), str(scale)]
            procs.append(subprocess.Popen(cmd, env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True))
        for p in procs:
            if not p.stdout.readline():
                raise SystemExit("a replay tenant failed to start")
        start = time.monotonic() + 3.0
        for p in procs:
            p.stdin.write(f"{start:.6f}\n")
            p.stdin.flush()
        stop = threading.Event()

        def tick():
            while not stop.is_set():
                k = (time.monotonic() - start) / args.step_seconds
                write_clock(clock, grid[0] + max(0.0, k) * STEP)
                time.sleep(0.01)

        th = threading.Thread(target=tick, daemon=True)
        th.start()
        for k in range(len(grid)):
            delay = start + (k + 0.6) * args.step_seconds - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            status, body = request(sock, "GET", "/v1/idle")
            by = {t["name"]: t["idle_seconds"] for t in body["tenants"]}
            for i, pod in enumerate(pods):
                seen[pod].append(by.get(f"pod{i}", 0.0))
        stop.set()
        th.join()
        fired = request(sock, "GET", "/v1/health")[1]
        return seen, fired
    finally:
        for p in procs:
            p.terminate()  # `gpuslice run` forwards it to the pod
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        daemon.terminate()
        daemon.wait(timeout=30)


def score(truth, seen, thr_min):
    t = thr_min * 60
    tp = fp = fn = 0
    for pod in truth:
        for a, b in zip(truth[pod], seen[pod]):
            tt, ss = a >= t, b >= t
            tp += tt and ss
            fp += ss and not tt
            fn += tt and not ss
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 1.0
    return {"threshold_min": thr_min, "precision": prec, "recall": rec,
            "flagged_gpu_hours": (tp + fp) * STEP / 3600, "truth_gpu_hours": (tp + fn) * STEP / 3600,
            "correct_gpu_hours": tp * STEP / 3600}


def main():
    args = parse_args()
    duty, mem = load(args.data)
    grid = sorted({t for d in duty.values() for t in d})
    if args.hours:
        grid = [t for t in grid if t < grid[0] + args.hours * 3600]
    ser = series(duty, mem, grid)
    pods = sorted(ser)[: args.pods or None]
    truth = {p: truth_idle(ser[p]) for p in pods}
    runs30 = sum(any(x >= 1800 for x in truth[p]) for p in pods)
    scale = duty_scale(ser, pods)
    root = pathlib.Path(tempfile.mkdtemp(prefix="gs-bench-idle-"))
    os.chmod(root, 0o755)
    t0 = time.monotonic()
    try:
        seen, _ = replay(args, root, ser, pods, scale, grid)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    wall = time.monotonic() - t0
    res = [score(truth, seen, t) for t in THRESHOLDS]
    hours = (grid[-1] - grid[0] + STEP) / 3600
    print(f"Alibaba GenAI sample: {len(pods)} pods, {hours:.1f} h of trace at {STEP:.0f} s steps, replayed in "
          f"{wall:.0f} s ({args.step_seconds} s a step) on {GPUS} simulated H200s; duty scale {scale:.3f}, memory "
          f"scale {args.mem_scale:g}; rule threshold {args.device_threshold} of device time")
    print(f"pods with an idle run (duty 0, memory held) of 30 min or more, from the data: {runs30}")
    print(f"{'threshold':>10} {'precision':>10} {'recall':>8} {'flagged GPU-h':>14} {'truth GPU-h':>12}")
    for r in res:
        print(f"{r['threshold_min']:>8} m {r['precision']:10.3f} {r['recall']:8.3f} {r['flagged_gpu_hours']:14.1f} "
              f"{r['truth_gpu_hours']:12.1f}")
    print(json.dumps({"pods": len(pods), "trace_hours": hours, "step_seconds": args.step_seconds,
                      "interval_s": args.interval, "duty_scale": scale, "mem_scale": args.mem_scale,
                      "device_threshold": args.device_threshold, "pods_idle_30min": runs30, "wall_s": wall,
                      "results": res}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
