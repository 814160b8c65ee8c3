"""`gpuslice usage --cost` against the real daemon: a tenant given 60% of the GPU that uses
about 40%, and a tenant that only holds a quarter of the GPU's memory. What each used is used
cost; what each held beyond that is idle cost; what neither held is the node's unallocated
cost; and the three add up to the node's capacity. Served requests give a cost per 1,000."""
import json
import subprocess

import pytest

from daemon_env import GPUSLICE, WORKLOAD, Tenant, daemon, shared_root, wait_for  # noqa: F401 (fixtures)

RATE = 3.6  # $ per GPU-hour in the test's price table: $0.001 per GPU-second
PRICES = ("provider,region,sku,gpu,gpus,od_hr,od_gpu_hr,spot_hr,spot_gpu_hr,commit1y_gpu_hr,commit3y_gpu_hr,"
          f"source,as_of\ntest,here,one,H100-80GB,1,{RATE},{RATE},,,,,a test rate,2026-01-01\n")


def usage_cost(daemon, prices):
    r = subprocess.run([str(GPUSLICE), "usage", "--by", "label:team", "--since", "1h", "--cost", "--prices",
                        str(prices), "--json"], env=daemon.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_cost_splits_into_used_idle_and_unallocated(daemon, tmp_path):
    prices = tmp_path / "prices.csv"
    prices.write_text(PRICES)
    holder = Tenant(daemon, "holder", ["--label", "team=idle", "--vram", "25%", "--compute", "20"], 1 << 30)
    busy = subprocess.run([str(GPUSLICE), "run", "--name", "server", "--label", "team=serve", "--compute", "60", "--",
                           str(WORKLOAD), "busy", "--seconds", "3", "--duty", "0.4", "--kernel-us", "1000"],
                          env=daemon.env, capture_output=True, text=True, timeout=60)
    assert busy.returncode == 0, busy.stderr
    wait_for(lambda: daemon.sql("SELECT ended_at FROM tenants WHERE name = 'server'")[0][0], what="server's end")
    status, _ = daemon.request("POST", "/v1/tenants/holder/served", body={"requests": 0})
    assert status == 204
    # The busy tenant has ended: its served requests go through the ledger directly here.
    wait_for(lambda: daemon.sql("SELECT COUNT(*) FROM intervals i JOIN tenants t ON t.id = i.tenant_id "
                                "WHERE t.name = 'holder'")[0][0] >= 4, what="the holder's intervals")
    out = usage_cost(daemon, prices)
    rows = {r["key"]: r for r in out["rows"]}
    serve, idle = rows["serve"], rows["idle"]

    # Used cost is the GPU-seconds the ledger measured, at the rate.
    assert 0.3 * serve["wall_seconds"] < serve["gpu_seconds"] < 0.5 * serve["wall_seconds"]
    assert serve["cost"]["used"] == pytest.approx(serve["gpu_seconds"] * RATE / 3600, abs=1e-6)
    # It held 60% of the GPU and used about 40%: the rest is idle cost.
    assert serve["allocated_gpu_seconds"] == pytest.approx(0.6 * serve["wall_seconds"], rel=0.02)
    assert serve["cost"]["idle"] == pytest.approx(
        (serve["allocated_gpu_seconds"] - serve["gpu_seconds"]) * RATE / 3600, abs=1e-6)
    # The holder ran no kernels: all of its cost is idle, a quarter of the GPU over its life.
    assert idle["gpu_seconds"] == 0 and idle["cost"]["used"] == 0
    assert idle["allocated_gpu_seconds"] == pytest.approx(0.25 * idle["wall_seconds"], rel=0.01)
    assert idle["cost"]["idle"] == pytest.approx(idle["allocated_gpu_seconds"] * RATE / 3600, abs=1e-6)
    # No requests reported: no cost per request.
    assert serve["cost"]["per_1k_requests"] is None

    cost = out["cost"]
    assert cost["capacity"] == pytest.approx(out["capacity_gpu_seconds"] * RATE / 3600, abs=1e-6)
    assert cost["unallocated"] > 0, out
    assert cost["used"] + cost["idle"] + cost["unallocated"] == pytest.approx(cost["capacity"], abs=1e-5)
    holder.end()


def test_cost_per_1k_requests_from_served_reports(daemon, tmp_path):
    prices = tmp_path / "prices.csv"
    prices.write_text(PRICES)
    api = subprocess.Popen([str(GPUSLICE), "run", "--name", "api", "--label", "team=api", "--compute", "50", "--",
                            str(WORKLOAD), "busy", "--seconds", "2", "--duty", "0.5", "--kernel-us", "1000"],
                           env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: "api" in daemon.tenants(), what="the tenant to register")
    for n in (600, 400):
        status, body = daemon.request("POST", "/v1/tenants/api/served", body={"requests": n})
        assert status == 204, body
    _, err = api.communicate(timeout=60)
    assert api.returncode == 0, err
    wait_for(lambda: daemon.sql("SELECT ended_at FROM tenants WHERE name = 'api'")[0][0], what="the tenant's end")
    row = {r["key"]: r for r in usage_cost(daemon, prices)["rows"]}["api"]
    assert row["served_requests"] == 1000 and row["gpu_seconds"] > 0.5
    # GPU-seconds x price / requests x 1000: here, with 1000 requests, the whole used cost.
    assert row["cost"]["per_1k_requests"] == pytest.approx(row["gpu_seconds"] * RATE / 3600, rel=1e-4)
