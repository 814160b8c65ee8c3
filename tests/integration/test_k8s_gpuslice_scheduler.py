"""The gpuslice scheduler (integrations/k8s/scheduler) on a real one-node cluster with two
simulated H100 80GB (cluster.sh up with GS_K8S_SIM=h100-80gb:2; the scheduler runs beside
the default one, and these pods name it with schedulerName: gpuslice-scheduler):

- per-GPU fit: with 50 GiB claimed through DRA on each GPU, a pod asking half a GPU (40 GiB
  of 80) is refused though the node has 60 GiB idle in all, and stays Pending with the
  plugin's reason; it runs once a claim ends;
- a gang of 4 with room for 3 stays wholly Pending (no member bound), and runs wholly once
  there is room;
- a pod with a malformed gang label gets a FailedScheduling event naming the label.

The GPUs are simulated (a test double); the scheduler's decisions do not depend on them."""
import json
import os
import pathlib
import time

import pytest

from daemon_env import wait_for
from test_k8s_cluster import Cluster, claim_template, hold, pod

SCHED = "gpuslice-scheduler"


@pytest.fixture(scope="module")
def k8s():
    if os.geteuid() != 0:
        pytest.skip("kubelet and containerd need root (CI runs the tests as root)")
    c = Cluster(pathlib.Path(f"/tmp/gpuslice-k8s-sched-{os.getpid()}"))
    c.env["GS_K8S_SIM"] = "h100-80gb:2"
    try:
        c.up()
        yield c
    finally:
        p = c.script("down", 300)
        assert p.returncode == 0, p.stderr


def gs_pod(name, milli, labels=None):
    """A pod for the gpuslice scheduler asking `milli` of one GPU (its annotation)."""
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {json.dumps(labels or {"app": name})}
  annotations: {{"gpuslice.io/gpu-milli": "{milli}"}}
spec:
  schedulerName: {SCHED}
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: work
    image: gpuslice/workload:test
    imagePullPolicy: Never
    command: ["sh", "-c", "sleep 3600"]
"""


def failed_scheduling(k8s, name):
    return wait_for(lambda: [m for r, m in k8s.events(name) if r == "FailedScheduling"], 60, step=0.3,
                    what=f"the scheduler's reason for {name}")


def test_per_gpu_fit_refuses_what_the_node_total_would_admit(k8s):
    k8s.apply(claim_template("t50", "50Gi"))
    k8s.apply(pod("held-a", "t50", hold("1Gi")) + "---\n" + pod("held-b", "t50", hold("1Gi")))
    try:
        k8s.wait_phase("held-a", ["Running"])
        k8s.wait_phase("held-b", ["Running"])
        # 50 GiB of 81559 MiB is 628 milli on each GPU: 372 idle on each, 744 on the node.
        k8s.apply(gs_pod("half-gpu", 500))
        reason = failed_scheduling(k8s, "half-gpu")
        assert "gpuslice: per-GPU fit: no GPU has 500 milli idle: the most is 372 (of 744 idle on the node)" \
            in reason[0], reason
        time.sleep(5)
        assert k8s.phase("half-gpu") == "Pending"
        assert not k8s.get("pod", "half-gpu")["spec"].get("nodeName")
        k8s.delete("held-b")
        k8s.wait_phase("half-gpu", ["Running"])
        annotations = k8s.get("pod", "half-gpu")["metadata"]["annotations"]
        assert annotations.get("gpuslice.io/gpus") in ("0", "1"), annotations
    finally:
        k8s.delete("held-a", "held-b", "half-gpu")


def test_a_gang_with_room_for_three_of_four_waits_wholly_then_runs_wholly(k8s):
    # 20 GiB claimed on one GPU (252 milli) leaves room for one 400-milli member there and
    # two on the other: three of the four.
    k8s.apply(claim_template("t20", "20Gi"))
    k8s.apply(pod("held-20", "t20", hold("1Gi")))
    names = [f"gang-{i}" for i in range(4)]
    try:
        k8s.wait_phase("held-20", ["Running"])
        labels = {"gpuslice.io/gang": "train", "gpuslice.io/gang-size": "4"}
        k8s.apply("---\n".join(gs_pod(n, 400, labels) for n in names))
        deadline = time.time() + 20
        while time.time() < deadline:
            bound = [n for n in names if k8s.get("pod", n)["spec"].get("nodeName")]
            assert not bound, f"members bound while the gang cannot all run: {bound}"
            time.sleep(1)
        k8s.delete("held-20")
        for n in names:
            k8s.wait_phase(n, ["Running"], timeout=120)
    finally:
        k8s.delete("held-20", *names)


def test_a_malformed_gang_label_gets_an_event_naming_it(k8s):
    k8s.apply(gs_pod("bad-gang", 100, {"gpuslice.io/gang": "x", "gpuslice.io/gang-size": "four"}))
    try:
        reason = failed_scheduling(k8s, "bad-gang")
        assert 'gpuslice: label gpuslice.io/gang-size="four": not 1 to 16' in reason[0], reason
    finally:
        k8s.delete("bad-gang")
