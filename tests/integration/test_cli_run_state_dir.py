"""Safe state dirs across users (issue #12): where XDG_RUNTIME_DIR is unset the default state
dir is /tmp/gpuslice-<uid>, which any user can create first and then use to set the victim's
limits, delete its ledger or answer on a fake socket. The CLI, the interposer and the daemon
refuse a state dir (or the directory holding the socket) that another user owns or can write,
and the CLI creates the per-user default 0700. The socket alone may sit directly in sticky /tmp,
when the socket file is the caller's or root's. Each test is named for what must hold."""
import errno
import os
import pathlib
import shutil
import stat
import subprocess

from daemon_env import (GIB, GPUSLICE, MIB, PYTHON, Daemon, Tenant, alloc_until_oom, as_user,  # noqa: F401
                        ensure_user, needs_root, shared_root, tenant_env, user_dir)

REPO = pathlib.Path(__file__).resolve().parents[2]


def per_user_default(pw):
    return pathlib.Path(f"/tmp/gpuslice-{pw.pw_uid}")


def victim_env(root, pw):
    """The victim's environment with no state dir given: no GPUSLICE_STATE_DIR, no
    XDG_RUNTIME_DIR, so its state dir is /tmp/gpuslice-<uid>; a simulated GPU of its own."""
    d = Daemon(root)
    env = dict(d.env, GPUSIM_STATE_DIR=str(user_dir(root / f"sim-{pw.pw_name}", pw)))
    for k in ("GPUSLICE_STATE_DIR", "XDG_RUNTIME_DIR", "GPUSLICE_SOCKET", "HOME"):
        env.pop(k, None)
    return env


def as_victim(pw, env, *args):
    return subprocess.run(as_user(pw) + [str(a) for a in args], env=env, capture_output=True, text=True,
                          timeout=60)


def plant(attacker, path, mode):
    """The attacker creates path first, as itself, with mode."""
    shutil.rmtree(path, ignore_errors=True)
    r = subprocess.run(as_user(attacker) + ["sh", "-c", f"mkdir {path} && chmod {mode:o} {path}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def fake_daemon(attacker, sock):
    """A fake daemon the attacker runs on sock: it answers every request 200 with []."""
    fake = subprocess.Popen(as_user(attacker) + [PYTHON, "-c", f"""
import os, socket
s = socket.socket(socket.AF_UNIX); s.bind({str(sock)!r}); s.listen(8)
os.chmod({str(sock)!r}, 0o777)
print('ready', flush=True)
while True:
    c, _ = s.accept()
    c.recv(65536)
    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\n\\r\\n[]')
    c.close()
"""], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if fake.stdout.readline().strip() != "ready":
        fake.kill()
        raise AssertionError(fake.communicate()[1])
    return fake


def assert_refused_in_one_line(r, path, owner, mode):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, (r.returncode, r.stderr)
    assert str(path) in lines[0] and f"uid {owner.pw_uid}" in lines[0] and f"mode {mode:04o}" in lines[0], lines


@needs_root
def test_run_refuses_a_per_user_state_dir_another_user_created_first(shared_root):
    victim, attacker = ensure_user("gs-victim"), ensure_user("gs-attacker")
    path = per_user_default(victim)
    plant(attacker, path, 0o777)
    try:
        r = as_victim(victim, victim_env(shared_root, victim), GPUSLICE, "run", "--vram", "1Gi", "--", "true")
        assert_refused_in_one_line(r, path, attacker, 0o777)
        assert not (path / "tenants").exists()
    finally:
        shutil.rmtree(path, ignore_errors=True)


@needs_root
def test_ps_refuses_a_socket_in_a_per_user_state_dir_another_user_created(shared_root):
    victim, attacker = ensure_user("gs-victim"), ensure_user("gs-attacker")
    path = per_user_default(victim)
    plant(attacker, path, 0o755)
    try:
        fake = fake_daemon(attacker, path / "gpuslice.sock")
        try:
            r = as_victim(victim, victim_env(shared_root, victim), GPUSLICE, "ps")
            assert_refused_in_one_line(r, path, attacker, 0o755)
        finally:
            fake.kill()
            fake.wait()
    finally:
        shutil.rmtree(path, ignore_errors=True)


@needs_root
def test_run_creates_the_per_user_default_state_dir_0700(shared_root):
    victim = ensure_user("gs-victim")
    path = per_user_default(victim)
    shutil.rmtree(path, ignore_errors=True)
    try:
        r = as_victim(victim, victim_env(shared_root, victim), GPUSLICE, "run", "--vram", "1Gi", "--", "true")
        assert r.returncode == 0, r.stderr
        st = path.stat()
        assert st.st_uid == victim.pw_uid and stat.S_IMODE(st.st_mode) == 0o700, oct(st.st_mode)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_interposer_refuses_allocations_in_a_state_dir_others_can_write(shared_root):
    d = Daemon(shared_root)
    d.state.mkdir(mode=0o755)
    t = Tenant(d, "opened", ["--vram", "1Gi"], 64 * MIB)
    try:
        os.chmod(d.state, 0o777)
        got = alloc_until_oom(tenant_env(d, "opened"))
        assert got["allocated_bytes"] == 0 and got["stopped_by"] == "CUDA_ERROR_NOT_PERMITTED", got
    finally:
        os.chmod(d.state, 0o755)
        t.end()


def test_daemon_exits_1_on_a_state_dir_others_can_write(shared_root):
    d = Daemon(shared_root)
    d.state.mkdir(mode=0o755)
    os.chmod(d.state, 0o777)
    r = subprocess.run([str(GPUSLICE), "daemon", "--foreground"], env=d.env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1, r.stderr
    assert str(d.state) in r.stderr and "mode 0777" in r.stderr, r.stderr


def test_root_owned_state_dir_others_cannot_write_is_fine_for_everyone(shared_root):
    d = Daemon(shared_root)
    d.state.mkdir(mode=0o755)
    t = Tenant(d, "shared", ["--vram", "1Gi"], 64 * MIB)
    try:
        got = alloc_until_oom(tenant_env(d, "shared"))
        assert got["allocated_bytes"] == GIB - 64 * MIB, got
    finally:
        t.end()


SERVED_CLIENT = r"""
#include <gpuslice/served.h>
int main(void)
{
  if (gpuslice_served(1) == 0) { puts("ok"); return 0; }
  printf("errno=%d\n", errno);
  return 1;
}
"""


@needs_root
def test_served_header_refuses_a_socket_in_a_per_user_state_dir_another_user_created(shared_root):
    victim, attacker = ensure_user("gs-victim"), ensure_user("gs-attacker")
    src, exe = shared_root / "served.c", shared_root / "served"
    src.write_text(SERVED_CLIENT)
    subprocess.run(["cc", "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-I", str(REPO / "include"), str(src), "-o",
                    str(exe)], check=True, capture_output=True, text=True)
    path = per_user_default(victim)
    plant(attacker, path, 0o755)
    fake = fake_daemon(attacker, path / "gpuslice.sock")
    try:
        r = as_victim(victim, dict(victim_env(shared_root, victim), GPUSLICE_TENANT="mine"), exe)
        assert r.returncode == 1 and r.stdout.strip() == f"errno={errno.EPERM}", (r.stdout, r.stderr)
    finally:
        fake.kill()
        fake.wait()
        shutil.rmtree(path, ignore_errors=True)


def tmp_socket(tag):
    """A socket path directly in /tmp (sticky, mode 1777), unique to this test run."""
    path = pathlib.Path(f"/tmp/gs-test-{tag}-{os.getpid()}.sock")
    if path.exists() or path.is_symlink():
        path.unlink()
    return path


def served_client(root):
    src, exe = root / "served.c", root / "served"
    src.write_text(SERVED_CLIENT)
    subprocess.run(["cc", "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-I", str(REPO / "include"), str(src), "-o",
                    str(exe)], check=True, capture_output=True, text=True)
    return exe


def test_a_socket_directly_in_sticky_tmp_serves_its_owners_clients(shared_root):
    assert stat.S_IMODE(os.stat("/tmp").st_mode) & (stat.S_ISVTX | stat.S_IWOTH) == stat.S_ISVTX | stat.S_IWOTH
    sock = tmp_socket("own")
    d = Daemon(shared_root)
    d.sock = sock
    d.env["GPUSLICE_SOCKET"] = str(sock)
    try:
        d.start("--socket", str(sock))
        st = os.lstat(sock)
        assert stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid()
        r = subprocess.run([str(GPUSLICE), "ps", "--socket", str(sock)], env=d.env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([str(GPUSLICE), "ps", "--json"], env=d.env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        # served.h gets to the daemon too: it answers 404 for a tenant it does not know (EPROTO), not EPERM.
        r = subprocess.run([str(served_client(shared_root))], env=dict(d.env, GPUSLICE_TENANT="nobody"),
                           capture_output=True, text=True, timeout=60)
        assert r.stdout.strip() == f"errno={errno.EPROTO}", (r.stdout, r.stderr)
    finally:
        d.stop()
        assert not sock.exists()


@needs_root
def test_a_socket_another_user_bound_in_sticky_tmp_is_refused_by_client_and_daemon(shared_root):
    victim, attacker = ensure_user("gs-victim"), ensure_user("gs-attacker")
    sock = tmp_socket("planted")
    exe = served_client(shared_root)
    state = user_dir(shared_root / "victim-state", victim)
    env = dict(victim_env(shared_root, victim), GPUSLICE_STATE_DIR=str(state), GPUSLICE_SOCKET=str(sock),
               GPUSLICE_LEDGER_DB=str(state / "ledger.db"), GPUSLICE_METRICS_LISTEN="off")
    fake = fake_daemon(attacker, sock)
    try:
        r = as_victim(victim, env, GPUSLICE, "ps", "--socket", sock)
        assert_refused_in_one_line(r, sock, attacker, 0o777)
        r = as_victim(victim, dict(env, GPUSLICE_TENANT="mine"), exe)
        assert r.returncode == 1 and r.stdout.strip() == f"errno={errno.EPERM}", (r.stdout, r.stderr)
        r = as_victim(victim, env, GPUSLICE, "daemon", "--foreground", "--socket", sock)
        assert_refused_in_one_line(r, sock, attacker, 0o777)
        # Root's daemon refuses it as well: it could remove the file, and must not.
        r = subprocess.run([str(GPUSLICE), "daemon", "--foreground", "--socket", str(sock)],
                           env=dict(Daemon(shared_root / "root").env, GPUSLICE_SOCKET=str(sock),
                                    GPUSLICE_METRICS_LISTEN="off"),
                           capture_output=True, text=True, timeout=60)
        assert_refused_in_one_line(r, sock, attacker, 0o777)
        st = os.lstat(sock)
        assert stat.S_ISSOCK(st.st_mode) and st.st_uid == attacker.pw_uid
    finally:
        fake.kill()
        fake.wait()
        sock.unlink(missing_ok=True)


def test_a_sticky_world_writable_dir_is_still_refused_as_a_state_dir(shared_root):
    d = Daemon(shared_root)
    d.state.mkdir(mode=0o755)
    os.chmod(d.state, 0o1777)
    r = subprocess.run([str(GPUSLICE), "daemon", "--foreground"], env=d.env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1, r.stderr
    assert str(d.state) in r.stderr and "mode 1777" in r.stderr, r.stderr
