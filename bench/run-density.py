#!/usr/bin/env python3
"""1,024 tenants with compute shares on one simulated GPU (issue #17): most of them idle, as
serving tenants are, and some busy at once, each capped.

Starts `gpuslice daemon --interval 1` on one simulated H100 in a private state dir, then
--tenants tenants, each `gpuslice run --compute P -- gpusim-workload busy ...`, all with the same
measuring window:
  busy  --busy of them (default 32), `--compute 3 --compute-policy cap`, launching back to back
        (--kernel-us long kernels);
  idle  the others, `--compute 1` (a share), each launching one short kernel every --idle-every
        seconds, so that its board row stays live and its process stays a tenant's. With
        --idle-phase spread (the default) their first kernels are spread evenly over the first
        period, as the requests of independent serving tenants are; with together, every idle
        tenant launches at the same instant each period (a thundering herd: 992 processes woken
        in the same millisecond on a 2-CPU machine, the worst case rather than the usual one).
Every tenant is started before the window opens; the window lasts --seconds.

Reported, against the targets of issue #17:
  - each busy tenant's device time in the window, as a share of it: 3% within 1 point;
  - the device's busy time in the window (all tenants' kernels): at least 94%;
  - the daemon's CPU over the window, as a percentage of one core: under 2%;
  - the board: how many rows were live at the end.
The render time of /metrics for 8 GPUs x 1,024 tenants is bench/run-metrics.py --tenants 1024.

Needs about --tenants x 8 MB of memory and a minute or two before the window (each tenant is a
`gpuslice run` and a workload process). Prints a table and a JSON object. Exit status: 0 when it
ran (a missed target is reported, not failed, unless --check), 1 when a run failed, 2 on a usage
error, 3 with --check on a missed target.
"""
import argparse
import importlib.util
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
SHARE_TARGET, SHARE_TOLERANCE = 3.0, 1.0
BUSY_TARGET_PCT = 94.0
CPU_TARGET_PCT = 2.0


def _run_daemon():
    """run-daemon.py's helpers (environment, CPU and health readings), shared, not copied."""
    spec = importlib.util.spec_from_file_location("run_daemon", HERE / "run-daemon.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RD = _run_daemon()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", type=pathlib.Path, default=REPO / "build", help="CMake build directory")
    p.add_argument("--tenants", type=int, default=1024, help="tenants in all (default 1024)")
    p.add_argument("--busy", type=int, default=32, help="of them busy, capped at 3%% (default 32)")
    p.add_argument("--seconds", type=float, default=60.0, help="the measuring window (default 60)")
    p.add_argument("--kernel-us", type=int, default=2000, help="a busy tenant's kernel length (default 2000)")
    p.add_argument("--idle-every", type=float, default=10.0,
                   help="seconds between an idle tenant's kernels (default 10)")
    p.add_argument("--idle-phase", choices=["spread", "together"], default="spread",
                   help="idle tenants' first kernels spread over a period, or all at once (default spread)")
    p.add_argument("--slice-ms", type=int, help="the busy tenants' --slice-ms (default: the default turn, 20 ms)")
    p.add_argument("--check", action="store_true", help="exit 3 when a target is missed")
    a = p.parse_args()
    if not 1 <= a.busy <= a.tenants:
        p.error("--busy must be from 1 to --tenants")
    if not (a.build / "bin" / "gpuslice").is_file():
        p.error(f"{a.build}: no bin/gpuslice; build it first")
    return a


def idle_offset_ns(a, i):
    """When idle tenant i launches its first kernel, after the common start: spread evenly over
    one period, or at the start for all (--idle-phase together)."""
    if a.idle_phase == "together":
        return 0
    return int((i - a.busy) * a.idle_every * 1e9 / (a.tenants - a.busy))


def tenant_argv(a, i, busy, start_ns, seconds, window):
    start_ns += 0 if busy else idle_offset_ns(a, i)
    wl = [str(a.build / "bin" / "gpusim-workload"), "busy", "--seconds", f"{seconds:.3f}",
          "--start-at-ns", str(start_ns), "--window-start-ns", str(window[0]), "--window-end-ns", str(window[1])]
    if busy:
        opts = ["--compute", "3", "--compute-policy", "cap"] + (["--slice-ms", str(a.slice_ms)] if a.slice_ms else [])
        wl += ["--kernel-us", str(a.kernel_us)]
    else:
        opts = ["--compute", "1"]
        wl += ["--kernel-us", "200", "--every", f"{a.idle_every:g}"]
    return [str(a.build / "bin" / "gpuslice"), "run", "--name", f"{'busy' if busy else 'idle'}{i}"] + opts + \
        ["--"] + wl


def start_tenants(a, env):
    """Every tenant, all told to start at one instant after they have all been spawned."""
    spawn_s = 0.06 * a.tenants + 10
    start = time.monotonic_ns() + int(spawn_s * 1e9)
    window = (start + int(5e9), start + int((5 + a.seconds) * 1e9))
    seconds = (window[1] - start) / 1e9 + 1
    procs = []
    for i in range(a.tenants):
        busy = i < a.busy
        procs.append((busy, subprocess.Popen(tenant_argv(a, i, busy, start, seconds, window), env=env,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                             start_new_session=True)))
    if time.monotonic_ns() > start:
        raise RuntimeError(f"spawning {a.tenants} tenants took longer than the {spawn_s:.0f} s allowed")
    return procs, start, window


def busy_line(out):
    for line in out.splitlines():
        if line.startswith("{") and '"busy"' in line:
            return json.loads(line)
    return None


def main():
    a = parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="gs-density-"))
    env = RD.env_for(a.build, root)
    env["GPUSLICE_SIM"] = "h100-80gb"
    log = open(root / "daemon.log", "w")
    daemon = subprocess.Popen([str(a.build / "bin" / "gpuslice"), "daemon", "--foreground"], env=env,
                              stdout=log, stderr=log)
    procs = []
    try:
        sock = pathlib.Path(env["GPUSLICE_SOCKET"])
        if not RD.wait_for(lambda: sock.exists()):
            raise RuntimeError(f"the daemon did not start: {(root / 'daemon.log').read_text()[-400:]}")
        procs, start, window = start_tenants(a, env)
        while time.monotonic_ns() < window[0]:
            time.sleep(0.05)
        c0, t0, h0 = RD.proc_cpu_s(daemon.pid), time.monotonic(), RD.health(sock)
        while time.monotonic_ns() < window[1]:
            time.sleep(0.05)
        h1, span = RD.health(sock), time.monotonic() - t0
        cpu = 100.0 * (RD.proc_cpu_s(daemon.pid) - c0) / span
        sampling = h1["sample_seconds_total"] - h0["sample_seconds_total"]
        nvml = h1["nvml_seconds_total"] - h0["nvml_seconds_total"]
        cpu_own = cpu * (1 - nvml / sampling) if sampling > 0 else cpu
        rows_live = live_rows(root / "state")
        lines = []
        for busy, p in procs:
            out, err = p.communicate(timeout=120)
            line = busy_line(out)
            if p.returncode != 0 or line is None:
                raise RuntimeError(f"{p.args}: exit {p.returncode}: {err.strip()[-400:]}")
            lines.append((busy, line))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"run-density: {e}", file=sys.stderr)
        return 1
    finally:
        for _, p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    return report(a, lines, cpu, cpu_own, rows_live)


def live_rows(state):
    """Live rows on the GPU's board (include/gpuslice/compute.h's layout, version 3)."""
    sys.path.insert(0, str(REPO / "tests" / "integration"))
    from compute_util import board_header, board_row  # noqa: E402
    [board] = list((state / "gpus").iterdir())
    raw = board.read_bytes()
    return sum(1 for i in range(board_header(raw)["rows_used"]) if board_row(raw, i)[0] == 2)


def report(a, lines, cpu, cpu_own, rows_live):
    shares = [100.0 * x["window_kernel_seconds"] / a.seconds for busy, x in lines if busy]
    device = 100.0 * sum(x["window_kernel_seconds"] for _, x in lines) / a.seconds
    idle_kernels = sum(x["kernels"] for busy, x in lines if not busy)
    worst = max(abs(s - SHARE_TARGET) for s in shares)
    verdicts = {"share": worst <= SHARE_TOLERANCE, "device_busy": device >= BUSY_TARGET_PCT,
                "daemon_cpu": cpu < CPU_TARGET_PCT}
    print(f"{a.tenants} tenants ({a.busy} busy, capped at 3%; {a.tenants - a.busy} idle, one kernel every "
          f"{a.idle_every:g} s, {'spread over the period' if a.idle_phase == 'spread' else 'all at once'}), "
          f"{a.seconds:g} s window, board rows live at the end: {rows_live}")
    print(f"busy tenants' shares: min {min(shares):.2f}% median {statistics.median(shares):.2f}% "
          f"max {max(shares):.2f}% (target 3 +- 1): {'met' if verdicts['share'] else 'MISSED'}")
    print(f"device busy: {device:.2f}% of the window (target >= {BUSY_TARGET_PCT:g}%): "
          f"{'met' if verdicts['device_busy'] else 'MISSED'}; idle tenants' kernels: {idle_kernels}")
    print(f"daemon CPU at 1 s sampling: {cpu:.2f}% of a core (target < {CPU_TARGET_PCT:g}%): "
          f"{'met' if verdicts['daemon_cpu'] else 'MISSED'}; without the time in NVML calls (the "
          f"simulated NVML, a test double, runs in the daemon): {cpu_own:.2f}%")
    print(json.dumps({"benchmark": "density", "tenants": a.tenants, "busy": a.busy, "window_s": a.seconds,
                      "slice_ms": a.slice_ms,
                      "kernel_us": a.kernel_us, "idle_every_s": a.idle_every, "idle_phase": a.idle_phase, "busy_shares_pct": shares,
                      "device_busy_pct": device, "daemon_cpu_pct": cpu, "daemon_cpu_pct_without_nvml": cpu_own, "board_rows_live": rows_live,
                      "idle_kernels": idle_kernels, "verdicts": verdicts}))
    return 3 if a.check and not all(verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
