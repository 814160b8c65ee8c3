"""include/gpuslice/served.h: a tenant reports its served requests to the daemon. A small C
program built from the header (as strict C99, which also shows it needs libc only) talks to
a fake Unix-socket server that checks the raw request, and to the real daemon when the
build has one."""
import errno
import http.client
import json
import os
import pathlib
import shutil
import socket
import socketserver
import subprocess
import time

import pytest

from conftest import BIN, make_sim_env, run
from fake_daemon import ServedInThread

REPO = pathlib.Path(__file__).resolve().parents[2]
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

CLIENT = r"""
#include <gpuslice/served.h>
int main(int argc, char **argv)
{
  char status[128];
  unsigned long long n = strtoull(argv[1], NULL, 10);
  int r = argc > 2 ? gpuslice_served_to(argv[2], argv[3], n, status, sizeof(status))
                   : gpuslice_served(n);
  if (r == 0) { puts("ok"); return 0; }
  printf("errno=%d %s\n", errno, argc > 2 ? status : "");
  return 1;
}
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    if not CC:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("served")
    (d / "client.c").write_text(CLIENT)
    exe = d / "client"
    subprocess.run([CC, "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror",
                    "-pedantic", "-I", str(REPO / "include"), str(d / "client.c"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


class RawServer(ServedInThread):
    """Accepts connections on a Unix socket, keeps each raw request, answers `status`."""

    def __init__(self, path, status="204 No Content"):
        self.path, self.status, self.requests = str(path), status, []
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v)
                while len(body) < length:
                    body += self.request.recv(4096)
                outer.requests.append((head.decode(), body.decode()))
                self.request.sendall(f"HTTP/1.1 {outer.status}\r\nContent-Length: 0\r\n\r\n".encode())

        self._serve(socketserver.UnixStreamServer(self.path, Handler))


def env_for(**kw):
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPUSLICE_SOCKET", "GPUSLICE_TENANT", "GPUSLICE_STATE_DIR")}
    env.update({k: str(v) for k, v in kw.items()})
    return env


def test_request_is_a_post_of_the_count_to_the_tenant(client, tmp_path):
    sock = tmp_path / "d.sock"
    with RawServer(sock) as srv:
        r = run([client, "1234"], env=env_for(GPUSLICE_SOCKET=sock, GPUSLICE_TENANT="svc-a_1.x"))
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr
    (head, body), = srv.requests
    lines = head.split("\r\n")
    assert lines[0] == "POST /v1/tenants/svc-a_1.x/served HTTP/1.1"
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert json.loads(body) == {"requests": 1234}


def test_default_socket_is_in_the_state_dir(client, tmp_path):
    with RawServer(tmp_path / "gpuslice.sock") as srv:
        r = run([client, "7"], env=env_for(GPUSLICE_STATE_DIR=tmp_path, GPUSLICE_TENANT="t"))
    assert r.returncode == 0, r.stdout
    assert json.loads(srv.requests[0][1]) == {"requests": 7}


def test_daemon_error_status_is_eproto_with_the_status_line(client, tmp_path):
    sock = tmp_path / "d.sock"
    with RawServer(sock, status="404 Not Found"):
        r = run([client, "5", sock, "nobody"])
    assert r.returncode == 1
    assert r.stdout == f"errno={errno.EPROTO} HTTP/1.1 404 Not Found\n"


def test_no_daemon_fails_fast_with_enoent(client, tmp_path):
    t0 = time.monotonic()
    r = run([client, "5"], env=env_for(GPUSLICE_SOCKET=tmp_path / "none.sock", GPUSLICE_TENANT="t"))
    assert r.returncode == 1 and r.stdout.startswith(f"errno={errno.ENOENT} ")
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("tenant,count", [(None, "5"), ("", "5"), ("a/b", "5"),
                                          ("x\r\nEvil: 1", "5"), (".hidden", "5"), ("t", "0")])
def test_bad_tenant_or_zero_count_is_einval_without_connecting(client, tmp_path, tenant, count):
    sock = tmp_path / "d.sock"
    extra = {} if tenant is None else {"GPUSLICE_TENANT": tenant}
    with RawServer(sock) as srv:
        r = run([client, count], env=env_for(GPUSLICE_SOCKET=sock, **extra))
    assert r.returncode == 1 and r.stdout.startswith(f"errno={errno.EINVAL} ")
    assert srv.requests == []


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def call(sock, method, path, body=None):
    c = UnixHTTP(str(sock))
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data) if data else None


def test_real_daemon_counts_served_requests(client, tmp_path):
    gpuslice = BIN / "gpuslice"
    if run([gpuslice, "daemon", "--help"]).returncode != 0:
        pytest.skip("this build has no gpuslice daemon")
    sock, state, sim = tmp_path / "api.sock", tmp_path / "state", tmp_path / "sim"
    state.mkdir()
    sim.mkdir()
    env = make_sim_env(sim, GPUSLICE_SOCKET=sock, GPUSLICE_STATE_DIR=state,
                       GPUSLICE_LEDGER_DB=tmp_path / "ledger.db", GPUSLICE_METRICS_LISTEN="off")
    d = subprocess.Popen([str(gpuslice), "daemon", "--foreground"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if sock.exists():
                break
            if d.poll() is not None:
                pytest.fail("daemon exited: " + d.stderr.read())
            time.sleep(0.05)
        # `gpuslice run` registers the tenant with the daemon and sets GPUSLICE_TENANT.
        r = run([gpuslice, "run", "--name", "svc", "--", "sh", "-c", f"{client} 3 && {client} 4"],
                env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout == "ok\nok\n"
        status, usage = call(sock, "GET", "/v1/usage?by=tenant")
        assert status == 200, usage
        row, = [x for x in usage["rows"] if x["key"] == "svc"]
        assert row["served_requests"] == 7
        r = run([client, "1"], env=env_for(GPUSLICE_SOCKET=sock, GPUSLICE_TENANT="ghost"))
        assert r.returncode == 1 and r.stdout.startswith(f"errno={errno.EPROTO} ")
    finally:
        d.terminate()
        d.wait(timeout=30)
