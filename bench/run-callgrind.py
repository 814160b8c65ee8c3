#!/usr/bin/env python3
"""Instructions per intercepted call, counted by callgrind, for one build or two side by side.

Time on a shared 2-core machine is noisy; an instruction count is not (the same binary, input
and environment give the same count). For each operation this runs gs-bench-interposer (or
gs-bench-launch-gate) under `valgrind --tool=callgrind` twice, with a small and a large batch,
and reports the marginal count: (Ir(large) - Ir(small)) / (large - small) instructions per
call, which leaves out start-up and everything else that does not repeat per call.

Modes, as in run-interposer.py and run-launch-gate.py:
  driver   the simulated libcuda.so.1 called directly;
  tenant   under `gpuslice run --vram 1T` (every charge path of libgpuslice.so active);
  gated    under `gpuslice run --vram 1T --compute 50` (the compute gate on every launch).

With --base DIR, the same counts for a second build (an older commit) and the ratio
build / base: how much a change added to the hot paths, by a measure that cannot drift.

Exit status: 0 when it ran, 1 when a run failed, 2 on a usage error.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
SMALL, LARGE = 200, 2200
# operation -> (benchmark program, arguments for a batch of n calls). gs-bench-interposer says
# how many calls it made (warm-up included) and the count is divided by those; the launch-gate
# row is per batch element (each runs the four gated paths, warm-up included).
OPS = {
    "cuLaunchKernel": ("gs-bench-interposer",
                       lambda n: ["--ops", "launch", "--rounds", "1", "--launch-batch", str(n)]),
    "cuMemAlloc_v2+cuMemFree_v2 (10 live)": ("gs-bench-interposer",
                       lambda n: ["--ops", "pairs", "--rounds", "1", "--pair-batch", str(n), "--live", "10"]),
    "gated launches (4 paths)": ("gs-bench-launch-gate", lambda n: ["--rounds", "1", "--batch", str(n)]),
}
MODES = {"driver": None, "tenant": ["--vram", "1T"], "gated": ["--vram", "1T", "--compute", "50"]}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", type=pathlib.Path, default=REPO / "build", help="CMake build directory")
    p.add_argument("--base", type=pathlib.Path, help="a second build to compare with")
    p.add_argument("--spec", default="h100-80gb", help="GPUSLICE_SIM for the simulated device")
    a = p.parse_args()
    if not shutil.which("valgrind"):
        p.error("valgrind not found (Debian package valgrind)")
    for d in [a.build] + ([a.base] if a.base else []):
        if not (d / "bin" / "gpuslice").is_file():
            p.error(f"{d}: no bin/gpuslice; build it first")
    return a


def instructions(build, mode, program, args, spec):
    with tempfile.TemporaryDirectory(prefix="gs-callgrind-") as tmp:
        out = pathlib.Path(tmp) / "cg.out"
        env = dict(os.environ, GPUSLICE_SIM=spec, GPUSLICE_STATE_DIR=tmp,
                   LD_LIBRARY_PATH=str(build / "lib" / "sim"))
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               str(build / "bin" / program)] + args
        if MODES[mode] is not None:
            cmd = [str(build / "bin" / "gpuslice"), "run"] + MODES[mode] + ["--"] + cmd
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        counts = self_by_object(out.read_text())
        counts["calls"] = calls_made(r.stdout)
        return counts


def calls_made(stdout):
    """The calls gs-bench-interposer made of what it timed, warm-up included; None for a program
    that does not say."""
    try:
        return sum(x["calls_total"] for x in json.loads(stdout)["results"])
    except (ValueError, KeyError, TypeError):
        return None


def self_by_object(text):
    """Instructions executed in each object's own code (self cost, calls left out), and in all."""
    names, ob, skip, cost = {}, "?", False, {}
    for line in text.splitlines():
        m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line)
        if m and m.group(2):
            names[m.group(1)] = m.group(2)
        if m and line.startswith("ob="):
            ob = names.get(m.group(1), "?")
        elif line.startswith("calls="):
            skip = True                      # the next cost line is the call's inclusive cost
        elif line[:1].isdigit() or line[:1] in "+-*":
            if not skip:
                parts = line.split()
                if len(parts) > 1:
                    cost[ob] = cost.get(ob, 0) + int(parts[1])
            skip = False
    total = sum(cost.values())
    mine = sum(v for k, v in cost.items() if k and k.endswith("libgpuslice.so"))
    return {"all": total, "libgpuslice.so": mine}


def per_call(build, mode, op, spec):
    program, args = OPS[op]
    small = instructions(build, mode, program, args(SMALL), spec)
    large = instructions(build, mode, program, args(LARGE), spec)
    calls = large["calls"] - small["calls"] if small["calls"] is not None else LARGE - SMALL
    return {k: (large[k] - small[k]) / calls for k in ("all", "libgpuslice.so")}


def row_for(a, op, mode):
    row = {"op": op, "mode": mode, "build": per_call(a.build, mode, op, a.spec)}
    if a.base:
        row["base"] = per_call(a.base, mode, op, a.spec)
        row["ratio"] = {k: (row["build"][k] / row["base"][k] if row["base"][k] else None)
                        for k in row["build"]}
    return row


def cell(v):
    return "-" if v is None else f"{v:.3f}"


def print_table(rows, base):
    cols = ["operation", "mode", "Ir/call, all", "Ir/call in libgpuslice.so"]
    if base:
        cols += ["all: build/base", "libgpuslice.so: build/base"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        cells = [r["op"], r["mode"], f"{r['build']['all']:.1f}", f"{r['build']['libgpuslice.so']:.1f}"]
        if base:
            cells += [cell(r["ratio"]["all"]), cell(r["ratio"]["libgpuslice.so"])]
        print("| " + " | ".join(cells) + " |")


def main():
    a = parse_args()
    try:
        rows = [row_for(a, op, mode) for op in OPS for mode in MODES]
    except RuntimeError as e:
        print(f"run-callgrind: {e}", file=sys.stderr)
        return 1
    print_table(rows, a.base)
    print(json.dumps({"calls": LARGE - SMALL, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
