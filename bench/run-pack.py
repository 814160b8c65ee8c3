#!/usr/bin/env python3
"""Placement benchmark: every `gpuslice pack` policy on the FGD paper's four openb traces,
seeds 42..51 at inflate 1.3, mean GPU allocation ratio beside the paper's published means.

Usage: bench/run-pack.py [--build DIR] [--data DIR] [--seeds N] [--json FILE]
Prints a Markdown table (what bench/RESULTS.md holds) and, with --json, writes every run.
The data directory defaults to ../shared/data/alibaba-openb beside the repository, which holds
all four pod lists. Without it (a clone on its own), the benchmark says so and runs only the
default trace, which data/alibaba-openb in the repository holds."""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys

import benchlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
TRACES = ["default", "gpushare40", "multigpu20", "cpu050"]
POLICIES = ["first-fit", "best-fit", "gpu-packing", "fgd", "fgd-mem"]
# Weng et al., ATC'23, GPU allocation ratio (%) at 130% arrived load, mean over 10 seeds.
PUBLISHED = {
    "default":    {"random": 87.47, "dotprod": 90.85, "gpu-clustering": 91.88, "gpu-packing": 92.00, "best-fit": 93.08, "fgd": 95.39},
    "gpushare40": {"random": 86.00, "dotprod": 89.56, "gpu-clustering": 90.02, "gpu-packing": 90.03, "best-fit": 91.69, "fgd": 94.15},
    "multigpu20": {"random": 88.69, "dotprod": 92.06, "gpu-clustering": 93.56, "gpu-packing": 93.71, "best-fit": 93.93, "fgd": 95.65},
    "cpu050":     {"random": 91.24, "dotprod": 93.27, "gpu-clustering": 93.79, "gpu-packing": 93.72, "best-fit": 93.79, "fgd": 95.21},
}


def run_one(gpuslice, nodes, pods, policy, seed):
    r = subprocess.run([str(gpuslice), "pack", "--nodes", str(nodes), "--pods", str(pods),
                        "--policy", policy, "--seed", str(seed), "--inflate", "1.3",
                        "--format", "json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def pick_data(given):
    """The data directory and the traces it holds."""
    if given:
        return pathlib.Path(given), TRACES
    shared = ROOT.parent / "shared" / "data" / "alibaba-openb"
    if shared.is_dir():
        return shared, TRACES
    print(f"run-pack: {shared} does not exist: running only the default trace from data/alibaba-openb",
          file=sys.stderr)
    return ROOT / "data" / "alibaba-openb", ["default"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--data", default=None)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    gpuslice = pathlib.Path(a.build) / "bin" / "gpuslice"
    data, traces = pick_data(a.data)
    nodes = data / "openb_node_list_gpu_node.csv"
    runs, rows = [], []
    for trace in traces:
        pods = data / f"openb_pod_list_{trace}.csv"
        for policy in POLICIES:
            res = [run_one(gpuslice, nodes, pods, policy, 42 + s) for s in range(a.seeds)]
            runs += [{"trace": trace, "policy": policy, "seed": 42 + i, **r} for i, r in enumerate(res)]
            alloc = [100 * r["gpu_alloc_ratio"] for r in res]
            rate = statistics.mean(r["decisions_per_s"] for r in res)
            pub = PUBLISHED[trace].get(policy)
            rows.append((trace, policy, statistics.mean(alloc), statistics.pstdev(alloc), pub, rate))
    print("| trace | policy | measured gpu_alloc % (mean ± sd) | published % | diff | decisions/s |")
    print("|---|---|---|---|---|---|")
    for trace, policy, mean, sd, pub, rate in rows:
        p = f"{pub:.2f}" if pub is not None else "—"
        d = f"{mean - pub:+.2f}" if pub is not None else "—"
        print(f"| {trace} | {policy} | {mean:.2f} ± {sd:.2f} | {p} | {d} | {rate:,.0f} |")
    benchlib.write_runs(a.json, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
