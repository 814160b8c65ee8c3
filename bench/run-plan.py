#!/usr/bin/env python3
"""Planner benchmark: how long `gpuslice plan` takes on the Alibaba GenAI sample (143 pods,
157k joined samples, read gzip-compressed from data/alibaba-genai/), against the time just to
decompress the same files (`gzip -dc`), measured in the same run. Target: under 5 s.

Usage: bench/run-plan.py [--build DIR] [--runs N] [--json FILE]
Prints a Markdown table (what bench/RESULTS.md holds) and, with --json, writes every run."""
import argparse
import pathlib
import statistics
import subprocess
import sys
import time

import benchlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "alibaba-genai"
FILES = [DATA / "pod_gpu_duty_cycle_anon.csv.gz", DATA / "pod_gpu_memory_used_bytes_anon.csv.gz"]


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    gpuslice = pathlib.Path(a.build) / "bin" / "gpuslice"
    cases = {
        "gzip -dc (baseline: decompress only)": ["gzip", "-dc", *FILES],
        "gpuslice plan --format table": [gpuslice, "plan", "--metrics", *FILES],
        "gpuslice plan --format json": [gpuslice, "plan", "--metrics", *FILES, "--format", "json"],
        "gpuslice plan --format html": [gpuslice, "plan", "--metrics", *FILES, "--format", "html"],
    }
    runs = {name: [timed(cmd) for _ in range(a.runs)] for name, cmd in cases.items()}
    base = statistics.median(next(iter(runs.values())))
    print(f"| case | median s ({a.runs} runs) | × baseline | target |")
    print("|---|---|---|---|")
    for name, t in runs.items():
        med = statistics.median(t)
        target = "—" if name.startswith("gzip") else ("< 5 s: met" if med < 5 else "< 5 s: MISSED")
        print(f"| {name} | {med:.3f} | {med / base:.1f} | {target} |")
    benchlib.write_runs(a.json, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
