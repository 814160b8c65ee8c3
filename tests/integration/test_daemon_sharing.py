"""The daemon's sharing setting (timeslice, mps, mig:<layout> per GPU) and MIG instances as the
daemon reports them: GET /v1/gpus, `gpuslice gpus`, /metrics (gpuslice_gpu_sharing_info, and
dcgm-exporter's per-instance framebuffer series with GPU_I_PROFILE and GPU_I_ID), `gpuslice
slurm gres`; a setting that does not fit the GPUs refused at start; a GPU whose layout is not
the one configured logged with the command that applies it."""
import json
import pathlib
import re
import subprocess
import sys
import urllib.request

import pytest

from conftest import BIN, run
from daemon_env import Daemon, wait_for
from quota_env import for_python

GPUSLICE = BIN / "gpuslice"
PROBE = pathlib.Path(__file__).with_name("mig_probe.py")
STANDIN = pathlib.Path(__file__).resolve().parents[1] / "mps" / "mps_control_standin.py"
MIB = 1 << 20
LAYOUT = "1g.10gb@0 1g.10gb@1 3g.40gb@4"


def scrape(d):
    with urllib.request.urlopen(f"http://127.0.0.1:{d.port}/metrics", timeout=10) as r:
        return r.read().decode()


def samples(text, name):
    """{frozenset of label pairs: value} for one series."""
    out = {}
    for line in text.splitlines():
        m = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if m:
            labels = re.findall(r'([A-Za-z_]+)="((?:[^"\\]|\\.)*)"', m.group(1))
            out[tuple(labels)] = float(m.group(2))
    return out


@pytest.fixture
def node(tmp_path):
    d = Daemon(tmp_path / "node", spec="h100-80gb:2,t4", interval=0.3)
    d.env["GPUSLICE_MPS_CONTROL"] = str(STANDIN)  # a GPU in mps mode runs its control daemon
    assert run([GPUSLICE, "mig", "apply", "--gpu", "1", LAYOUT], env=d.env).returncode == 0
    yield d
    d.stop()


def test_each_gpus_sharing_mode_is_reported_by_the_api_gpus_and_metrics(node):
    node.start("--sharing", "1=mig:3g.40gb@4 1g.10gb@1 1g.10gb@0; 2=timeslice")
    status, body = node.get("/v1/gpus")
    assert status == 200
    # The layout is written back in the planner's order.
    assert [g["sharing"] for g in body["gpus"]] == ["timeslice", f"mig:{LAYOUT}", "timeslice"]
    table = run([GPUSLICE, "gpus", "--socket", node.sock], env=node.env)
    head, *rows = table.stdout.splitlines()
    assert head.split()[-1] == "SHARING"
    assert rows[0].endswith("timeslice") and rows[1].endswith(f"mig:{LAYOUT}")
    info = samples(scrape(node), "gpuslice_gpu_sharing_info")
    assert {dict(k)["gpu"]: dict(k)["sharing"] for k in info} == {"0": "timeslice", "1": f"mig:{LAYOUT}",
                                                                  "2": "timeslice"}
    assert set(info.values()) == {1.0}


def test_a_mig_instances_framebuffer_is_served_with_gpu_i_profile_and_gpu_i_id(node):
    node.start()
    gpus = node.get("/v1/gpus")[1]["gpus"]
    inst = {m["profile"] + "/" + str(m["gpu_instance_id"]): m for m in gpus[1]["mig_instances"]}
    assert set(inst) == {"3g.40gb/2", "1g.10gb/7", "1g.10gb/8"}  # ids: the memory-slice tree's nodes
    big = inst["3g.40gb/2"]
    holder = subprocess.Popen([sys.executable, str(PROBE), "cuda", str(3 * 1024 * MIB)],
                              env=for_python(dict(node.env, CUDA_VISIBLE_DEVICES=big["uuid"])), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(holder.stdout.readline())["alloc_rc"] == 0

        def instance_rows():
            used = samples(scrape(node), "DCGM_FI_DEV_FB_USED")
            rows = {k: v for k, v in used.items() if "GPU_I_ID" in dict(k)}
            return rows if any(v == 3072 for v in rows.values()) else None
        rows = wait_for(instance_rows, timeout=30, what="the instance's memory in /metrics")
        by_id = {dict(k)["GPU_I_ID"]: (k, v) for k, v in rows.items()}
        labels, used = by_id["2"]
        assert used == 3072 and by_id["7"][1] == 0 and by_id["8"][1] == 0
        # dcgm-exporter's labels and order: the GPU's, the instance's after modelName, then the host.
        assert [k for k, _ in labels][:7] == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE",
                                             "GPU_I_ID"]
        assert dict(labels)["gpu"] == "1" and dict(labels)["GPU_I_PROFILE"] == "3g.40gb"
        assert dict(labels)["UUID"] == gpus[1]["uuid"]
        free = samples(scrape(node), "DCGM_FI_DEV_FB_FREE")
        free_by_id = {dict(k)["GPU_I_ID"]: v for k, v in free.items() if "GPU_I_ID" in dict(k)}
        assert free_by_id["2"] == 40448 - 3072 and free_by_id["7"] == 9984
        # The GPU's own row stays, without instance labels, for every GPU.
        assert len([k for k in samples(scrape(node), "DCGM_FI_DEV_FB_USED") if "GPU_I_ID" not in dict(k)]) == 3
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


@pytest.mark.parametrize("setting,says", [
    ("0=bogus", "--sharing '0=bogus': want [GPU=]MODE items"),
    ("2=mig:1g.10gb@0", "sharing: GPU 2 (Tesla T4) has no MIG"),
    ("0=mig:3g.40gb@2", "sharing: GPU 0: the layout does not fit a h100-80gb: 3g.40gb may not start at memory "
                        "position 2"),
    ("0=mig:1g.5gb@0", "sharing: GPU 0: GPU model 'h100-80gb' has no MIG profile '1g.5gb'"),
    ("5=mps", "sharing: GPU 5: there are 3 GPUs"),
    ("0=mps;0=timeslice", "--sharing '0=mps;0=timeslice': want [GPU=]MODE items"),  # a GPU named twice
])
def test_a_setting_that_does_not_fit_the_gpus_stops_the_start_with_one_line_exit_2(node, setting, says):
    p = run([GPUSLICE, "daemon", "--foreground", "--sharing", setting], env=node.env, timeout=60)
    assert p.returncode == 2
    assert p.stderr.startswith("gpuslice: daemon: ") and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr


def test_a_gpu_without_the_configured_layout_is_logged_with_the_command(node):
    node.start("--sharing", "0=mig:7g.80gb@0")
    wait_for(lambda: "gpuslice mig apply --gpu 0 --drain '7g.80gb@0'" in node.log.read_text(), timeout=30,
             what="the warning")
    assert "1g.10gb" not in node.log.read_text()  # GPU 1 is not configured as MIG: nothing said


def test_slurm_gres_gives_the_sharing_modes_as_features_and_mps_gres(node):
    node.start("--sharing", f"0=mps;1=mig:{LAYOUT}")
    p = run([GPUSLICE, "slurm", "gres", "--node", "n1", "--socket", node.sock], env=node.env)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = p.stdout.splitlines()
    assert "GresTypes=gpu,mps" in lines
    assert "NodeName=n1 Gres=gpu:3,mps:100 Features=gpuslice-mig,gpuslice-mps,gpuslice-timeslice" in lines
    assert "NodeName=n1 Name=mps Count=100 File=/dev/nvidia0" in lines
    assert f"# GPU 1: sharing mig:{LAYOUT}" in lines and "# GPU 2: sharing timeslice" in lines
    # Without a daemon every GPU is time-sliced, and the lines are those of before.
    node.stop()
    p = run([GPUSLICE, "slurm", "gres", "--node", "n1", "--socket", node.sock], env=node.env)
    lines = p.stdout.splitlines()
    assert "NodeName=n1 Gres=gpu:3" in lines and "GresTypes=gpu" in lines
    assert "# GPU 0: sharing timeslice (no daemon answered)" in lines
