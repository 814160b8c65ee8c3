"""The daemon against a hostile node (issue #12): clients that hold connections open, a second
daemon on the same state dir, a damaged usage ledger, a state dir removed under it, and
requests libmicrohttpd would answer on its own. Each test is named for what must hold."""
import json
import shutil
import socket
import sqlite3
import subprocess
import time
import urllib.request
from contextlib import ExitStack

from conftest import make_sim_env, run
from daemon_env import (GPUSLICE, MIB, Daemon, Tenant, alloc_until_oom, daemon, shared_root,  # noqa: F401
                        tenant_env, wait_for)


def idle_connections(stack, port, n):
    """Open up to n TCP connections to the port from 127.0.0.1 and send nothing on them."""
    held = 0
    for _ in range(n):
        s = stack.enter_context(socket.socket())
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            held += 1
        except OSError:
            break
    return held


def scrape(port, source="127.0.0.2", timeout=5.0):
    """GET /metrics from another loopback address, as a Prometheus server on another host would."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def scrape_or_none(port):
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    except OSError:
        return None


def test_idle_metrics_connections_do_not_stop_a_scrape(shared_root):
    d = Daemon(shared_root).start()
    try:
        with ExitStack() as stack:
            assert idle_connections(stack, d.port, 100) > 0
            t0 = time.monotonic()
            data = scrape(d.port)
            took = time.monotonic() - t0
            assert data.startswith(b"HTTP/1.1 200") and b"gpuslice_" in data, data[:200]
            assert took < 5, took
        # Closed, they make room again for their own address, once the daemon has seen them go.
        assert b"gpuslice_" in wait_for(lambda: scrape_or_none(d.port), timeout=5, what="a scrape from 127.0.0.1")
        # An idle connection does not stay: the daemon closes it within seconds.
        with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
            t0 = time.monotonic()
            assert s.recv(1) == b""
            assert time.monotonic() - t0 < 12
    finally:
        d.stop()


def test_a_second_daemon_on_the_same_state_dir_exits_naming_it_and_the_first(shared_root):
    d = Daemon(shared_root).start()
    try:
        env = dict(d.env, GPUSLICE_SOCKET=str(shared_root / "other.sock"), GPUSLICE_METRICS_LISTEN="off")
        r = run([GPUSLICE, "daemon", "--foreground"], env=env, timeout=30)
        assert r.returncode == 1, r.stderr
        assert len(r.stderr.splitlines()) == 1, r.stderr
        assert str(d.state) in r.stderr and str(d.proc.pid) in r.stderr, r.stderr
        assert not (shared_root / "other.sock").exists()
        assert d.get("/v1/health")[0] == 200
    finally:
        d.stop()
    # The lock goes with the first daemon: the second starts once it has stopped.
    d2 = Daemon(shared_root)
    d2.env = dict(d.env)
    d2.start()
    d2.stop()


def patch_ledger_label(ledger, old, new):
    """Rewrites a label in a tenant's ledger in place, as the tenant (who owns it) could."""
    assert len(old) == len(new)
    data = ledger.read_bytes()
    at = data.index(old)
    with open(ledger, "r+b") as f:
        f.seek(at)
        f.write(new)


def test_a_label_that_is_not_utf8_is_refused_at_registration_naming_it(shared_root):
    d = Daemon(shared_root).start()
    try:
        alone = shared_root / "alone"
        env = dict(d.env, GPUSLICE_STATE_DIR=str(alone), GPUSLICE_SOCKET=str(shared_root / "none.sock"))
        t = Tenant(d, "badlabel", ["--label", "team=AAAA"], 1 << 20, env=env)
        patch_ledger_label(alone / "tenants" / "badlabel", b"team=AAAA", b"team=\xff\xfeAA")
        status, body = d.request("POST", "/v1/tenants", {"name": "badlabel", "pid": t.proc.pid,
                                                        "state_dir": str(alone)})
        assert status == 400 and "team" in body["error"] and "UTF-8" in body["error"], (status, body)
        assert "badlabel" not in d.tenants()
        t.end()
    finally:
        d.stop()


def test_an_adopted_label_that_is_not_utf8_is_kept_visible_and_counted(shared_root):
    d = Daemon(shared_root)
    env = dict(d.env, GPUSLICE_SOCKET=str(shared_root / "none.sock"))
    t = Tenant(d, "odd", ["--label", "team=AAAA"], 1 << 20, env=env)
    patch_ledger_label(d.state / "tenants" / "odd", b"team=AAAA", b"team=\xff\xfeAA")
    d.start()
    try:
        tenant = wait_for(lambda: d.tenants().get("odd"), what="the tenant to be adopted")
        assert tenant["labels"].get("team", "").endswith("AA"), tenant
        wait_for(lambda: d.sql("SELECT COUNT(*) FROM intervals")[0][0] > 0, what="an interval")
        r = run([GPUSLICE, "usage", "--by", "label:team", "--json"], env=d.env)
        assert r.returncode == 0, r.stderr
        assert [row for row in json.loads(r.stdout)["rows"] if row["key"].endswith("AA")], r.stdout
        t.end()
    finally:
        d.stop()


def test_run_refuses_a_label_that_is_not_utf8_before_starting(shared_root):
    marker = shared_root / "started"
    r = subprocess.run([bytes(GPUSLICE), b"run", b"--label", b"team=\xff", b"--", b"touch", bytes(marker)],
                       capture_output=True, env=make_sim_env(shared_root, "h100-80gb"), timeout=60)
    assert r.returncode == 2, r.stderr
    err = r.stderr.decode()  # valid UTF-8 itself
    assert len(err.splitlines()) == 1 and "team" in err and "UTF-8" in err, err
    assert not marker.exists()


def test_a_damaged_usage_ledger_is_refused_at_start_saying_how_to_recover(shared_root):
    d = Daemon(shared_root).start()
    d.stop()
    con = sqlite3.connect(d.db)
    con.execute("PRAGMA journal_mode = DELETE")
    con.execute("CREATE TABLE filler(x)")
    con.executemany("INSERT INTO filler VALUES (randomblob(300))", [()] * 2000)
    con.commit()
    con.close()
    pages = d.db.stat().st_size // 4096
    assert pages > 40
    with open(d.db, "r+b") as f:  # the middle pages, not the header
        f.seek(4096 * (pages // 2))
        f.write(b"\xa5" * 4096 * 8)
    try:
        r = run([GPUSLICE, "daemon", "--foreground"], env=d.env, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("the daemon started on a damaged usage ledger")
    assert r.returncode == 1, r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert str(d.db) in r.stderr and "move it aside" in r.stderr, r.stderr
    # Moved aside as the line says, the daemon starts again with a new ledger.
    d.db.rename(d.db.with_suffix(".damaged"))
    d.start()
    assert d.get("/v1/usage")[0] == 200
    d.stop()


def test_a_control_character_in_a_path_is_refused_not_cut_short(daemon):
    env = dict(daemon.env)
    t = Tenant(daemon, "a1", [], 1 << 20, env=env)
    try:
        assert daemon.get("/v1/tenants/a1")[0] == 200
        for path in ("/v1/tenants/a1%00zz", "/v1/tenants/a1%0a", "/v1/tenants/a1%1b[31m"):
            status, body = daemon.get(path)
            assert status in (400, 404) and "error" in body, (path, status, body)
    finally:
        t.end()


def test_usage_since_weeks_and_offsets_as_documented(daemon):
    for since in ("2w", "1.5w", "2025-01-31T00:00:00+02:00", "2025-01-31T00:00:00.5Z"):
        r = run([GPUSLICE, "usage", "--since", since, "--json"], env=daemon.env)
        assert r.returncode == 0, (since, r.stderr)


def test_a_bad_metrics_listen_address_is_a_usage_error(shared_root):
    d = Daemon(shared_root)
    for spec in ("nonsense", "127.0.0.1:99999", "127.0.0.1:", "127.0.0.1:http", "localhost:9400"):
        try:
            r = run([GPUSLICE, "daemon", "--foreground", "--metrics-listen", spec], env=d.env, timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the daemon started with --metrics-listen {spec}")
        assert r.returncode == 2, (spec, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and spec in r.stderr, r.stderr


def test_run_refuses_a_vram_limit_past_the_largest_naming_it(shared_root):
    marker = shared_root / "started"
    r = run([GPUSLICE, "run", "--vram", "9223372036854775808", "--", "touch", marker],
            env=make_sim_env(shared_root, "h100-80gb"))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1 and "9223372036854775807" in r.stderr, r.stderr
    assert not marker.exists()


def test_ps_and_top_print_no_control_characters_from_labels(daemon):
    t = Tenant(daemon, "esc", ["--label", "team=\x1b[31mred\x1b]0;owned\x07"], 1 << 20)
    try:
        for args in (["ps"], ["top", "--once"]):
            r = run([GPUSLICE] + args, env=daemon.env)
            assert r.returncode == 0, (args, r.stderr)
            assert "esc" in r.stdout and "red" in r.stdout, (args, r.stdout)
            assert not any(ord(c) < 0x20 and c != "\n" or ord(c) == 0x7f for c in r.stdout), (args, r.stdout)
    finally:
        t.end()


def test_a_removed_state_dir_is_made_again_and_its_tenants_still_known(shared_root):
    d = Daemon(shared_root, interval=0.2).start()
    t = Tenant(d, "kept", [], 1 << 20)
    try:
        assert "kept" in d.tenants()
        shutil.rmtree(d.state)
        wait_for(lambda: d.sock.exists(), timeout=10, what="the socket to be made again")
        assert (d.state / "daemon.lock").exists()
        assert "kept" in d.tenants()
        time.sleep(1)  # several intervals: it is logged once, not at each
        lines = [ln for ln in d.log.read_text().splitlines() if "was removed" in ln]
        assert len(lines) == 1 and str(d.state) in lines[0], lines
    finally:
        t.end()
        d.stop()


def test_a_removed_state_dir_gives_its_tenants_back_their_ledger_and_limits(shared_root):
    """Finding 12: after `rm -rf` of the state dir, new processes of a running tenant charge the
    same ledger under the daemon's limits, and a restarted daemon still accounts the tenant."""
    d = Daemon(shared_root, interval=0.2).start()
    t = Tenant(d, "kept", ["--vram", "2Gi"], 512 * MIB)
    try:
        wait_for(lambda: any(g["vram_used_bytes"] == 512 * MIB for g in d.tenants()["kept"]["gpus"]),
                 what="the daemon to sample the tenant")
        shutil.rmtree(d.state)
        ledger, limits = d.state / "tenants" / "kept", d.state / "limits" / "kept"
        wait_for(lambda: ledger.is_symlink() and limits.exists(), timeout=10,
                 what="the tenant's ledger and limits file to be given back")
        log = d.log.read_text()
        assert "ledger" in log and "given back" in log, log
        # The 512 MiB the first process holds count against the 2 GiB: one ledger, not two.
        env = tenant_env(d, "kept")
        assert alloc_until_oom(env)["allocated_bytes"] == 1536 * MIB
        # The daemon's limits still decide, through the limits file it wrote again.
        r = run([GPUSLICE, "set", "kept", "--vram", "1Gi"], env=d.env)
        assert r.returncode == 0, r.stderr
        assert alloc_until_oom(env)["allocated_bytes"] == 512 * MIB
        # A daemon started again adopts the tenant from those files and accounts it.
        d.stop()
        d.start()
        kept = d.tenants()["kept"]
        assert kept["limits"]["vram_bytes"] == 1 << 30, kept
        wait_for(lambda: any(g["vram_used_bytes"] == 512 * MIB for g in d.tenants()["kept"]["gpus"]),
                 what="the restarted daemon to account the tenant")
    finally:
        t.end()
        d.stop()
    assert not ledger.exists() and not ledger.is_symlink(), "the tenant's end removes the link"


def test_what_the_daemon_would_refuse_in_html_the_cli_refuses_as_a_usage_error(daemon):
    long = "a" * 40000
    for args in (["usage", "--by", f"label:{long}"], ["usage", "--since", f"{'1' * 40000}s"],
                 ["set", long, "--vram", "1G"]):
        r = run([GPUSLICE] + args, env=daemon.env)
        assert r.returncode == 2, (args[:2], r.returncode, r.stderr[:200])
        assert len(r.stderr.splitlines()) == 1 and len(r.stderr) < 400, r.stderr[:200]


def raw_exchange(sock_path, data, timeout=10.0):
    """Send bytes as they are over the API socket and read the answer to its end."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(str(sock_path))
        s.sendall(data)
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass  # closed with some of the request unread: the answer came before
    assert answer, "no answer"
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head.decode(errors="replace"), body


def assert_api_error(answer, status):
    got, head, body = answer
    assert got == status, head
    assert "content-type: application/json" in head.lower(), head
    err = json.loads(body)
    assert list(err) == ["error"] and isinstance(err["error"], str), body[:200]
    assert "\n" not in err["error"], err


def test_a_long_uri_and_a_large_header_block_are_refused_in_the_apis_json(daemon):
    uri = "/v1/tenants/" + "a" * (20 * 1024)
    assert_api_error(raw_exchange(daemon.sock, f"GET {uri} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                                  .encode()), 414)
    query = "/v1/usage?by=tenant&since=" + "1" * (20 * 1024)
    assert_api_error(raw_exchange(daemon.sock, f"GET {query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                                  .encode()), 414)
    headers = "".join(f"X-Pad-{i}: {'b' * 1000}\r\n" for i in range(40))
    assert_api_error(raw_exchange(daemon.sock, f"GET /v1/health HTTP/1.1\r\nHost: x\r\n{headers}"
                                  "Connection: close\r\n\r\n".encode()), 431)
    one = "X-Pad: " + "c" * (40 * 1024) + "\r\n"
    assert_api_error(raw_exchange(daemon.sock, f"GET /v1/health HTTP/1.1\r\nHost: x\r\n{one}"
                                  "Connection: close\r\n\r\n".encode()), 431)
    # Under the limits, the same daemon still answers.
    assert daemon.get("/v1/health")[0] == 200
