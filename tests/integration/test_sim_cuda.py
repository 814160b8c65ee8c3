"""The simulated CUDA driver (build/lib/sim/libcuda.so.1), driven by gpusim-workload from
several processes at once: memory accounting shared across processes, out-of-memory at the
model's exact size, kernel timing, one kernel at a time on a device, every allocation path
through every way of finding the driver, the cuGetProcAddress ABI contract, reaping of killed
processes, and bad GPUSLICE_SIM values. NVML is tested in test_sim_nvml.py."""
import json
import statistics
import subprocess

import pytest

from compute_util import measure_until
from conftest import make_sim_env
from wl_run import GIB, MIB, WORKLOAD, info, start_hold, stop_hold, workload, workload_ok

KINDS = ["plain", "pitch", "managed", "async", "pool", "vmm", "array"]
PATHS = ["direct", "dlsym", "procaddr"]
VMM_GRANULARITY = 2 * MIB   # the minimum granularity of every NVIDIA GPU the sim models


def ceil_div(a, b):
    return -(-a // b)


def expected_charge(kind, size):
    """Bytes the device should lose to one allocation of `size` by `kind`, derived from what
    the workload asks the driver for (see sim/workload/alloc-*.c)."""
    if kind == "vmm":
        return ceil_div(size, VMM_GRANULARITY) * VMM_GRANULARITY
    if kind == "pitch":          # rows of 64 KiB: a pitch of 64 KiB fits every alignment
        return ceil_div(size, 64 * 1024) * 64 * 1024
    if kind == "array":          # rows of 8192 floats
        return ceil_div(ceil_div(size, 4), 8192) * 8192 * 4
    return size


def device0(env):
    return info(env)["devices"][0]


# -- memory -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_memory_totals_agree_across_processes(kind, sim_env):
    odd = 5 * MIB + 1000         # not a multiple of anything, so every rounding shows
    a, ready_a = start_hold(["--bytes", GIB + 12345], sim_env)
    b, ready_b = start_hold(["--bytes", odd, "--alloc", kind], sim_env)
    try:
        assert ready_a["allocated_bytes"] == GIB + 12345
        assert ready_b["allocated_bytes"] == expected_charge(kind, odd)
        dev = device0(sim_env)
        assert dev["free_bytes"] == dev["total_bytes"] - (GIB + 12345) - expected_charge(kind, odd)
    finally:
        stop_hold(a)
        stop_hold(b)
    dev = device0(sim_env)
    assert dev["free_bytes"] == dev["total_bytes"]


def test_idle_device_reports_all_memory_free(sim_env):
    dev = device0(sim_env)
    assert dev["total_bytes"] == 81559 * MIB
    assert dev["free_bytes"] == dev["total_bytes"] == dev["ctx_total_bytes"]


@pytest.mark.parametrize("spec,total", [("h100-80gb", 81559 * MIB), ("h200-141gb", 143771 * MIB)])
def test_alloc_until_oom_gets_every_whole_gib(spec, total, tmp_path):
    env = make_sim_env(tmp_path, spec)
    line = workload_ok(["alloc-until-oom", "--chunk", "1G"], env)
    assert line["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert line["allocations"] == total // GIB
    assert line["allocated_bytes"] == (total // GIB) * GIB
    assert device0(env)["free_bytes"] == total


def test_alloc_until_oom_with_odd_chunk_stops_at_exact_byte_count(sim_env):
    chunk = 7 * GIB + 3
    line = workload_ok(["alloc-until-oom", "--chunk", chunk], sim_env)
    assert line["allocated_bytes"] == (81559 * MIB // chunk) * chunk


def test_sigkilled_hold_gives_its_memory_back(sim_env):
    proc, ready = start_hold(["--bytes", "40G"], sim_env)
    assert device0(sim_env)["free_bytes"] == 81559 * MIB - 40 * GIB
    proc.kill()
    proc.wait(timeout=30)
    assert proc.returncode == -9
    assert device0(sim_env)["free_bytes"] == 81559 * MIB
    line = workload_ok(["alloc-until-oom", "--chunk", "1G"], sim_env)
    assert line["allocations"] == 81559 * MIB // GIB


def test_sixteen_concurrent_churners_leave_the_device_empty(sim_env):
    procs = [subprocess.Popen([str(WORKLOAD), "churn", "--ops", "1000", "--max-bytes", "64M",
                               "--seed", str(seed), "--alloc", KINDS[seed % len(KINDS)]],
                              env=sim_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed in range(16)]
    for p in procs:
        out, err = p.communicate(timeout=150)
        assert p.returncode == 0, err
        assert '"peak_live"' in out
    dev = device0(sim_env)
    assert dev["free_bytes"] == dev["total_bytes"]


def test_the_benchmarks_map_cache_leaves_the_accounting_exact(sim_env):
    """GPUSIM_MAP_CACHE (for benchmarks) hands freed small mappings out again: the device's
    memory is charged and given back all the same, whatever kinds are churned."""
    env = dict(sim_env, GPUSIM_MAP_CACHE="64")
    for kind in ("plain", "managed", "pitch"):
        line = workload_ok(["churn", "--ops", "3000", "--max-bytes", "64K", "--seed", "7", "--alloc", kind], env)
        assert line["peak_live"] > 0
    dev = device0(env)
    assert dev["free_bytes"] == dev["total_bytes"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_alloc_kind_works_through_every_path(kind, path, sim_env):
    chunk = 4 * GIB + 5
    line = workload_ok(["alloc-until-oom", "--chunk", chunk, "--alloc", kind, "--path", path], sim_env)
    charge = expected_charge(kind, chunk)
    assert line["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert line["allocations"] == 81559 * MIB // charge
    assert line["allocated_bytes"] == line["allocations"] * charge
    workload_ok(["churn", "--ops", "200", "--max-bytes", "64M", "--alloc", kind, "--path", path], sim_env)
    dev = device0(sim_env)
    assert dev["free_bytes"] == dev["total_bytes"]


# -- kernels ----------------------------------------------------------------------------------

@pytest.mark.parametrize("us,count", [(1000, 9), (10000, 5), (100000, 3)])
def test_kernel_durations_match_the_request(us, count, sim_env):
    """The device time is exact; the host's wall time of a kernel is the simulator running it
    in real time on this machine's CPUs, measured again on a miss (measure_until) since the
    VM's host can take those CPUs away; the bound is unchanged."""
    line = measure_until(lambda: workload_ok(["kernel-time", "--us", us, "--count", count], sim_env),
                         lambda r: statistics.median(r["wall_us"]) == pytest.approx(us, rel=0.05),
                         label=f"a {us} us kernel's wall time")
    assert line["requested_us"] == us
    for ev in line["event_us"]:
        assert ev == pytest.approx(us, rel=0.05)
    assert statistics.median(line["wall_us"]) == pytest.approx(us, rel=0.05)


@pytest.mark.parametrize("launch", ["ex", "coop", "graph"])
def test_ex_coop_and_graph_launches_take_their_requested_time(launch, sim_env):
    line = workload_ok(["kernel-time", "--us", 10000, "--count", 3, "--launch", launch], sim_env)
    assert line["launch"] == launch
    for ev in line["event_us"]:
        assert ev == pytest.approx(10000, rel=0.05)
    assert statistics.median(line["wall_us"]) == pytest.approx(10000, rel=0.05)
    busy = workload_ok(["busy", "--seconds", "0.3", "--kernel-us", 5000, "--launch", launch], sim_env)
    assert busy["kernels"] >= 40
    assert busy["kernel_seconds"] == pytest.approx(busy["requested_kernel_seconds"], rel=0.05)


def test_one_kernel_at_a_time_across_processes(sim_env):
    procs = [subprocess.Popen([str(WORKLOAD), "busy", "--duty", "1", "--seconds", "2"], env=sim_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    lines = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        lines.append(json.loads(out))
    union = (max(x["end_ns"] for x in lines) - min(x["start_ns"] for x in lines)) / 1e9
    overlap = (min(x["end_ns"] for x in lines) - max(x["start_ns"] for x in lines)) / 1e9
    assert overlap > 1.0, "the two processes barely ran together; the test proves nothing"
    # The device runs one kernel at a time, so the kernels both finished fit in the time
    # either was running; running side by side, they would add up to twice that.
    assert sum(x["requested_kernel_seconds"] for x in lines) <= union * 1.05
    for x in lines:
        assert x["requested_kernel_seconds"] >= 0.25 * overlap, lines


# -- the driver's interfaces ------------------------------------------------------------------

def test_get_proc_address_returns_the_abi_of_the_requested_version(sim_env):
    line = workload_ok(["procaddr-check"], sim_env)
    got = [(r["symbol"], r["version"], r["matches"]) for r in line["results"]]
    assert got == [("cuMemAdvise", 12000, "cuMemAdvise"), ("cuMemAdvise", 12020, "cuMemAdvise_v2"),
                   ("cuMemPrefetchAsync", 12000, "cuMemPrefetchAsync"),
                   ("cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2")]
    # Every base name the workload's driver table asks for at 13000 gives the exported symbol
    # of that ABI (cuCtxCreate -> cuCtxCreate_v4, cuEventElapsedTime -> _v2, ...).
    assert line["table_version"] == 13000
    assert line["table_mismatches"] == []


@pytest.mark.parametrize("spec,token", [("h100-80gb,bogus", "bogus"), ("t4:x", "t4:x")])
def test_bad_gpuslice_sim_fails_cleanly_naming_the_token(spec, token, tmp_path):
    proc, lines = workload(["info"], make_sim_env(tmp_path, spec))
    assert proc.returncode == 1, proc
    assert lines == []
    assert any(token in line for line in proc.stderr.splitlines()), proc.stderr
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr
