"""A tenant attacks the daemon's hold on it (issue #12), as a second Unix user and as root:
it raises a limit an admin set, feeds its interposer a patched copy of its limits file, ends
its registration while its processes run, has root take over its name, or reads other
tenants' limits files. Each test is named for what must hold instead."""
import grp
import os
import pathlib
import stat
import struct
import subprocess

from conftest import run
from daemon_env import (GIB, GPUSLICE, MIB, PYTHON, Daemon, Tenant, alloc_until_oom, as_user,  # noqa: F401
                        as_user_request, ensure_user, needs_root, shared_root, tenant_env, user_dir, wait_for)

# struct gs_limits (include/gpuslice/limits.h pins it): limit_bytes[16] of the GPUs, the
# compute limits (limit_ppm, policy, priority, slice_ms), and the size of a version-2 file.
LIMIT_BYTES_OFFSET = 2168
COMPUTE_OFFSET = 2360
LIMITS_V2_SIZE = 2504


def user_tenant(d, pw, name, root, hold=64 * MIB):
    """`gpuslice run --vram 1Gi` as pw, its ledger in pw's own state dir, registered with d."""
    state = user_dir(root / f"state-{pw.pw_name}", pw, 0o755)
    sim = user_dir(root / f"sim-{pw.pw_name}", pw)
    env = dict(d.env, GPUSLICE_STATE_DIR=str(state), GPUSIM_STATE_DIR=str(sim))
    t = Tenant(d, name, ["--vram", "1Gi"], hold, env=env,
               preexec=lambda: (os.setgroups([]), os.setgid(pw.pw_gid), os.setuid(pw.pw_uid)))
    return t, env


def process_env(d, name, env):
    """A process of the tenant as its owner starts it: its own state dir, the daemon's socket."""
    return dict(tenant_env(d, name), GPUSLICE_STATE_DIR=env["GPUSLICE_STATE_DIR"],
                GPUSIM_STATE_DIR=env["GPUSIM_STATE_DIR"])


def cli_as(pw, d, *args):
    return subprocess.run(as_user(pw) + [str(GPUSLICE)] + list(args), env=d.env, capture_output=True, text=True,
                          timeout=60)


def as_user_python(pw, code):
    return subprocess.run(as_user(pw) + [PYTHON, "-c", code], capture_output=True, text=True, timeout=60)


def raise_ledger_limit(pw, env, name):
    """As the tenant's owner, raises the 1 GiB limit in its own ledger: only the daemon's
    limits file can then hold it (test_daemon_limits.py does the same)."""
    ledger = pathlib.Path(env["GPUSLICE_STATE_DIR"]) / "tenants" / name
    r = as_user_python(pw, f"""
import mmap, os, struct
m = mmap.mmap(os.open({str(ledger)!r}, os.O_RDWR), 0)
off = next(o for o in range(0, 4096, 8) if m[o:o + 8] == struct.pack('<Q', {GIB}))
m[off:off + 8] = struct.pack('<Q', 64 << 30)
m.flush()
""")
    assert r.returncode == 0, r.stderr


@needs_root
def test_owner_may_lower_but_never_raise_the_ceiling_an_admin_set(shared_root):
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root).start()
    t, _ = user_tenant(d, pw, "capped", shared_root)
    try:
        r = run([GPUSLICE, "set", "capped", "--vram", "512Mi"], env=d.env)
        assert r.returncode == 0, r.stderr
        r = cli_as(pw, d, "set", "capped", "--vram", "40Gi")
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and "ceiling" in r.stderr, r.stderr
        for raise_to in ("40Gi", None, "600Mi", "50%"):
            status, body = as_user_request(d, pw, "PATCH", "/v1/tenants/capped", {"vram": raise_to})
            assert status == 403 and set(body) == {"error"} and "ceiling" in body["error"], (raise_to, body)
        assert d.tenants()["capped"]["limits"]["vram_bytes"] == 512 * MIB
        status, body = as_user_request(d, pw, "PATCH", "/v1/tenants/capped", {"vram": "256Mi"})
        assert status == 200 and body["limits"]["vram_bytes"] == 256 * MIB, body
        status, body = as_user_request(d, pw, "PATCH", "/v1/tenants/capped", {"vram": "512Mi"})
        assert status == 200 and body["limits"]["vram_bytes"] == 512 * MIB, body
        # An admin moves the ceiling itself.
        r = run([GPUSLICE, "set", "capped", "--vram", "2Gi"], env=d.env)
        assert r.returncode == 0, r.stderr
        status, body = as_user_request(d, pw, "PATCH", "/v1/tenants/capped", {"vram": "1Gi"})
        assert status == 200 and body["limits"]["vram_bytes"] == GIB, body
    finally:
        t.end()
        d.stop()


def limits_compute(d, name):
    """(limit_ppm, policy, priority) in the tenant's limits file: what its interposer reads."""
    data = (d.state / "limits" / name).read_bytes()
    return struct.unpack_from("<III", data, COMPUTE_OFFSET)


def assert_compute(d, name, pct, policy, priority):
    lim = d.tenants()[name]["limits"]
    assert (lim["compute_pct"], lim["compute_policy"], lim["priority"]) == (pct, policy, priority), lim
    ppm = 0 if pct is None else round(pct * 1e4)
    assert limits_compute(d, name) == (ppm, {"share": 0, "cap": 1}[policy],
                                       {"normal": 0, "low": 1, "high": 2}[priority])


def assert_refused(d, pw, name, body, ceiling):
    status, reply = as_user_request(d, pw, "PATCH", f"/v1/tenants/{name}", body)
    assert status == 403 and set(reply) == {"error"}, (body, status, reply)
    assert "ceiling an admin set" in reply["error"] and reply["error"].endswith(ceiling), (body, reply)


def owner_patch(d, pw, name, body):
    status, reply = as_user_request(d, pw, "PATCH", f"/v1/tenants/{name}", body)
    assert status == 200, (body, status, reply)
    return reply


@needs_root
def test_owner_may_lower_but_never_raise_the_compute_ceiling_an_admin_set(shared_root):
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root).start()
    t, _ = user_tenant(d, pw, "ccapped", shared_root)
    try:
        r = run([GPUSLICE, "set", "ccapped", "--compute", "20", "--compute-policy", "cap", "--priority", "normal"],
                env=d.env)
        assert r.returncode == 0, r.stderr
        # Raising the share, through the CLI (exit 1, one line) and the API (403).
        r = cli_as(pw, d, "set", "ccapped", "--compute", "60")
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert "compute limit may not go above the ceiling an admin set, 20%" in r.stderr, r.stderr
        assert_refused(d, pw, "ccapped", {"compute_pct": 60}, "20%")
        assert_refused(d, pw, "ccapped", {"compute_pct": 20.5}, "20%")
        # Lifting it is the highest raise of all.
        r = cli_as(pw, d, "set", "ccapped", "--compute", "none")
        assert r.returncode == 1 and "ceiling" in r.stderr, r.stderr
        assert_refused(d, pw, "ccapped", {"compute_pct": None}, "20%")
        # Share lets it use spare time beyond its share: a raise over cap.
        r = cli_as(pw, d, "set", "ccapped", "--compute-policy", "share")
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert_refused(d, pw, "ccapped", {"compute_policy": "share"}, ", cap")
        r = cli_as(pw, d, "set", "ccapped", "--priority", "high")
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert_refused(d, pw, "ccapped", {"priority": "high"}, ", normal")
        # A refused PATCH changes nothing, not even the part within the ceiling.
        assert_refused(d, pw, "ccapped", {"vram": "256Mi", "compute_pct": 60}, "20%")
        assert d.tenants()["ccapped"]["limits"]["vram_bytes"] == GIB
        assert_compute(d, "ccapped", 20, "cap", "normal")
        # Lowering is taken, and reaches the limits file; so is going back up to the ceiling.
        owner_patch(d, pw, "ccapped", {"compute_pct": 10, "priority": "low"})
        assert_compute(d, "ccapped", 10, "cap", "low")
        r = cli_as(pw, d, "set", "ccapped", "--compute", "20", "--priority", "normal")
        assert r.returncode == 0, r.stderr
        assert_compute(d, "ccapped", 20, "cap", "normal")
        # An admin moves the ceiling itself, up as well.
        r = run([GPUSLICE, "set", "ccapped", "--compute", "50", "--compute-policy", "share", "--priority", "high"],
                env=d.env)
        assert r.returncode == 0, r.stderr
        assert_compute(d, "ccapped", 50, "share", "high")
        owner_patch(d, pw, "ccapped", {"compute_pct": 40, "compute_policy": "cap"})
        owner_patch(d, pw, "ccapped", {"compute_policy": "share"})
        assert_refused(d, pw, "ccapped", {"compute_pct": 60}, "50%")
        assert_compute(d, "ccapped", 40, "share", "high")
        r = run([GPUSLICE, "set", "ccapped", "--compute", "none"], env=d.env)
        assert r.returncode == 0, r.stderr
        owner_patch(d, pw, "ccapped", {"compute_pct": 90})
        assert_compute(d, "ccapped", 90, "share", "high")
    finally:
        t.end()
        d.stop()


@needs_root
def test_restarted_daemon_keeps_an_admins_compute_limit_of_a_version_2_limits_file_as_a_ceiling(shared_root):
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root).start()
    t, _ = user_tenant(d, pw, "oldfile", shared_root)
    try:
        r = run([GPUSLICE, "set", "oldfile", "--vram", "512Mi", "--compute", "20", "--compute-policy", "cap"],
                env=d.env)
        assert r.returncode == 0, r.stderr
        d.stop()
        # What a daemon before the compute ceiling left: the same layout, 16 bytes shorter.
        path = d.state / "limits" / "oldfile"
        with open(path, "r+b") as f:
            f.truncate(LIMITS_V2_SIZE)
            f.seek(8)
            f.write(struct.pack("<II", 2, LIMITS_V2_SIZE))
        ino = path.stat().st_ino
        d.start()
        assert path.stat().st_ino == ino and path.stat().st_size > LIMITS_V2_SIZE
        assert d.tenants()["oldfile"]["limits"]["vram_bytes"] == 512 * MIB
        assert_compute(d, "oldfile", 20, "cap", "normal")
        assert_refused(d, pw, "oldfile", {"vram": "1Gi"}, "512 MiB")
        assert_refused(d, pw, "oldfile", {"compute_pct": 60}, "20%")
        assert_refused(d, pw, "oldfile", {"compute_policy": "share"}, ", cap")
        owner_patch(d, pw, "oldfile", {"compute_pct": 10})
        assert_compute(d, "oldfile", 10, "cap", "normal")
    finally:
        t.end()
        d.stop()


def copy_and_patch(src, dst_dir):
    return f"""
import os, struct
data = bytearray(open({str(src)!r}, 'rb').read())
for g in range(16):
    data[{LIMIT_BYTES_OFFSET} + 8 * g:{LIMIT_BYTES_OFFSET} + 8 * g + 8] = struct.pack('<Q', 64 << 30)
os.makedirs({str(dst_dir)!r}, exist_ok=True)
with open(os.path.join({str(dst_dir)!r}, os.path.basename({str(src)!r})), 'wb') as f:
    f.write(data)
print('copied')
"""


@needs_root
def test_interposer_ignores_a_limits_file_the_tenant_copied_and_patched(shared_root):
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root).start()
    t, env = user_tenant(d, pw, "copied", shared_root)
    try:
        own_limits = pathlib.Path(env["GPUSLICE_STATE_DIR"]) / "limits"
        r = as_user_python(pw, copy_and_patch(d.state / "limits" / "copied", own_limits))
        assert r.returncode == 0 and r.stdout.strip() == "copied", r.stderr
        raise_ledger_limit(pw, env, "copied")
        got = alloc_until_oom(process_env(d, "copied", env), user=pw)
        assert got["allocated_bytes"] == GIB - 64 * MIB, got
    finally:
        t.end()
        d.stop()


@needs_root
def test_a_registration_cannot_be_ended_while_its_processes_run(shared_root):
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root).start()
    t, _ = user_tenant(d, pw, "stays", shared_root)
    try:
        status, body = as_user_request(d, pw, "DELETE", "/v1/tenants/stays")
        assert status == 409 and set(body) == {"error"} and "\n" not in body["error"], body
        assert "stays" in d.tenants() and (d.state / "limits" / "stays").exists()
    finally:
        rc, err = t.end()
    try:
        assert rc == 0, err
        # Its command gone, run's own end is accepted.
        wait_for(lambda: "stays" not in d.tenants(), what="the tenant to end")
        assert d.sql("SELECT exit_status FROM tenants WHERE name = 'stays'") == [(0,)]
    finally:
        d.stop()


@needs_root
def test_a_name_another_users_live_tenant_holds_is_refused_even_to_root(shared_root):
    pw = ensure_user("gs-tenant1")
    d = Daemon(shared_root).start()
    t, env = user_tenant(d, pw, "shared", shared_root)
    try:
        r = run([GPUSLICE, "run", "--name", "shared", "--", "true"], env=d.env)
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        status, body = d.request("POST", "/v1/tenants", {"name": "shared"})
        assert status == 409 and set(body) == {"error"}, body
        status, body = d.request("POST", "/v1/tenants", {"name": "shared", "state_dir": str(shared_root / "state")})
        assert status == 409, body
        tenants = d.tenants()
        assert tenants["shared"]["uid"] == pw.pw_uid, tenants
        assert (pathlib.Path(env["GPUSLICE_STATE_DIR"]) / "tenants" / "shared").exists()
        # The owner's own registration again is the same tenant, not a conflict.
        status, body = as_user_request(d, pw, "POST", "/v1/tenants",
                                       {"name": "shared", "state_dir": env["GPUSLICE_STATE_DIR"]})
        assert status == 200, body
    finally:
        t.end()
        d.stop()


def admin_gid():
    try:
        return grp.getgrnam("gpuslice").gr_gid
    except KeyError:
        return os.getgid()


@needs_root
def test_limits_files_are_readable_by_their_tenant_and_the_admins_only(shared_root):
    owner, other = ensure_user("gs-tenant1"), ensure_user("gs-tenant2")
    d = Daemon(shared_root).start()
    t, env = user_tenant(d, owner, "private", shared_root)
    try:
        f = d.state / "limits" / "private"
        st = f.stat()
        assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_uid == 0 and st.st_gid == admin_gid(), oct(st.st_mode)
        probe = f"""
import os
try:
    open({str(f)!r}, 'rb').read(); print('read', end=' ')
except PermissionError:
    print('denied', end=' ')
try:
    os.listdir({str(f.parent)!r}); print('listed')
except PermissionError:
    print('unlisted')
"""
        r = as_user_python(other, probe)
        assert r.stdout.strip() == "denied unlisted", r.stdout + r.stderr
        r = as_user_python(owner, probe)
        assert r.stdout.strip() == "read unlisted", r.stdout + r.stderr
        # The tenant's processes, as its owner, still map their limits and obey them.
        raise_ledger_limit(owner, env, "private")
        got = alloc_until_oom(process_env(d, "private", env), user=owner)
        assert got["allocated_bytes"] == GIB - 64 * MIB, got
    finally:
        t.end()
        d.stop()
