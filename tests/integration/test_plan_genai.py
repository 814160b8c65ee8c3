"""`gpuslice plan` on the Alibaba GenAI sample in data/alibaba-genai/ (read gzip-compressed as
committed): the plan covers every pod that has both utilization and memory samples (143),
and flags as idle exactly the pods a plain-Python reading of the same CSVs finds idle in at
least 90% of their samples; its percentiles match nearest-rank percentiles computed here."""
import collections
import csv
import gzip
import io
import json
import math
import pathlib

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"
DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "alibaba-genai"
UTIL = DATA / "pod_gpu_duty_cycle_anon.csv.gz"
MEM = DATA / "pod_gpu_memory_used_bytes_anon.csv.gz"


def rows(path):
    return csv.DictReader(io.TextIOWrapper(gzip.open(path), encoding="ascii"))


@pytest.fixture(scope="module")
def expected():
    """Per pod: the utilization values of the instants that also have a memory sample."""
    util, mem = collections.defaultdict(dict), collections.defaultdict(dict)
    for r in rows(UTIL):
        u = util[r["container_ip"]]
        u[float(r["timestamp_anon"])] = max(u.get(float(r["timestamp_anon"]), 0.0), float(r["value"]))
    for r in rows(MEM):
        mem[r["container_ip"]][float(r["timestamp_anon"])] = float(r["value"])
    joined = {}
    for pod, series in util.items():
        ts = sorted(set(series) & set(mem.get(pod, {})))
        if ts:
            joined[pod] = [series[t] for t in ts]
    return joined


def nearest_rank(values, p):
    v = sorted(values)
    return v[max(math.ceil(p / 100 * len(v)), 1) - 1]


@pytest.fixture(scope="module")
def planned():
    r = run([GPUSLICE, "plan", "--metrics", UTIL, MEM, "--format", "json"])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_plan_covers_every_workload(planned, expected):
    names = [w["name"] for w in planned["workloads"]]
    assert len(expected) == 143
    assert sorted(names) == sorted(expected)
    assert planned["summary"]["workloads"] == 143
    assert planned["summary"]["workloads_dropped"] == 1  # the pod with memory samples only
    assert all(w["reason"] and w["mechanism"] for w in planned["workloads"])
    assert sum(planned["summary"]["by_mechanism"].values()) == 143


def test_idle_pods_are_flagged(planned, expected):
    idle = {pod for pod, u in expected.items() if sum(x < 1.0 for x in u) / len(u) >= 0.9}
    flagged = {w["name"] for w in planned["workloads"] if w["idle"]}
    assert flagged == idle
    assert planned["summary"]["idle"] == len(idle) > 0
    for w in planned["workloads"]:
        if w["idle"]:
            assert w["mechanism"] == "time-slice"


def test_percentiles_match_an_independent_computation(planned, expected):
    for w in planned["workloads"]:
        u = expected[w["name"]]
        assert w["samples"] == len(u)
        assert w["util_p50"] == pytest.approx(nearest_rank(u, 50))
        assert w["util_p95"] == pytest.approx(nearest_rank(u, 95))
        assert w["util_max"] == pytest.approx(max(u))
        assert w["idle_fraction"] == pytest.approx(sum(x < 1.0 for x in u) / len(u))


def test_fleet_needs_fewer_gpus_and_costs_less(planned):
    fleet, cost = planned["fleet"], planned["cost"]
    assert fleet["gpus_today"] == 143
    assert 0 < fleet["gpus_after"] < fleet["gpus_today"]
    assert cost["monthly_after"] < cost["monthly_before"]
    assert cost["monthly_before"] == pytest.approx(143 * cost["price_per_gpu_hour"]["on_demand"] * 730)
