"""`gpuslice mig plan|profiles`: layouts printed as profile@start per GPU, the JSON shape,
valid layouts for demand lists that need several GPUs, and bad input (demand syntax, unknown
model, a model without MIG, a demand beyond the largest profile, a malformed table) as one
line on stderr and exit status 2."""
import json

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"


def mig(*args):
    return run([GPUSLICE, "mig", *args])


def test_plan_seed_layout_reads_profile_at_start():
    r = mig("plan", "--model", "h100-80gb", "--demand", "3x10G,1x35G")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "h100-80gb: 4 instances on 1 GPU"
    assert lines[1] == "GPU 0: 1g.10gb@0 1g.10gb@1 1g.10gb@2 3g.40gb@4"
    assert "3g.40gb@4" in lines[-1] and "demand 4 '1x35G'" in lines[-1]


def test_plan_json_documented_keys_and_valid_positions():
    r = mig("plan", "--model", "H100-80GB", "--demand", "35G,35G,35G,4x10G", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"model", "gpus", "layout", "instances"}
    assert out["model"] == "h100-80gb" and out["gpus"] == 2
    assert len(out["layout"]) == 2 and len(out["instances"]) == 7
    keys = {"gpu", "profile", "start", "mem_slices", "compute_slices", "mem_gib", "mem_estimated",
            "demand", "demand_text", "demand_bytes"}
    for gpu in range(out["gpus"]):
        used = set()
        inst = [i for i in out["instances"] if i["gpu"] == gpu]
        assert sum(i["compute_slices"] for i in inst) <= 7
        for i in inst:
            assert set(i) == keys
            span = set(range(i["start"], i["start"] + i["mem_slices"]))
            assert not used & span and max(span) <= 7
            used |= span
    assert sorted(i["demand"] for i in out["instances"]) == list(range(1, 8))


def test_plan_accepts_profile_names_and_counts():
    r = mig("plan", "--model", "a100-40gb", "--demand", "2x3g.20gb,1g.5gb", "--json")
    out = json.loads(r.stdout)
    assert out["gpus"] == 2  # two 3g.20gb fill the GPU's eight memory slices
    assert out["layout"][0] == "3g.20gb@0 3g.20gb@4"
    assert [i["demand_bytes"] for i in out["instances"]] == [None, None, None]


def test_profiles_lists_the_model_table():
    r = mig("profiles", "--model", "h200-141gb")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["PROFILE", "COMPUTE", "MEMORY", "MEM_GIB", "MAX",
                                                "STARTS", "MEDIA"]
    assert any(line.split()[:2] == ["3g.71gb", "3/7"] and "0|4" in line for line in r.stdout.splitlines())
    out = json.loads(mig("profiles", "--model", "h100-80gb", "--json").stdout)
    p = {x["profile"]: x for x in out["profiles"]}
    assert p["3g.40gb"]["starts"] == [0, 4] and p["1g.10gb+me"]["media"] is True


@pytest.mark.parametrize("args,text", [
    (["plan", "--model", "h100-80gb", "--demand", "3y10G"], "--demand item '3y10G'"),
    (["plan", "--model", "h100-80gb", "--demand", "10G,,5G"], "--demand item ''"),
    (["plan", "--model", "h100-80gb", "--demand", "0x10G"], "COUNT 1..4096"),
    (["plan", "--model", "h100-80gb", "--demand", "90G"], "more than the largest MIG profile of h100-80gb"),
    (["plan", "--model", "h100-80gb", "--demand", "2x9g.40gb"], "has no MIG profile '9g.40gb'"),
    (["plan", "--model", "v100", "--demand", "1G"], "unknown GPU model 'v100' (known: t4,"),
    (["plan", "--model", "t4", "--demand", "1G"], "GPU model 't4' has no MIG profiles"),
    (["plan", "--model", "h100-80gb"], "--demand is required"),
    (["profiles"], "--model is required"),
    (["frobnicate", "--model", "h100"], "unknown subcommand"),
    ([], "missing subcommand"),
])
def test_bad_input_is_one_line_and_exit_2(args, text):
    r = mig(*args)
    assert r.returncode == 2, r.stdout
    assert r.stdout == ""
    assert r.stderr.startswith("gpuslice: mig: ") and text in r.stderr
    assert r.stderr.count("\n") == 1


def test_own_table_and_its_line_errors(tmp_path):
    good = tmp_path / "mig.csv"
    good.write_text("gpu,profile,compute_slices,mem_slices,max_instances,placements_start,mem_gib\n"
                    "H100-80GB,half,3,4,2,0|4,39.5\n".replace("half", "3g.40gb"))
    r = mig("plan", "--model", "h100", "--demand", "3x20G", "--mig-table", good, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["gpus"] == 2
    bad = tmp_path / "bad.csv"
    bad.write_text(good.read_text() + "H100-80GB,1g.10gb,1,1,7,0|8,9.75\n")
    r = mig("profiles", "--model", "h100", "--mig-table", bad)
    assert r.returncode == 2
    assert r.stderr == f"gpuslice: mig: {bad}: line 3: placements_start '0|8' is not a list like 0|2|4\n"


def test_help_exits_0():
    r = mig("--help")
    assert r.returncode == 0 and "profile@start" in r.stdout
