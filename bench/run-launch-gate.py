#!/usr/bin/env python3
"""What gpuslice's compute gate adds to a kernel launch that it does not hold, on the simulated GPU.

Runs gs-bench-launch-gate (bench/launch-gate-bench.c) again and again, rotating three ways in one run:
  baseline  the simulated libcuda.so.1 called directly (LD_LIBRARY_PATH=<build>/lib/sim);
  tenant    `gpuslice run --`: the interposer, with no compute limit;
  gated     `gpuslice run --compute 50 --compute-policy share --`: the tenant alone with a compute
            limit, so every launch goes through the gate, which never has cause to hold it.
Each process times zero-length launches on four paths (cuLaunchKernel, cuLaunchKernelEx,
cuLaunchCooperativeKernel, cuGraphLaunch of a one-kernel graph); a sample is the mean of a batch.

Reported per path: the median sample of each mode; "added", the median over process triples of
(gated median - baseline median), with its interquartile range and standard error; and
"gate only", the same for gated - tenant. Target: added < 100 ns on every path.

Prints a table and a summary JSON object; writes every sample to
<build>/bench-results/launch-gate.json. Exit status: 0 when it ran, 1 when a run failed, 2 on a
usage error, 3 with --check when the target is missed. --quick only checks that it runs.
"""
import argparse
import importlib.util
import json
import os
import pathlib
import sys
import tempfile
import time

import benchlib

HERE = pathlib.Path(__file__).resolve().parent
TARGET_NS = 100.0
MODES = ("baseline", "tenant", "gated")
LABELS = {"launch_plain": "cuLaunchKernel", "launch_ex": "cuLaunchKernelEx",
          "launch_coop": "cuLaunchCooperativeKernel", "launch_graph": "cuGraphLaunch (1 kernel)"}


def _interposer_runner():
    """run-interposer.py's process runner and statistics, shared rather than copied."""
    spec = importlib.util.spec_from_file_location("run_interposer", HERE / "run-interposer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RI = _interposer_runner()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", type=pathlib.Path, default=HERE.parent / "build", help="CMake build directory")
    p.add_argument("--triples", type=int, default=30, help="baseline/tenant/gated process triples (default 30)")
    p.add_argument("--rounds", type=int, default=15, help="samples per path per process (default 15)")
    p.add_argument("--batch", type=int, default=1000, help="launches per sample (default 1000)")
    p.add_argument("--spec", default="h100-80gb", help="GPUSLICE_SIM for the simulated device")
    p.add_argument("--cpu", type=int, help="pin the benchmark process to this CPU (taskset)")
    p.add_argument("--json", type=pathlib.Path, help="where to write all samples")
    p.add_argument("--shared-state", action="store_true",
                   help="one pair of state directories for every process, so that each tenant finds the "
                        "board and simulator state its predecessors left (default: fresh ones per process)")
    p.add_argument("--quick", action="store_true", help="a few tiny samples: checks that it runs, judges nothing")
    p.add_argument("--check", action="store_true", help="exit 3 when the target is missed")
    a = p.parse_args()
    if a.triples < 1 or a.rounds < 1 or a.batch < 1:
        p.error("--triples, --rounds and --batch must be at least 1")
    return a


def commands(a):
    build = a.build.resolve()
    prog = [str(build / "bin" / "gs-bench-launch-gate")]
    prog += ["--quick"] if a.quick else ["--rounds", str(a.rounds), "--batch", str(a.batch)]
    if a.cpu is not None:
        prog = ["taskset", "-c", str(a.cpu)] + prog
    run = [str(build / "bin" / "gpuslice"), "run"]
    return {"baseline": (prog, {"LD_LIBRARY_PATH": str(build / "lib" / "sim")}),
            "tenant": (run + ["--"] + prog, {}),
            "gated": (run + ["--compute", "50", "--compute-policy", "share", "--"] + prog, {})}


def collect(a, cmds):
    """samples[mode][op]: one list of samples per process. The order of the modes rotates
    from triple to triple, so that slow drift of the machine cancels. Every process gets
    fresh state directories (unless --shared-state): the tenant is alone on the GPU's board,
    with no row or turn left by the process before it."""
    samples = {m: {} for m in MODES}
    with tempfile.TemporaryDirectory(prefix="gs-bench-gate-") as tmp:
        base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GPUSLICE_TENANT")}
        for i in range(1 if a.quick else a.triples):
            for mode in MODES[i % 3:] + MODES[:i % 3]:
                run_dir = pathlib.Path(tmp) / ("shared" if a.shared_state else f"{i}-{mode}")
                env = dict(base, GPUSLICE_SIM=a.spec, GPUSIM_STATE_DIR=str(run_dir / "sim"),
                           GPUSLICE_STATE_DIR=str(run_dir / "gs"))
                for d in ("sim", "gs"):
                    (run_dir / d).mkdir(parents=True, exist_ok=True)
                for r in RI.run_once(*cmds[mode], env)["results"]:
                    samples[mode].setdefault(r["op"], []).append(r["samples_ns"])
    return samples


def rows_of(samples, quick):
    rows = []
    for op in samples["baseline"]:
        added = RI.summarize(op, samples["baseline"][op], samples["gated"][op])
        gate = RI.summarize(op, samples["tenant"][op], samples["gated"][op])
        row = {"op": op, "baseline_median_ns": added["baseline_median_ns"],
               "tenant_median_ns": gate["baseline_median_ns"], "gated_median_ns": added["interposed_median_ns"],
               "added_ns": added["added_ns"], "added_p25_ns": added["added_pairs_p25_ns"],
               "added_p75_ns": added["added_pairs_p75_ns"], "added_sem_ns": added["added_sem_ns"],
               "gate_only_ns": gate["added_ns"], "process_triples": added["process_pairs"],
               "target": f"< {TARGET_NS:.0f} ns"}
        sem = row["added_sem_ns"]
        met = row["added_ns"] < TARGET_NS
        sure = sem is not None and row["added_ns"] + 2 * sem < TARGET_NS
        row["verdict"] = "n/a (quick)" if quick else ("met" if sure else "borderline") if met else "MISSED"
        rows.append(row)
    return rows


def print_table(rows):
    head = f"{'launch path':<28} {'baseline ns':>11} {'tenant ns':>9} {'gated ns':>9} {'added ns':>9} " \
           f"{'p25..p75':>13} {'sem':>5} {'gate only':>9}  {'target':<9} verdict"
    print(head)
    print("-" * len(head))
    for r in rows:
        iqr = f"{r['added_p25_ns']:.1f}..{r['added_p75_ns']:.1f}"
        sem = "-" if r["added_sem_ns"] is None else f"{r['added_sem_ns']:.1f}"
        print(f"{LABELS.get(r['op'], r['op']):<28} {r['baseline_median_ns']:>11.1f} {r['tenant_median_ns']:>9.1f} "
              f"{r['gated_median_ns']:>9.1f} {r['added_ns']:>9.1f} {iqr:>13} {sem:>5} {r['gate_only_ns']:>9.1f}  "
              f"{r['target']:<9} {r['verdict']}")
    n = rows[0]["process_triples"] if rows else 0
    print(f"medians of all samples per mode; added: median over {n} process triples of (gated - baseline); "
          f"gate only: the same for (gated - tenant).")


def main():
    a = parse_args()
    for name in ("gs-bench-launch-gate", "gpuslice"):
        if not (a.build / "bin" / name).exists():
            sys.exit(f"run-launch-gate: {a.build / 'bin' / name} is missing: "
                     f"run `cmake --build {a.build} --target bench` first")
    prog = a.build / "bin" / "gs-bench-launch-gate"
    sanitized = b"__asan_init" in prog.read_bytes()
    if sanitized:
        print("run-launch-gate: warning: this is a sanitizer build; its figures say nothing about speed",
              file=sys.stderr)
    samples = collect(a, commands(a))
    rows = rows_of(samples, a.quick)
    print_table(rows)
    ok = all(r["added_ns"] < TARGET_NS for r in rows)
    summary = {"benchmark": "launch-gate", "quick": a.quick, "shared_state": a.shared_state,
               "target_added_ns": TARGET_NS,
               "environment": {"cpus": os.cpu_count(), "sanitized": sanitized, "spec": a.spec,
                               "time": time.strftime("%FT%T%z")},
               "all_targets_met": None if a.quick else ok, "results": rows}
    print(json.dumps(summary, indent=2))
    benchlib.write_samples(a, "launch-gate", summary, samples)
    return 3 if a.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
