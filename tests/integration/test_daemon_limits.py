"""While the daemon runs it holds the limits: `gpuslice set` changes a tenant's memory limit
live, and the tenant's next allocation obeys it; a limit below what the tenant holds refuses
further allocations until its use drops, and kills nothing. A tenant running as another Unix
user cannot raise its own limit, neither through the environment nor by writing its shared
state, while the same tampering does raise it when no daemon holds the limits."""
import os
import struct
import subprocess

from conftest import run
from daemon_env import (GIB, GPUSLICE, MIB, PYTHON, WORKLOAD, Daemon, Tenant, alloc_until_oom, as_user, daemon,  # noqa: F401
                        ensure_user, needs_root, shared_root, tenant_env, user_dir, wait_for)


def gs_set(daemon, *args):
    r = run([GPUSLICE, "set"] + list(args), env=daemon.env)
    assert r.returncode == 0, r.stderr
    return r


def test_set_vram_applies_at_the_next_allocation(daemon):
    t = Tenant(daemon, "live", ["--vram", "2Gi"], 512 * MIB)
    try:
        env = tenant_env(daemon, "live")
        gs_set(daemon, "live", "--vram", "1Gi")
        assert alloc_until_oom(env)["allocated_bytes"] == 512 * MIB
        gs_set(daemon, "live", "--vram", "3Gi")
        assert alloc_until_oom(env)["allocated_bytes"] == 2560 * MIB
        assert daemon.tenants()["live"]["limits"]["vram_bytes"] == 3 * GIB
    finally:
        t.end()


def test_limit_below_usage_refuses_until_usage_drops_and_kills_nothing(daemon):
    t = Tenant(daemon, "shrink", ["--vram", "4Gi"], 100 * MIB)
    env = tenant_env(daemon, "shrink")
    extra = subprocess.Popen([str(WORKLOAD), "hold", "--bytes", "1Gi"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert extra.stdout.readline(), extra.stderr.read()
        gs_set(daemon, "shrink", "--vram", "512Mi")
        assert alloc_until_oom(env)["allocated_bytes"] == 0
        assert extra.poll() is None and t.proc.poll() is None, "a lower limit must not kill"
        extra.communicate(timeout=30)  # the 1 GiB holder ends: use drops to 100 MiB
        assert extra.returncode == 0
        assert alloc_until_oom(env, chunk="100Mi")["allocated_bytes"] == 400 * MIB
    finally:
        if extra.poll() is None:
            extra.kill()
        t.end()


# ---- a tenant as another Unix user tries to raise its own limit ----

def limit_offset(buf, limit):
    """Where GPU 0's limit_bytes sits in a ledger: the first 8-aligned copy of the value after
    the header (tests/unit/test_lib_ledger.c pins the layout; here the value is searched)."""
    want = struct.pack("<Q", limit)
    for off in range(0, 4096, 8):
        if buf[off:off + 8] == want:
            return off
    raise AssertionError("limit not found in the ledger")


def tamper_script(ledger, limits, limit):
    """Python run as the tenant's user: raise the limit in the ledger, try the limits file."""
    return f"""
import mmap, os, struct, sys
fd = os.open({str(ledger)!r}, os.O_RDWR)
m = mmap.mmap(fd, 0)
want = struct.pack('<Q', {limit})
off = next(o for o in range(0, 4096, 8) if m[o:o + 8] == want)
m[off:off + 8] = struct.pack('<Q', 64 << 30)
m[off + 8:off + 12] = struct.pack('<I', 0)
m.flush()
try:
    os.open({str(limits)!r}, os.O_RDWR)
    print('limits-writable')
except PermissionError:
    print('limits-protected')
except FileNotFoundError:
    print('no-limits-file')
"""


def start_user_tenant(d, pw, name, sim):
    env = dict(d.env, GPUSIM_STATE_DIR=str(sim))
    return Tenant(d, name, ["--vram", "1Gi"], 256 * MIB, env=env,
                  preexec=lambda: (os.setgroups([]), os.setgid(pw.pw_gid), os.setuid(pw.pw_uid))), env


@needs_root
def test_tenant_of_another_user_cannot_raise_its_own_limit(shared_root):
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root).start()
    user_dir(d.state / "tenants", pw)
    sim = user_dir(shared_root / "usersim", pw)
    t, env = start_user_tenant(d, pw, "mine", sim)
    try:
        ledger, limits = d.state / "tenants" / "mine", d.state / "limits" / "mine"
        assert limits.stat().st_uid == 0 and (limits.stat().st_mode & 0o777) == 0o640
        r = subprocess.run(as_user(pw) + [PYTHON, "-c", tamper_script(ledger, limits, GIB)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "limits-protected"
        # The environment says otherwise too; the daemon's limit still holds.
        tenv = dict(tenant_env(d, "mine", GPUSLICE_VRAM="64G", GPUSLICE_LIMIT="64G"), GPUSIM_STATE_DIR=str(sim))
        got = alloc_until_oom(tenv, user=pw)
        assert got["allocated_bytes"] == 768 * MIB, got
    finally:
        t.end()
        d.stop()


@needs_root
def test_the_same_tampering_raises_the_limit_without_a_daemon(shared_root):
    """The control: with no daemon, the ledger is the only authority, and the write above works."""
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root)  # not started
    user_dir(d.state, pw, 0o755)
    user_dir(d.state / "tenants", pw)
    sim = user_dir(shared_root / "usersim", pw)
    t, env = start_user_tenant(d, pw, "alone", sim)
    try:
        ledger = d.state / "tenants" / "alone"
        r = subprocess.run(as_user(pw) + [PYTHON, "-c", tamper_script(ledger, d.state / "limits" / "alone", GIB)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "no-limits-file"
        tenv = dict(tenant_env(d, "alone"), GPUSIM_STATE_DIR=str(sim))
        got = alloc_until_oom(tenv, user=pw)
        assert got["allocated_bytes"] > GIB, got
    finally:
        t.end()
