"""Shared fixtures for the integration tests: where the build is, and an environment that
points a process at the simulated driver with state private to the test."""
import os
import pathlib
import subprocess

import pytest

BUILD = pathlib.Path(os.environ.get("GS_BUILD_DIR", pathlib.Path(__file__).resolve().parents[2] / "build"))
BIN = BUILD / "bin"
SIMLIB = BUILD / "lib" / "sim"


@pytest.fixture
def build_dir():
    return BUILD


def asan_runtime(lib):
    """The ASan runtime the simulated library lib (a file in SIMLIB) needs when built with
    GS_SANITIZE, else None. Python is not built with ASan, so a process that loads the library
    through ctypes must preload the runtime."""
    try:
        ldd = subprocess.run(["ldd", str(SIMLIB / lib)], capture_output=True, text=True).stdout
    except OSError:
        return None
    for line in ldd.splitlines():
        if "libasan" in line and "=>" in line:
            return line.split("=>")[1].split()[0]
    return None


def make_sim_env(state_dir, spec="h100-80gb", **extra):
    """Environment for a process that should see the simulated devices in `spec`.
    The state directory is private so tests never share devices with each other."""
    env = dict(os.environ)
    env["GPUSLICE_SIM"] = spec
    env["GPUSIM_STATE_DIR"] = str(state_dir)
    env["LD_LIBRARY_PATH"] = str(SIMLIB) + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture
def sim_env(tmp_path):
    return make_sim_env(tmp_path)


def run(args, env=None, timeout=120, check=False, **kw):
    """Runs a program to completion and returns the CompletedProcess with text output."""
    return subprocess.run([str(a) for a in args], env=env, timeout=timeout, check=check,
                          capture_output=True, text=True, **kw)
