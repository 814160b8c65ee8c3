"""A process's threads that allocate hold ledger slots of their own (GS_SLOT_THREAD), which
they write without locked instructions; memory allocated on one thread and freed on another
leaves one slot above and another below what the process holds. Only their sum means
anything: it must equal what the process holds while it runs, and a process killed with
SIGKILL must give back exactly what it held, all its slots together. Run on the simulated GPU
(thread_probe.py); the ledger is read as the daemon would read it, from outside."""
import json
import os
import signal
import struct
import subprocess
import sys
import time

import pytest

from compute_util import read_ledger
from quota_env import GPUSLICE, for_python, quota_env, state_dir
from wl_run import MIB

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "thread_probe.py")
WAIT = ["sh", "-c", '"$@"; read _', "sh"]   # keeps `run` (and its reaper) after the probe dies
# struct gs_ledger_proc (include/gpuslice/tenant-ledger.h): state, pid, start_time, used[16].
PROC_AT, PROC_SIZE, MAX_PROCS = 2048, 144, 1024
_PROC = struct.Struct("<IiQ16Q")
SLOT_LIVE, SLOT_THREAD = 2, 4
THREADS_MAX = 8   # GS_THREAD_SLOTS_MAX (preload/quota.h)


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


def slots_of(env, name, pid):
    """(state, used on GPU 0) of every slot of pid in the tenant's ledger."""
    raw = (state_dir(env) / "tenants" / name).read_bytes()
    found = []
    for i in range(MAX_PROCS):
        state, spid, _, *used = _PROC.unpack_from(raw, PROC_AT + i * PROC_SIZE)
        if spid == pid and state in (SLOT_LIVE, SLOT_THREAD):
            found.append((state, used[0]))
    return found


def wait_until(what, fn, timeout=5.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = fn()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_cross_thread_frees_are_counted_and_all_given_back_when_killed(env):
    threads, rounds, chunks, chunk, hold = 12, 20, 8, MIB, 2
    p = subprocess.Popen([str(GPUSLICE), "run", "--name", "t", "--vram", "1Gi", "--", *WAIT, sys.executable,
                          PROBE, str(threads), str(rounds), str(chunks), str(chunk), str(hold)],
                         env=for_python(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        pid = json.loads(p.stdout.readline())["pid"]
        done = json.loads(p.stdout.readline())
        assert "held" in done, (done, p.stderr.read() if p.poll() is not None else "")
        assert done["frees"] == rounds * chunks * sum(1 + i % 3 for i in range(threads))
        slots = slots_of(env, "t", pid)
        used = read_ledger(env, "t")["gpu"][0]["used_bytes"]
        own = [u for s, u in slots if s == SLOT_THREAD]
        print(f"\n[quota] {threads} threads: {len(own)} thread slots, used {used}, slots {slots}")
        assert used == done["held"]
        # The slots' sum (mod 2**64: a slot freed more than it allocated) is what the process holds.
        assert sum(u for _, u in slots) % 2**64 == done["held"]
        assert 1 <= len(own) <= THREADS_MAX
        assert any(u >= 2**63 for u in own), "no thread freed more than it allocated"
        assert sum(1 for s, _ in slots if s == SLOT_LIVE) == 1
        os.kill(pid, signal.SIGKILL)
        wait_until("the killed process's memory back", lambda: read_ledger(env, "t")["gpu"][0]["used_bytes"] == 0)
        assert slots_of(env, "t", pid) == []
    finally:
        p.stdin.close()
        p.wait(timeout=30)
