#!/usr/bin/env python3
"""How much the SPANK plugin adds to a Slurm step's start: `srun true` timed from the call to
its exit on a one-node cluster (integrations/slurm/hack/cluster.sh), without the plugin (the
baseline, an empty plugstack.conf) and with it, in the same run and the same cluster.

Modes, alternated round by round so that drift on a shared machine hits them all alike:
  no-plugin      plugstack.conf empty: Slurm alone
  plugin         the plugin loaded, the step given no gpuslice option (it stays no tenant)
  tenant         --gpu-vram=1Gi: the step's ledger made, its environment set, removed at the end
  tenant+daemon  the same with a gpuslice daemon on the node: registered and ended over its socket

srun and slurmstepd both read plugstack.conf at each start, so rewriting it between runs
switches the plugin on and off without restarting the cluster. Needs root (slurmd, munged)
and the build's gpuslice, gpuslice_spank.so and simulated GPU.

Prints a table and a JSON object on stdout: per mode the median and p90 in ms and the ratio of
the median to no-plugin's. Exit status: 0 when it ran, 1 when a run failed.
"""
import argparse
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
CLUSTER = REPO / "integrations" / "slurm" / "hack" / "cluster.sh"
MODES = ["no-plugin", "plugin", "tenant", "tenant+daemon"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", type=pathlib.Path, default=REPO / "build", help="CMake build directory")
    p.add_argument("--rounds", type=int, default=20, help="runs of each mode (default 20)")
    p.add_argument("--json", type=pathlib.Path, help="also write the JSON, with every sample, here")
    return p.parse_args()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, env, **kw):
    p = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=120, **kw)
    if p.returncode != 0:
        sys.exit(f"run-slurm-start: {' '.join(map(str, cmd))}: exit {p.returncode}\n{p.stderr}")
    return p


def start_daemon(build, root, env):
    state = root / "state"
    state.mkdir(mode=0o755)
    denv = dict(env, GPUSLICE_STATE_DIR=str(state), GPUSLICE_SOCKET=str(state / "gpuslice.sock"),
                GPUSLICE_LEDGER_DB=str(root / "ledger.db"), GPUSLICE_METRICS_LISTEN=f"127.0.0.1:{free_port()}")
    log = open(root / "daemon.log", "w")
    proc = subprocess.Popen([str(build / "bin" / "gpuslice"), "daemon", "--foreground"], env=denv,
                            stdout=log, stderr=log)
    for _ in range(200):
        if (state / "gpuslice.sock").exists():
            return proc, denv
        time.sleep(0.05)
    proc.kill()
    sys.exit(f"run-slurm-start: the daemon did not start: {(root / 'daemon.log').read_text()}")


def time_srun(env, opts):
    t0 = time.monotonic_ns()
    run(["srun", "-J", "bench", *opts, "true"], env)
    return time.monotonic_ns() - t0


def summary(samples, base):
    med = statistics.median(samples)
    p90 = sorted(samples)[int(0.9 * (len(samples) - 1))]
    return {"median_ms": med / 1e6, "p90_ms": p90 / 1e6, "ratio": med / base}


def main():
    a = parse_args()
    plugin = a.build / "lib" / "gpuslice_spank.so"
    if os.geteuid() != 0 or not plugin.exists():
        sys.exit(f"run-slurm-start: needs root and {plugin}")
    root = pathlib.Path(tempfile.mkdtemp(prefix="gs-slurm-bench-"))
    os.chmod(root, 0o755)
    cdir = root / "cluster"
    env = dict(os.environ, GS_SLURM_DIR=str(cdir), GS_SLURM_CTLD_PORT=str(free_port()),
               GS_SLURMD_PORT=str(free_port()), GS_SLURM_PLUGIN=str(plugin), GS_SLURM_GPUS="1")
    (root / "sim").mkdir()
    env.update(GPUSLICE_SIM="h100-80gb", GPUSIM_STATE_DIR=str(root / "sim"),
               LD_LIBRARY_PATH=str(a.build / "lib" / "sim"))
    daemon = None
    try:
        up = run(["bash", CLUSTER, "up"], env)
        env["SLURM_CONF"] = up.stdout.strip().splitlines()[-1].split("=", 1)[1]
        plugstack = cdir / "plugstack.conf"
        with_plugin = plugstack.read_text()
        daemon, denv = start_daemon(a.build, root, env)
        alone = dict(denv)
        for k in ("GPUSLICE_SOCKET",):
            alone.pop(k)
        alone["GPUSLICE_STATE_DIR"] = str(root / "alone")
        (root / "alone").mkdir(mode=0o755)
        cases = {"no-plugin": ("", alone, []), "plugin": (with_plugin, alone, []),
                 "tenant": (with_plugin, alone, ["--gpu-vram=1Gi"]),
                 "tenant+daemon": (with_plugin, denv, ["--gpu-vram=1Gi"])}
        samples = {m: [] for m in MODES}
        for r in range(a.rounds + 1):
            for m in MODES:
                conf, menv, opts = cases[m]
                plugstack.write_text(conf)
                ns = time_srun(menv, opts)
                if r:  # the first round warms caches and connections up
                    samples[m].append(ns)
        plugstack.write_text(with_plugin)
        # Each tenant+daemon step registered: the daemon logs every registration.
        registered = (root / "daemon.log").read_text().count("registered by uid")
        if registered != a.rounds + 1:
            sys.exit(f"run-slurm-start: the daemon saw {registered} registrations, not {a.rounds + 1}")
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait(timeout=30)
        subprocess.run(["bash", str(CLUSTER), "down"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(samples["no-plugin"])
    out = {m: summary(samples[m], base) for m in MODES}
    print(f"srun true, {a.rounds} runs per mode, alternated ({os.cpu_count()} CPUs)")
    print(f"{'mode':<15}{'median ms':>10}{'p90 ms':>10}{'ratio':>8}")
    for m in MODES:
        print(f"{m:<15}{out[m]['median_ms']:>10.1f}{out[m]['p90_ms']:>10.1f}{out[m]['ratio']:>8.3f}")
    print(json.dumps({"bench": "slurm-start", "rounds": a.rounds, "registrations": registered, "modes": out}))
    if a.json:
        a.json.write_text(json.dumps({"modes": out, "samples_ns": samples}, indent=1) + "\n")


if __name__ == "__main__":
    main()
