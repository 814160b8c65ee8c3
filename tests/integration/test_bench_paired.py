"""gs-bench-interposer --paired, which the hot-path benchmark's same-process figures rest on:
it must find the driver's own entry points past the interposer and time them beside the
linked calls, with and without gpuslice. No timing is asserted (targets live in bench/)."""
import json

import pytest

from conftest import BIN, run
from quota_env import gpuslice_run, quota_env

BENCH = BIN / "gs-bench-interposer"
ARGS = ["--quick", "--paired", "--live", "10"]


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


def ops(r):
    assert r.returncode == 0, r.stderr
    return {x["op"]: x["samples_ns"] for x in json.loads(r.stdout)["results"]}


@pytest.mark.parametrize("tenant", [None, ["--vram", "1Gi"], ["--vram", "1Gi", "--compute", "50"]])
def test_every_linked_operation_has_a_driver_twin_sample_for_sample(tenant, env):
    r = run([BENCH] + ARGS, env=env) if tenant is None else gpuslice_run(tenant, [BENCH] + ARGS, env)
    got = ops(r)
    for op in ("launch", "alloc_free_live_10"):
        assert len(got[op]) == len(got[op + "_driver"]) > 0, sorted(got)
    assert "launch_procaddr_driver" not in got


def test_calibrate_prices_a_locked_add_and_a_tsc_read(env):
    got = ops(run([BENCH, "--ops", "calibrate", "--rounds", "3", "--launch-batch", "1000"], env=env))
    assert sorted(got) == ["locked_add", "tsc_read"]
    assert all(len(v) == 3 and all(x > 0 for x in v) for v in got.values()), got


def test_a_bad_option_is_one_line_and_exit_2(env):
    r = run([BENCH, "--paired=yes"], env=env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
