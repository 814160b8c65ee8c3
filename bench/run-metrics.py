#!/usr/bin/env python3
"""Metrics benchmark: how long the daemon's /metrics text takes to render (gs_metrics_render) for
8 GPUs x 256 tenants, next to a baseline from the same run: the same bytes written by one plain
snprintf per line, so that render / baseline is what formatting costs beyond writing the text.

Each case is rendered with two GPU field sets in the same run, alternated round by round
(--rounds): dcgm-exporter's default set of 25 fields (the built-in, what the daemon serves) and
the 7 fields of before issue #16 (bench/counters-7.csv, through the counters setting's file
format); "25 / 7" is the ratio of their medians (each the median of the rounds' medians).
--baseline-build DIR adds a third, alternated with them: another build's gs-bench-metrics (an
older commit's, say) with its own default set.

Usage: bench/run-metrics.py [--build DIR] [--iters N] [--rounds R] [--baseline-build DIR] [--json FILE] [--quick]
Prints a Markdown table (what bench/RESULTS.md holds) and, with --json, writes every run.
Target: a render under 5 ms (median) for 8 GPUs x 256 tenants; p99 is shown beside it, and on a
loaded machine it measures the machine more than the renderer. --quick runs a few tiny renders to check
that the benchmark works (ctest bench/metrics-smoke); it asserts no timing."""
import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SEVEN = ROOT / "bench" / "counters-7.csv"
FIELD_SETS = [("25 (default)", []), ("7 (before #16)", ["--counters", str(SEVEN)])]
TARGET_MS = 5.0


def cases(tenants):
    """(label, gpus, tenants, GPUs each tenant uses, labels per tenant)."""
    return [
        (f"8 GPUs x {tenants} tenants, 1 GPU each", 8, tenants, 1, 4),
        (f"8 GPUs x {tenants} tenants, all 8 GPUs each", 8, tenants, 8, 4),
        (f"8 GPUs x {tenants} tenants, 16 labels each", 8, tenants, 1, 16),
    ]


def run_case(binary, gpus, tenants, per, labels, iters, extra=()):
    r = subprocess.run([str(binary), "--gpus", str(gpus), "--tenants", str(tenants),
                        "--gpus-per-tenant", str(per), "--labels", str(labels),
                        "--iters", str(iters), *extra], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def run_alternated(binary, case, iters, rounds, sets):
    """{field set name: pooled result} for one case, the two sets alternated round by round
    (the order flipped every round, so neither always runs first)."""
    _, gpus, tenants, per, labels = case
    per_set = {name: [] for name, _, _ in sets}
    for k in range(rounds):
        order = sets if k % 2 == 0 else sets[::-1]
        for name, other, extra in order:
            per_set[name].append(run_case(other or binary, gpus, tenants, per, labels, max(1, iters // rounds), extra))
    out = {}
    for name, runs in per_set.items():
        r = dict(runs[0])
        for key in ("render_median_ms", "render_p99_ms", "baseline_median_ms", "baseline_p99_ms"):
            r[key] = median([x[key] for x in runs])
        r["rounds"] = runs
        out[name] = r
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--tenants", type=int, default=256, help="tenants in each case (default 256; issue #17: 1024)")
    ap.add_argument("--rounds", type=int, default=10, help="alternations of the two field sets (default 10)")
    ap.add_argument("--baseline-build", help="another build dir whose gs-bench-metrics is alternated too")
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    binary = pathlib.Path(a.build) / "bin" / "gs-bench-metrics"
    iters = 3 if a.quick else a.iters
    rounds = 2 if a.quick else a.rounds
    sets = [(name, None, extra) for name, extra in FIELD_SETS]
    if a.baseline_build:
        sets.append((f"{a.baseline_build} (its default)", pathlib.Path(a.baseline_build) / "bin" / "gs-bench-metrics", []))
    results = []
    for case in cases(3 if a.quick else a.tenants):
        for name, r in run_alternated(binary, case, iters, rounds, sets).items():
            r["case"], r["field_set"] = case[0], name
            results.append(r)
    print("| case | GPU fields | rows | lines | KiB | render median ms | p99 ms | baseline median ms | "
          "render / baseline | 25 / 7 fields | target |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = r["render_median_ms"] / r["baseline_median_ms"] if r["baseline_median_ms"] else 0
        seven = next(x for x in results if x["case"] == r["case"] and x["field_set"] == FIELD_SETS[1][0])
        vs7 = r["render_median_ms"] / seven["render_median_ms"] if seven["render_median_ms"] else 0
        ok = "met" if r["render_median_ms"] < TARGET_MS else "MISSED"
        print(f"| {r['case']} | {r['field_set']} | {r['rows']} | {r['lines']} | {r['bytes'] / 1024:.0f} | "
              f"{r['render_median_ms']:.3f} | {r['render_p99_ms']:.3f} | {r['baseline_median_ms']:.3f} | "
              f"{ratio:.2f} | {vs7:.2f} | < {TARGET_MS:g} ms: {ok} |")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"target_ms": TARGET_MS, "runs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
