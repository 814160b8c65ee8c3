#!/usr/bin/env python3
"""Placement benchmark: every `gpuslice pack` policy on the FGD paper's four openb traces,
seeds 42..51 at inflate 1.3, mean GPU allocation ratio beside the paper's published means.

Usage: bench/run-pack.py [--build DIR] [--data DIR] [--seeds N] [--json FILE]
       bench/run-pack.py --versus [--build DIR] [--data DIR] [--seeds N] [--first-seed S] [--json FILE]

--versus: FGD against the best policy (fgd-mem-tie) on the four traces and on variants that
`gpuslice pack --variant` derives from the default trace (sharing-heavy, GPU-spec-heavy,
multi-GPU-heavy), on held-out seeds (default 0..9; the policy was tuned on seeds 100..119),
with the paper artifact's FGD mean where it publishes one, the same-seed wins, and FGD
against the best policy with departures (--departures) on the default trace.
Prints a Markdown table (what bench/RESULTS.md holds) and, with --json, writes every run.
The data directory defaults to ../shared/data/alibaba-openb beside the repository, which holds
all four pod lists. Without it (a clone on its own), the benchmark says so and runs only the
default trace, which data/alibaba-openb in the repository holds."""
import argparse
import csv
import io
import json
import pathlib
import resource
import statistics
import subprocess
import sys

import benchlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
TRACES = ["default", "gpushare40", "multigpu20", "cpu050"]
POLICIES = ["first-fit", "best-fit", "gpu-packing", "fgd", "fgd-mem", "fgd-mem-tie"]
# Weng et al., ATC'23, GPU allocation ratio (%) at 130% arrived load, mean over 10 seeds.
PUBLISHED = {
    "default":    {"random": 87.47, "dotprod": 90.85, "gpu-clustering": 91.88, "gpu-packing": 92.00, "best-fit": 93.08, "fgd": 95.39},
    "gpushare40": {"random": 86.00, "dotprod": 89.56, "gpu-clustering": 90.02, "gpu-packing": 90.03, "best-fit": 91.69, "fgd": 94.15},
    "multigpu20": {"random": 88.69, "dotprod": 92.06, "gpu-clustering": 93.56, "gpu-packing": 93.71, "best-fit": 93.93, "fgd": 95.65},
    "cpu050":     {"random": 91.24, "dotprod": 93.27, "gpu-clustering": 93.79, "gpu-packing": 93.72, "best-fit": 93.79, "fgd": 95.21},
}


# The paper artifact's FGD means at 130% (its expected results, 10 seeds) for its own variant
# files; our variants follow the same recipe with other draws (docs/placement.md).
PUBLISHED_FGD_VARIANTS = {"gpushare60": 91.40, "gpushare80": 89.30, "gpushare100": 86.90,
                          "gpuspec10": 94.95, "gpuspec20": 94.84, "gpuspec33": 94.55,
                          "multigpu30": 96.46, "multigpu50": 97.18}
VARIANTS = ["gpushare40", "gpushare60", "gpushare80", "gpushare100", "gpuspec20", "gpuspec33",
            "multigpu30", "multigpu50"]
BEST = "fgd-mem-tie"


def run_one(gpuslice, nodes, pods, policy, seed, *extra):
    r = subprocess.run([str(gpuslice), "pack", "--nodes", str(nodes), "--pods", str(pods),
                        "--policy", policy, "--seed", str(seed), "--inflate", "1.3",
                        "--format", "json", *extra], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def versus(gpuslice, data, traces, seeds, runs):
    """The --versus table: FGD and the best policy on each trace and variant, same seeds."""
    nodes = data / "openb_node_list_gpu_node.csv"
    cases = [(t, data / f"openb_pod_list_{t}.csv", []) for t in traces]
    cases += [(f"{v} (generated)" if v in traces else v, data / "openb_pod_list_default.csv",
               ["--variant", v]) for v in VARIANTS]
    cases += [("default, departures", data / "openb_pod_list_default.csv", ["--departures"]),
              ("gpushare80, departures", data / "openb_pod_list_default.csv",
               ["--variant", "gpushare80", "--departures"])]
    print(f"| trace | fgd % (mean ± sd) | {BEST} % (mean ± sd) | diff | FGD published % | same-seed wins | decisions/s fgd / {BEST} |")
    print("|---|---|---|---|---|---|---|")
    for name, pods, extra in cases:
        res = {p: [run_one(gpuslice, nodes, pods, p, s, *extra) for s in seeds] for p in ("fgd", BEST)}
        for p, rs in res.items():
            runs += [{"trace": name, "policy": p, "seed": s, **r} for s, r in zip(seeds, rs)]
        a = {p: [100 * r["gpu_alloc_ratio"] for r in rs] for p, rs in res.items()}
        wins = sum(b > f for f, b in zip(a["fgd"], a[BEST]))
        ties = sum(b == f for f, b in zip(a["fgd"], a[BEST]))
        key = name.split(" ")[0]
        pub = PUBLISHED.get(key, {}).get("fgd", PUBLISHED_FGD_VARIANTS.get(key)) if "," not in name else None
        rate = {p: statistics.mean(r["decisions_per_s"] for r in rs) for p, rs in res.items()}
        m = {p: statistics.mean(v) for p, v in a.items()}
        sd = {p: statistics.pstdev(v) for p, v in a.items()}
        print(f"| {name} | {m['fgd']:.2f} ± {sd['fgd']:.2f} | {m[BEST]:.2f} ± {sd[BEST]:.2f} | "
              f"{m[BEST] - m['fgd']:+.2f} | {pub if pub is not None else '—'} | "
              f"{wins}/{len(seeds)}{f' ({ties} tied)' if ties else ''} | "
              f"{rate['fgd']:,.0f} / {rate[BEST]:,.0f} |", flush=True)


def speed(gpuslice, data, seeds):
    """Decisions per second of the replay (wall, as the CLI reports it) and per CPU-second of
    the whole process (CSV loading included), which a loaded machine disturbs less."""
    nodes, pods = data / "openb_node_list_gpu_node.csv", data / "openb_pod_list_default.csv"
    print("| policy (default trace) | decisions/s, wall (replay) | decisions per CPU-second (whole process) |")
    print("|---|---|---|")
    for policy in ("fgd", "fgd-mem", BEST):
        wall, cpu = [], []
        for seed in seeds:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = run_one(gpuslice, nodes, pods, policy, seed)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            wall.append(r["decisions_per_s"])
            cpu.append((r["pods_placed"] + r["pods_failed"]) / used)
        print(f"| {policy} | {statistics.median(wall):,.0f} | {statistics.median(cpu):,.0f} |")


def share_stats(text):
    """Pods, CPU-only, sharing, whole-GPU and multi-GPU pods, and the sharing share of the
    GPU request, of a pod list."""
    rows = list(csv.DictReader(io.StringIO(text)))
    req = lambda r: int(r["num_gpu"]) * min(1000, max(1, int(r["gpu_milli"]))) if r["num_gpu"] != "0" else 0
    sharing = lambda r: r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000
    total = sum(req(r) for r in rows)
    return (len(rows), sum(r["num_gpu"] == "0" for r in rows), sum(map(sharing, rows)),
            sum(r["num_gpu"] == "1" and not sharing(r) for r in rows),
            sum(int(r["num_gpu"]) > 1 for r in rows),
            sum(req(r) for r in rows if sharing(r)) / total, total)


def variant_stats(gpuslice, data, seeds):
    """Our gpushare40 (from the default trace, several variant seeds) beside the published one."""
    nodes, pods = data / "openb_node_list_gpu_node.csv", data / "openb_pod_list_default.csv"
    print("| pod list | pods | CPU-only | sharing | whole 1-GPU | multi-GPU | sharing share of GPU request | GPU request (milli) |")
    print("|---|---|---|---|---|---|---|---|")
    lists = [("published gpushare40", (data / "openb_pod_list_gpushare40.csv").read_text())]
    for vs in seeds:
        r = subprocess.run([str(gpuslice), "pack", "--nodes", str(nodes), "--pods", str(pods),
                            "--variant", "gpushare40", "--variant-seed", str(vs), "--write-pods", "-"],
                           capture_output=True, text=True, check=True)
        lists.append((f"ours, --variant-seed {vs}", r.stdout))
    for name, text in lists:
        n, cpu, sh, whole, multi, frac, total = share_stats(text)
        print(f"| {name} | {n} | {cpu} | {sh} | {whole} | {multi} | {frac:.3f} | {total:,} |")


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
    ap.add_argument("--versus", action="store_true")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--variant-stats", action="store_true")
    ap.add_argument("--speed", action="store_true")
    a = ap.parse_args()
    gpuslice = pathlib.Path(a.build) / "bin" / "gpuslice"
    data, traces = pick_data(a.data)
    if a.speed:
        speed(gpuslice, data, list(range(a.first_seed, a.first_seed + a.seeds)))
        return 0
    if a.variant_stats:
        variant_stats(gpuslice, data, [1, 2, 3])
        return 0
    if a.versus:
        runs = []
        versus(gpuslice, data, traces, list(range(a.first_seed, a.first_seed + a.seeds)), runs)
        benchlib.write_runs(a.json, runs)
        return 0
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
