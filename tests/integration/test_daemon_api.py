"""The API refuses what it cannot use, always with a 4xx status and a one-line JSON error:
invalid JSON, a body that is not an object, an oversized body, bad field values, unknown
tenants and routes. And it is private: a user who is not root sees and changes only their
own tenants (someone else's answer 404, as missing ones do), while root and the admin group
see all. The access tests create Unix users and need root."""
import grp
import json
import os
import subprocess

import pytest

from conftest import run
from daemon_http import UnixConnection
from daemon_env import (GPUSLICE, MIB, PYTHON, Tenant, as_user, as_user_request, daemon, ensure_user,  # noqa: F401
                        needs_root, shared_root, user_dir, Daemon)


def assert_error(status, body, want):
    assert status == want, body
    assert isinstance(body, dict) and set(body) == {"error"} and body["error"], body
    assert "\n" not in body["error"]


@pytest.mark.parametrize("raw", [b"{", b"not json", b'{"name": "x",}', b"\xff\xfe", b'{"a": 1, "a": 2}'])
def test_invalid_json_is_a_400(daemon, raw):
    assert_error(*daemon.request("POST", "/v1/tenants", raw=raw), 400)
    assert_error(*daemon.request("PATCH", "/v1/tenants/x", raw=raw), 400)


@pytest.mark.parametrize("raw", [b"[]", b'"name"', b"42", b"null"])
def test_a_body_that_is_not_an_object_is_a_400(daemon, raw):
    assert_error(*daemon.request("POST", "/v1/tenants", raw=raw), 400)


def test_an_oversized_body_is_a_413(daemon):
    big = json.dumps({"name": "x", "labels": {"k": "v" * (65 * 1024)}}).encode()
    assert_error(*daemon.request("POST", "/v1/tenants", raw=big), 413)
    # The daemon is still there and well after it.
    assert daemon.get("/v1/health")[0] == 200


@pytest.mark.parametrize("body", [
    {},
    {"name": "../etc"},
    {"name": "ok", "pid": "x"},
    {"name": "ok", "vram_bytes": -5},
    {"name": "ok", "vram_pct": 250},
    {"name": "ok", "compute_pct": 0},
    {"name": "ok", "compute_policy": "greedy"},
    {"name": "ok", "priority": "urgent"},
    {"name": "ok", "gpu": 99},
    {"name": "ok", "labels": {"bad-key": "v"}},
    {"name": "ok", "labels": {"k": 3}},
    {"name": "ok", "state_dir": "relative"},
])
def test_bad_registration_fields_are_a_400(daemon, body):
    assert_error(*daemon.request("POST", "/v1/tenants", body=body), 400)


def test_unknown_tenants_and_routes(daemon):
    for method, body in (("GET", None), ("PATCH", {"vram": "1G"}), ("DELETE", None)):
        assert_error(*daemon.request(method, "/v1/tenants/nobody", body=body), 404)
    assert_error(*daemon.request("POST", "/v1/tenants/nobody/served", body={"requests": 1}), 404)
    # Registering a tenant that has no ledger: nothing to register.
    assert_error(*daemon.request("POST", "/v1/tenants", body={"name": "ghost"}), 404)
    assert_error(*daemon.get("/v1/nothing"), 404)
    assert_error(*daemon.request("DELETE", "/v1/gpus"), 405)
    assert_error(*daemon.get("/v1/usage?by=colour"), 400)
    assert_error(*daemon.get("/v1/usage?since=yesterday"), 400)
    r = run([GPUSLICE, "set", "nobody", "--vram", "1G"], env=daemon.env)
    assert r.returncode == 1 and r.stderr.startswith("gpuslice: set: "), r.stderr


def test_error_replies_are_one_line_whatever_the_path_held(daemon):
    """The path comes back quoted in the 404; its control characters, DEL too, do not."""
    status, body = daemon.get("/v1/line%0Abreak%7Fdel%09tab")
    assert_error(status, body, 404)
    assert "line break del tab" in body["error"], body
    assert not any(ord(c) < 0x20 or ord(c) == 0x7f for c in body["error"]), body


def raw_request(daemon, method, path):
    """(status, Allow header, parsed body) of one request with no body."""
    conn = UnixConnection(daemon.sock)
    conn.request(method, path)
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    return resp.status, resp.getheader("Allow"), json.loads(text) if text else None


@pytest.mark.parametrize("method,path,allow,message", [
    ("DELETE", "/v1/gpus", "GET", "use GET"),
    ("PUT", "/v1/tenants", "GET, POST", "use GET or POST"),
    ("POST", "/v1/tenants/anyone", "GET, PATCH, DELETE", "use GET, PATCH or DELETE"),
    ("GET", "/v1/tenants/anyone/served", "POST", "use POST"),
    ("POST", "/v1/usage", "GET", "use GET"),
])
def test_a_wrong_method_is_a_405_that_names_the_right_ones(daemon, method, path, allow, message):
    status, allow_header, body = raw_request(daemon, method, path)
    assert_error(status, body, 405)
    assert allow_header == allow and body["error"] == message, (allow_header, body)


@pytest.mark.parametrize("path", ["/v1/tenants/", "/v1/gpus/", "/health"])
def test_a_route_answers_with_or_without_a_trailing_slash(daemon, path):
    assert daemon.get(path)[0] == 200


@pytest.mark.parametrize("path", ["/v1/tenantsx", "/v1/tenants//served", "/v1/tenants/a/b", "/v2/gpus", "/"])
def test_a_path_no_route_has_is_a_404(daemon, path):
    status, allow, body = raw_request(daemon, "GET", path)
    assert_error(status, body, 404)
    assert allow is None and body["error"].startswith("no such resource: "), body


def test_bad_limit_changes_are_a_400_and_change_nothing(daemon):
    t = Tenant(daemon, "steady", ["--vram", "1Gi"], 64 * MIB)
    try:
        for body in ({"vram": "lots"}, {"vram": -1}, {"compute_pct": 101}, {"priority": 1}, {"vram": "1G", "gpu": -2}):
            assert_error(*daemon.request("PATCH", "/v1/tenants/steady", body=body), 400)
        assert daemon.tenants()["steady"]["limits"]["vram_bytes"] == 1 << 30
    finally:
        t.end()


@pytest.mark.parametrize("field", ["compute_pct", "vram_pct"])
def test_a_registration_below_a_millionth_is_a_400_naming_the_value_and_the_smallest(daemon, field):
    # Held in millionths, 0.00001% would round to 0: no limit at all.
    status, body = daemon.request("POST", "/v1/tenants", body={"name": "tiny", field: 0.00001})
    assert_error(status, body, 400)
    assert field in body["error"] and "1e-05" in body["error"] and "0.0001" in body["error"], body
    assert "tiny" not in daemon.tenants()


def test_a_compute_limit_below_a_millionth_is_a_400_and_the_limit_stays(daemon):
    t = Tenant(daemon, "tiny", ["--compute", "30"], 64 * MIB)
    try:
        status, body = daemon.request("PATCH", "/v1/tenants/tiny", body={"compute_pct": 0.00001})
        assert_error(status, body, 400)
        assert "compute_pct" in body["error"] and "1e-05" in body["error"] and "0.0001" in body["error"], body
        assert daemon.tenants()["tiny"]["limits"]["compute_pct"] == 30
    finally:
        t.end()


# ---- access: users see and change only their own tenants ----

def user_tenant(d, pw, name, root):
    state = user_dir(root / f"state-{pw.pw_name}", pw)
    sim = user_dir(root / f"sim-{pw.pw_name}", pw)
    env = dict(d.env, GPUSLICE_STATE_DIR=str(state), GPUSIM_STATE_DIR=str(sim))
    return Tenant(d, name, ["--vram", "1Gi"], 64 * MIB, env=env,
                  preexec=lambda: (os.setgroups([]), os.setgid(pw.pw_gid), os.setuid(pw.pw_uid)))


def admin_group(name, member):
    try:
        grp.getgrnam(name)
    except KeyError:
        subprocess.run(["groupadd", "--system", name], check=True, capture_output=True)
    subprocess.run(["usermod", "-a", "-G", name, member], check=True, capture_output=True)


def cli_as(pw, d, *args):
    return subprocess.run(as_user(pw) + [str(GPUSLICE)] + list(args), env=d.env, capture_output=True, text=True,
                          timeout=60)


@needs_root
def test_users_see_and_change_only_their_own_tenants(shared_root):
    alice, bob, carol = ensure_user("gs-alice"), ensure_user("gs-bob"), ensure_user("gs-carol")
    admin_group("gs-test-admins", "gs-carol")
    d = Daemon(shared_root).start("--admin-group", "gs-test-admins")
    ta, tb = user_tenant(d, alice, "alice-job", shared_root), user_tenant(d, bob, "bob-job", shared_root)
    try:
        status, body = as_user_request(d, alice, "GET", "/v1/tenants")
        assert status == 200 and [t["name"] for t in body["tenants"]] == ["alice-job"]
        assert body["tenants"][0]["user"] == "gs-alice"
        for method, req in (("GET", None), ("PATCH", {"vram": "8G"}), ("DELETE", None)):
            assert_error(*as_user_request(d, alice, method, "/v1/tenants/bob-job", req), 404)
        r = cli_as(alice, d, "set", "bob-job", "--vram", "8G")
        assert r.returncode == 1, r.stderr
        r = cli_as(alice, d, "ps", "--json")
        assert r.returncode == 0, r.stderr
        assert [t["name"] for t in json.loads(r.stdout)["tenants"]] == ["alice-job"]
        # Her own tenant she may change.
        status, body = as_user_request(d, alice, "PATCH", "/v1/tenants/alice-job", {"vram": "512Mi"})
        assert status == 200 and body["limits"]["vram_bytes"] == 512 * MIB
        # Bob's tenant is untouched; root and the admin group see both.
        assert d.tenants()["bob-job"]["limits"]["vram_bytes"] == 1 << 30
        status, body = as_user_request(d, carol, "GET", "/v1/tenants")
        assert status == 200 and sorted(t["name"] for t in body["tenants"]) == ["alice-job", "bob-job"]
        # A user cannot register a ledger that is not theirs.
        status, body = as_user_request(d, alice, "POST", "/v1/tenants",
                                       {"name": "bob-job", "state_dir": str(shared_root / "state-gs-bob")})
        assert status in (404, 409), body
    finally:
        ta.end()
        tb.end()
        d.stop()
