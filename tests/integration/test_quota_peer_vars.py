"""The limit variables workloads already carry for other GPU-sharing systems: HAMi's
CUDA_DEVICE_MEMORY_LIMIT, CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_SM_LIMIT, and KAI
Scheduler's GPU_MEMORY_LIMIT. In a tenant of `gpuslice run` such a variable lowers the limit
of the tenant on that GPU (or every GPU) to the variable, on every allocation path, and
cuMemGetInfo, cuDeviceTotalMem and NVML show the lowered limit; it never raises what gpuslice
set; with no gpuslice limit it is the limit; a bad value is ignored with one line naming it.
The limit stays the tenant's: what its other processes hold counts."""
import sys

import pytest

from conftest import run
from compute_util import Tenant, pct_args, report, run_group
from daemon_env import Tenant as DaemonTenant, alloc_until_oom, daemon, shared_root, tenant_env  # noqa: F401
from quota_env import GPUSLICE, H100_TOTAL, NVML_PROBE, driver, for_python, gpuslice_run, json_lines, quota_env, \
    refusal_lines
from wl_run import GIB, MIB, WORKLOAD

KINDS = ["plain", "pitch", "managed", "async", "pool", "vmm", "array"]
TOLERANCE = 3.0  # percentage points, as test_compute_cap.py


def oom(kind="plain", device=0, rounds=2):
    return [WORKLOAD, "--device", device, "alloc-until-oom", "--chunk", "64Mi", "--alloc", kind,
            "--rounds", rounds]


def rounds_of(r):
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    [line] = json_lines(r.stdout)
    assert line["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY", line
    return line["rounds"]


def info(options, env):
    r = gpuslice_run(options, [WORKLOAD, "info"], env)
    assert r.returncode == 0, r.stderr
    return json_lines(r.stdout)[0]["devices"], r


def view(dev):
    """cuDeviceTotalMem_v2, cuMemGetInfo_v2's total and free of one device of `info`."""
    return dev["total_bytes"], dev["ctx_total_bytes"], dev["free_bytes"]


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


@pytest.fixture
def two_gpus(tmp_path):
    return quota_env(tmp_path, "h100-80gb:2")


@pytest.mark.parametrize("kind", KINDS)
def test_hami_memory_limit_holds_the_tenant_below_its_vram_on_every_path(env, kind):
    r = gpuslice_run(["--vram", "8Gi"], oom(kind), dict(env, CUDA_DEVICE_MEMORY_LIMIT="4g"))
    # Round 2 gets the whole 4 GiB again only if every free of round 1 gave its charge back.
    assert rounds_of(r) == [4 * GIB, 4 * GIB]
    [line] = refusal_lines(r.stderr)
    assert "of 4294967296 bytes in use" in line, line


def test_hami_memory_limit_is_what_the_tenant_sees(env):
    devs, _ = info(["--vram", "8Gi"], dict(env, CUDA_DEVICE_MEMORY_LIMIT="4g"))
    assert view(devs[0]) == (4 * GIB,) * 3
    r = gpuslice_run(["--vram", "8Gi"], [sys.executable, NVML_PROBE, "meminfo"],
                     for_python(dict(env, CUDA_DEVICE_MEMORY_LIMIT="4096m")))
    assert r.returncode == 0, r.stderr
    line = json_lines(r.stdout)[0]
    assert line["nvml"]["total"] == line["nvml"]["v2"]["total"] == 4 * GIB
    assert line["nvml"]["free"] == line["nvml"]["v2"]["free"] == 4 * GIB
    assert line["cuda"] == {"free": 4 * GIB, "total": 4 * GIB, "used": 0}


@pytest.mark.parametrize("var,value", [("CUDA_DEVICE_MEMORY_LIMIT", "8g"), ("CUDA_DEVICE_MEMORY_LIMIT_0", "8g"),
                                       ("GPU_MEMORY_LIMIT", "8192"), ("CUDA_DEVICE_MEMORY_LIMIT", "4g")])
def test_a_variable_at_or_above_the_tenants_limit_does_not_raise_it(env, var, value):
    e = dict(env, **{var: value})
    assert rounds_of(gpuslice_run(["--vram", "4Gi"], oom(), e)) == [4 * GIB, 4 * GIB]
    devs, _ = info(["--vram", "4Gi"], e)
    assert view(devs[0]) == (4 * GIB,) * 3


@pytest.mark.parametrize("value", ["4096", "4g", "4Gi"])
def test_kai_gpu_memory_limit_lowers_the_tenant_in_mib(env, value):
    e = dict(env, GPU_MEMORY_LIMIT=value)
    assert rounds_of(gpuslice_run(["--vram", "8Gi"], oom(), e)) == [4 * GIB, 4 * GIB]
    devs, _ = info(["--vram", "8Gi"], e)
    assert view(devs[0]) == (4 * GIB,) * 3


def test_kai_and_hami_together_the_lower_holds(env):
    e = dict(env, GPU_MEMORY_LIMIT="3072", CUDA_DEVICE_MEMORY_LIMIT="5g")
    assert rounds_of(gpuslice_run(["--vram", "8Gi"], oom(), e)) == [3 * GIB, 3 * GIB]


@pytest.mark.parametrize("var,value", [("CUDA_DEVICE_MEMORY_LIMIT", "4g"), ("GPU_MEMORY_LIMIT", "4096")])
def test_with_no_gpuslice_limit_the_variable_is_the_limit(env, var, value):
    e = dict(env, **{var: value})
    assert rounds_of(gpuslice_run([], oom(), e)) == [4 * GIB, 4 * GIB]
    devs, _ = info([], e)
    assert view(devs[0]) == (4 * GIB,) * 3


def test_without_a_variable_the_same_tenant_gets_its_vram(env):
    """The checks above mean something: the same tenant with no variable gets --vram."""
    assert rounds_of(gpuslice_run(["--vram", "8Gi"], oom(), env)) == [8 * GIB, 8 * GIB]
    devs, _ = info(["--vram", "8Gi"], env)
    assert view(devs[0]) == (8 * GIB,) * 3


def test_per_device_variables_limit_each_gpu_and_replace_the_plain_one(two_gpus):
    e = dict(two_gpus, CUDA_DEVICE_MEMORY_LIMIT="4g", CUDA_DEVICE_MEMORY_LIMIT_1="2g")
    devs, _ = info(["--vram", "8Gi"], e)
    assert view(devs[0]) == (4 * GIB,) * 3
    assert view(devs[1]) == (2 * GIB,) * 3
    assert rounds_of(gpuslice_run(["--vram", "8Gi"], oom(device=0), e)) == [4 * GIB, 4 * GIB]
    assert rounds_of(gpuslice_run(["--vram", "8Gi"], oom(device=1), e)) == [2 * GIB, 2 * GIB]


def test_a_per_device_variable_leaves_the_other_gpus_alone(two_gpus):
    e = dict(two_gpus, CUDA_DEVICE_MEMORY_LIMIT_0="1g")
    devs, _ = info([], e)
    assert view(devs[0]) == (GIB,) * 3
    assert view(devs[1]) == (H100_TOTAL,) * 3
    assert rounds_of(gpuslice_run(["--vram", "8Gi"], oom(device=1), e)) == [8 * GIB, 8 * GIB]


@pytest.mark.parametrize("var,value", [("CUDA_DEVICE_MEMORY_LIMIT", "4x"), ("CUDA_DEVICE_MEMORY_LIMIT", "-4g"),
                                       ("CUDA_DEVICE_MEMORY_LIMIT", "abc"),
                                       ("CUDA_DEVICE_MEMORY_LIMIT_0", "99999999999999999999"),
                                       ("GPU_MEMORY_LIMIT", "4.5g"), ("CUDA_DEVICE_SM_LIMIT", "150")])
def test_a_bad_value_is_ignored_with_one_line_naming_it(env, var, value):
    r = gpuslice_run(["--vram", "8Gi"], oom(rounds=1), dict(env, **{var: value}))
    assert rounds_of(r) == [8 * GIB]
    named = [line for line in refusal_lines(r.stderr) if var in line]
    assert len(named) == 1, r.stderr
    assert named[0].startswith(f"gpuslice: {var}='{value}' is not "), named
    assert named[0].endswith("; ignored"), named


def test_a_bad_value_cannot_take_away_a_good_one(env):
    r = gpuslice_run(["--vram", "8Gi"], oom(),
                     dict(env, CUDA_DEVICE_MEMORY_LIMIT="lots", CUDA_DEVICE_MEMORY_LIMIT_0="2g"))
    assert rounds_of(r) == [2 * GIB, 2 * GIB]


def test_the_lowered_limit_counts_what_the_tenants_other_processes_hold(env):
    """A process whose variable says 4 GiB, in a tenant whose other process (without it)
    holds 1 GiB, gets 3 GiB; the tenant's own --vram still holds for the other process."""
    lines = driver(["--vram", "8Gi"], ["with-hold", "--bytes", "1Gi",
                                        "--", "env", "CUDA_DEVICE_MEMORY_LIMIT=4g", *oom(rounds=1),
                                        "--", "env", "CUDA_DEVICE_MEMORY_LIMIT=4g", WORKLOAD, "info",
                                        "--", *oom(rounds=1)], for_python(env))
    [with_var], [seen], [without] = (lines[i]["out"] for i in (1, 2, 3))
    assert with_var["rounds"] == [3 * GIB]
    assert (seen["devices"][0]["ctx_total_bytes"], seen["devices"][0]["free_bytes"]) == (4 * GIB, 3 * GIB)
    assert without["rounds"] == [7 * GIB]
    assert lines[-1]["released"] == 0, lines[-1]


def gs_set(daemon, *args):
    r = run([GPUSLICE, "set"] + [str(a) for a in args], env=daemon.env)
    assert r.returncode == 0, r.stderr


def test_under_the_daemon_the_variable_lowers_within_the_limit_it_sets_live(daemon):
    """The daemon's limits file is the authority: the variable lowers the tenant below it, a
    live `gpuslice set` below the variable wins, and one above it does not lift the variable."""
    t = DaemonTenant(daemon, "peer", ["--vram", "8Gi"], 512 * MIB)
    try:
        env = tenant_env(daemon, "peer", CUDA_DEVICE_MEMORY_LIMIT="4g")
        assert alloc_until_oom(env)["allocated_bytes"] == 4 * GIB - 512 * MIB
        assert alloc_until_oom(tenant_env(daemon, "peer"))["allocated_bytes"] == 8 * GIB - 512 * MIB
        gs_set(daemon, "peer", "--vram", "2Gi")
        assert alloc_until_oom(env)["allocated_bytes"] == 2 * GIB - 512 * MIB
        gs_set(daemon, "peer", "--vram", "16Gi")
        assert alloc_until_oom(env)["allocated_bytes"] == 4 * GIB - 512 * MIB
        assert daemon.tenants()["peer"]["limits"]["vram_bytes"] == 16 * GIB
    finally:
        t.end()


# ---- CUDA_DEVICE_SM_LIMIT: a cap on the GPU's time (compute_util.py measures it) ----

@pytest.mark.parametrize("options,sm,expected", [([], "40", 40), (pct_args(70, "share"), "20", 20),
                                                 (pct_args(30, "cap"), "60", 30)],
                         ids=["no-compute-limit", "below-the-share", "above-the-cap"])
def test_hami_sm_limit_caps_a_tenant_alone_at_the_lower_share(env, options, sm, expected):
    """Alone on the GPU, so that a share would get the whole device: the variable makes it a
    cap at the lower of the two, never more than the tenant's own."""
    _, [got] = run_group(dict(env, CUDA_DEVICE_SM_LIMIT=sm), [Tenant(options)])
    report(f"{' '.join(options) or 'no --compute'}, CUDA_DEVICE_SM_LIMIT={sm}", [expected], [got])
    assert got == pytest.approx(expected, abs=TOLERANCE)


def test_hami_per_device_sm_limit_caps_only_its_gpu(two_gpus):
    tenants = [Tenant(busy=["--device", 0]), Tenant(busy=["--device", 1])]
    _, shares = run_group(dict(two_gpus, CUDA_DEVICE_SM_LIMIT_1="30"), tenants)
    report("CUDA_DEVICE_SM_LIMIT_1=30, GPU 0 and GPU 1", [100, 30], shares)
    assert shares[0] > 100 - TOLERANCE, shares
    assert shares[1] == pytest.approx(30, abs=TOLERANCE), shares
