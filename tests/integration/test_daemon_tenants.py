"""The daemon knows the tenants on its node: three tenants started with `gpuslice run` and
different limits register with it, and GET /v1/tenants and `gpuslice ps --json` show each
with its owner, labels, limits and memory in use. The tenant leaves when its command ends;
and `gpuslice run` still works when no daemon runs."""
import json

from conftest import run
from daemon_env import GIB, GPUSLICE, MIB, Daemon, Tenant, daemon, shared_root, wait_for  # noqa: F401

SPECS = [
    ("alpha", ["--vram", "2Gi", "--label", "team=a", "--compute", "25"], 512 * MIB),
    ("beta", ["--vram", "4Gi", "--label", "team=b", "--compute-policy", "cap", "--compute", "12.5"], 1 * GIB),
    ("gamma", ["--vram", "10%", "--priority", "high"], 256 * MIB),
]
H100_TOTAL = 85520809984


def check_tenant(t, name):
    assert t["name"] == name
    assert t["uid"] == 0 and t["user"] == "root"
    assert t["state"] == "running"
    assert t["pid"] > 0
    assert t["started_at"].endswith("Z")
    [g] = t["gpus"]
    assert g["index"] == 0


def test_three_tenants_with_different_limits_are_listed(daemon):
    tenants = [Tenant(daemon, name, opts, hold) for name, opts, hold in SPECS]
    try:
        # The sampler reads usage at every interval; wait for all three holds to show.
        seen = wait_for(lambda: (lambda t: t if len(t) == 3 and all(x["gpus"][0]["vram_used_bytes"] for x in
                                                                     t.values()) else None)(daemon.tenants()),
                        what="three tenants with memory in use")
        for name, _, hold in SPECS:
            check_tenant(seen[name], name)
            assert seen[name]["gpus"][0]["vram_used_bytes"] == hold
        a, b, c = seen["alpha"], seen["beta"], seen["gamma"]
        assert a["labels"] == {"team": "a"} and b["labels"] == {"team": "b"} and c["labels"] == {}
        assert a["limits"]["vram_bytes"] == 2 * GIB and a["gpus"][0]["vram_limit_bytes"] == 2 * GIB
        assert a["limits"]["compute_pct"] == 25 and a["limits"]["compute_policy"] == "share"
        assert b["limits"]["vram_bytes"] == 4 * GIB
        assert b["limits"]["compute_pct"] == 12.5 and b["limits"]["compute_policy"] == "cap"
        assert c["limits"]["vram_bytes"] == H100_TOTAL // 10 and c["limits"]["vram_pct"] == 10
        assert c["limits"]["compute_pct"] is None and c["limits"]["priority"] == "high"
        # ps --json is the same view through the CLI.
        ps = run([GPUSLICE, "ps", "--json"], env=daemon.env)
        assert ps.returncode == 0, ps.stderr
        rows = {t["name"]: t for t in json.loads(ps.stdout)["tenants"]}
        assert sorted(rows) == ["alpha", "beta", "gamma"]
        for name in rows:
            assert rows[name]["limits"] == seen[name]["limits"]
            assert rows[name]["gpus"][0]["vram_used_bytes"] == seen[name]["gpus"][0]["vram_used_bytes"]
    finally:
        for t in tenants:
            t.end()
    wait_for(lambda: daemon.tenants() == {}, what="the tenants to leave")


def test_tenant_end_is_recorded_with_its_exit_status(daemon):
    t = Tenant(daemon, "short", ["--vram", "1Gi"], 100 * MIB)
    rc, err = t.end()
    assert rc == 0, err
    assert "short" not in daemon.tenants()
    [(ended, status)] = daemon.sql("SELECT ended_at, exit_status FROM tenants WHERE name = 'short'")
    assert ended is not None and status == 0


def test_run_works_alone_without_a_daemon(shared_root):
    d = Daemon(shared_root)  # never started: nothing listens at its socket
    r = run([GPUSLICE, "run", "--vram", "1Gi", "--", str(GPUSLICE.parent / "gpusim-workload"), "alloc-until-oom",
             "--chunk", "256Mi"], env=d.env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["allocated_bytes"] == GIB


def test_a_tenant_started_while_the_daemon_was_down_is_adopted(shared_root):
    d = Daemon(shared_root)
    t = Tenant(d, "early", ["--vram", "1Gi", "--label", "team=z"], 128 * MIB)
    try:
        d.start()
        seen = wait_for(lambda: d.tenants().get("early"), what="the daemon to adopt 'early'")
        assert seen["limits"]["vram_bytes"] == GIB and seen["labels"] == {"team": "z"}
    finally:
        t.end()
        d.stop()
