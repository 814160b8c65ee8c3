"""Suspending idle tenants and resuming them on demand (docs/suspend.md), on the simulated GPU:
`gpuslice suspend` and `gpuslice resume`, the daemon's API behind them, the tenant's own
processes asking to run again, refusals, and the room a resume needs."""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from daemon_env import GIB, GPUSLICE, MIB, Daemon, shared_root, wait_for  # noqa: F401 (a fixture)
from quota_env import for_python, start_python_tenant

HERE = Path(__file__).resolve().parent
PROBE = HERE / "ckpt_probe.py"
NVML = HERE / "nvml_probe.py"
A100_80 = 81920 * MIB  # exactly 80 GiB (sim/sim-models.c)
NVML_RESERVE = 512 * MIB  # the driver's own, 1/160 of the device (sim/nvml-device.c)
OUT_OF_MEMORY = 2


class Tenant:
    """`gpuslice run --name NAME -- ckpt_probe.py target`: a tenant whose one process takes
    commands (see ckpt_probe.py)."""

    def __init__(self, daemon, name, *run_opts):
        self.name = name
        self.p, self.pid = start_python_tenant(name, list(map(str, run_opts)), [str(PROBE), "target"],
                                               daemon.env)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def answer(self):
        line = self.p.stdout.readline()
        assert line, f"tenant {self.name}: {self.p.stderr.read()}"
        return json.loads(line)

    def cmd(self, line):
        self.send(line)
        return self.answer()

    def end(self):
        if self.p.poll() is None:
            self.send("exit")
            self.p.wait(timeout=60)


@pytest.fixture
def tenants():
    made = []
    yield made
    for t in made:
        t.end()


def start_daemon(root, *opts, spec="a100-80gb"):
    # Sample often: the figures the tests read come with each sample.
    return Daemon(root, spec=spec, interval=0.2).start(*opts)


@pytest.fixture
def lending(shared_root):
    d = start_daemon(shared_root, "--oversubscribe", "on", "--resume-timeout", "2")
    yield d
    d.stop()


@pytest.fixture
def keeping(shared_root):
    d = start_daemon(shared_root)
    yield d
    d.stop()


def gpuslice(daemon, *args):
    return subprocess.run([str(GPUSLICE), *map(str, args)], env=daemon.env, capture_output=True, text=True,
                          timeout=120)


def tenant(daemon, name):
    status, body = daemon.get(f"/v1/tenants/{name}")
    assert status == 200, body
    return body


def nvml_used(daemon):
    r = subprocess.run([sys.executable, str(NVML), "meminfo"], env=for_python(daemon.env), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["nvml"]["v2"]["used"]


def holding(daemon, name, size, writes="regions"):
    """A tenant holding one allocation of size bytes (filled: `regions` or `full`) and its sums."""
    t = Tenant(daemon, name)
    assert t.cmd(f"alloc plain {size}")["ptr"]
    t.cmd("fill 0" + (" full" if writes == "full" else ""))
    return t, t.cmd("sums")


def hog(daemon, size):
    """A process outside every tenant that takes size bytes of the GPU until stdin closes."""
    p = subprocess.Popen([sys.executable, str(NVML), "hold", str(size)], env=for_python(daemon.env),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert json.loads(p.stdout.readline())["ready"]
    return p


def test_ten_idle_tenants_make_room_for_a_big_one_and_come_back_intact(lending, tenants):
    """10 tenants of 8 GiB fill an 80 GiB GPU; suspended, NVML shows it free and a 60 GiB tenant
    runs; their next launch resumes each, every allocation intact at the same addresses.

    Each tenant holds 8 GiB less 64 MiB, the room a CUDA context takes on a real GPU (the
    simulated one charges none), in two allocations: one filled whole, one in regions. NVML
    keeps 512 MiB of the 80 GiB as the driver's reserve, which a resume does not count on."""
    d = lending
    before, idle = {}, []
    for i in range(10):
        t = Tenant(d, f"idle{i}")
        tenants.append(t)
        idle.append(t)
        assert t.cmd(f"alloc plain {8 * GIB - 128 * MIB}")["ptr"]
        assert t.cmd(f"alloc plain {64 * MIB}")["ptr"]
        t.cmd("fill 0")
        t.cmd("fill 1 full")
        before[t.name] = t.cmd("sums")
    full = nvml_used(d)
    assert full == 10 * (8 * GIB - 64 * MIB) and A100_80 - full < GIB
    nofit = Tenant(d, "nofit")
    tenants.append(nofit)
    assert nofit.cmd(f"alloc plain {GIB}")["rc"] == OUT_OF_MEMORY

    nofit.end()
    for t in idle:
        r = gpuslice(d, "suspend", t.name)
        assert r.returncode == 0, r.stderr
        assert r.stdout == f"{t.name}: suspended, 7.9 GiB moved off the GPU\n"
    assert nvml_used(d) == 0
    assert all(tenant(d, t.name)["state"] == "suspended" for t in idle)

    big = Tenant(d, "big")
    assert big.cmd(f"alloc plain {60 * GIB}")["ptr"]
    big.cmd("fill 0")
    assert big.cmd("launch 20000")["rc"] == 0
    assert big.cmd("sync")["rc"] == 0
    assert big.cmd("sums")["allocs"][0]["gaps_zero"]
    big.end()

    for t in idle:  # the load returns
        r = t.cmd("launch 100")
        assert r["rc"] == 0, (t.name, r)
        assert tenant(d, t.name)["state"] == "running"
        after = t.cmd("sums")
        assert after == before[t.name], t.name
        assert all(a["gaps_zero"] for a in after["allocs"])
    assert nvml_used(d) == full


def test_lock_waits_for_running_kernels(keeping, tenants):
    d = keeping
    t, sums = holding(d, "busy", GIB)
    tenants.append(t)
    assert t.cmd("launch 1500000")["rc"] == 0  # 1.5 s of work queued
    t0 = time.monotonic()
    r = gpuslice(d, "suspend", "busy", "--lock-timeout", "20")
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 >= 1.0  # the lock waited for the kernel
    assert gpuslice(d, "resume", "busy").returncode == 0
    assert t.cmd("sums") == sums


def test_a_lock_that_times_out_leaves_the_tenant_running_untouched(keeping, tenants):
    d = keeping
    t, sums = holding(d, "slow", 256 * MIB, writes="full")
    tenants.append(t)
    used = nvml_used(d)
    assert t.cmd("launch 3000000")["rc"] == 0  # 3 s of work queued
    r = gpuslice(d, "suspend", "slow", "--lock-timeout", "0.3")
    assert r.returncode == 1
    assert r.stderr == (f"gpuslice: suspend: tenant 'slow' not suspended: lock of process {t.pid} failed "
                        "(CUDA_ERROR_NOT_READY): its GPU work did not finish within the lock timeout "
                        "(300 ms); it keeps running\n")
    assert tenant(d, "slow")["state"] == "running"
    r = t.cmd("launch 100")  # not blocked
    assert r["rc"] == 0 and r["seconds"] < 1.0
    assert t.cmd("sums") == sums
    assert nvml_used(d) == used


@pytest.mark.parametrize("how", ["managed", "ipc"])
def test_managed_or_ipc_memory_is_refused_with_the_reason(keeping, tenants, how):
    d = keeping
    t, _ = holding(d, how, 256 * MIB, writes="full")
    tenants.append(t)
    if how == "managed":
        assert t.cmd(f"alloc managed {64 * MIB}")["ptr"]
    else:
        assert t.cmd("ipc-export 0")["rc"] == 0
    sums = t.cmd("sums")
    r = gpuslice(d, "suspend", how)
    assert r.returncode == 1
    assert r.stderr == (f"gpuslice: suspend: tenant '{how}' not suspended: checkpoint of process {t.pid} "
                        "failed (CUDA_ERROR_NOT_SUPPORTED): it holds managed (UVM) memory or memory shared "
                        "with another process (IPC), which the driver cannot checkpoint; it keeps running\n")
    body = tenant(d, how)
    assert body["state"] == "running" and body["suspension"]["suspensions"] == 0
    assert t.cmd("launch 100")["rc"] == 0
    assert t.cmd("sums") == sums


def test_suspend_refusals_of_state(keeping, tenants):
    d = keeping
    t, _ = holding(d, "twice", GIB)
    tenants.append(t)
    assert gpuslice(d, "suspend", "twice").returncode == 0
    r = gpuslice(d, "suspend", "twice")
    assert (r.returncode, r.stderr) == (1, "gpuslice: suspend: tenant 'twice' is already suspended\n")
    assert gpuslice(d, "resume", "twice").returncode == 0
    r = gpuslice(d, "resume", "twice")
    assert (r.returncode, r.stderr) == (1, "gpuslice: resume: tenant 'twice' is not suspended (it is running)\n")
    r = gpuslice(d, "suspend", "nosuch")
    assert (r.returncode, r.stderr) == (1, "gpuslice: suspend: no tenant 'nosuch'\n")
    assert gpuslice(d, "suspend").returncode == 2
    assert gpuslice(d, "suspend", "twice", "--lock-timeout", "0").returncode == 2


def metrics(daemon):
    with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/metrics", timeout=30) as r:
        return r.read().decode()


def test_resume_on_demand_is_measured(lending, tenants):
    """The suspended tenant's next cuLaunchKernel waits for its resume and then succeeds; the
    wait shows in the API, /metrics and the usage ledger."""
    d = lending
    t, sums = holding(d, "sleepy", 4 * GIB)
    tenants.append(t)
    assert gpuslice(d, "suspend", "sleepy").returncode == 0
    time.sleep(0.3)
    r = t.cmd("launch 100")
    assert r["rc"] == 0
    assert 0 < r["seconds"] < 5.0, r  # a resume of 9 MiB written: milliseconds, bounded here
    assert t.cmd("sums") == sums
    body = wait_for(lambda: (b := tenant(d, "sleepy"))["suspension"]["resume_waits"] >= 1 and b,
                    what="the wait in the API")
    s = body["suspension"]
    assert body["state"] == "running" and s["resumes"] == 1 and s["suspended_bytes"] == 0
    assert 0 < s["resume_wait_seconds"] <= r["seconds"]
    assert 0 < s["last_resume_seconds"] < 5.0
    assert s["suspended_seconds"] >= 0.3
    text = metrics(d)
    assert 'gpuslice_tenant_resumes_total{' in text and 'tenant="sleepy"' in text
    line = next(l for l in text.splitlines() if l.startswith("gpuslice_tenant_resume_waits_total{"))
    assert line.endswith(" 1")
    assert next(l for l in text.splitlines() if l.startswith("gpuslice_tenant_suspended{")).endswith(" 0")
    rows = d.sql("SELECT s.bytes, s.resumed_by, s.resume_seconds, s.resumed_at - s.suspended_at "
                 "FROM suspensions s JOIN tenants t ON t.id = s.tenant_id WHERE t.name = 'sleepy'")
    assert len(rows) == 1 and rows[0][0] == 4 * GIB and rows[0][1] == "demand" and rows[0][3] >= 0.3
    status, usage = d.get("/v1/usage?by=tenant")
    assert status == 200 and usage["rows"][0]["suspended_seconds"] >= 0.3


def test_a_resume_without_room_fails_at_its_timeout_naming_the_bytes(lending, tenants):
    """With its memory lent, a resume waits for room and fails at resume_timeout (2 s here) with
    one line; the tenant stays suspended, nothing lost, and resumes once the room is back."""
    d = lending
    t, sums = holding(d, "lent", 40 * GIB)
    tenants.append(t)
    assert gpuslice(d, "suspend", "lent").returncode == 0
    other = hog(d, 60 * GIB)  # takes what the suspension freed
    try:
        t0 = time.monotonic()
        r = gpuslice(d, "resume", "lent")
        waited = time.monotonic() - t0
        assert r.returncode == 1
        assert r.stderr.startswith("gpuslice: resume: tenant 'lent' not resumed after 2.")
        # NVML's free: 80 GiB less the 60 the other took and the driver's reserve.
        missing = 40 * GIB - (A100_80 - 60 * GIB - NVML_RESERVE)
        assert r.stderr.endswith(": GPU 0 has 19.5 GiB free of the 40.0 GiB it needs back, 20.5 GiB "
                                 f"({missing} bytes) missing; it stays suspended, its memory kept in host "
                                 "memory\n"), r.stderr
        assert 1.9 <= waited < 30
        body = tenant(d, "lent")
        assert body["state"] == "suspended" and body["suspension"]["error"] == r.stderr[len("gpuslice: resume: "):-1]
        # On demand too: the launch waits, then fails with CUDA_ERROR_OUT_OF_MEMORY.
        launch = t.cmd("launch 100")
        assert launch["rc"] == OUT_OF_MEMORY and 1.9 <= launch["seconds"] < 30
        assert tenant(d, "lent")["state"] == "suspended"
    finally:
        other.stdin.close()
        other.wait(timeout=30)
    assert t.cmd("launch 100")["rc"] == 0  # the room is back
    assert t.cmd("sums") == sums


def test_without_oversubscription_the_memory_stays_the_tenants(keeping, tenants):
    """oversubscribe off (the default): the daemon keeps a suspended tenant's memory, so no one
    else takes it and its resume never waits."""
    d = keeping
    t, sums = holding(d, "kept", 40 * GIB)
    tenants.append(t)
    used = nvml_used(d)
    assert gpuslice(d, "suspend", "kept").returncode == 0
    assert nvml_used(d) == used  # held by the daemon, not lent
    other = Tenant(d, "other")
    tenants.append(other)
    assert other.cmd(f"alloc plain {50 * GIB}")["rc"] == OUT_OF_MEMORY
    r = gpuslice(d, "resume", "kept")
    assert r.returncode == 0, r.stderr
    assert t.cmd("sums") == sums
    assert nvml_used(d) == used


def test_a_restarted_daemon_keeps_a_suspended_tenant_and_resumes_it_on_demand(shared_root, tenants):
    """The run state lives in the limits file: a daemon started again adopts the tenant
    suspended, takes its memory again (oversubscribe off), and its next launch resumes it."""
    d = start_daemon(shared_root)
    try:
        t, sums = holding(d, "survivor", 8 * GIB)
        tenants.append(t)
        used = nvml_used(d)
        assert gpuslice(d, "suspend", "survivor").returncode == 0
        d.stop()
        d = Daemon(shared_root, spec="a100-80gb", interval=0.2).start()
        body = tenant(d, "survivor")
        assert body["state"] == "suspended" and body["suspension"]["suspended_bytes"] == 8 * GIB
        assert nvml_used(d) == used  # held again by the new daemon
        r = t.cmd("launch 100")
        assert r["rc"] == 0, r
        assert tenant(d, "survivor")["state"] == "running"
        assert t.cmd("sums") == sums
        assert "tenant 'survivor' adopted suspended" in d.log.read_text()
    finally:
        d.stop()
