"""`gpuslice plan` on each input format (plain CSV, dcgm-exporter text, Prometheus range-query
JSON, gzip), told apart by content; its JSON keys, documented in docs/planner.md; and bad
input: malformed CSV lines (file, line and reason), an unknown GPU model, no price for the
model, empty input, bad options."""
import gzip
import json

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"
GIB = 1 << 30

TOP_KEYS = {"gpu_model", "headroom", "inputs", "summary", "workloads", "fleet", "cost"}
WORKLOAD_KEYS = {"name", "samples", "util_p50", "util_p95", "util_max", "mem_p50_bytes",
                 "mem_p95_bytes", "mem_max_bytes", "idle_fraction", "idle", "mechanism",
                 "mig_profile", "mps_group", "vram_bytes", "compute_pct", "share_milli", "reason"}
SUMMARY_KEYS = {"workloads", "idle", "by_mechanism", "samples_unjoined", "workloads_dropped"}
FLEET_KEYS = {"gpus_today", "gpus_after", "gpus_dedicated", "gpus_mig", "gpus_shared", "mig_layout"}
COST_KEYS = {"price_per_gpu_hour", "price_table", "price_source", "price_as_of", "hours_per_month",
             "monthly_before", "monthly_after", "saving_fraction", "spot_fraction",
             "commit_fraction", "steps"}
MECHANISMS = {"dedicated", "mig", "mps", "time-slice", "fraction"}


def plan(*args):
    return run([GPUSLICE, "plan", *args])


def plan_json(*args):
    r = plan(*args, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def csv_rows(name, utils, mem, labels=""):
    return "".join(f"{1700000000 + 60 * i},{name},{u},{mem}{labels}\n" for i, u in enumerate(utils))


@pytest.fixture
def mixed_csv(tmp_path):
    """A busy workload, a steady small one, and an idle one, with labels."""
    p = tmp_path / "metrics.csv"
    p.write_text("timestamp,workload,gpu_util_pct,fb_used_bytes\n"
                 + csv_rows("trainer", [90] * 20, 60 * GIB, ",team=ml")
                 + csv_rows("infer", [10] * 20, 6 * GIB, ",team=web")
                 + "# a comment, then a blank line\n\n"
                 + csv_rows("idle-notebook", [0] * 19 + [3], 20 * GIB))
    return p


def test_csv_input_gives_a_plan_per_workload(mixed_csv):
    out = plan_json("--metrics", mixed_csv, "--gpu-model", "h100-80gb")
    by = {w["name"]: w for w in out["workloads"]}
    assert set(by) == {"trainer", "infer", "idle-notebook"}
    assert by["trainer"]["mechanism"] == "dedicated" and "p50 utilization 90.0%" in by["trainer"]["reason"]
    assert by["infer"]["mechanism"] == "mig" and by["infer"]["mig_profile"] == "1g.10gb"
    assert by["idle-notebook"]["mechanism"] == "time-slice" and by["idle-notebook"]["idle"]
    assert by["infer"]["samples"] == 20 and by["infer"]["util_p95"] == 10
    assert out["inputs"] == [{"path": str(mixed_csv), "format": "csv"}]
    assert out["fleet"]["gpus_today"] == 3 and out["fleet"]["gpus_after"] == 3
    assert out["summary"]["idle"] == 1


def test_json_keys_are_the_documented_ones(mixed_csv):
    out = plan_json("--metrics", mixed_csv)
    assert set(out) == TOP_KEYS
    assert set(out["summary"]) == SUMMARY_KEYS
    assert set(out["summary"]["by_mechanism"]) == MECHANISMS
    assert all(set(w) == WORKLOAD_KEYS for w in out["workloads"])
    assert all(w["mechanism"] in MECHANISMS and w["reason"] for w in out["workloads"])
    assert set(out["fleet"]) == FLEET_KEYS
    assert set(out["cost"]) == COST_KEYS
    assert set(out["cost"]["price_per_gpu_hour"]) == {"on_demand", "spot", "commit_1y"}
    assert [set(s) for s in out["cost"]["steps"]] == [{"what", "monthly_before", "monthly_after"}] * 3
    assert out["gpu_model"] == "h100-80gb" and out["headroom"] == 0.12


def test_table_is_the_default_format(mixed_csv):
    r = plan("--metrics", mixed_csv)
    assert r.returncode == 0, r.stderr
    assert "WORKLOAD" in r.stdout and "GPUs today 3, after 3" in r.stdout
    assert "Monthly cost" in r.stdout


def test_gzip_input_reads_like_plain(tmp_path, mixed_csv):
    gz = tmp_path / "metrics.csv.gz"
    gz.write_bytes(gzip.compress(mixed_csv.read_bytes()))
    assert plan_json("--metrics", gz)["workloads"] == plan_json("--metrics", mixed_csv)["workloads"]


def dcgm_scrape(util, fb_mib):
    """One dcgm-exporter scrape: two GPUs of one host, one with a pod attached."""
    return (
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-aaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node1",container="vllm",namespace="serving",pod="vllm-0"}} {util}\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="GPU-bbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node1",container="",namespace="",pod=""}} 0\n'
        "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
        "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
        f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-aaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node1",container="vllm",namespace="serving",pod="vllm-0"}} {fb_mib}\n'
        'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node1",container="",namespace="",pod=""} 0\n'
        "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n"
        "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
        'DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-aaa"} 1980\n')


def test_dcgm_exporter_scrapes_become_series(tmp_path):
    # Named .csv on purpose: the format is told by content, not by extension.
    p = tmp_path / "scrapes.csv"
    p.write_text("".join(dcgm_scrape(u, 8192) for u in [40, 45, 50, 42, 48, 44]))
    out = plan_json("--metrics", p)
    assert out["inputs"][0]["format"] == "prometheus"
    by = {w["name"]: w for w in out["workloads"]}
    assert set(by) == {"serving/vllm-0/vllm", "node1/GPU-bbb"}
    pod = by["serving/vllm-0/vllm"]
    assert pod["samples"] == 6 and pod["util_max"] == 50 and pod["util_p50"] == 44
    assert pod["mem_p95_bytes"] == 8192 * 1024 * 1024
    assert by["node1/GPU-bbb"]["idle"]
    assert out["gpu_model"] == "h100-80gb"  # from the modelName label
    assert out["fleet"]["gpus_today"] == 2


def test_exposition_sample_timestamps_are_used(tmp_path):
    p = tmp_path / "m.prom"
    lines = []
    for i, u in enumerate([10, 20, 30]):
        t = 1700000000000 + 60000 * i
        lines.append(f'DCGM_FI_DEV_GPU_UTIL{{UUID="GPU-x",pod="p"}} {u} {t}')
        lines.append(f'DCGM_FI_DEV_FB_USED{{UUID="GPU-x",pod="p"}} 1024 {t}')
    p.write_text("\n".join(lines) + "\n")
    out = plan_json("--metrics", p)
    assert [w["samples"] for w in out["workloads"]] == [3]


def prom_matrix(metric, series):
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": metric, **labels}, "values": [[1700000000 + 60 * i, str(v)] for i, v in enumerate(vals)]}
        for labels, vals in series]}}


def test_prometheus_range_query_json(tmp_path):
    util = tmp_path / "util.json"
    mem = tmp_path / "mem.txt"  # extension says nothing
    labels = {"namespace": "team-a", "pod": "train-0", "UUID": "GPU-1"}
    util.write_text(json.dumps(prom_matrix("DCGM_FI_DEV_GPU_UTIL", [(labels, [95, 96, 97, 98])])))
    mem.write_text(json.dumps(prom_matrix("DCGM_FI_DEV_FB_USED", [(labels, [70000] * 4)])))
    out = plan_json("--metrics", util, mem)
    assert [i["format"] for i in out["inputs"]] == ["prometheus-json"] * 2
    (w,) = out["workloads"]
    assert w["name"] == "team-a/train-0" and w["samples"] == 4 and w["mechanism"] == "dedicated"


def test_mps_for_a_users_small_services(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("".join(csv_rows(f"svc{i}", [12] * 10, 3 * GIB, ",user=alice") for i in range(4)))
    out = plan_json("--metrics", p)
    assert {w["mechanism"] for w in out["workloads"]} == {"mps"}
    assert out["fleet"]["gpus_after"] == 1


@pytest.mark.parametrize("line,reason", [
    ("1700000000,w,50", "3 fields, want timestamp,workload,gpu_util_pct,fb_used_bytes"),
    ("1700000000,w,abc,100", "gpu_util_pct 'abc': want a number 0..100"),
    ("1700000000,w,150,100", "gpu_util_pct '150': want a number 0..100"),
    ("yesterday,w,50,100", "timestamp 'yesterday'"),
    ("1700000000,,50,100", "empty workload name"),
    ("1700000000,w,50,-1", "fb_used_bytes '-1'"),
    ("1700000000,w,50,100,team", "field 5 'team': want label=value"),
])
def test_malformed_csv_line_names_file_line_and_reason(tmp_path, line, reason):
    p = tmp_path / "bad.csv"
    p.write_text("timestamp,workload,gpu_util_pct,fb_used_bytes\n1700000000,ok,1,1\n" + line + "\n")
    r = plan("--metrics", p)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpuslice: plan: {p}:3: "), r.stderr
    assert reason in lines[0]


def test_unknown_gpu_model_is_a_usage_error(mixed_csv):
    r = plan("--metrics", mixed_csv, "--gpu-model", "voodoo5")
    assert r.returncode == 2
    assert r.stderr.startswith("gpuslice: plan: ") and "voodoo5" in r.stderr and "h100-80gb" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_missing_price_for_the_model_is_an_error(tmp_path, mixed_csv):
    prices = tmp_path / "prices.csv"
    prices.write_text("gpu,od_gpu_hr\nA100-80GB,3.0\n")
    r = plan("--metrics", mixed_csv, "--gpu-model", "h100-80gb", "--prices", prices)
    assert r.returncode == 1 and r.stdout == ""
    assert "no price for" in r.stderr and "'h100-80gb'" in r.stderr and str(prices) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    ok = plan_json("--metrics", mixed_csv, "--gpu-model", "a100-80gb", "--prices", prices)
    assert ok["cost"]["price_per_gpu_hour"]["on_demand"] == 3.0
    assert ok["cost"]["monthly_before"] == pytest.approx(3 * 3.0 * 730)


@pytest.mark.parametrize("text,token", [
    ("timestamp,workload,gpu_util_pct,fb_used_bytes\n", "no samples"),
    ("value,timestamp_anon,container_ip\n0.0,1662858720.0,abc\n", "both"),
])
def test_empty_input_is_a_clear_failure_not_an_empty_plan(tmp_path, text, token):
    p = tmp_path / "empty.csv"
    p.write_text(text)
    r = plan("--metrics", p, "--format", "json")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("gpuslice: plan: ") and token in r.stderr


def test_empty_file_and_unknown_format(tmp_path):
    empty = tmp_path / "zero.csv"
    empty.write_text("")
    r = plan("--metrics", empty)
    assert r.returncode == 2 and "empty file" in r.stderr
    junk = tmp_path / "junk.txt"
    junk.write_text("hello world\n")
    r = plan("--metrics", junk)
    assert r.returncode == 2 and "not a format gpuslice plan reads" in r.stderr


@pytest.mark.parametrize("args,token", [
    ([], "--metrics is required"),
    (["--metrics", "x.csv", "--format", "xml"], "xml"),
    (["--metrics", "x.csv", "--headroom", "lots"], "--headroom"),
    (["--metrics", "x.csv", "--headroom", "150%"], "--headroom"),
    (["--bogus"], "--bogus"),
])
def test_bad_options_exit_two_with_one_line(args, token):
    r = plan(*args)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and token in r.stderr


def test_missing_file_is_a_usage_error(tmp_path):
    r = plan("--metrics", tmp_path / "nope.csv")
    assert r.returncode == 2 and "nope.csv" in r.stderr


def test_help_and_headroom(mixed_csv):
    r = plan("--help")
    assert r.returncode == 0 and "--metrics" in r.stdout and "--headroom" in r.stdout
    out = plan_json("--metrics", mixed_csv, "--headroom", "15%")
    infer = next(w for w in out["workloads"] if w["name"] == "infer")
    assert out["headroom"] == 0.15 and infer["vram_bytes"] == int(6 * GIB * 1.15 + 0.999)
