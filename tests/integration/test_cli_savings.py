"""`gpuslice savings` and `gpuslice prices`: the seed's stacked savings reproduced exactly
($10,000 -> $6,000 -> $3,900 -> $2,400, 76%), discounts read from the price table, the table
in effect with its sources, and bad input (malformed price CSV with its line and reason,
unknown model, missing price) as one line on stderr and exit status 2."""
import json

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"
SEED = ["--monthly", "10000", "--sharing-cut", "40%", "--spot", "50%@70%", "--commit", "50%@50%"]


def gs(*args):
    return run([GPUSLICE, *args])


def test_seed_waterfall_in_order_and_exact():
    r = gs("savings", *SEED)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    assert rows[0] == ["STEP", "COVERS", "DISCOUNT", "BEFORE", "AFTER", "SAVED"]
    assert rows[1] == ["sharing", "100%", "40%", "$10,000.00", "$6,000.00", "$4,000.00"]
    assert rows[2] == ["spot", "50%", "70%", "$6,000.00", "$3,900.00", "$2,100.00"]
    assert rows[3] == ["commitment", "50%", "50%", "$3,900.00", "$2,400.00", "$1,500.00"]
    assert rows[4] == ["total", "$10,000.00", "$2,400.00", "$7,600.00", "(76%)"]


def test_seed_json():
    out = json.loads(gs("savings", *SEED, "--json").stdout)
    assert (out["monthly_before"], out["monthly_after"], out["saved"], out["saved_pct"]) == (10000, 2400, 7600, 76)
    assert [(s["step"], s["monthly_before"], s["monthly_after"]) for s in out["steps"]] == [
        ("sharing", 10000, 6000), ("spot", 6000, 3900), ("commitment", 3900, 2400)]
    assert set(out["steps"][0]) == {"step", "what", "covers", "discount", "monthly_before", "monthly_after", "saved"}
    assert out["price"] is None


def test_gpus_and_model_price_the_bill_and_discounts(tmp_path):
    prices = tmp_path / "p.csv"
    prices.write_text("gpu,od_gpu_hr,spot_gpu_hr,commit1y_gpu_hr,commit3y_gpu_hr,source,as_of\n"
                      "T4,0.50,0.15,0.30,0.20,test table,2026-10-01\n")
    out = json.loads(gs("savings", "--gpus", "10", "--model", "Tesla T4", "--prices", prices,
                        "--spot", "50%", "--commit", "50%", "--term", "3y", "--json").stdout)
    assert out["monthly_before"] == 10 * 0.5 * 730
    assert out["steps"][1]["discount"] == pytest.approx(0.7)
    assert out["steps"][2]["discount"] == pytest.approx(0.6)
    assert out["monthly_after"] == pytest.approx(3650 * (1 - 0.35 - 0.3))
    assert out["price"] == {"model": "t4", "on_demand": 0.5, "source": "test table", "as_of": "2026-10-01"}


@pytest.mark.parametrize("args,text", [
    (["--monthly", "10000", "--spot", "60%@70%", "--commit", "50%@50%"], "more than 1"),
    (["--monthly", "-5"], "--monthly '-5'"),
    (["--monthly", "10000", "--sharing-cut", "140%"], "--sharing-cut '140%'"),
    (["--monthly", "10000", "--spot", "50%@x"], "--spot '50%@x'"),
    (["--monthly", "10000", "--spot", "50%"], "--spot without @DISCOUNT needs --model"),
    (["--gpus", "2", "--model", "rtx4090"], "unknown GPU model 'rtx4090'"),
    (["--gpus", "2", "--model", "h100-94gb"], "no price for GPU model 'h100-94gb'"),
    (["--gpus", "2", "--model", "t4", "--spot", "50%"], "no spot price for GPU model 't4'"),
    ([], "give either --monthly or --gpus"),
])
def test_savings_bad_input_is_one_line_and_exit_2(args, text):
    r = gs("savings", *args)
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith("gpuslice: savings: ") and text in r.stderr
    assert r.stderr.count("\n") == 1


def test_prices_shows_the_built_in_table_with_sources():
    r = gs("prices", "--rows")
    assert r.returncode == 0, r.stderr
    assert "built-in (data/prices/gpu_prices.csv)" in r.stdout.splitlines()[0]
    t4 = next(line for line in r.stdout.splitlines() if line.startswith("t4 "))
    assert t4.split()[1] == "0.5260" and "2026-07-20" in t4
    out = json.loads(gs("prices", "--json").stdout)
    assert set(out) == {"table", "rule", "models", "rows"}
    models = {m["model"]: m for m in out["models"]}
    assert {"t4", "l4", "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb"} <= set(models)
    assert models["t4"]["spot"] is None and models["h100-80gb"]["on_demand"] == 4.29
    assert all(row["source"] and row["as_of"] for row in out["rows"])


@pytest.mark.parametrize("text,reason", [
    ("gpu,od_gpu_hr\nT4,0.5\nL4,cheap\n", "line 3: od_gpu_hr 'cheap' is not a number"),
    ("gpu,od_gpu_hr\nT4,0.5\nV100,1\n", "line 3: unknown GPU model 'V100'"),
    ("gpu,price\nT4,0.5\n", "line 1: header has no 'od_gpu_hr' column"),
    ("gpu,od_gpu_hr,as_of\nT4,0.5,last week\n", "line 2: as_of 'last week' is not a date"),
    ("", "empty table, expected a header"),
])
def test_malformed_price_csv_names_line_and_reason(tmp_path, text, reason):
    p = tmp_path / "prices.csv"
    p.write_text(text)
    for verb in (["prices"], ["savings", "--gpus", "1", "--model", "t4"]):
        r = gs(*verb, "--prices", p)
        assert r.returncode == 2
        assert r.stderr.startswith(f"gpuslice: {verb[0]}: {p}: {reason}")
        assert r.stderr.count("\n") == 1


def test_help_exits_0():
    assert gs("savings", "--help").returncode == 0
    assert gs("prices", "--help").returncode == 0
