"""`gpuslice demo`: three workloads with memory limits and compute shares on one (simulated) GPU,
a table of what each got."""
import os
import re

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"
WORKLOAD = BIN / "gpusim-workload"

pytestmark = pytest.mark.skipif(not WORKLOAD.exists(), reason="gpusim-workload is not built")


def demo_env():
    """No GPUSLICE_SIM: the demo must find out on its own that there is no driver."""
    return {k: v for k, v in os.environ.items() if k not in ("GPUSLICE_SIM", "GPUSIM_STATE_DIR")}


def rows(stdout, with_limit=False):
    """tenant -> (memory GiB, GPU seconds or None, share percent or None[, limit GiB])."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"(training|inference|notebook)\s.*?([\d.]+) GiB\s+([\d.]+) GiB\s+(?:-|\d+%)\s+"
                     r"(-|[\d.]+ s)\s+(-|[\d.]+%)$", line)
        if m:
            got = float(m.group(4).split()[0]) if m.group(4) != "-" else None
            share = float(m.group(5).rstrip("%")) if m.group(5) != "-" else None
            row = (float(m.group(3)), got, share)
            out[m.group(1)] = row + (float(m.group(2)),) if with_limit else row
    return out


def demo_dirs():
    return {p for p in os.listdir("/tmp") if p.startswith("gpuslice-demo-")}


@pytest.fixture(scope="module")
def demo_run():
    before = demo_dirs()
    r = run([GPUSLICE, "demo", "--seconds", "2"], env=demo_env(), timeout=300)
    r.new_dirs = demo_dirs() - before
    return r


def test_demo_exits_zero_with_a_row_per_workload(demo_run):
    assert demo_run.returncode == 0, demo_run.stdout + demo_run.stderr
    table = rows(demo_run.stdout)
    assert set(table) == {"training", "inference", "notebook"}, demo_run.stdout
    assert all(mem > 0 for mem, _, _ in table.values()), demo_run.stdout


def test_demo_training_and_inference_get_their_compute_shares(demo_run):
    """Both want the whole GPU; --compute 70 and 30 decide. The bound is loose: the demo runs
    2 s, and the accuracy tests (test_compute_share.py) hold shares to 3 points over 10 s."""
    table = rows(demo_run.stdout)
    assert abs(table["training"][2] - 70) <= 6, demo_run.stdout
    assert abs(table["inference"][2] - 30) <= 6, demo_run.stdout


def test_demo_notebook_runs_no_kernels_so_has_no_gpu_time(demo_run):
    assert rows(demo_run.stdout)["notebook"][1:] == (None, None)


def test_demo_says_it_uses_the_simulator_without_a_driver(demo_run):
    assert "simulated" in demo_run.stdout.splitlines()[0]


def test_demo_removes_its_simulator_state(demo_run):
    assert demo_run.new_dirs == set()


def test_demo_notebook_is_held_to_its_memory_limit(demo_run):
    """The notebook allocates until refused: it must end exactly at its limit, no further."""
    table = rows(demo_run.stdout, with_limit=True)
    mem, _, _, limit = table["notebook"]
    assert limit == 8 and mem == limit, demo_run.stdout
    assert "CUDA_ERROR_OUT_OF_MEMORY" in demo_run.stdout


def test_demo_every_workload_stays_within_its_limit(demo_run):
    for name, (mem, _, _, limit) in rows(demo_run.stdout, with_limit=True).items():
        assert 0 < mem <= limit, (name, demo_run.stdout)


def test_demo_explains_both_limits(demo_run):
    assert "--vram" in demo_run.stdout and "--compute" in demo_run.stdout


def test_demo_reports_a_failing_workload_in_one_line_naming_it(tmp_path):
    """A simulated T4 (15 GiB) cannot hold the training workload's 40 GiB (nor inference's 16)."""
    env = demo_env()
    env.update(GPUSLICE_SIM="t4", GPUSIM_STATE_DIR=str(tmp_path))
    r = run([GPUSLICE, "demo", "--seconds", "1"], env=env, timeout=300)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert all(l.startswith("gpuslice: demo: ") for l in lines), r.stderr
    assert any(l.startswith("gpuslice: demo: training: ") for l in lines), r.stderr
    assert "tenant" not in r.stdout  # no table from a failed run
