#!/usr/bin/env python3
"""Metrics benchmark: how long the daemon's /metrics text takes to render (gs_metrics_render) for
8 GPUs x 256 tenants, next to a baseline from the same run: the same bytes written by one plain
snprintf per line, so that render / baseline is what formatting costs beyond writing the text.

Usage: bench/run-metrics.py [--build DIR] [--iters N] [--json FILE] [--quick]
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
TARGET_MS = 5.0
# (label, gpus, tenants, GPUs each tenant uses, labels per tenant)
CASES = [
    ("8 GPUs x 256 tenants, 1 GPU each", 8, 256, 1, 4),
    ("8 GPUs x 256 tenants, all 8 GPUs each", 8, 256, 8, 4),
    ("8 GPUs x 256 tenants, 16 labels each", 8, 256, 1, 16),
]


def run_case(binary, gpus, tenants, per, labels, iters):
    r = subprocess.run([str(binary), "--gpus", str(gpus), "--tenants", str(tenants),
                        "--gpus-per-tenant", str(per), "--labels", str(labels),
                        "--iters", str(iters)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    binary = pathlib.Path(a.build) / "bin" / "gs-bench-metrics"
    iters = 3 if a.quick else a.iters
    results = []
    for label, gpus, tenants, per, labels in CASES:
        r = run_case(binary, gpus, tenants, per, labels, iters)
        r["case"] = label
        results.append(r)
    print("| case | rows | lines | KiB | render median ms | p99 ms | baseline median ms | render / baseline | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = r["render_median_ms"] / r["baseline_median_ms"] if r["baseline_median_ms"] else 0
        ok = "met" if r["render_median_ms"] < TARGET_MS else "MISSED"
        print(f"| {r['case']} | {r['rows']} | {r['lines']} | {r['bytes'] / 1024:.0f} | "
              f"{r['render_median_ms']:.3f} | {r['render_p99_ms']:.3f} | {r['baseline_median_ms']:.3f} | "
              f"{ratio:.2f} | < {TARGET_MS:g} ms: {ok} |")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"target_ms": TARGET_MS, "runs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
