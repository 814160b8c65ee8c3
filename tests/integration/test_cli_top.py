"""`gpuslice top`: with --once, or when stdout is not a terminal, prints one plain-text frame
(the GPU table then the tenant table) and exits; on a terminal it runs live under ncurses and
quits on `q` (driven here through a pseudo-terminal)."""
import os
import pty
import select
import subprocess
import time

from conftest import BIN, run
from fake_daemon import FakeDaemon, gpu, tenant, tenant_gpu

GPUSLICE = BIN / "gpuslice"
ROUTES = {("GET", "/v1/gpus"): (200, {"gpus": [gpu(0)]}),
          ("GET", "/v1/tenants"): (200, {"tenants": [tenant("alpha", gpus=[tenant_gpu(0, used=1 << 30)])]})}


def test_once_prints_one_frame_with_both_tables(tmp_path):
    sock = tmp_path / "d.sock"
    with FakeDaemon(sock, ROUTES):
        r = run([GPUSLICE, "top", "--once", "--socket", sock])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("gpuslice top ") and lines[0].endswith("1 GPU(s), 1 tenant(s)")
    gi, ti = lines.index("GPUs"), lines.index("Tenants")
    assert lines[gi + 1].split()[:2] == ["GPU", "NAME"] and "NVIDIA H100" in lines[gi + 2]
    assert lines[ti + 1].split()[0] == "TENANT" and lines[ti + 2].split()[0] == "alpha"


def test_not_a_terminal_behaves_as_once(tmp_path):
    sock = tmp_path / "d.sock"
    with FakeDaemon(sock, ROUTES):
        r = run([GPUSLICE, "top", "--socket", sock], timeout=30)
    assert r.returncode == 0, r.stderr
    assert "Tenants" in r.stdout


def read_until(fd, needle, timeout=20.0):
    buf = b""
    end = time.monotonic() + timeout
    while needle not in buf and time.monotonic() < end:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
    return buf


def test_live_mode_draws_and_quits_on_q(tmp_path):
    sock = tmp_path / "d.sock"
    with FakeDaemon(sock, ROUTES) as d:
        master, slave = pty.openpty()
        env = dict(os.environ, TERM="xterm", LINES="40", COLUMNS="200")
        p = subprocess.Popen([str(GPUSLICE), "top", "--interval", "0.2", "--socket", str(sock)],
                             stdin=slave, stdout=slave, stderr=slave, env=env)
        os.close(slave)
        try:
            screen = read_until(master, b"q: quit")
            assert b"alpha" in screen and b"q: quit" in screen
            os.write(master, b"q")
            assert p.wait(timeout=20) == 0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(master)
        assert len([r for r in d.requests if r[1] == "/v1/gpus"]) >= 1
