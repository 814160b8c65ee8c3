"""`gpuslice mig apply|show` on the simulated GPU: a layout made GPU and compute instances at
their placements, as NVML itself then reports them (mig_probe.py reads the simulated NVML
apart from gpuslice); the instances that stay kept, with their tenants; a GPU in use refused
without --drain; --drain cordoning the node in Slurm and Kubernetes (stand-ins for scontrol and
kubectl that record what they are told), stopping the tenant, changing the layout and
uncordoning, even after a failure; an apply failing half way rolled back; bad input one line,
exit 2, nothing changed; and a tenant's --vram inside a MIG instance."""
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from conftest import BIN, make_sim_env, run
from daemon_env import Daemon, Tenant, wait_for
from quota_env import for_python

GPUSLICE = BIN / "gpuslice"
PROBE = pathlib.Path(__file__).with_name("mig_probe.py")
MIB, GIB = 1 << 20, 1 << 30
SEED = "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6"  # 3 x 2g.20gb + 1 x 1g.10gb


def mig(env, *args, stdin=None):
    return run([GPUSLICE, "mig", *args], env=env, input=stdin)


def nvml_state(env, gpu=0):
    """What the simulated NVML says GPU gpu holds, read without gpuslice."""
    p = subprocess.run([sys.executable, str(PROBE), "state", str(gpu)], env=for_python(env), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def layout_of(env, gpu=0):
    st = nvml_state(env, gpu)
    if st["mode"]["current"] != 1:
        return "off"
    return " ".join(f'{i["profile"]}@{i["start"]}' for i in st["instances"])


def fail_in(env, nth, gpu=0):
    p = subprocess.run([sys.executable, str(PROBE), "fail", str(gpu), str(nth)], env=for_python(env),
                       capture_output=True, text=True, timeout=60)
    assert json.loads(p.stdout)["rc"] == 0


def mig_uuids(env, gpu=0):
    """Each instance's MIG device UUID, by profile@start (matched on the GPU instance id)."""
    st = nvml_state(env, gpu)
    by_id = {d["gi_id"]: d["uuid"] for d in st["mig_devices"]}
    return {f'{i["profile"]}@{i["start"]}': by_id[i["id"]] for i in st["instances"]}


@pytest.fixture
def env(tmp_path):
    return make_sim_env(tmp_path, "h100-80gb:2,t4")


@pytest.fixture
def fakebin(tmp_path):
    """scontrol and kubectl stand-ins that log their arguments; PATH holds nothing else."""
    d = tmp_path / "fakebin"
    d.mkdir()
    log = tmp_path / "tools.log"
    (d / "scontrol").write_text(f'#!/bin/sh\necho "scontrol $*" >> {log}\n'
                                'if [ "$1" = show ]; then echo "NodeName=$3 State=IDLE"; fi\n')
    (d / "kubectl").write_text(f'#!/bin/sh\necho "kubectl $*" >> {log}\n')
    for f in d.iterdir():
        f.chmod(0o755)
    return d, log


# ---- the layout ----

def test_a_layout_becomes_exactly_those_instances_at_their_placements(env):
    r = mig(env, "apply", "--gpu", "0", SEED)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"GPU 0: {SEED} (was off)\n"
    st = nvml_state(env)
    assert st["mode"] == {"rc": 0, "current": 1, "pending": 1}
    assert [(i["profile"], i["start"], i["size"]) for i in st["instances"]] == [
        ("2g.20gb", 0, 2), ("2g.20gb", 2, 2), ("2g.20gb", 4, 2), ("1g.10gb", 6, 1)]
    # Each GPU instance has one compute instance over all of it: a MIG device each.
    assert [[(c["start"], c["size"]) for c in i["cis"]] for i in st["instances"]] == [[(0, 2)]] * 3 + [[(0, 1)]]
    assert len(st["mig_devices"]) == 4
    assert layout_of(env, 1) == "off"  # the other GPU is left alone
    show = mig(env, "show")
    assert show.returncode == 0
    assert show.stdout.splitlines()[1].split(None, 4)[:3] == ["0", "NVIDIA", "H100"]
    assert show.stdout.splitlines()[1].endswith("on   " + SEED)
    js = json.loads(mig(env, "show", "--json", "--gpu", "0").stdout)["gpus"]
    assert [g["index"] for g in js] == [0]
    assert js[0]["mig"] == "on" and js[0]["layout"] == SEED
    assert [i["uuid"] for i in js[0]["instances"]] == [d["uuid"] for d in st["mig_devices"]]
    assert json.loads(mig(env, "show", "--json").stdout)["gpus"][2]["mig"] == "unsupported"


def test_applying_again_changes_only_what_differs(env):
    assert mig(env, "apply", "--gpu", "0", "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4").returncode == 0
    before = mig_uuids(env)
    r = mig(env, "apply", "--gpu", "0", "1g.10gb@0 1g.10gb@1 2g.20gb@2 3g.40gb@4")
    assert r.returncode == 0, r.stderr
    after = mig_uuids(env)
    assert list(after) == ["1g.10gb@0", "1g.10gb@1", "2g.20gb@2", "3g.40gb@4"]
    for kept in ("1g.10gb@0", "1g.10gb@1", "3g.40gb@4"):
        assert after[kept] == before[kept]  # the same instances, not made again
    assert mig(env, "apply", "--gpu", "0", "1g.10gb@0 1g.10gb@1 2g.20gb@2 3g.40gb@4").stdout.endswith("already\n")
    assert mig(env, "apply", "--gpu", "0", "off").returncode == 0
    assert nvml_state(env)["mode"]["current"] == 0


def test_the_layout_of_mig_plan_json_is_taken_from_stdin(env):
    plan = mig(env, "plan", "--model", "h100-80gb", "--demand", "3x2g.20gb,1g.10gb", "--json")
    r = mig(env, "apply", "--gpu", "0", "-", stdin=plan.stdout)
    assert r.returncode == 0, r.stderr
    assert layout_of(env) == json.loads(plan.stdout)["layout"][0]


# ---- a failure half way ----

@pytest.mark.parametrize("nth", [1, 3, 6, 8])
def test_an_apply_that_fails_half_way_leaves_the_old_layout(env, nth):
    old = "1g.10gb@0 1g.10gb@1 3g.40gb@4"
    assert mig(env, "apply", "--gpu", "0", old).returncode == 0
    fail_in(env, nth)  # the nth instance made next fails: 4 GPU instances, then 4 compute instances
    r = mig(env, "apply", "--gpu", "0", SEED)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and f"rolled back to '{old}'" in r.stderr and "Unknown Error" in r.stderr
    assert layout_of(env) == old
    assert all(len(i["cis"]) == 1 for i in nvml_state(env)["instances"])


def test_a_failed_first_apply_turns_mig_mode_off_again(env):
    fail_in(env, 2)
    r = mig(env, "apply", "--gpu", "0", SEED)
    assert r.returncode == 1 and "rolled back to 'off'" in r.stderr
    assert nvml_state(env)["mode"] == {"rc": 0, "current": 0, "pending": 0}


# ---- bad input: one line, exit 2, nothing changed ----

@pytest.mark.parametrize("gpu,layout,says", [
    ("0", "1g.5gb@0", "GPU 0: GPU model 'h100-80gb' has no MIG profile '1g.5gb'"),
    ("0", "3g.40gb@0 3g.40gb@2", "GPU 0: the layout does not fit a h100-80gb: 3g.40gb may not start at memory position 2"),
    ("0", "4g.40gb@0 3g.40gb@4 1g.10gb@6", "GPU 0: the layout does not fit a h100-80gb: 1g.10gb@6 overlaps"),
    ("0", "1g.10gb", "GPU 0: '1g.10gb': want PROFILE@START"),
    ("0", '{"layout": ["1g.10gb@0", "1g.10gb@0"]}', "the plan has 2 GPUs' layouts"),
    ("2", "1g.10gb@0", "GPU 2 (Tesla T4) has no MIG"),
    ("7", "1g.10gb@0", "--gpu 7: there are 3 GPUs"),
    ("x", "1g.10gb@0", "--gpu: 'x' is not a GPU index"),
])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(env, gpu, layout, says):
    assert mig(env, "apply", "--gpu", "0", "1g.10gb@0").returncode == 0
    before = [nvml_state(env, g) for g in (0, 1)]
    r = mig(env, "apply", "--gpu", gpu, layout)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("gpuslice: mig: ") and r.stderr.count("\n") == 1, r.stderr
    assert says in r.stderr, r.stderr
    assert r.stdout == ""
    assert [nvml_state(env, g) for g in (0, 1)] == before


# ---- in use: refused, or drained ----

@pytest.fixture
def node(tmp_path):
    d = Daemon(tmp_path / "node", spec="h100-80gb:2", interval=0.3)
    d.start()
    yield d
    d.stop()


def test_a_gpu_in_use_by_a_tenant_is_refused_without_drain(node):
    t = Tenant(node, "nb", ["--vram", "2Gi"], 1 * GIB)
    try:
        r = mig(node.env, "apply", "--gpu", "0", SEED)
        assert r.returncode == 1
        assert r.stderr == (f"gpuslice: mig: GPU 0 is in use by tenant 'nb' (pid {t.proc.pid}): "
                            "stop them, or pass --drain\n")
        assert layout_of(node.env) == "off" and t.proc.poll() is None
        # A GPU nobody uses is changed all the same.
        assert mig(node.env, "apply", "--gpu", "1", SEED).returncode == 0
    finally:
        t.proc.terminate()
        t.proc.wait(timeout=30)


def test_a_tenant_on_an_instance_that_stays_keeps_running(node):
    assert mig(node.env, "apply", "--gpu", "0", "1g.10gb@0 1g.10gb@1 3g.40gb@4").returncode == 0
    uuid = mig_uuids(node.env)["3g.40gb@4"]
    t = Tenant(node, "infer", ["--vram", "4Gi"], 1 * GIB, env=dict(node.env, CUDA_VISIBLE_DEVICES=uuid))
    try:
        r = mig(node.env, "apply", "--gpu", "0", "2g.20gb@0 3g.40gb@4")
        assert r.returncode == 0, r.stderr
        assert layout_of(node.env) == "2g.20gb@0 3g.40gb@4" and t.proc.poll() is None
        # Taking its instance away is refused.
        r = mig(node.env, "apply", "--gpu", "0", "2g.20gb@0 2g.20gb@2 2g.20gb@4 1g.10gb@6")
        assert r.returncode == 1 and "tenant 'infer'" in r.stderr
    finally:
        t.proc.terminate()
        t.proc.wait(timeout=30)


def test_drain_cordons_stops_the_tenant_changes_the_layout_and_uncordons(node, fakebin):
    bindir, log = fakebin
    t = Tenant(node, "nb", ["--vram", "2Gi"], 1 * GIB)
    env = dict(node.env, PATH=str(bindir))
    r = mig(env, "apply", "--gpu", "0", "--drain", "--grace", "20", "--node", "n1", SEED)
    assert r.returncode == 0, r.stderr + r.stdout
    t.proc.wait(timeout=30)  # the workload ends cleanly on the SIGTERM its gpuslice run passed on
    assert layout_of(node.env) == SEED
    assert f"GPU 0: tenant 'nb' (pid {t.proc.pid}): SIGTERM" in r.stdout
    calls = log.read_text().splitlines()
    assert calls == ["scontrol show node n1 -o",
                     "scontrol update NodeName=n1 State=DRAIN Reason=gpuslice mig apply",
                     "kubectl get node n1 -o jsonpath={.spec.unschedulable}",
                     "kubectl cordon n1",
                     "scontrol update NodeName=n1 State=RESUME",
                     "kubectl uncordon n1"]
    # The order on stdout: cordoned, stopped, applied, uncordoned.
    out = r.stdout
    assert out.index("drained") < out.index("SIGTERM") < out.index(f"GPU 0: {SEED}") < out.index("resumed")
    wait_for(lambda: node.tenants().get("nb", {}).get("state") != "running", what="the tenant to end")


def test_drain_kills_what_ignores_sigterm_after_the_grace(node, tmp_path):
    env = dict(node.env, PATH=str(tmp_path))  # no scontrol, no kubectl
    holder = subprocess.Popen([sys.executable, "-c", "import signal,sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                               f"sys.argv=['p','cuda',str({GIB})]; exec(open({str(PROBE)!r}).read())"],
                              env=for_python(node.env), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert json.loads(holder.stdout.readline())["alloc_rc"] == 0
    r = mig(env, "apply", "--gpu", "0", "--drain", "--grace", "1", SEED)
    assert r.returncode == 0, r.stderr
    assert holder.wait(timeout=30) == -signal.SIGKILL
    assert f"process {holder.pid}: SIGTERM" in r.stdout and f"process {holder.pid}: SIGKILL" in r.stdout
    assert "Slurm: no scontrol here, node not drained" in r.stdout
    assert "Kubernetes: no kubectl here, node not cordoned" in r.stdout
    assert layout_of(node.env) == SEED


def test_drain_runs_its_exit_step_after_a_failed_apply(node, fakebin):
    bindir, log = fakebin
    t = Tenant(node, "nb", [], 1 * GIB)
    fail_in(node.env, 3)
    r = mig(dict(node.env, PATH=str(bindir)), "apply", "--gpu", "0", "--drain", "--node", "n1", SEED)
    assert r.returncode == 1 and "rolled back to 'off'" in r.stderr
    t.proc.wait(timeout=30)
    assert layout_of(node.env) == "off"
    calls = log.read_text().splitlines()
    assert calls[-2:] == ["scontrol update NodeName=n1 State=RESUME", "kubectl uncordon n1"]


def test_a_node_drained_already_is_left_drained(node, fakebin):
    bindir, log = fakebin
    (bindir / "scontrol").write_text(f'#!/bin/sh\necho "scontrol $*" >> {log}\n'
                                     'if [ "$1" = show ]; then echo "NodeName=$3 State=IDLE+DRAIN"; fi\n')
    (bindir / "kubectl").write_text(f'#!/bin/sh\necho "kubectl $*" >> {log}\n'
                                    'if [ "$1" = get ]; then printf true; fi\n')
    r = mig(dict(node.env, PATH=str(bindir)), "apply", "--gpu", "0", "--drain", "--node", "n1", "7g.80gb@0")
    assert r.returncode == 0, r.stderr
    assert "node n1 was drained already" in r.stdout and "node n1 was cordoned already" in r.stdout
    assert log.read_text().splitlines() == ["scontrol show node n1 -o",
                                            "kubectl get node n1 -o jsonpath={.spec.unschedulable}"]


# ---- software fractions inside a MIG instance ----

def test_a_tenant_on_a_mig_instance_is_held_to_its_own_vram_within_it(env):
    assert mig(env, "apply", "--gpu", "0", "1g.10gb@0 1g.10gb@1 3g.40gb@4").returncode == 0
    uuid = mig_uuids(env)["3g.40gb@4"]
    menv = for_python(dict(env, CUDA_VISIBLE_DEVICES=uuid))
    probe = [sys.executable, str(PROBE), "tenant_view", uuid]
    # Inside the tenant: 4 GiB of the instance, in cuMemGetInfo and in NVML's view of the MIG device.
    r = run([GPUSLICE, "run", "--vram", "4Gi", "--", *probe, str(3 * GIB)], env=menv)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout.splitlines()[-1])
    assert v["devices"][0]["name"] == "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
    assert v["alloc_rc"] == 0
    assert v["cuda"] == {"total": 4 * GIB, "free": 1 * GIB}
    assert v["by_uuid_rc"] == 0 and v["nvml"]["total"] == 4 * GIB and v["nvml"]["free"] == 1 * GIB
    # Past 4 GiB: refused, though the instance has 39.5 GiB.
    r = run([GPUSLICE, "run", "--vram", "4Gi", "--", *probe, str(5 * GIB)], env=menv)
    assert json.loads(r.stdout.splitlines()[-1])["alloc_rc"] == 2  # CUDA_ERROR_OUT_OF_MEMORY
    # Without gpuslice the instance itself is the limit: 39.5 GiB.
    r = run(probe + [str(5 * GIB)], env=menv)
    v = json.loads(r.stdout.splitlines()[-1])
    assert v["alloc_rc"] == 0 and v["cuda"]["total"] == 40448 * MIB
    # A percentage is of the instance.
    r = run([GPUSLICE, "run", "--vram", "50%", "--", *probe], env=menv)
    assert json.loads(r.stdout.splitlines()[-1])["cuda"]["total"] == 40448 * MIB // 2
