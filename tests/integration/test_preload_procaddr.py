"""Entries gpuslice does not hook reach the program as the driver's own functions, with no
wrapper in between, however they are looked up; entries it hooks come back as its hooks."""
import json
import sys
from pathlib import Path

from quota_env import for_python, gpuslice_run, quota_env

PROBE = Path(__file__).resolve().parent / "procaddr_probe.py"


def probe(tmp_path):
    env = for_python(quota_env(tmp_path))
    r = gpuslice_run(["--vram", "1Gi"], [sys.executable, PROBE], env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_unhooked_entries_are_the_drivers_own(tmp_path):
    seen = probe(tmp_path)
    for key in ["procaddr:cuMemAdvise@12020", "procaddr:cuStreamQuery@13000", "procaddr:cuModuleGetFunction@13000",
                "dlsym:cuMemsetD8_v2", "dlsym:cuMemcpyHtoD_v2"]:
        assert seen[key] == "libcuda.so.1", (key, seen)


def test_hooked_entries_are_the_interposers(tmp_path):
    seen = probe(tmp_path)
    for key in ["procaddr:cuMemAlloc@13000", "procaddr:cuMemAlloc@3020", "procaddr:cuMemFree@13000",
                "procaddr:cuMemCreate@13000", "procaddr:cuGetProcAddress@13000", "dlsym:cuMemAlloc_v2",
                "dlsym:cuMemGetInfo_v2", "procaddr:cuLaunchKernel@13000", "procaddr:cuStreamSynchronize@13000",
                "procaddr:cuGraphLaunch@13000", "dlsym:cuLaunchKernel"]:
        assert seen[key] == "libgpuslice.so", (key, seen)
