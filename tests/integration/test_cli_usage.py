"""`gpuslice usage`: asks GET /v1/usage with --by and --since escaped into the query, prints a
table, the daemon's JSON, or CSV with quoted keys, and refuses bad --by/--since values before
asking."""
import csv
import io
import json

import pytest

from conftest import BIN, run
from fake_daemon import FakeDaemon

GPUSLICE = BIN / "gpuslice"
REPLY = {"since": "2025-01-01T00:00:00Z", "until": "2025-01-08T00:00:00Z", "by": "label:team",
         "rows": [{"key": "vision", "tenants": 2, "gpu_seconds": 7200.0, "vram_byte_seconds": 3.0 * (1 << 30) * 3600,
                   "vram_gib_hours": 3.0, "wall_seconds": 10800.0, "served_requests": 5},
                  {"key": "a,\"b\"", "tenants": 1, "gpu_seconds": 1.5, "vram_byte_seconds": 0.0,
                   "vram_gib_hours": 0.0, "wall_seconds": 60.0}]}
PATH = "/v1/usage?by=label%3Ateam&since=7d"


def usage(sock, *args, path=PATH):
    with FakeDaemon(sock, {("GET", path): (200, REPLY)}) as d:
        r = run([GPUSLICE, "usage", "--socket", sock, *args])
    return r, d.requests


def test_usage_query_carries_by_and_since(tmp_path):
    r, reqs = usage(tmp_path / "d.sock", "--by", "label:team")
    assert r.returncode == 0, r.stderr
    assert reqs[0][1] == PATH


def test_usage_default_is_by_tenant_over_7_days(tmp_path):
    r, reqs = usage(tmp_path / "d.sock", path="/v1/usage?by=tenant&since=7d")
    assert r.returncode == 0, r.stderr


def test_usage_table(tmp_path):
    r, _ = usage(tmp_path / "d.sock", "--by", "label:team")
    lines = r.stdout.splitlines()
    assert lines[0] == "Usage from 2025-01-01T00:00:00Z to 2025-01-08T00:00:00Z, by label:team"
    assert lines[2].split() == ["LABEL:TEAM", "TENANTS", "GPU-HOURS", "VRAM-GIB-HOURS", "WALL-HOURS"]
    assert lines[3].split() == ["vision", "2", "2", "3", "3"]


def test_usage_json_is_the_daemons_reply(tmp_path):
    r, _ = usage(tmp_path / "d.sock", "--by", "label:team", "--json")
    assert json.loads(r.stdout) == REPLY


def test_usage_csv_quotes_keys_and_round_trips(tmp_path):
    r, _ = usage(tmp_path / "d.sock", "--by", "label:team", "--csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert list(rows[0]) == ["key", "tenants", "gpu_seconds", "vram_byte_seconds", "vram_gib_hours", "wall_seconds",
                            "served_requests", "allocated_gpu_seconds"]
    assert rows[1]["key"] == 'a,"b"'
    assert float(rows[0]["gpu_seconds"]) == 7200.0 and float(rows[0]["vram_gib_hours"]) == 3.0
    assert rows[0]["served_requests"] == "5" and rows[1]["served_requests"] == "0"


@pytest.mark.parametrize("since,query", [("24h", "24h"), ("30m", "30m"), ("1.5d", "1.5d"),
                                         ("2025-01-31T00:00:00Z", "2025-01-31T00%3A00%3A00Z"),
                                         ("2025-01-31T00:00:00.5+02:00", "2025-01-31T00%3A00%3A00.5%2B02%3A00")])
def test_since_forms_accepted_and_escaped(tmp_path, since, query):
    r, reqs = usage(tmp_path / "d.sock", "--since", since, path=f"/v1/usage?by=tenant&since={query}")
    assert r.returncode == 0, r.stderr
    assert reqs[0][1].endswith(query)


@pytest.mark.parametrize("args", [["--since", "7"], ["--since", "d7"], ["--since", "2025-13-01"],
                                  ["--by", "label:"], ["--by", "group"], ["--json", "--csv"]])
def test_bad_usage_options_exit_2_before_asking(tmp_path, args):
    r, reqs = usage(tmp_path / "d.sock", *args)
    assert r.returncode == 2 and r.stderr.startswith("gpuslice: usage: ")
    assert reqs == []


# --cost against a made-up rate of $3.60 per GPU-hour, i.e. $0.001 per GPU-second.
PRICES = ("provider,region,sku,gpu,gpus,od_hr,od_gpu_hr,spot_hr,spot_gpu_hr,commit1y_gpu_hr,commit3y_gpu_hr,"
          "source,as_of\ntest,here,one,H100-80GB,1,3.6,3.6,,,,,a test rate,2026-01-01\n")
COST_REPLY = dict(REPLY, capacity_gpu_seconds=20000.0,
                  rows=[dict(REPLY["rows"][0], allocated_gpu_seconds=10800.0), REPLY["rows"][1]])


def usage_cost(tmp_path, *args, reply=COST_REPLY):
    prices = tmp_path / "prices.csv"
    prices.write_text(PRICES)
    sock = tmp_path / f"d{len(list(tmp_path.glob('d*.sock')))}.sock"
    with FakeDaemon(sock, {("GET", PATH): (200, reply)}):
        return run([GPUSLICE, "usage", "--socket", sock, "--by", "label:team", "--cost", "--prices", prices,
                    "--gpu-model", "h100-80gb", *args])


def test_usage_cost_attributes_used_idle_and_unallocated(tmp_path):
    r = usage_cost(tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    vision, other = out["rows"]
    # vision used 7200 GPU-seconds of the 10800 it held; 5 requests served.
    assert vision["cost"] == {"used": 7.2, "idle": 3.6, "total": 10.8, "per_1k_requests": 1440.0}
    # No allocation given: it held what it used. No requests: no cost per request.
    assert other["cost"] == {"used": 0.0015, "idle": 0.0, "total": 0.0015, "per_1k_requests": None}
    assert out["cost"] == {"model": "h100-80gb", "price_per_gpu_hour": 3.6, "capacity": 20.0, "used": 7.2015,
                           "idle": 3.6, "unallocated": 9.1985}


def test_usage_cost_table_and_csv(tmp_path):
    r = usage_cost(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Node: capacity $20.0000 = used $7.2015 + idle (held, unused) $3.6000 + unallocated $9.1985" in r.stdout
    r = usage_cost(tmp_path, "--csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert float(rows[0]["idle_cost"]) == 3.6 and float(rows[0]["cost_per_1k_requests"]) == 1440.0
    assert rows[1]["cost_per_1k_requests"] == ""


def test_usage_cost_without_the_node_view_has_no_unallocated(tmp_path):
    r = usage_cost(tmp_path, "--json", reply=dict(COST_REPLY, capacity_gpu_seconds=None))
    assert r.returncode == 0, r.stderr
    cost = json.loads(r.stdout)["cost"]
    assert cost["capacity"] is None and cost["unallocated"] is None and cost["idle"] == 3.6


def test_usage_cost_bad_model_and_options(tmp_path):
    r = usage_cost(tmp_path, "--gpu-model", "voodoo-5")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "voodoo-5" in r.stderr, r.stderr
    r = run([GPUSLICE, "usage", "--socket", tmp_path / "none.sock", "--prices", "x.csv"])
    assert r.returncode == 2 and "--cost" in r.stderr, r.stderr
