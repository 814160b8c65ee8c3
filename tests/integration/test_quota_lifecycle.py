"""A tenant's processes come and go: a process killed with SIGKILL gives its memory back
within a second (run's reaper) or at the next allocation by any of the tenant's processes,
and the children a command starts, by fork and exec, are charged to the same tenant.
(pid reuse is covered by the ledger's unit tests, tests/unit/test_lib_ledger.c.)"""
import os
import sys
from pathlib import Path

import pytest

from conftest import run
from quota_env import H100_TOTAL, driver, for_python, gpuslice_run, json_lines, quota_env
from wl_run import GIB, MIB, WORKLOAD

CUDA_ERROR_OUT_OF_MEMORY = 2


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


def test_sigkilled_process_memory_returns_within_one_second(env):
    [line] = driver(["--vram", "1Gi", "--name", "killed"], ["kill-watch", "800Mi", GIB], env)
    assert line["free_before"] == GIB
    assert line["free"] == GIB, line
    assert line["seconds"] <= 1.0, line


def test_sigkilled_process_memory_is_available_to_the_next_allocation(env):
    """Reaping at the limit: the new process needs the dead one's memory at once, before
    run's periodic reaper has necessarily passed."""
    lines = driver(["--vram", "1Gi", "--name", "killed"], ["kill-alloc", "800Mi", "1Gi", 5], env)
    assert len(lines) == 5
    for line in lines:
        assert line["ok"], line


def test_background_child_and_later_child_share_the_tenant(env, tmp_path):
    ready = tmp_path / "ready"
    script = (f"{WORKLOAD} hold --bytes 600Mi > {ready} & h=$!; "
              f"while [ ! -s {ready} ]; do sleep 0.01; done; "
              f"{WORKLOAD} alloc-until-oom --chunk 100Mi; rc=$?; kill $h; wait $h; exit $rc")
    r = gpuslice_run(["--vram", "1Gi"], ["sh", "-c", script], env)
    assert r.returncode == 0, r.stderr
    [oom] = json_lines(r.stdout)
    assert oom["allocated_bytes"] == 400 * MIB
    assert json_lines(ready.read_text())[0]["allocated_bytes"] == 600 * MIB


def test_grandchildren_of_a_forking_driver_share_the_tenant(env):
    """The driver is a Python process forking workloads: a hold it starts and an
    allocation it starts later are charged together."""
    lines = driver(["--vram", "1Gi"], ["with-hold", "--bytes", "600Mi", "--", WORKLOAD, "alloc-until-oom",
                                       "--chunk", "100Mi"], env)
    assert lines[1]["rc"] == 0, lines[1]
    assert lines[1]["out"][0]["allocated_bytes"] == 400 * MIB
    assert lines[2]["released"] == 0


def ledger_is_whole(path):
    """Whether the ledger file at path exists with its magic written (the creator's last step)."""
    import struct

    from compute_util import LEDGER_MAGIC
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        return False
    return len(head) == 8 and struct.unpack("<Q", head)[0] == LEDGER_MAGIC


def test_normal_exit_gives_memory_back_at_once(tmp_path):
    """A process that exits without freeing gives its memory back as it exits, not when a
    reaper notices. `gpuslice run`'s reaper is stopped (SIGSTOP) for the test, and reading
    the slice allocates nothing, so only the exiting process itself can have done it."""
    import signal
    import subprocess
    import time

    from quota_env import GPUSLICE, PRELOAD, for_python, quota_env, state_dir
    from wl_run import info

    env = quota_env(tmp_path)
    owner = subprocess.Popen([str(GPUSLICE), "run", "--name", "exit", "--vram", "1Gi", "--", "sleep", "60"],
                             env=env)
    try:
        ledger = state_dir(env) / "tenants" / "exit"
        # Stop run only once its ledger is whole: the file exists a moment before its magic,
        # written last, and a tenant process attaching in between would be refused.
        for _ in range(500):
            if ledger_is_whole(ledger):
                break
            time.sleep(0.01)
        assert ledger_is_whole(ledger)
        os.kill(owner.pid, signal.SIGSTOP)
        tenant = dict(env, GPUSLICE_TENANT="exit", LD_PRELOAD=str(PRELOAD),
                      ASAN_OPTIONS="verify_asan_link_order=0")
        probe = Path(__file__).resolve().parent / "quota_probe.py"
        py = for_python(dict(tenant))
        if py.get("LD_PRELOAD") != str(PRELOAD):  # sanitizer builds: the ASan runtime, then gpuslice
            py["LD_PRELOAD"] = py["LD_PRELOAD"] + ":" + str(PRELOAD)
            py["ASAN_OPTIONS"] += ":verify_asan_link_order=0"
        r = subprocess.run([sys.executable, str(probe), "alloc-and-exit"], env=py, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        dev = info(tenant)["devices"][0]
        assert dev["ctx_total_bytes"] == 1 << 30
        assert dev["free_bytes"] == 1 << 30
    finally:
        os.kill(owner.pid, signal.SIGCONT)
        owner.terminate()
        owner.wait(timeout=30)


def vmm_probe(env, tenant, cmd="vmm-release-mapped"):
    argv = [sys.executable, Path(__file__).resolve().parent / "quota_probe.py", cmd]
    env = dict(for_python(env), PYTHONPATH=str(Path(__file__).resolve().parent))
    r = gpuslice_run(["--vram", "2Gi"], argv, env) if tenant else run(argv, env=env)
    assert r.returncode == 0, r.stderr
    return json_lines(r.stdout)[0]


def test_vmm_memory_released_while_mapped_stays_charged_until_its_last_unmap(env):
    """cuMemRelease of a handle that is still mapped does not free its memory: the charge
    stays until the last cuMemUnmap of it, so a 2 GiB tenant cannot hold 8 GiB this way."""
    line = vmm_probe(env, tenant=True)
    assert line["held"] == 2 and line["refused"] == CUDA_ERROR_OUT_OF_MEMORY, line
    assert line["free_released"] == 0, line
    assert line["free_first_unmaps"] == 0, line        # each handle is still mapped once
    assert line["free_last_unmaps"] == 2 * GIB, line
    assert line["held_again"] == 2, line
    assert line["unmap_both"] == [0, 0] and line["free_both_unmapped"] == 2 * GIB, line


def test_simulated_vmm_memory_is_freed_at_the_last_unmap_not_at_release(env):
    """The simulated driver, as the real one: a released handle's memory lives while mapped."""
    line = vmm_probe(env, tenant=False)
    assert line["held"] == 8, line
    assert line["free_released"] == line["free_first_unmaps"] == H100_TOTAL - 8 * GIB, line
    assert line["free_last_unmaps"] == H100_TOTAL, line
    assert line["held_again"] == 8 and line["free_both_unmapped"] == H100_TOTAL, line


def test_vmm_handle_retained_by_address_stays_charged_until_its_last_reference(env):
    """NCCL frees a mapping as retain, release, unmap, release: the memory lives until the
    last of these, and so does the charge."""
    line = vmm_probe(env, True, "vmm-retain")
    assert line == {"free_mapped": GIB, "free_retain_released": GIB, "free_unmapped": GIB,
                    "free_released": 2 * GIB}, line


def pool_reserve(env, tenant, **extra):
    argv = [sys.executable, Path(__file__).resolve().parent / "quota_probe.py", "pool-reserve"]
    env = dict(for_python(env), PYTHONPATH=str(Path(__file__).resolve().parent), **extra)
    r = gpuslice_run(["--vram", "2Gi"], argv, env) if tenant else run(argv, env=env)
    assert r.returncode == 0, r.stderr
    return json_lines(r.stdout)[0]


def test_memory_pools_keep_in_reserve_is_charged_until_they_give_it_back(env):
    """A pool whose release threshold keeps everything still holds what was freed into it:
    a 2 GiB tenant cannot park 8 GiB in pools. The reserve serves the pool's next allocation
    without a second charge, and its charge goes when a trim or the pool's end gives it back."""
    line = pool_reserve(env, tenant=True)
    assert line["default"] == 0 and line["free_default"] == 2 * GIB, line  # threshold 0: given back at the sync
    assert line["pools_kept"] == 2 and line["refused"] == CUDA_ERROR_OUT_OF_MEMORY, line
    assert line["free_kept"] == 0, line
    assert line["reuse"] == 0 and line["free_reused"] == 0, line
    assert line["free_trimmed"] == GIB and line["free_destroyed"] == 2 * GIB, line


def test_pool_reserve_charge_can_be_turned_off(env):
    """GPUSLICE_CHARGE_POOL_RESERVE=0: the charge follows live allocations only, as before."""
    line = pool_reserve(env, tenant=True, GPUSLICE_CHARGE_POOL_RESERVE="0")
    assert line["pools_kept"] == 8 and line["free_kept"] == 2 * GIB, line


def test_simulated_pools_report_and_hold_their_reserve(env):
    """The simulated driver, as the real one: freed pool memory stays reserved (and used on the
    device) down to the release threshold, and goes at a trim or the pool's destruction."""
    line = pool_reserve(env, tenant=False)
    assert line["free_default"] == H100_TOTAL, line
    assert line["pools_kept"] == 8, line
    assert line["reserved"] == [GIB] * 8 and line["used"] == [0] * 8, line
    assert line["free_kept"] == line["free_reused"] == H100_TOTAL - 8 * GIB, line
    assert line["free_trimmed"] == H100_TOTAL - 7 * GIB and line["free_destroyed"] == H100_TOTAL - 6 * GIB, line
