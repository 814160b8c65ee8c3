"""`gpuslice pack`: replays the openb trace shipped in data/, prints the documented JSON
keys, and turns bad input (malformed CSV, unknown policy, bad --inflate) into one line on
stderr and exit status 2."""
import json
import pathlib

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"
DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "alibaba-openb"
NODES = DATA / "openb_node_list_gpu_node.csv"
PODS = DATA / "openb_pod_list_default.csv"
KEYS = {"gpu_alloc_ratio", "frag_ratio", "pods_placed", "pods_failed", "decisions_per_s"}


def pack(*extra, nodes=NODES, pods=PODS):
    return run([GPUSLICE, "pack", "--nodes", nodes, "--pods", pods, *extra])


@pytest.mark.parametrize("policy", ["first-fit", "best-fit", "gpu-packing", "fgd"])
def test_pack_json_has_exactly_the_documented_keys(policy):
    r = pack("--policy", policy, "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == KEYS
    assert 0.85 < out["gpu_alloc_ratio"] <= 1.0
    assert 0 <= out["frag_ratio"] <= 1.0
    assert out["pods_placed"] > 8000 and out["pods_failed"] > 0
    assert out["decisions_per_s"] > 0


def test_fgd_allocates_more_than_best_fit_on_default_trace():
    fgd = json.loads(pack("--policy", "fgd", "--format", "json").stdout)
    bf = json.loads(pack("--policy", "best-fit", "--format", "json").stdout)
    assert fgd["gpu_alloc_ratio"] > bf["gpu_alloc_ratio"] + 0.01


def test_same_seed_same_result_and_table_format():
    a = pack("--policy", "best-fit", "--seed", "7")
    b = pack("--policy", "best-fit", "--seed", "7")
    assert a.returncode == 0 and "gpu_alloc_ratio" in a.stdout
    assert a.stdout.splitlines()[:5] == b.stdout.splitlines()[:5]


def bad_csv(tmp_path, text):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    return p


@pytest.mark.parametrize("kind,text,token", [
    ("nodes", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,x,T4\n", "line 2: gpu 'x'"),
    ("nodes", "wrong header\n", "line 1: header"),
    ("pods", PODS.read_text().splitlines()[0] + "\np0,1,1,1,500\n", "line 2: 5 fields, expected 11"),
])
def test_malformed_csv_names_file_line_and_reason(tmp_path, kind, text, token):
    p = bad_csv(tmp_path, text)
    r = pack("--policy", "fgd", **{kind: p})
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuslice: pack: "), r.stderr
    assert str(p) in lines[0] and token in lines[0]
    assert r.stdout == ""


@pytest.mark.parametrize("args,token", [
    (["--policy", "random"], "random"),
    (["--policy", "fgd", "--inflate", "0"], "--inflate"),
    (["--policy", "fgd", "--inflate", "-1"], "--inflate"),
    (["--policy", "fgd", "--inflate", "lots"], "lots"),
    (["--policy", "fgd", "--seed", "x"], "--seed"),
    (["--policy", "fgd", "--format", "xml"], "xml"),
    (["--policy", "fgd", "extra"], "extra"),
    ([], "--policy"),
    (["--policy", "fgd", "--bogus"], "--bogus"),
])
def test_bad_options_exit_two_with_one_line(args, token):
    r = pack(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuslice: pack: ") and token in lines[0], r.stderr


def test_missing_file_is_reported():
    r = pack("--policy", "fgd", nodes="/nonexistent/nodes.csv")
    assert r.returncode == 2 and "/nonexistent/nodes.csv" in r.stderr


def test_help_lists_policies():
    r = run([GPUSLICE, "pack", "--help"])
    assert r.returncode == 0 and "gpu-packing" in r.stdout and r.stdout.startswith("Usage: gpuslice pack")
