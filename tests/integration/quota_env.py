"""Helpers for the memory-quota tests (test_quota_*.py): an environment with the simulated
GPU and a private gpuslice state directory, `gpuslice run` around the workload or around
quota_driver.py, and the refusal lines the interposer writes to stderr."""
import json
import pathlib
import subprocess
import sys

from conftest import BIN, BUILD, asan_runtime, make_sim_env, run
from wl_run import WORKLOAD

HERE = pathlib.Path(__file__).resolve().parent
GPUSLICE = BIN / "gpuslice"
PRELOAD = BUILD / "lib" / "libgpuslice.so"
DRIVER = HERE / "quota_driver.py"
NVML_PROBE = HERE / "nvml_probe.py"
H100_TOTAL = 85520809984     # bytes of a simulated h100-80gb (sim/sim-models.c)

# What a process must not inherit from the test's own environment: it would put the test's
# processes in some other tenant.
TENANT_VARS = ("LD_PRELOAD", "GPUSLICE_TENANT")


ASAN = asan_runtime("libcuda.so.1")


def for_python(env):
    """env for a Python process that loads the simulated libraries through ctypes: Python is
    not built with ASan, so in sanitizer builds the runtime must be preloaded for them."""
    if not ASAN:
        return env
    # The interpreter's own allocations at exit are not the simulator's leaks.
    return dict(env, LD_PRELOAD=ASAN, ASAN_OPTIONS="detect_leaks=0")


def start_python_tenant(name, opts, argv, env):
    """`gpuslice run --name NAME OPTS -- python ARGV` with its three streams piped, once the
    probe has written its first line, the JSON that names its pid: (process, pid)."""
    p = subprocess.Popen([str(GPUSLICE), "run", "--name", name, *opts, "--", sys.executable, *argv],
                         env=for_python(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line, p.stderr.read()
    return p, json.loads(line)["pid"]


def quota_env(tmp_path, spec="h100-80gb", **extra):
    """The simulated devices in `spec`, with the simulator's state and gpuslice's state
    directory both private to the test, and no tenant."""
    sim, state = tmp_path / "sim", tmp_path / "state"
    sim.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    env = make_sim_env(sim, spec, GPUSLICE_STATE_DIR=state, **extra)
    for k in TENANT_VARS:
        env.pop(k, None)
    return env


def state_dir(env):
    return pathlib.Path(env["GPUSLICE_STATE_DIR"])


def ledger_files(env):
    """The ledgers left in the state directory (run creates tenants/<name>)."""
    tenants = state_dir(env) / "tenants"
    return sorted(p.name for p in tenants.iterdir()) if tenants.exists() else []


def gpuslice_run(options, command, env, timeout=120):
    """`gpuslice run OPTIONS -- COMMAND` to completion."""
    return run([GPUSLICE, "run"] + [str(o) for o in options] + ["--"] + [str(c) for c in command],
               env=env, timeout=timeout)


def json_lines(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip().startswith("{")]


def driver(options, args, env, timeout=120):
    """Runs quota_driver.py ARGS as a tenant of `gpuslice run OPTIONS`; requires exit 0 and
    returns its JSON lines."""
    r = gpuslice_run(options, [sys.executable, DRIVER, WORKLOAD] + [str(a) for a in args], env, timeout)
    assert r.returncode == 0, f"driver {args}: exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return json_lines(r.stdout)


def refusal_lines(stderr):
    """The lines the interposer wrote: those that start with 'gpuslice:'."""
    return [line for line in stderr.splitlines() if line.startswith("gpuslice:")]


def outside(env):
    """env as a process outside any tenant sees it: no GPUSLICE_TENANT, and no interposer in
    LD_PRELOAD (anything else preloaded stays)."""
    env = {k: v for k, v in env.items() if k != "GPUSLICE_TENANT"}
    keep = [x for x in env.pop("LD_PRELOAD", "").split(":") if x and "libgpuslice" not in x]
    if keep:
        env["LD_PRELOAD"] = ":".join(keep)
    return env


def used_bytes(info_line, index=0):
    dev = info_line["devices"][index]
    return dev["ctx_total_bytes"] - dev["free_bytes"]

