"""`gpuslice mig plan --gpu N --pending FILE` on the simulated GPU: the layout change that
serves the most pending requests (a file's, and Slurm's pending jobs' MIG GRES through a
stand-in squeue) serves at least as many as the layout now and never touches an instance in
use, and applying it leaves that instance's tenant running; bad requests are one line, exit 2."""
import json
import pathlib
import subprocess
import sys

import pytest

from conftest import BIN, make_sim_env, run
from quota_env import for_python

GPUSLICE = BIN / "gpuslice"
PROBE = pathlib.Path(__file__).with_name("mig_probe.py")
GIB = 1 << 30
START = "1g.10gb@0 1g.10gb@1 3g.40gb@4"


def mig(env, *args, stdin=None):
    return run([GPUSLICE, "mig", *args], env=env, input=stdin)


def layout_of(env):
    p = subprocess.run([sys.executable, str(PROBE), "state", "0"], env=for_python(env), capture_output=True,
                       text=True, timeout=60)
    st = json.loads(p.stdout)
    return " ".join(f'{i["profile"]}@{i["start"]}' for i in st["instances"]), st


@pytest.fixture
def env(tmp_path):
    e = make_sim_env(tmp_path, "h100-80gb")
    e["PATH"] = str(tmp_path / "nobin")  # no squeue unless a test puts one there
    (tmp_path / "nobin").mkdir()
    assert mig(e, "apply", "--gpu", "0", START).returncode == 0
    return e


@pytest.fixture
def in_use(env):
    """A process holding memory on the 3g.40gb@4 instance."""
    _, st = layout_of(env)
    gi = next(i["id"] for i in st["instances"] if i["start"] == 4)
    uuid = next(d["uuid"] for d in st["mig_devices"] if d["gi_id"] == gi)
    p = subprocess.Popen([sys.executable, str(PROBE), "cuda", str(GIB)], env=for_python(dict(env, CUDA_VISIBLE_DEVICES=uuid)),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert json.loads(p.stdout.readline())["alloc_rc"] == 0
    yield p
    p.stdin.close()
    p.wait(timeout=30)


def plan(env, requests, *extra):
    r = mig(env, "plan", "--gpu", "0", "--pending", "-", "--json", *extra, stdin=requests)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_pending_requests_get_the_free_space_and_the_instance_in_use_stays(env, in_use):
    out = plan(env, "# two more notebooks\n4x1g.10gb\n")
    assert out["current"] == START and out["in_use"] == ["3g.40gb@4"]
    assert out["proposed"] == "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4"
    assert (out["placed_current"], out["placed_proposed"]) == (2, 4)
    assert out["slurm_requests"] is None
    # Applying it takes nothing from the process: no --drain needed, and it keeps its memory.
    r = mig(env, "apply", "--gpu", "0", out["proposed"])
    assert r.returncode == 0, r.stderr
    assert layout_of(env)[0] == out["proposed"] and in_use.poll() is None


def test_a_request_that_wants_the_busy_instance_space_is_left_unserved(env, in_use):
    out = plan(env, "2x3g.40gb")
    # One 3g fits beside the one in use (the idle 1g go); the other would need it.
    assert out["proposed"] == "3g.40gb@0 3g.40gb@4"
    assert out["placed_proposed"] == 1 and [r["served"] for r in out["requests"]] == [True, False]
    text = mig(env, "plan", "--gpu", "0", "--pending", "-", stdin="2x3g.40gb").stdout.splitlines()
    assert text[0] == "GPU 0 (h100-80gb): 1 of 2 pending requests served (0 by the layout now)"
    assert text[1] == f"now:      {START} (in use: 3g.40gb@4)"
    assert text[-1] == "apply: gpuslice mig apply --gpu 0 '3g.40gb@0 3g.40gb@4'"


@pytest.mark.parametrize("requests", ["1x7g.80gb", "7x1g.10gb", "20G,20G,20G", "3x2g.20gb,1g.10gb", "1g.10gb"])
def test_the_proposal_serves_at_least_as_many_as_now_and_keeps_what_is_in_use(env, in_use, requests):
    out = plan(env, requests)
    assert out["placed_proposed"] >= out["placed_current"]
    assert "3g.40gb@4" in out["proposed"].split()


def test_slurms_pending_jobs_mig_gres_are_requests_too(env, tmp_path):
    squeue = tmp_path / "nobin" / "squeue"
    squeue.write_text("#!/bin/sh\nprintf 'gres/gpu:1g.10gb:2\\ngres/gpu:1\\nN/A\\ngres/gpu:2g.20gb,gres/shard:1\\n'\n")
    squeue.chmod(0o755)
    out = plan(env, "")
    assert out["slurm_requests"] == 2  # 2x1g.10gb and 1x2g.20gb; an untyped GPU or a shard is no MIG request
    assert [r["profile"] for r in out["requests"]] == ["1g.10gb", "1g.10gb", "2g.20gb"]
    assert out["placed_proposed"] == 3


@pytest.mark.parametrize("requests,says", [
    ("1x1g.5gb", "--pending item '1x1g.5gb': GPU model 'h100-80gb' has no MIG profile '1g.5gb'"),
    ("3y10G", "--pending item '3y10G': bad size '3y10G'"),
    ("90G", "--pending item '90G'"),
])
def test_bad_requests_are_one_line_and_exit_2(env, requests, says):
    r = mig(env, "plan", "--gpu", "0", "--pending", "-", stdin=requests)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
    assert layout_of(env)[0] == START


def test_pending_on_a_gpu_without_mig_is_exit_2(tmp_path):
    env = make_sim_env(tmp_path, "t4")
    r = mig(env, "plan", "--gpu", "0", "--pending", "-", stdin="1g.10gb")
    assert r.returncode == 2 and r.stderr == "gpuslice: mig: GPU 0 (Tesla T4) has no MIG\n"
