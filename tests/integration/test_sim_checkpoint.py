"""The simulated driver's checkpoint API (sim/cuda-checkpoint.c, sim/cuda-ckpt-save.c): another
process locks a process, moves its device memory to host memory and back at the same
addresses, and unlocks it, with the states and refusals of NVIDIA's driver."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_sim_env
from quota_env import for_python

HERE = Path(__file__).resolve().parent
PROBE = HERE / "ckpt_probe.py"
NVML = HERE / "nvml_probe.py"
GIB, MIB = 1 << 30, 1 << 20
RUNNING, LOCKED, CHECKPOINTED = 0, 1, 2
NOT_READY, ILLEGAL_STATE, NOT_SUPPORTED, INVALID_VALUE, OUT_OF_MEMORY = 600, 401, 801, 1, 2


@pytest.fixture
def env(tmp_path):
    return for_python(make_sim_env(tmp_path))


class Target:
    """ckpt_probe.py target: a CUDA process taking commands."""

    def __init__(self, env):
        self.p = subprocess.Popen([sys.executable, PROBE, "target"], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.pid = json.loads(self.p.stdout.readline())["pid"]

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def answer(self):
        return json.loads(self.p.stdout.readline())

    def cmd(self, line):
        self.send(line)
        return self.answer()

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=30)


@pytest.fixture
def target(env):
    t = Target(env)
    yield t
    t.close()


def ctl(env, op, pid, timeout_ms=0):
    r = subprocess.run([sys.executable, PROBE, "ctl", op, str(pid), str(timeout_ms)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def nvml(env, *args):
    r = subprocess.run([sys.executable, NVML] + [str(a) for a in args], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_suspend_moves_the_memory_out_and_back_at_the_same_addresses(env, target):
    big = target.cmd(f"alloc plain {8 * GIB}")
    small = target.cmd(f"alloc plain {64 * MIB}")
    target.cmd("fill 0")
    target.cmd("fill 1 full")
    before = target.cmd("sums")
    used = nvml(env, "meminfo")["nvml"]["v2"]["used"]
    assert used >= 8 * GIB + 64 * MIB
    rss_before = rss_kib(target.pid)

    r = ctl(env, "lock", target.pid, 5000)
    assert (r["rc"], r["state"]) == (0, LOCKED)
    r = ctl(env, "checkpoint", target.pid)
    assert (r["rc"], r["state"]) == (0, CHECKPOINTED)

    # The device side is released: NVML and another process's cuMemGetInfo see it free, and
    # NVML lists the process no more; the process's memory holds only the written bytes.
    seen = nvml(env, "meminfo")
    assert seen["nvml"]["v2"]["used"] <= used - (8 * GIB + 64 * MIB)
    assert seen["cuda"]["free"] >= seen["cuda"]["total"] - (used - 8 * GIB - 64 * MIB) - 64 * MIB
    assert target.pid not in [e["pid"] for e in nvml(env, "procs")["v3"]["entries"]]
    assert rss_kib(target.pid) < rss_before + 32 * 1024  # a copy of ~73 MiB written, not 8 GiB

    r = ctl(env, "restore", target.pid)
    assert (r["rc"], r["state"]) == (0, LOCKED)
    assert ctl(env, "unlock", target.pid)["state"] == RUNNING
    after = target.cmd("sums")
    assert after == before
    assert [a["ptr"] for a in after["allocs"]] == [big["ptr"], small["ptr"]]
    assert all(a["gaps_zero"] for a in after["allocs"])
    assert nvml(env, "meminfo")["nvml"]["v2"]["used"] == used
    assert target.pid in [e["pid"] for e in nvml(env, "procs")["v3"]["entries"]]


def vmm_bytes(pid):
    """Bytes the process's VMM memfds hold (the simulator names them gpusim-vmm:...)."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd).startswith("/memfd:gpusim-vmm"):
                total += os.stat(fd).st_blocks * 512
        except OSError:
            pass
    return total


def test_every_kind_of_device_memory_comes_back(env, target):
    """Plain, stream-ordered (pool) and VMM memory (a memfd, mapped) each move out and back."""
    for kind in ("plain", "pool", "vmm"):
        assert target.cmd(f"alloc {kind} {32 * MIB}")["ptr"], kind
    for i in range(3):
        target.cmd(f"fill {i} full")
    before = target.cmd("sums")
    used = nvml(env, "meminfo")["nvml"]["v2"]["used"]
    assert vmm_bytes(target.pid) >= 32 * MIB
    assert ctl(env, "lock", target.pid)["rc"] == 0
    assert ctl(env, "checkpoint", target.pid)["rc"] == 0
    assert nvml(env, "meminfo")["nvml"]["v2"]["used"] <= used - 3 * 32 * MIB
    assert vmm_bytes(target.pid) == 0  # the memfd's pages are out
    assert ctl(env, "restore", target.pid)["rc"] == 0
    assert ctl(env, "unlock", target.pid)["rc"] == 0
    assert target.cmd("sums") == before
    assert nvml(env, "meminfo")["nvml"]["v2"]["used"] == used


def test_lock_waits_for_submitted_work_and_blocks_new_calls(env, target):
    target.cmd(f"alloc plain {64 * MIB}")
    assert target.cmd("launch 1500000")["rc"] == 0  # a 1.5 s kernel, queued at once
    t0 = time.monotonic()
    r = ctl(env, "lock", target.pid, 10000)
    waited = time.monotonic() - t0
    assert (r["rc"], r["state"]) == (0, LOCKED)
    assert waited >= 1.0, waited  # the kernel had to finish first

    target.send("launch 100")  # blocks in the driver while locked
    time.sleep(0.5)
    assert ctl(env, "state", target.pid)["state"] == LOCKED
    assert ctl(env, "unlock", target.pid)["state"] == RUNNING
    r = target.answer()
    assert r["rc"] == 0 and r["seconds"] >= 0.4, r


def test_lock_that_times_out_leaves_the_process_running(env, target):
    target.cmd(f"alloc plain {64 * MIB}")
    target.cmd("fill 0 full")
    before = target.cmd("sums")
    target.cmd("launch 3000000")
    r = ctl(env, "lock", target.pid, 300)
    assert (r["rc"], r["state"]) == (NOT_READY, RUNNING)
    assert 0.25 <= r["seconds"] < 2.5
    # Untouched and free to run: new calls go through at once.
    r = target.cmd("launch 100")
    assert r["rc"] == 0 and r["seconds"] < 0.5
    assert target.cmd("sums") == before


@pytest.mark.parametrize("how", ["managed", "ipc"])
def test_checkpoint_refuses_managed_and_ipc_memory(env, target, how):
    target.cmd(f"alloc plain {64 * MIB}")
    if how == "managed":
        target.cmd(f"alloc managed {64 * MIB}")
    else:
        assert target.cmd("ipc-export 0")["rc"] == 0
    target.cmd("fill 0 full")
    before = target.cmd("sums")
    assert ctl(env, "lock", target.pid, 5000)["rc"] == 0
    r = ctl(env, "checkpoint", target.pid)
    assert (r["rc"], r["state"]) == (NOT_SUPPORTED, LOCKED)
    assert ctl(env, "unlock", target.pid)["state"] == RUNNING
    assert target.cmd("sums") == before


def test_states_out_of_order_are_illegal(env, target):
    target.cmd(f"alloc plain {64 * MIB}")
    assert ctl(env, "checkpoint", target.pid)["rc"] == ILLEGAL_STATE
    assert ctl(env, "unlock", target.pid)["rc"] == ILLEGAL_STATE
    assert ctl(env, "restore", target.pid)["rc"] == ILLEGAL_STATE
    assert ctl(env, "lock", target.pid)["rc"] == 0
    assert ctl(env, "lock", target.pid)["rc"] == ILLEGAL_STATE
    assert ctl(env, "checkpoint", target.pid)["rc"] == 0
    assert ctl(env, "unlock", target.pid)["rc"] == ILLEGAL_STATE
    assert ctl(env, "checkpoint", target.pid)["rc"] == ILLEGAL_STATE
    assert ctl(env, "restore", target.pid)["rc"] == 0
    assert ctl(env, "unlock", target.pid)["rc"] == 0
    tid = ctl(env, "tid", target.pid)
    assert tid["rc"] == 0 and Path(f"/proc/{target.pid}/task/{tid['tid']}").exists()


def test_a_pid_without_cuda_is_an_invalid_value(env):
    with subprocess.Popen(["sleep", "30"]) as p:
        try:
            assert ctl(env, "state", p.pid)["state"] == -1
            assert ctl(env, "lock", p.pid)["rc"] == INVALID_VALUE
        finally:
            p.kill()


def test_restore_without_room_fails_and_keeps_the_checkpoint(env, target):
    target.cmd(f"alloc plain {40 * GIB}")
    target.cmd("fill 0")
    before = target.cmd("sums")
    assert ctl(env, "lock", target.pid)["rc"] == 0
    assert ctl(env, "checkpoint", target.pid)["rc"] == 0
    # Another process takes the room meanwhile.
    hog = subprocess.Popen([sys.executable, NVML, "hold", str(50 * GIB)], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(hog.stdout.readline())["ready"]
        r = ctl(env, "restore", target.pid)
        assert (r["rc"], r["state"]) == (OUT_OF_MEMORY, CHECKPOINTED)
    finally:
        hog.stdin.close()
        hog.wait(timeout=30)
    assert ctl(env, "restore", target.pid)["rc"] == 0
    assert ctl(env, "unlock", target.pid)["rc"] == 0
    assert target.cmd("sums") == before
