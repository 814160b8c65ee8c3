"""Helpers for the daemon tests (test_daemon_*.py): a `gpuslice daemon` on the simulated GPU
with its socket, state dir, usage ledger and metrics port private to the test; tenants
started with `gpuslice run` that register with it; and Unix users for the access tests."""
import json
import os
import pathlib
import pwd
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import BIN, make_sim_env
from daemon_http import request

HERE = pathlib.Path(__file__).resolve().parent
GPUSLICE = BIN / "gpuslice"
WORKLOAD = BIN / "gpusim-workload"
# Another Unix user cannot run an interpreter under /root (pyenv): use the system's.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
MIB = 1 << 20
GIB = 1 << 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout=20.0, step=0.05, what="condition"):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


class Daemon:
    """One daemon. `root` is a directory every test user can traverse (mode 0755)."""

    def __init__(self, root, spec="h100-80gb", interval=0.5):
        self.root = pathlib.Path(root)
        self.state = self.root / "state"
        self.sim = self.root / "sim"
        self.sim.mkdir(parents=True, exist_ok=True)
        self.db = self.root / "ledger.db"
        self.sock = self.state / "gpuslice.sock"
        self.port = free_port()
        self.env = make_sim_env(self.sim, spec, GPUSLICE_STATE_DIR=self.state, GPUSLICE_LEDGER_DB=self.db,
                                GPUSLICE_SOCKET=self.sock, GPUSLICE_METRICS_LISTEN=f"127.0.0.1:{self.port}",
                                GPUSLICE_INTERVAL=interval)
        for k in ("LD_PRELOAD", "GPUSLICE_TENANT"):
            self.env.pop(k, None)
        self.proc = None
        self.log = self.root / "daemon.log"

    def start(self, *args, preexec=None):
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen([str(GPUSLICE), "daemon", "--foreground"] + list(args), env=self.env,
                                         stdout=log, stderr=log, preexec_fn=preexec)
        wait_for(self._answers, what=f"the daemon to answer (log: {self.log.read_text() if self.log.exists() else ''})")
        return self

    def _answers(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited {self.proc.returncode}: {self.log.read_text()}")
        try:
            return self.get("/v1/health")[0] == 200
        except OSError:
            return False

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def request(self, method, path, body=None, raw=None, headers=None):
        return request(self.sock, method, path, body=body, raw=raw, headers=headers)

    def get(self, path):
        return self.request("GET", path)

    def tenants(self):
        status, body = self.get("/v1/tenants")
        assert status == 200, body
        return {t["name"]: t for t in body["tenants"]}

    def sql(self, query, *args):
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute(query, args).fetchall()
        finally:
            con.close()


class Tenant:
    """`gpuslice run [opts] -- gpusim-workload hold --bytes B` and its ready line."""

    def __init__(self, daemon, name, run_opts, hold_bytes, env=None, preexec=None):
        self.name = name
        self.env = dict(env or daemon.env)
        cmd = [str(GPUSLICE), "run", "--name", name] + [str(o) for o in run_opts] + \
              ["--", str(WORKLOAD), "hold", "--bytes", str(hold_bytes)]
        self.proc = subprocess.Popen(cmd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            raise AssertionError(f"tenant {name}: exit {self.proc.returncode}: {self.proc.stderr.read()}")
        self.ready = json.loads(line)

    def end(self):
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, err


def tenant_env(daemon, name, **extra):
    """The environment of a process inside tenant `name` (what `gpuslice run` sets up)."""
    env = dict(daemon.env, GPUSLICE_TENANT=name, LD_PRELOAD=str(BIN.parent / "lib" / "libgpuslice.so"))
    # As `gpuslice run` does in sanitizer builds: the preloaded interposer comes before ASan.
    env["ASAN_OPTIONS"] = ":".join(x for x in (env.get("ASAN_OPTIONS"), "verify_asan_link_order=0") if x)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def alloc_until_oom(env, chunk="64Mi", user=None):
    """Runs alloc-until-oom in env (as user when given); returns its JSON line."""
    cmd = [str(WORKLOAD), "alloc-until-oom", "--chunk", chunk]
    if user:
        cmd = as_user(user) + cmd
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1) and r.stdout.strip(), f"exit {r.returncode}: {r.stderr}"
    return json.loads(r.stdout.splitlines()[-1])


# ---- Unix users (root only) ----

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates Unix users with useradd")


def ensure_user(name):
    """Creates the system user `name` (no home, no login) unless it exists; returns its pwd entry."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                       check=True, capture_output=True)
        return pwd.getpwnam(name)


def as_user(pw):
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", "--"]


def user_dir(path, pw, mode=0o700):
    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    os.chmod(path, mode)
    return path


def as_user_request(daemon, pw, method, path, body=None):
    """The request as another Unix user: (status, parsed body)."""
    cmd = as_user(pw) + [PYTHON, str(HERE / "daemon_http.py"), str(daemon.sock), method, path]
    if body is not None:
        cmd.append(json.dumps(body))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    return out["status"], out["body"]


@pytest.fixture
def shared_root():
    """A directory other Unix users can traverse: pytest's own tmp dirs are 0700."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="gs-daemon-test-"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def daemon(shared_root):
    d = Daemon(shared_root).start()
    yield d
    d.stop()
