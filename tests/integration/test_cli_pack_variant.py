"""`gpuslice pack --variant`, `--write-pods` and `--departures` on the trace shipped in data/:
a variant is written as a pod list that reads back, the same variant seed writes the same
file, the sharing-heavy variant hits its share, a variant replays, departures have their own
report, and a bad variant is one line on stderr with exit status 2."""
import csv
import io
import json
import pathlib

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"
DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "alibaba-openb"
NODES = DATA / "openb_node_list_gpu_node.csv"
PODS = DATA / "openb_pod_list_default.csv"
CHURN_KEYS = {"gpu_alloc_ratio", "mean_alloc_ratio", "frag_ratio", "failed_share", "life_known",
              "pods_placed", "pods_failed", "departures", "decisions_per_s"}


def pack(*extra):
    return run([GPUSLICE, "pack", "--nodes", NODES, "--pods", PODS, *extra])


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_gpushare_variant_is_deterministic_and_hits_its_share():
    a = pack("--variant", "gpushare80", "--variant-seed", "3", "--write-pods", "-")
    b = pack("--variant", "gpushare80", "--variant-seed", "3", "--write-pods", "-")
    c = pack("--variant", "gpushare80", "--variant-seed", "4", "--write-pods", "-")
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout and a.stdout != c.stdout
    pods, base = rows(a.stdout), rows(PODS.read_text())
    assert len(pods) == len(base)
    gpu = lambda r: int(r["num_gpu"]) * min(1000, max(1, int(r["gpu_milli"]))) if r["num_gpu"] != "0" else 0
    share = sum(gpu(r) for r in pods if r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000)
    assert abs(share / sum(gpu(r) for r in pods) - 0.80) < 0.01


def test_written_variant_replays_the_same_as_the_variant(tmp_path):
    out = tmp_path / "v.csv"
    assert pack("--variant", "multigpu30", "--write-pods", str(out)).returncode == 0
    direct = json.loads(pack("--variant", "multigpu30", "--policy", "fgd", "--format", "json").stdout)
    r = run([GPUSLICE, "pack", "--nodes", NODES, "--pods", out, "--policy", "fgd", "--format", "json"])
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)
    assert again["gpu_alloc_ratio"] == direct["gpu_alloc_ratio"]
    assert again["pods_placed"] == direct["pods_placed"]


def test_departures_have_their_own_report():
    r = pack("--policy", "fgd-mem-tie", "--departures", "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == CHURN_KEYS
    assert out["departures"] > 0 and out["life_known"] == 1.0
    assert 0.5 < out["gpu_alloc_ratio"] <= 1.0
    plain = json.loads(pack("--policy", "fgd-mem-tie", "--format", "json").stdout)
    assert out["pods_placed"] > plain["pods_placed"]  # what left made room


@pytest.mark.parametrize("args,token", [
    (["--policy", "fgd", "--variant", "gpushare70x"], "gpushare70x"),
    (["--policy", "fgd", "--variant", "gpushare101"], "gpushare101"),
    (["--policy", "fgd", "--variant", "cpu050"], "cpu050"),
    (["--policy", "fgd", "--variant", "gpushare60", "--variant-seed", "-1"], "--variant-seed"),
])
def test_bad_variant_exits_two_with_one_line(args, token):
    r = pack(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuslice: pack: ") and token in lines[0], r.stderr
    assert r.stdout == ""


def test_variant_without_pods_to_draw_from_exits_two(tmp_path):
    cpu_only = tmp_path / "cpu.csv"
    cpu_only.write_text(PODS.read_text().splitlines()[0] + "\np0,1000,1024,0,0,,LS,Running,0,10,0\n")
    r = run([GPUSLICE, "pack", "--nodes", NODES, "--pods", cpu_only, "--policy", "fgd",
             "--variant", "gpushare60"])
    assert r.returncode == 2 and "no GPU-sharing pods" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
