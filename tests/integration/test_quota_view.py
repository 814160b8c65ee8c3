"""What a tenant sees of the device: cuMemGetInfo, cuDeviceTotalMem and NVML's memory info
report the quota as the total and the quota less the tenant's usage as free, on the limited
GPU only; outside the tenant the real device shows. Where the interposer has nothing to add
(NULL arguments, frees of pointers it never saw) the driver's own answer comes back."""
import sys

import pytest

from conftest import run
from quota_env import H100_TOTAL, HERE, NVML_PROBE, driver, for_python, gpuslice_run, json_lines, quota_env
from wl_run import GIB, MIB, WORKLOAD

PROBE = HERE / "quota_probe.py"
CUDA_ERROR_INVALID_VALUE = 1


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


def with_hold_1gib(env, *commands):
    """Runs each command (a list) in a --vram 4Gi tenant while another of its processes
    holds 1 GiB; returns each command's JSON lines."""
    args = ["with-hold", "--bytes", "1Gi"]
    for c in commands:
        args += ["--"] + [str(x) for x in c]
    lines = driver(["--vram", "4Gi"], args, for_python(env))
    assert lines[-1]["released"] == 0, lines[-1]
    results = lines[1:-1]
    for r in results:
        assert r["rc"] == 0, r
    return [r["out"] for r in results]


def test_tenant_sees_quota_as_total_and_quota_less_usage_as_free(env):
    [[inside], [out]] = with_hold_1gib(env, [WORKLOAD, "info"], ["@outside", WORKLOAD, "info"])
    dev = inside["devices"][0]
    assert dev["total_bytes"] == 4 * GIB          # cuDeviceTotalMem_v2
    assert dev["ctx_total_bytes"] == 4 * GIB      # cuMemGetInfo_v2's total
    assert dev["free_bytes"] == 3 * GIB           # cuMemGetInfo_v2's free
    real = out["devices"][0]
    assert real["total_bytes"] == real["ctx_total_bytes"] == H100_TOTAL
    assert real["free_bytes"] == H100_TOTAL - GIB


def test_nvml_inside_the_tenant_reports_the_slice(env):
    [[inside], [out]] = with_hold_1gib(env, [sys.executable, NVML_PROBE, "meminfo"],
                                       ["@outside", sys.executable, NVML_PROBE, "meminfo"])
    nvml = inside["nvml"]
    assert (nvml["total"], nvml["used"], nvml["free"]) == (4 * GIB, GIB, 3 * GIB)
    v2 = nvml["v2"]
    assert (v2["total"], v2["used"], v2["free"], v2["reserved"]) == (4 * GIB, GIB, 3 * GIB, 0)
    assert inside["cuda"] == {"free": 3 * GIB, "total": 4 * GIB, "used": GIB}
    real = out["nvml"]
    assert real["total"] == real["v2"]["total"] == H100_TOTAL
    # Outside the tenant, the whole device: the driver's reserve (v1 counts it used) beside GIB.
    reserve = real["v2"]["reserved"]
    assert reserve > 0 and real["v2"]["used"] == GIB and real["used"] == GIB + reserve
    assert real["free"] == real["v2"]["free"] == H100_TOTAL - GIB - reserve
    assert out["cuda"] == {"free": H100_TOTAL - GIB, "total": H100_TOTAL, "used": GIB}


@pytest.fixture
def two_gpus(tmp_path):
    return quota_env(tmp_path, "h100-80gb:2")


def test_gpu_option_limits_only_that_gpu(two_gpus):
    r = gpuslice_run(["--vram", "4Gi", "--gpu", "1"], [WORKLOAD, "info"], two_gpus)
    assert r.returncode == 0, r.stderr
    d0, d1 = json_lines(r.stdout)[0]["devices"]
    assert (d0["total_bytes"], d0["ctx_total_bytes"], d0["free_bytes"]) == (H100_TOTAL,) * 3
    assert (d1["total_bytes"], d1["ctx_total_bytes"], d1["free_bytes"]) == (4 * GIB,) * 3


@pytest.mark.parametrize("device,expected", [(0, H100_TOTAL // (64 * MIB) * 64 * MIB), (1, 4 * GIB)])
def test_gpu_option_enforces_only_on_that_gpu(two_gpus, device, expected):
    r = gpuslice_run(["--vram", "4Gi", "--gpu", "1"],
                     [WORKLOAD, "--device", device, "alloc-until-oom", "--chunk", "64Mi", "--rounds", 2], two_gpus)
    assert r.returncode == 0, r.stderr
    assert json_lines(r.stdout)[0]["rounds"] == [expected, expected]


@pytest.mark.parametrize("device,total", [(0, H100_TOTAL), (1, 4 * GIB)])
def test_gpu_option_nvml_shows_the_limit_on_that_gpu_only(two_gpus, device, total):
    r = gpuslice_run(["--vram", "4Gi", "--gpu", "1"], [sys.executable, NVML_PROBE, "meminfo", device],
                     for_python(two_gpus))
    assert r.returncode == 0, r.stderr
    line = json_lines(r.stdout)[0]
    assert line["nvml"]["total"] == line["nvml"]["v2"]["total"] == line["cuda"]["total"] == total
    assert line["nvml"]["v2"]["used"] == 0  # what processes hold; v1's used has the driver's reserve outside a slice


def probe(cmd, env, tenant):
    """quota_probe.py CMD in a --vram 1Gi tenant, or outside any."""
    argv, env = [sys.executable, PROBE, cmd], for_python(env)
    r = gpuslice_run(["--vram", "1Gi"], argv, env) if tenant else run(argv, env=env)
    assert r.returncode == 0, r.stderr
    return json_lines(r.stdout)[0]


def test_null_arguments_to_mem_get_info_get_the_drivers_answer(env):
    inside, out = probe("meminfo-null", env, True), probe("meminfo-null", env, False)
    for key in ("both_null", "total_null", "free_null", "untouched"):
        assert inside[key] == out[key], key
    assert out["both_null"] == CUDA_ERROR_INVALID_VALUE
    assert out["untouched"] == [7, 7]
    assert inside["values"] == [GIB, GIB]
    assert out["values"] == [H100_TOTAL, H100_TOTAL]


def test_free_of_unknown_pointer_gets_the_drivers_answer(env):
    inside, out = probe("free-unknown", env, True), probe("free-unknown", env, False)
    assert out["never_allocated"] == out["second_free"] == CUDA_ERROR_INVALID_VALUE
    for key in ("never_allocated", "first_free", "second_free"):
        assert inside[key] == out[key], key
    # Neither bogus free moved the tenant's accounting.
    assert inside["before"] == inside["after"] == [GIB, GIB]

