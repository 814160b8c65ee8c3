"""The gpuslice scheduler (integrations/k8s/scheduler) on a real one-node cluster with two
simulated H100 80GB (cluster.sh up with GS_K8S_SIM=h100-80gb:2; the scheduler runs beside
the default one, and these pods name it with schedulerName: gpuslice-scheduler):

- per-GPU fit: with 50 GiB claimed through DRA on each GPU, a pod asking half a GPU (40 GiB
  of 80) is refused though the node has 60 GiB idle in all, and stays Pending with the
  plugin's reason; it runs once a claim ends;
- a gang of 4 with room for 3 stays wholly Pending (no member bound), and runs wholly once
  there is room;
- a pod with a malformed gang label gets a FailedScheduling event naming the label;
- queues (a second gpuslice scheduler started here, profile gpuslice-queues, with queues in
  its plugin args): an in-quota pod that fits nowhere preempts exactly one over-quota pod of
  another queue, the one the core chooses, and nothing else.

The GPUs are simulated (a test double); the scheduler's decisions do not depend on them."""
import json
import os
import pathlib
import subprocess
import time

import pytest

from daemon_env import wait_for
from test_k8s_cluster import Cluster, claim_template, hold, pod, running

SCHED = "gpuslice-scheduler"


@pytest.fixture(scope="module")
def k8s():
    if os.geteuid() != 0:
        pytest.skip("kubelet and containerd need root (CI runs the tests as root)")
    c = Cluster(pathlib.Path(f"/tmp/gpuslice-k8s-sched-{os.getpid()}"))
    c.env["GS_K8S_SIM"] = "h100-80gb:2"
    c.env["GS_K8S_GPUSLICE_SCHEDULER"] = "1"  # what these tests are about (cluster.sh's default too)
    with running(c):
        yield c


def gs_pod(name, milli, labels=None, sched=SCHED):
    """A pod for the gpuslice scheduler asking `milli` of one GPU (its annotation)."""
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {json.dumps(labels or {"app": name})}
  annotations: {{"gpuslice.io/gpu-milli": "{milli}"}}
spec:
  schedulerName: {sched}
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


QUEUES_SCHED = "gpuslice-queues"
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def queues_scheduler(k8s):
    """A second gpuslice scheduler, profile gpuslice-queues: the example's configuration with
    queues a (1000 milli guaranteed), b (none, weight 1) and c (1000 milli)."""
    example = (ROOT / "integrations/k8s/examples/gpuslice-scheduler-config.yaml").read_text()
    assert "schedulerName: gpuslice-scheduler\n" in example and "tieSeed: 0\n" in example
    config = k8s.dir / "gpuslice-queues.yaml"
    config.write_text(example.replace("schedulerName: gpuslice-scheduler\n", f"schedulerName: {QUEUES_SCHED}\n")
                      .replace("tieSeed: 0\n", "tieSeed: 0\n          queues: [{name: a, guaranteedMilli: 1000},"
                               " {name: b, guaranteedMilli: 0, weight: 1}, {name: c, guaranteedMilli: 1000}]\n")
                      + f"clientConnection:\n  kubeconfig: {k8s.dir / 'kubeconfig' / 'admin'}\n")
    binary = pathlib.Path((k8s.dir / "bin").read_text().strip()) / "gpuslice-scheduler"
    log = open(k8s.dir / "gpuslice-queues.log", "w")
    p = subprocess.Popen([str(binary), "--config", str(config), "--secure-port", "0"], stdout=log, stderr=log)
    try:
        yield p
    finally:
        p.terminate()
        p.wait(30)
        log.close()


def gone(k8s, name, uid):
    """Whether the pod of this uid no longer exists (a pod of the same name may)."""
    p = k8s.kubectl("get", "pod", name, "-o", "json", check=False)
    return p.returncode != 0 and "NotFound" in p.stderr or p.returncode == 0 and json.loads(p.stdout)["metadata"]["uid"] != uid


def test_an_in_quota_pod_preempts_one_over_quota_pod_of_another_queue_and_nothing_else(k8s, queues_scheduler):
    # b1 takes a whole GPU, b2 600 milli of the other, c0 (in quota for c) the 400 left
    # there: a1 (400 milli, in quota for a) fits nowhere. The core's victims: over-quota
    # pods only (b1, b2; never c0), newest first, the fewest that make room: b2 alone.
    def q(name, milli, queue):
        return gs_pod(name, milli, {"gpuslice.io/queue": queue, "app": name}, QUEUES_SCHED)

    names = ["b1", "b2", "c0", "a1"]
    try:
        for name, milli, queue in [("b1", 1000, "b"), ("b2", 600, "b"), ("c0", 400, "c")]:
            k8s.apply(q(name, milli, queue))
            k8s.wait_phase(name, ["Running"])
        before = {n: k8s.get("pod", n) for n in ["b1", "b2", "c0"]}
        b2_gpus = before["b2"]["metadata"]["annotations"]["gpuslice.io/gpus"]
        assert before["c0"]["metadata"]["annotations"]["gpuslice.io/gpus"] == b2_gpus
        k8s.apply(q("a1", 400, "a"))
        k8s.wait_phase("a1", ["Running"], timeout=120)
        a1 = k8s.get("pod", "a1")
        assert a1["metadata"]["annotations"]["gpuslice.io/gpus"] == b2_gpus, a1["metadata"]
        # a1 may be running before the kubelet has finished b2 (its share is given back when
        # its containers end, its object goes a moment later): evicted is gone, in a while.
        try:
            wait_for(lambda: gone(k8s, "b2", before["b2"]["metadata"]["uid"]), 60, step=0.5, what="b2 evicted")
        except AssertionError as e:
            raise AssertionError(f"{e}: {k8s.describe('b2')}") from None
        for n in ["b1", "c0"]:
            now = k8s.get("pod", n)
            assert now["metadata"]["uid"] == before[n]["metadata"]["uid"], n
            assert now["status"]["phase"] == "Running" and not now["metadata"].get("deletionTimestamp"), n
        events = wait_for(lambda: [m for r, m in k8s.events("b2") if r == "Preempted"], 30, step=0.5,
                          what="the Preempted event on b2")
        assert "preempted on" in events[0] and "by default/a1, in quota for queue a" in events[0], events
        assert "default/b2 was over quota for queue b" in events[0], events
        for n in ["b1", "c0", "a1"]:
            assert not [m for r, m in k8s.events(n) if r == "Preempted"], n
    finally:
        k8s.delete(*names)
