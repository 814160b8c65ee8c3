#!/usr/bin/env python3
"""What gpuslice's interposer adds to each driver call, measured against the simulated driver.

Runs gs-bench-interposer several times, alternating two ways in one run:
  baseline    the simulated libcuda.so.1 called directly (LD_LIBRARY_PATH=<build>/lib/sim);
  interposed  `gpuslice run --vram 1T -- gs-bench-interposer`: a tenant with a limit, so that
              every charge path of libgpuslice.so is active.
The order alternates ABBA (baseline first, then interposed first) so that slow drift of the
machine cancels. Each process gives `rounds` samples per operation, each the mean of a batch.

Reported per operation: the median and the minimum sample of each mode, and "added": for
each process pair the difference of its two medians, then the median of those differences,
with their interquartile range and standard error, so that a reader can tell a real cost
from noise. Targets: launch < 10 ns added; an alloc+free pair < 150 ns
added at every live count, and flat: the added cost varies by less than FLAT_NS across them.

Prints a table and a summary JSON object on stdout, and writes every sample to
<build>/bench-results/interposer.json (never committed). Exit status: 0 when it ran (targets
missed are reported, not failed, unless --check), 1 when a run failed, 2 on a usage error,
3 with --check when a target is missed. --quick only checks that everything runs: the
figures it prints mean nothing and no target is judged.
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib

REPO = pathlib.Path(__file__).resolve().parents[1]
LAUNCH_TARGET_NS = 10.0
PAIR_TARGET_NS = 150.0
FLAT_NS = 50.0
OP_LABELS = {
    "launch": "cuLaunchKernel (linked)",
    "launch_procaddr": "cuLaunchKernel (cuGetProcAddress_v2)",
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", type=pathlib.Path, default=REPO / "build", help="CMake build directory")
    p.add_argument("--pairs", type=int, default=40, help="baseline/interposed process pairs (default 40)")
    p.add_argument("--rounds", type=int, default=15, help="samples per operation per process (default 15)")
    p.add_argument("--launch-batch", type=int, default=1000)
    p.add_argument("--pair-batch", type=int, default=200)
    p.add_argument("--bytes", type=int, default=4096, help="size of each allocation (default 4096)")
    p.add_argument("--live", default="10,1000,100000", help="live allocation counts (default 10,1000,100000)")
    p.add_argument("--spec", default="h100-80gb", help="GPUSLICE_SIM for the simulated device")
    p.add_argument("--cpu", type=int, help="pin the benchmark process to this CPU (taskset)")
    p.add_argument("--json", type=pathlib.Path, help="where to write all samples "
                   "(default <build>/bench-results/interposer.json)")
    p.add_argument("--quick", action="store_true", help="a few tiny samples: checks that it runs, judges nothing")
    p.add_argument("--check", action="store_true", help="exit 3 when a target is missed")
    a = p.parse_args()
    if a.pairs < 1 or a.rounds < 1:
        p.error("--pairs and --rounds must be at least 1")
    return a


def bench_args(a):
    if a.quick:
        return ["--quick"]
    return ["--rounds", str(a.rounds), "--launch-batch", str(a.launch_batch), "--pair-batch", str(a.pair_batch),
            "--bytes", str(a.bytes), "--live", a.live]


def commands(a):
    """The two ways to run the benchmark, as (argv, extra environment)."""
    build = a.build.resolve()
    prog = [str(build / "bin" / "gs-bench-interposer")] + bench_args(a)
    if a.cpu is not None:
        prog = ["taskset", "-c", str(a.cpu)] + prog
    baseline = (prog, {"LD_LIBRARY_PATH": str(build / "lib" / "sim")})
    interposed = ([str(build / "bin" / "gpuslice"), "run", "--vram", "1T", "--"] + prog, {})
    return {"baseline": baseline, "interposed": interposed}


def run_once(argv, extra, env):
    e = dict(env)
    e.update(extra)
    p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"run-interposer: {' '.join(argv)} exited {p.returncode}: {p.stderr.strip()}")
    if p.stderr.strip():
        print(f"run-interposer: note: {argv[0]} wrote to stderr: {p.stderr.strip()}", file=sys.stderr)
    return json.loads(p.stdout)


def collect(a, cmds):
    """samples[mode][op] is a list of per-process sample lists."""
    samples = {"baseline": {}, "interposed": {}}
    mappings = {}
    pairs = 1 if a.quick else a.pairs
    with tempfile.TemporaryDirectory(prefix="gs-bench-") as tmp:
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.pop("GPUSLICE_TENANT", None)
        env.update({"GPUSLICE_SIM": a.spec, "GPUSIM_STATE_DIR": tmp + "/sim", "GPUSLICE_STATE_DIR": tmp + "/gs"})
        os.makedirs(env["GPUSIM_STATE_DIR"])
        os.makedirs(env["GPUSLICE_STATE_DIR"])
        for i in range(pairs):
            order = ("baseline", "interposed") if i % 2 == 0 else ("interposed", "baseline")
            for mode in order:
                out = run_once(*cmds[mode], env)
                for r in out["results"]:
                    samples[mode].setdefault(r["op"], []).append(r["samples_ns"])
                    mappings[r["op"]] = max(mappings.get(r["op"], 0), r.get("mappings", -1))
    return samples, mappings


def quantile(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summarize(op, base_runs, int_runs):
    """Added cost is the median, over process pairs, of each pair's difference of medians: a
    process that the machine slowed down (another job, a migration) moves one pair, not the
    result. The interquartile range and standard error of those differences are its spread."""
    base = [x for run in base_runs for x in run]
    intp = [x for run in int_runs for x in run]
    diffs = [statistics.median(i) - statistics.median(b) for b, i in zip(base_runs, int_runs)]
    sem = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else None
    return {
        "op": op,
        "baseline_median_ns": statistics.median(base), "baseline_min_ns": min(base),
        "interposed_median_ns": statistics.median(intp), "interposed_min_ns": min(intp),
        "added_ns": statistics.median(diffs),
        "added_of_all_medians_ns": statistics.median(intp) - statistics.median(base),
        "added_of_minimums_ns": min(intp) - min(base),
        "added_pairs_p25_ns": quantile(diffs, 0.25), "added_pairs_p75_ns": quantile(diffs, 0.75),
        "added_pairs_min_ns": min(diffs), "added_pairs_max_ns": max(diffs), "added_sem_ns": sem,
        "samples_per_mode": len(base), "process_pairs": len(diffs),
    }


def judge(rows, quick):
    """Sets each row's target and verdict; returns whether no target was missed. A figure
    under its target by less than two standard errors is "borderline", not "met"."""
    ok = True
    pairs = [r for r in rows if r["op"].startswith("alloc_free_live_")]
    spread = max(r["added_ns"] for r in pairs) - min(r["added_ns"] for r in pairs) if pairs else 0.0
    for r in rows:
        is_pair = r in pairs
        limit = PAIR_TARGET_NS if is_pair else LAUNCH_TARGET_NS
        r["target"] = f"< {limit:.0f} ns" + (f", flat within {FLAT_NS:.0f}" if is_pair else "")
        if quick:
            r["verdict"] = "n/a (quick)"
            continue
        met = r["added_ns"] < limit and (not is_pair or spread < FLAT_NS)
        sure = r["added_sem_ns"] is not None and r["added_ns"] + 2 * r["added_sem_ns"] < limit
        r["verdict"] = ("met" if sure else "borderline") if met else "MISSED"
        ok = ok and met
    return ok, spread


def label(op):
    if op.startswith("alloc_free_live_"):
        return f"alloc+free pair, {int(op.rsplit('_', 1)[1]):,} live"
    return OP_LABELS.get(op, op)


def print_table(rows, spread):
    head = f"{'operation':<38} {'baseline ns':>11} {'interposed ns':>13} {'added ns':>9} " \
           f"{'pairs p25..p75':>16} {'sem':>6}  {'target':<27} verdict"
    print(head)
    print("-" * len(head))
    for r in rows:
        iqr = f"{r['added_pairs_p25_ns']:.1f}..{r['added_pairs_p75_ns']:.1f}"
        sem = "-" if r["added_sem_ns"] is None else f"{r['added_sem_ns']:.1f}"
        print(f"{label(r['op']):<38} {r['baseline_median_ns']:>11.1f} {r['interposed_median_ns']:>13.1f} "
              f"{r['added_ns']:>9.1f} {iqr:>16} {sem:>6}  {r['target']:<27} {r['verdict']}")
    n = rows[0]["process_pairs"] if rows else 0
    print(f"baseline/interposed: medians of all samples. added: median over {n} process pairs of each pair's "
          f"difference of medians;\np25..p75 and sem: the spread of those differences. "
          f"Alloc+free added varies by {spread:.1f} ns across live counts (flat: < {FLAT_NS:.0f}).")


def environment(a):
    def read(path):
        try:
            return pathlib.Path(path).read_text().strip()
        except OSError:
            return None
    prog = a.build / "bin" / "gs-bench-interposer"
    cache = read(a.build / "CMakeCache.txt") or ""
    btype = next((l.split("=", 1)[1] for l in cache.splitlines() if l.startswith("CMAKE_BUILD_TYPE:")), None)
    return {
        "cpus": os.cpu_count(), "kernel": platform.release(), "machine": platform.machine(),
        "max_map_count": read("/proc/sys/vm/max_map_count"), "build_type": btype,
        "sanitized": b"__asan_init" in prog.read_bytes(), "spec": a.spec, "time": time.strftime("%FT%T%z"),
    }


def main():
    a = parse_args()
    for name in ("gs-bench-interposer", "gpuslice"):
        if not (a.build / "bin" / name).exists():
            sys.exit(f"run-interposer: {a.build / 'bin' / name} is missing: "
                     f"run `cmake --build {a.build} --target bench` first")
    env_info = environment(a)
    if env_info["sanitized"]:
        print("run-interposer: warning: this is a sanitizer build; its figures say nothing about speed",
              file=sys.stderr)
    samples, mappings = collect(a, commands(a))
    rows = [summarize(op, samples["baseline"][op], samples["interposed"][op]) for op in samples["baseline"]]
    for r in rows:
        r["max_process_mappings"] = mappings[r["op"]]
    ok, spread = judge(rows, a.quick)
    print_table(rows, spread)
    summary = {"benchmark": "interposer", "quick": a.quick, "environment": env_info,
               "targets_ns": {"launch_added": LAUNCH_TARGET_NS, "alloc_free_added": PAIR_TARGET_NS,
                              "alloc_free_flat": FLAT_NS},
               "alloc_free_added_spread_ns": spread, "all_targets_met": ok if not a.quick else None,
               "results": rows}
    print(json.dumps(summary, indent=2))
    benchlib.write_samples(a, "interposer", summary, samples)
    return 3 if a.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
