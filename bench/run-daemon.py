#!/usr/bin/env python3
"""What the node daemon costs the node: its memory (RSS) and its CPU at 1 s sampling, on 8
simulated GPUs, with no tenant (the baseline, measured in the same run) and with many.

Starts `gpuslice daemon --interval 1` with GPUSLICE_SIM=h100-80gb:8 in a private state dir,
measures it idle for --seconds, then starts --tenants tenants (`gpuslice run --vram 1Gi
--label team=tN -- gpusim-workload hold --bytes 64Mi --device K`, spread over the 8 GPUs),
waits until the daemon lists them all, and measures again for --seconds. CPU is the daemon's
utime+stime from /proc over the window, as a percentage of one core; RSS is VmRSS at the end
and VmHWM (the peak). It also reports the last sample's duration as the daemon measured it
and the usage ledger's size. Targets: RSS < 20 MB, CPU < 1% of a core.

With --verify-off-too it then restarts the daemon with `--verify off` on the same state dir (it
adopts the same tenants) and measures a third window, so that the verifier's cost (NVML's
per-process lists and utilization, /proc for the processes NVML reports) is the difference
between two windows of the same run.

With --counters-compare (issue #16) it then measures the tenants with two GPU field sets in the
same run, alternated for --rounds windows each: dcgm-exporter's default set of 25 fields (the
built-in) and the 7 fields of before #16 (bench/counters-7.csv), the daemon restarted on the same
state dir with `--counters` between windows (it adopts the same tenants). The daemon reads from
NVML only what the set serves, and a scraper GETs /metrics every --scrape-every seconds during
these windows, so each window's CPU is sampling plus rendering; "25 / 7" is the ratio of the
median CPUs.

With --idle-compare (issue #19) it then measures the tenants with the idle rules off and on in
the same run, alternated for --rounds windows each, the daemon restarted on the same state dir
between windows: "on" is --idle-rules with four rules (one per pair of teams, half of them with a
CPU exemption, which reads /proc for each tenant's processes every sample) and a schedule, in
the default dry run; its windows are short of every rule's duration, so the cost is detection
alone, as on a node where nothing is idle.

Prints a table and a JSON object on stdout. Exit status: 0 when it ran (a missed target is
reported, not failed, unless --check), 1 when a run failed, 3 with --check on a missed target.
"""
import argparse
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
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
from daemon_http import request  # noqa: E402

RSS_TARGET_MB = 20.0
CPU_TARGET_PCT = 1.0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", type=pathlib.Path, default=REPO / "build", help="CMake build directory")
    p.add_argument("--tenants", type=int, default=128, help="tenants to start (default 128)")
    p.add_argument("--seconds", type=float, default=30.0, help="length of each measuring window (default 30)")
    p.add_argument("--check", action="store_true", help="exit 3 when a target is missed")
    p.add_argument("--verify-off-too", action="store_true",
                   help="also measure the tenants with the verifier off (`--verify off`), same run")
    p.add_argument("--counters-compare", action="store_true",
                   help="also measure the 25-field default set against bench/counters-7.csv, alternated, same run")
    p.add_argument("--rounds", type=int, default=3,
                   help="windows per field set (--counters-compare) or per idle setting (--idle-compare) (default 3)")
    p.add_argument("--idle-compare", action="store_true",
                   help="also measure the idle rules on against off, alternated, same run")
    p.add_argument("--scrape-every", type=float, default=1.0,
                   help="seconds between GETs of /metrics in the --counters-compare windows (default 1)")
    return p.parse_args()


def proc_cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_mem_mb(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        key, _, val = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(val.split()[0]) / 1024.0
    return out


def rss_split_mb(pid):
    """RSS by kind: anonymous (the daemon's own data), shared libraries, and the simulated
    driver's state file (a test double's mapping; a real driver maps its own)."""
    out = {"anon_mb": 0.0, "libs_mb": 0.0, "sim_state_mb": 0.0}
    name = ""
    for line in open(f"/proc/{pid}/smaps"):
        head = line.split()
        if not line[0].isupper():
            name = head[5] if len(head) > 5 else ""
        elif head[0] == "Rss:":
            kb = int(head[1]) / 1024.0
            key = "sim_state_mb" if "/sim/gpusim-" in name else "libs_mb" if name.endswith(tuple(
                [".so", ".1", ".2", ".3", ".6", ".30", ".0"])) or ".so." in name else "anon_mb"
            out[key] += kb
    return out


def window(pid, sock, seconds):
    h0, c0, t0 = health(sock), proc_cpu_s(pid), time.monotonic()
    time.sleep(seconds)
    h1, c1, t1 = health(sock), proc_cpu_s(pid), time.monotonic()
    mem = proc_mem_mb(pid)
    sampling = h1["sample_seconds_total"] - h0["sample_seconds_total"]
    nvml = h1["nvml_seconds_total"] - h0["nvml_seconds_total"]
    cpu = 100.0 * (c1 - c0) / (t1 - t0)
    share = nvml / sampling if sampling > 0 else 0.0
    return dict({"cpu_pct": cpu, "nvml_share": share, "cpu_pct_without_nvml": cpu * (1 - share),
                 "rss_mb": mem["VmRSS"], "hwm_mb": mem["VmHWM"]}, **rss_split_mb(pid))


def env_for(build, root):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUSLICE_", "GPUSIM_")) and k != "LD_PRELOAD"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env.update(GPUSLICE_SIM="h100-80gb:8", GPUSIM_STATE_DIR=str(root / "sim"), GPUSLICE_STATE_DIR=str(root / "state"),
               GPUSLICE_LEDGER_DB=str(root / "ledger.db"), GPUSLICE_SOCKET=str(root / "state" / "gpuslice.sock"),
               GPUSLICE_METRICS_LISTEN=f"127.0.0.1:{port}", GPUSLICE_INTERVAL="1",
               LD_LIBRARY_PATH=str(build / "lib" / "sim"))
    (root / "sim").mkdir()
    return env


def wait_for(pred, timeout=120.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.2)
    return False


def start_tenants(build, env, n):
    procs = []
    for i in range(n):
        cmd = [str(build / "bin" / "gpuslice"), "run", "--name", f"t{i}", "--vram", "1Gi", "--label", f"team=t{i % 8}",
               "--", str(build / "bin" / "gpusim-workload"), "hold", "--bytes", "64Mi", "--device", str(i % 8)]
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append(p)
    for p in procs:
        if not p.stdout.readline():
            raise SystemExit("a tenant failed to start")
    return procs


def health(sock):
    return request(sock, "GET", "/v1/health")[1]


def start_daemon(args, env, sock, *extra):
    if sock.exists():
        sock.unlink()
    daemon = subprocess.Popen([str(args.build / "bin" / "gpuslice"), "daemon", "--foreground", "--log-level", "warn",
                               *extra], env=env)
    if not wait_for(lambda: sock.exists()):
        raise SystemExit("the daemon did not start")
    return daemon


def stop_daemon(daemon):
    daemon.terminate()
    daemon.wait(timeout=30)


def busy_window(args, root, daemon, sock):
    if not wait_for(lambda: health(sock)["tenants"] == args.tenants):
        raise SystemExit("the daemon did not list every tenant")
    busy = window(daemon.pid, sock, args.seconds)
    busy["last_sample_s"] = health(sock)["last_sample_duration_s"]
    busy["ledger_mb"] = sum(os.path.getsize(f) for f in root.glob("ledger.db*")) / 1e6
    return busy


class Scraper:
    """GETs /metrics every `every` seconds in a thread while in a `with` block."""

    def __init__(self, port, every):
        self.url, self.every, self.stop, self.scrapes = f"http://127.0.0.1:{port}/metrics", every, threading.Event(), 0

    def _run(self):
        while not self.stop.wait(self.every):
            with urllib.request.urlopen(self.url, timeout=10) as r:
                self.bytes = len(r.read())
            self.scrapes += 1

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


SEVEN = REPO / "bench" / "counters-7.csv"
FIELD_SETS = [("25 (default)", ["--counters", "builtin"]), ("7 (before #16)", ["--counters", str(SEVEN)])]


def compare_counters(args, root, env, sock, daemon):
    """Windows alternating the two field sets; returns (the daemon now running, {set: [windows]})."""
    port = int(env["GPUSLICE_METRICS_LISTEN"].rsplit(":", 1)[1])
    out = {name: [] for name, _ in FIELD_SETS}
    for k in range(args.rounds):
        for name, extra in (FIELD_SETS if k % 2 == 0 else FIELD_SETS[::-1]):
            stop_daemon(daemon)
            daemon = start_daemon(args, env, sock, *extra)
            if not wait_for(lambda: health(sock)["tenants"] == args.tenants):
                raise SystemExit("the daemon did not list every tenant")
            time.sleep(2)  # GPM's first pair of samples, the first scrape's buffers
            with Scraper(port, args.scrape_every) as sc:
                w = window(daemon.pid, sock, args.seconds)
            w.update(scrapes=sc.scrapes, metrics_bytes=getattr(sc, "bytes", 0),
                     last_sample_s=health(sock)["last_sample_duration_s"])
            out[name].append(w)
    return daemon, out


IDLE_RULES = {
    "rules": [{"name": f"r{k}", "match": f"team=t{k}", "duration": "30m", "threshold": 0.01,
               "actions": [{"action": "signal"}, {"action": "suspend", "after": "30m"}],
               **({"cpu_exempt": 0.5} if k % 2 else {})} for k in range(4)]
    + [{"name": "rest", "duration": "1h", "requests_exempt": True, "actions": [{"action": "notify"}]}],
    "schedules": [{"name": "dev", "match": "team=t7", "tz": "Europe/Paris", "windows": ["Sat-Sun"]}],
}


def compare_idle(args, root, env, sock, daemon):
    """Windows alternating the idle rules off and on; returns (the daemon now running, {setting: [windows]})."""
    rules = root / "idle-rules.json"
    rules.write_text(json.dumps(IDLE_RULES))
    settings = [("rules off", []), ("rules on", ["--idle-rules", str(rules)])]
    out = {name: [] for name, _ in settings}
    for k in range(args.rounds):
        for name, extra in (settings if k % 2 == 0 else settings[::-1]):
            stop_daemon(daemon)
            daemon = start_daemon(args, env, sock, *extra)
            if not wait_for(lambda: health(sock)["tenants"] == args.tenants):
                raise SystemExit("the daemon did not list every tenant")
            time.sleep(2)
            w = window(daemon.pid, sock, args.seconds)
            w["last_sample_s"] = health(sock)["last_sample_duration_s"]
            out[name].append(w)
    return daemon, out


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def measure(args, root):
    env = env_for(args.build, root)
    sock = root / "state" / "gpuslice.sock"
    daemon = start_daemon(args, env, sock)
    tenants = []
    off = None
    compare = None
    idle_cmp = None
    try:
        idle = window(daemon.pid, sock, args.seconds)
        tenants = start_tenants(args.build, env, args.tenants)
        busy = busy_window(args, root, daemon, sock)
        if args.verify_off_too:
            stop_daemon(daemon)
            daemon = start_daemon(args, env, sock, "--verify", "off")
            off = busy_window(args, root, daemon, sock)
        if args.counters_compare:
            daemon, compare = compare_counters(args, root, env, sock, daemon)
        if args.idle_compare:
            daemon, idle_cmp = compare_idle(args, root, env, sock, daemon)
        return idle, busy, off, compare, idle_cmp
    finally:
        for p in tenants:
            p.stdin.close()
        for p in tenants:
            p.wait(timeout=60)
        stop_daemon(daemon)


def main():
    args = parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="gs-bench-daemon-"))
    try:
        idle, busy, off, compare, idle_cmp = measure(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"gpuslice daemon, 8 simulated H100s, 1 s sampling, {args.seconds:.0f} s windows")
    print(f"{'':28} {'CPU % of a core':>16} {'RSS MB':>8} {'peak RSS MB':>12}")
    print(f"{'no tenants (baseline)':28} {idle['cpu_pct']:16.3f} {idle['rss_mb']:8.1f} {idle['hwm_mb']:12.1f}")
    print(f"{str(args.tenants) + ' tenants':28} {busy['cpu_pct']:16.3f} {busy['rss_mb']:8.1f} {busy['hwm_mb']:12.1f}")
    if off:
        print(f"{str(args.tenants) + ' tenants, verify off':28} {off['cpu_pct']:16.3f} {off['rss_mb']:8.1f} "
              f"{off['hwm_mb']:12.1f}")
    print(f"last sample took {busy['last_sample_s'] * 1000:.2f} ms; usage ledger {busy['ledger_mb']:.2f} MB")
    print(f"with {args.tenants} tenants: {busy['nvml_share'] * 100:.0f}% of sampling time is in NVML calls (here the "
          f"simulated driver); CPU without them {busy['cpu_pct_without_nvml']:.3f}% of a core")
    print(f"RSS: {busy['anon_mb']:.1f} MB the daemon's own (heap, mapped limits files), {busy['libs_mb']:.1f} MB shared libraries, "
          f"{busy['sim_state_mb']:.1f} MB the simulated driver's state file")
    if compare:
        print(f"\nGPU field sets, {args.tenants} tenants, /metrics scraped every {args.scrape_every:g} s, "
              f"{args.rounds} alternated windows each of {args.seconds:.0f} s (median):")
        print(f"{'':20} {'CPU % of a core':>16} {'windows':>24} {'last sample ms':>15} {'/metrics KiB':>13}")
        base = median([w["cpu_pct"] for w in compare[FIELD_SETS[1][0]]])
        for name, ws in compare.items():
            cpu = median([w["cpu_pct"] for w in ws])
            each = " ".join(f"{w['cpu_pct']:.2f}" for w in ws)
            print(f"{name:20} {cpu:16.3f} {each:>24} "
                  f"{median([w['last_sample_s'] for w in ws]) * 1000:15.2f} {ws[-1]['metrics_bytes'] / 1024:13.0f}"
                  f"   25/7: {cpu / base if base else 0:.2f}")
    if idle_cmp:
        print(f"\nidle rules, {args.tenants} tenants, {args.rounds} alternated windows each of {args.seconds:.0f} s "
              f"(median):")
        print(f"{'':12} {'CPU % of a core':>16} {'windows':>24} {'last sample ms':>15}")
        base = median([w["cpu_pct"] for w in idle_cmp["rules off"]])
        for name, ws in idle_cmp.items():
            cpu = median([w["cpu_pct"] for w in ws])
            each = " ".join(f"{w['cpu_pct']:.2f}" for w in ws)
            print(f"{name:12} {cpu:16.3f} {each:>24} {median([w['last_sample_s'] for w in ws]) * 1000:15.2f}"
                  f"   on/off: {cpu / base if base else 0:.2f}")
    ok = busy["hwm_mb"] < RSS_TARGET_MB and busy["cpu_pct"] < CPU_TARGET_PCT
    print(f"targets: RSS < {RSS_TARGET_MB} MB, CPU < {CPU_TARGET_PCT}% of a core: {'met' if ok else 'MISSED'}")
    print(json.dumps({"tenants": args.tenants, "gpus": 8, "interval_s": 1, "idle": idle, "busy": busy,
                      "busy_verify_off": off, "counters_compare": compare, "idle_compare": idle_cmp,
                      "targets_met": ok}))
    return 3 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
