"""Held tenants (docs/daemon.md#held-tenants): registered by an admin for processes that are not
the registrant's children (a Kubernetes pod's, through the gpuslice-k8s agent), with a ledger
the daemon makes. No owner process ends one: only a DELETE does, and it outlives the
registrant's and the daemon's restarts."""
import json
import os
import subprocess
import urllib.request

from daemon_env import (GIB, Daemon, alloc_until_oom, as_user_request, daemon, ensure_user,  # noqa: F401
                        needs_root, shared_root,
                        tenant_env, wait_for)


def held_body(claim_dir, name="k8s.default.claim-a", labels=None, **extra):
    body = {"name": name, "state_dir": str(claim_dir), "held": True, "vram_bytes": 2 * GIB,
            "labels": labels or {"namespace": "default", "pod": "p1", "container": "c"}}
    body.update(extra)
    return body


def metrics(daemon):
    return urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/metrics", timeout=10).read().decode()


def claim_env(daemon, claim_dir, name):
    return tenant_env(daemon, name, GPUSLICE_STATE_DIR=claim_dir)


def test_a_held_tenant_gets_a_ledger_made_by_the_daemon_and_its_limit_holds(daemon, shared_root):
    claim = shared_root / "claim-a"
    claim.mkdir()
    status, t = daemon.request("POST", "/v1/tenants", held_body(claim))
    assert status == 201, t
    assert (claim / "tenants" / "k8s.default.claim-a").is_file()
    assert t["labels"] == {"namespace": "default", "pod": "p1", "container": "c"}
    # A process that joins it through its environment alone (as a pod's does) is held to 2 GiB.
    out = alloc_until_oom(claim_env(daemon, claim, "k8s.default.claim-a"))
    assert out["allocated_bytes"] <= 2 * GIB and out["allocated_bytes"] > 2 * GIB - 128 * (1 << 20), out
    # The same registration again is the same tenant (the agent retries, or restarts).
    status, again = daemon.request("POST", "/v1/tenants", held_body(claim))
    assert status == 200, again


def test_a_held_tenant_outlives_samples_and_a_daemon_restart_and_ends_only_on_delete(daemon,
                                                                                      shared_root):
    claim = shared_root / "claim-b"
    claim.mkdir()
    assert daemon.request("POST", "/v1/tenants", held_body(claim, "held-b"))[0] == 201
    # Several samples go by with no process in it: a plain tenant whose owner had gone would end.
    samples = daemon.get("/v1/health")[1]["samples_total"]
    wait_for(lambda: daemon.get("/v1/health")[1]["samples_total"] >= samples + 3, what="3 samples")
    assert "held-b" in daemon.tenants()
    daemon.stop()
    daemon.start()
    tenants = daemon.tenants()
    assert "held-b" in tenants and tenants["held-b"]["limits"]["vram_bytes"] == 2 * GIB, tenants
    assert daemon.request("DELETE", "/v1/tenants/held-b?exit=0")[0] == 204
    assert "held-b" not in daemon.tenants()
    # What the daemon made goes with the tenant; its usage stays in the ledger.
    assert not (claim / "tenants" / "held-b").exists()
    assert daemon.sql("SELECT exit_status FROM tenants WHERE name = 'held-b'") == [(0,)]


def test_held_is_refused_without_a_state_dir_or_with_a_bad_value(daemon):
    status, body = daemon.request("POST", "/v1/tenants", {"name": "h", "held": True})
    assert status == 400 and "state_dir" in body["error"], body
    status, body = daemon.request("POST", "/v1/tenants", {"name": "h", "held": "yes", "state_dir": "/tmp"})
    assert status == 400 and body["error"] == "field 'held': want true or false", body
    assert "h" not in daemon.tenants()


@needs_root
def test_only_an_admin_registers_a_held_tenant(daemon, shared_root):
    pw = ensure_user("gs-held-user")
    claim = shared_root / "claim-u"
    claim.mkdir()
    os.chown(claim, pw.pw_uid, pw.pw_gid)
    status, body = as_user_request(daemon, pw, "POST", "/v1/tenants", held_body(claim, "held-u"))
    assert status == 403 and "admin" in body["error"], body
    assert not (claim / "tenants").exists()
    assert "held-u" not in daemon.tenants()


def test_a_held_tenant_is_not_ended_by_the_death_of_whoever_registered_it(shared_root):
    """The registrant here is a short-lived process (as an agent killed mid-flight would be)."""
    d = Daemon(shared_root).start()
    try:
        claim = shared_root / "claim-c"
        claim.mkdir()
        code = ("import sys, json; sys.path.insert(0, %r); from daemon_http import request; "
                "print(request(%r, 'POST', '/v1/tenants', json.loads(sys.argv[1]))[0])"
                % (os.path.dirname(__file__), str(d.sock)))
        r = subprocess.run(["python3", "-c", code, json.dumps(held_body(claim, "held-c"))],
                           capture_output=True, text=True, timeout=60)
        assert r.stdout.strip() == "201", r.stderr
        samples = d.get("/v1/health")[1]["samples_total"]
        wait_for(lambda: d.get("/v1/health")[1]["samples_total"] >= samples + 3, what="3 samples")
        assert "held-c" in d.tenants()
    finally:
        d.stop()


def test_an_admin_relabels_a_tenant_and_ps_metrics_and_the_ledger_follow(daemon, shared_root):
    """The device plugin learns a container's pod only after Allocate: it relabels the tenant."""
    claim = shared_root / "claim-l"
    claim.mkdir()
    assert daemon.request("POST", "/v1/tenants", held_body(claim, "held-l", labels={"resource": "vram"}))[0] == 201
    new = {"resource": "vram", "namespace": "ns1", "pod": "p9", "container": "c2"}
    status, t = daemon.request("PATCH", "/v1/tenants/held-l", {"labels": new})
    assert status == 200 and t["labels"] == new, t
    assert daemon.tenants()["held-l"]["labels"] == new
    rows = daemon.sql("SELECT key, value FROM tenant_labels l JOIN tenants t ON l.tenant_id = t.id "
                      "WHERE t.name = 'held-l' ORDER BY key")
    assert rows == sorted(new.items()), rows
    wait_for(lambda: 'pod="p9"' in metrics(daemon), what="the new labels in /metrics")
    status, body = daemon.request("PATCH", "/v1/tenants/held-l", {"labels": {"bad key": "x"}})
    assert status == 400 and "bad key" in body["error"], body
    assert daemon.tenants()["held-l"]["labels"] == new, "a refused PATCH changes nothing"


@needs_root
def test_only_an_admin_changes_labels_not_the_tenants_owner(daemon, shared_root):
    """Labels decide whose usage it is (`gpuslice usage --by label:team`)."""
    from test_daemon_tenant_attacks import user_tenant
    pw = ensure_user("gs-held-user")
    t, _ = user_tenant(daemon, pw, "own-l", shared_root)
    try:
        status, body = as_user_request(daemon, pw, "PATCH", "/v1/tenants/own-l", {"labels": {"team": "other"}})
        assert status == 403 and body["error"] == "field 'labels': only an admin changes a tenant's labels", body
        assert daemon.tenants()["own-l"]["labels"] == {}, "a refused PATCH changes nothing"
        status, body = daemon.request("PATCH", "/v1/tenants/own-l", {"labels": {"team": "ml"}})
        assert status == 200 and body["labels"] == {"team": "ml"}, body
    finally:
        t.end()
