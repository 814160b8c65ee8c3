"""The scale replay's cluster (issue #15) on a small slice: cluster.sh up with
GS_K8S_CONTROL_ONLY=1 (etcd, kube-apiserver, kube-scheduler, the gpuslice scheduler with fgd and
kwok's controller; no kubelet, no root), the first 40 GPU nodes of the openb node list made
kwok's nodes by gpuslice-k8s-replay, and the default trace's arrivals for those 40 nodes (seed
42, inflate 1.3: 298 pods) replayed one at a time through the gpuslice scheduler:

- kwok has every node Ready (its node-initialize stage: kubeletVersion kwok-...) and keeps
  renewing their heartbeats, with the capacity the replay gave them kept;
- every bound pod reaches phase Running (kwok's pod-ready stage), and the replay's per-pod
  outcomes agree with where the pods are;
- gpu_alloc_ratio read back from the cluster is `gpuslice pack`'s on the same 40 nodes and seed;
- cluster.sh down leaves no kwok process.

Needs the components build.sh makes (kwok among them; minutes, once)."""
import csv
import datetime
import json
import os
import pathlib
import subprocess
import time

import pytest

from conftest import BIN
from test_k8s_cluster import running

REPO = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = REPO / "integrations" / "k8s" / "hack" / "cluster.sh"
DATA = REPO / "data" / "alibaba-openb"
NODES = 40
SEED = 42


class ControlPlane:
    def __init__(self, directory):
        self.dir = directory
        self.env = dict(os.environ, GS_K8S_CLUSTER=str(directory), GS_K8S_CONTROL_ONLY="1", GS_K8S_POLICY="fgd",
                        GS_K8S_TIE_SEED=str(SEED), GS_K8S_WORKLOAD=str(DATA / "openb_pod_list_default.csv"))

    def script(self, verb, timeout):
        return subprocess.run(["bash", str(CLUSTER), verb], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def up(self):
        p = self.script("up", 3600)  # a first run builds the components
        assert p.returncode == 0, f"cluster.sh up failed:\n{p.stderr}"
        last = p.stdout.strip().splitlines()[-1]
        for kv in last[len("export "):].split():
            k, v = kv.split("=", 1)
            self.env[k] = v.replace("$PATH", os.environ["PATH"])
        self.bin = pathlib.Path(self.env["PATH"].split(":")[0])

    def kubectl_json(self, *args):
        p = subprocess.run(["kubectl", *args, "-o", "json"], env=self.env, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)


@pytest.fixture(scope="module")
def cp():
    c = ControlPlane(pathlib.Path(f"/tmp/gpuslice-k8s-kwok-{os.getpid()}"))
    with running(c):
        yield c


@pytest.fixture(scope="module")
def replay(cp, tmp_path_factory):
    """The replay of the 40-node slice, and the nodes' heartbeats just after it."""
    out = tmp_path_factory.mktemp("kwok") / "outcomes.csv"
    p = subprocess.run([str(cp.bin / "gpuslice-k8s-replay"), "--data", str(DATA), "--nodes", str(NODES),
                        "--seed", str(SEED), "--create-nodes", "--scheduler-name", "gpuslice-scheduler",
                        "--policy", "fgd", "--outcomes", str(out)], env=cp.env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    beats = {n["metadata"]["name"]: heartbeat(n) for n in cp.kubectl_json("get", "nodes")["items"]}
    with open(out) as f:
        return json.loads(p.stdout), list(csv.DictReader(f)), beats


def milli(quantity):
    """A whole-number quantity as the API server writes it: 2k, 8000, ..."""
    return int(quantity[:-1]) * 1000 if quantity.endswith("k") else int(quantity)


def heartbeat(node):
    ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True", f"{node['metadata']['name']} not Ready: {node['status']}"
    return datetime.datetime.fromisoformat(ready[0]["lastHeartbeatTime"].replace("Z", "+00:00"))


def test_kwok_has_the_nodes_ready_with_their_capacity_and_renews_their_heartbeats(cp, replay):
    _, _, beats = replay
    assert len(beats) == NODES
    with open(DATA / "openb_node_list_gpu_node.csv") as f:
        rows = {r["sn"]: r for r in list(csv.DictReader(f))[:NODES]}
    for n in cp.kubectl_json("get", "nodes")["items"]:
        name = n["metadata"]["name"]
        assert n["metadata"]["annotations"].get("kwok.x-k8s.io/node") == "fake"
        assert n["status"]["nodeInfo"]["kubeletVersion"].startswith("kwok-"), n["status"]["nodeInfo"]
        assert not n["spec"].get("taints"), n["spec"]
        assert milli(n["status"]["allocatable"]["gpuslice.io/gpu-milli"]) == int(rows[name]["gpu"]) * 1000
    # kwok's node-heartbeat stage renews each node every 20 to 45 s.
    deadline = time.time() + 90
    while True:
        now = {n["metadata"]["name"]: heartbeat(n) for n in cp.kubectl_json("get", "nodes")["items"]}
        stale = [k for k in beats if now[k] <= beats[k]]
        if not stale or time.time() > deadline:
            break
        time.sleep(5)
    assert not stale, f"no heartbeat since kwok made them Ready: {stale}"


def test_the_bound_pods_are_running_where_the_outcomes_say(cp, replay):
    res, outcomes, _ = replay
    assert res["nodes"] == NODES and res["arrivals"] == len(outcomes) > 200
    assert res["pods_bound"] == sum(o["bound"] == "true" for o in outcomes) > 0
    assert res["pods_running"] == res["pods_bound"]
    pods = {p["metadata"]["name"]: p for p in cp.kubectl_json("get", "pods", "-n", "replay")["items"]}
    for o in outcomes:
        if o["bound"] == "true":
            assert pods[o["pod"]]["spec"]["nodeName"] == o["node"]
            assert pods[o["pod"]]["status"]["phase"] == "Running", pods[o["pod"]]["status"]
        else:
            assert o["pod"] not in pods  # unschedulable: deleted, as pack drops it


def test_the_replays_gpu_alloc_ratio_is_packs_on_the_same_nodes(replay, tmp_path):
    res, _, _ = replay
    with open(DATA / "openb_node_list_gpu_node.csv") as f:
        head = [next(f) for _ in range(NODES + 1)]
    (tmp_path / "nodes.csv").write_text("".join(head))
    p = subprocess.run([str(BIN / "gpuslice"), "pack", "--nodes", str(tmp_path / "nodes.csv"), "--pods",
                        str(DATA / "openb_pod_list_default.csv"), "--policy", "fgd", "--seed", str(SEED),
                        "--format", "json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    pack = json.loads(p.stdout)
    assert abs(res["gpu_alloc_ratio"] - pack["gpu_alloc_ratio"]) <= 0.005, (res, pack)
    assert res["pods_bound"] == pack["pods_placed"], (res, pack)


def test_down_leaves_no_kwok_process(cp, replay):
    pid = int((cp.dir / "pids" / "kwok").read_text().split()[0])
    assert pathlib.Path(f"/proc/{pid}").exists()
    p = cp.script("down", 300)
    assert p.returncode == 0, p.stderr
    assert not cp.dir.exists()
    assert not pathlib.Path(f"/proc/{pid}").exists()
    assert not [c for c in cmdlines() if "kwok" in c and str(cp.dir) in c]


def cmdlines():
    for q in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            yield (q / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            pass  # gone meanwhile
