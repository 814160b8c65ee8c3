"""The Kubernetes integration (issue #13) on a real one-node cluster: the module's fixture
starts it with integrations/k8s/hack/cluster.sh up (etcd, kube-apiserver, controller-manager,
scheduler, containerd and kubelet built from source by build.sh, gpuslice's daemon on one
simulated H100 and the agent gpuslice-k8s with its DRA driver gpu.gpuslice.io) and stops it
with cluster.sh down. Pods run this build's gpusim-workload, mounted at its host path, on the
simulated driver the agent's CDI spec mounts where NVIDIA's container toolkit would mount the
real one. Needs root (kubelet, containerd) and the components build.sh makes (minutes, once)."""
import contextlib
import json
import os
import pathlib
import subprocess
import time
import urllib.request

import pytest

from conftest import BIN, BUILD
from daemon_env import wait_for

REPO = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = REPO / "integrations" / "k8s" / "hack" / "cluster.sh"
WORKLOAD = BIN / "gpusim-workload"
GPUSLICE = BIN / "gpuslice"
GIB = 1 << 30
ALLOC_PATHS = ["plain", "pitch", "managed", "async", "pool", "vmm", "array"]


class Cluster:
    def __init__(self, directory):
        self.dir = directory
        self.env = dict(os.environ, GS_K8S_CLUSTER=str(directory), GS_BUILD=str(BUILD))
        self.sock = directory / "gpuslice" / "state" / "gpuslice.sock"

    def script(self, verb, timeout):
        return subprocess.run(["bash", str(CLUSTER), verb], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def up(self):
        p = self.script("up", 3600)  # a first run builds the components (half an hour on 2 cores)
        assert p.returncode == 0, f"cluster.sh up failed:\n{p.stderr}"
        last = p.stdout.strip().splitlines()[-1]
        assert last.startswith("export KUBECONFIG="), p.stdout
        for kv in last[len("export "):].split():
            k, v = kv.split("=", 1)
            self.env[k] = v.replace("$PATH", os.environ["PATH"])

    def kubectl(self, *args, check=True, stdin=None, timeout=120):
        p = subprocess.run(["kubectl"] + [str(a) for a in args], env=self.env, capture_output=True, text=True,
                           input=stdin, timeout=timeout)
        if check:
            assert p.returncode == 0, f"kubectl {' '.join(map(str, args))}: {p.stderr}"
        return p

    def apply(self, manifest):
        return self.kubectl("apply", "-f", "-", stdin=manifest)

    def get(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def phase(self, pod):
        return self.get("pod", pod)["status"].get("phase")

    def wait_phase(self, pod, phases, timeout=90):
        try:
            return wait_for(lambda: self.phase(pod) in phases and self.phase(pod), timeout,
                            step=0.3, what=f"pod {pod} in {phases}")
        except AssertionError as e:
            raise AssertionError(f"{e}: {self.describe(pod)}") from None

    def describe(self, pod):
        """The pod's events and the end of its log, for a failure's message."""
        p = self.kubectl("describe", "pod", pod, check=False)
        events = p.stdout[p.stdout.find("Events:"):] if "Events:" in p.stdout else p.stderr
        log = self.kubectl("logs", "--tail", "20", pod, check=False)
        return f"{events}\nlog:\n{log.stdout}{log.stderr}"

    def events(self, pod):
        ev = self.get("events", "--field-selector", f"involvedObject.name={pod}")["items"]
        return [(e["reason"], e["message"]) for e in ev]

    def logs(self, pod):
        return [json.loads(x) for x in self.kubectl("logs", pod).stdout.splitlines() if x.startswith("{")]

    def delete(self, *pods):
        self.kubectl("delete", "pod", "--wait", "--timeout=90s", "--ignore-not-found", *pods)

    def ps(self):
        p = subprocess.run([str(GPUSLICE), "ps", "--json"], env=dict(os.environ, GPUSLICE_SOCKET=str(self.sock)),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return {t["name"]: t for t in json.loads(p.stdout)["tenants"]}

    def metrics(self):
        port = (self.dir / "gpuslice" / "metrics-port").read_text().strip()
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()

    def ledger(self, query):
        p = subprocess.run(["sqlite3", str(self.dir / "gpuslice" / "ledger.db"), query], capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout


@contextlib.contextmanager
def running(c):
    """The cluster (or control plane) c up for the block, and down after it whatever happened,
    cluster.sh down succeeding."""
    try:
        c.up()
        yield c
    finally:
        p = c.script("down", 300)
        assert p.returncode == 0, p.stderr


@pytest.fixture(scope="module")
def k8s():
    if os.geteuid() != 0:
        pytest.skip("kubelet and containerd need root (CI runs the tests as root)")
    c = Cluster(pathlib.Path(f"/tmp/gpuslice-k8s-test-{os.getpid()}"))
    # Nothing here uses gpuslice's own scheduler (test_k8s_gpuslice_scheduler.py does): left
    # out, it takes none of the two cores the compute-share test measures on.
    c.env["GS_K8S_GPUSLICE_SCHEDULER"] = "0"
    with running(c):
        yield c
    assert not c.dir.exists(), "cluster.sh down left its directory"


def claim_template(name, memory=None, compute=None, params=None):
    caps = "".join(f"\n              {k}: \"{v}\"" for k, v in (("memory", memory), ("compute", compute)) if v is not None)
    capacity = f"\n          capacity:\n            requests:{caps}" if caps else ""
    config = ""
    if params is not None:
        config = f"""
      config:
      - requests: ["gpu"]
        opaque:
          driver: gpu.gpuslice.io
          parameters: {json.dumps(params)}"""
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: {name}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.gpuslice.io{capacity}{config}
"""


def pod(name, template, command, labels=None, restart="Never"):
    lab = json.dumps(labels or {"app": name})
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {lab}
spec:
  restartPolicy: {restart}
  terminationGracePeriodSeconds: 2
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: {template}
  containers:
  - name: work
    image: gpuslice/workload:test
    imagePullPolicy: Never
    command: {json.dumps(["sh", "-c", command])}
    resources:
      claims:
      - name: gpu
"""


def hold(nbytes):
    """A pod command that holds nbytes of GPU memory until the pod is deleted."""
    return f"exec {WORKLOAD} hold --bytes {nbytes} </dev/zero"


def test_the_node_is_ready_and_its_slice_offers_one_gpu_to_share(k8s):
    node = k8s.get("node", "gpuslice-node")
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])
    slices = k8s.get("resourceslices")["items"]
    assert len(slices) == 1, slices
    spec = slices[0]["spec"]
    assert spec["driver"] == "gpu.gpuslice.io" and spec["nodeName"] == "gpuslice-node"
    [dev] = spec["devices"]
    assert dev["name"] == "gpu-0" and dev["allowMultipleAllocations"] is True
    # The simulated H100 80GB HBM3 reports 81559 MiB, as the real one does.
    assert dev["capacity"]["memory"]["value"] == "81559Mi"
    assert dev["capacity"]["compute"]["value"] == "100"
    assert dev["attributes"]["model"]["string"] == "NVIDIA H100 80GB HBM3"
    assert dev["attributes"]["computeCapability"]["string"] == "9.0"
    assert dev["attributes"]["uuid"]["string"].startswith("GPU-")


def test_two_claims_share_the_gpu_and_a_third_runs_once_there_is_room(k8s):
    k8s.apply(claim_template("t40", "40Gi", "70") + "---\n" + claim_template("t20", "20Gi", "30") +
              "---\n" + claim_template("t30", "30Gi"))
    k8s.apply(pod("share-a", "t40", hold("1Gi")) + "---\n" + pod("share-b", "t20", hold("1Gi")))
    try:
        k8s.wait_phase("share-a", ["Running"])
        k8s.wait_phase("share-b", ["Running"])
        k8s.apply(pod("share-c", "t30", hold("1Gi")))
        # 40 + 20 + 30 GiB do not fit in 80: the scheduler says so, and the pod waits.
        reason = wait_for(lambda: [m for r, m in k8s.events("share-c") if r == "FailedScheduling"], 60,
                            step=0.3, what="the scheduler's reason for share-c")
        assert "cannot allocate all claims" in reason[0], reason
        assert k8s.phase("share-c") == "Pending"
        k8s.delete("share-a")
        k8s.wait_phase("share-c", ["Running"])
        tenants = k8s.ps()
        limits = sorted(t["limits"]["vram_bytes"] for t in tenants.values())
        assert limits == [20 * GIB, 30 * GIB], tenants
    finally:
        k8s.delete("share-a", "share-b", "share-c")


def test_in_a_pod_the_claim_holds_on_every_allocation_path_and_meminfo_shows_it(k8s):
    k8s.apply(claim_template("t20m", "20Gi", "30"))
    cmd = "; ".join([f"{WORKLOAD} alloc-until-oom --chunk 64Mi --alloc {a}" for a in ALLOC_PATHS] +
                    [f"{WORKLOAD} info"])
    k8s.apply(pod("limits", "t20m", cmd))
    try:
        assert k8s.wait_phase("limits", ["Succeeded", "Failed"], 180) == "Succeeded", k8s.describe("limits")
        lines = k8s.logs("limits")
        ooms = [x for x in lines if x.get("mode") == "alloc-until-oom"]
        assert [x["alloc"] for x in ooms] == ALLOC_PATHS, lines
        for x in ooms:
            # Stopped by gpuslice at exactly the claim, not by the 80 GB device.
            assert x["allocated_bytes"] == 20 * GIB, x
        [info] = [x for x in lines if x.get("mode") == "info"]
        assert info["devices"][0]["ctx_total_bytes"] == 20 * GIB, info  # cuMemGetInfo's total
    finally:
        k8s.delete("limits")


def test_a_pods_tenant_carries_its_labels_and_goes_with_it_leaving_its_usage(k8s):
    k8s.apply(claim_template("t8", "8Gi"))
    k8s.apply(pod("labelled", "t8", hold("2Gi"), labels={"app": "vllm", "team": "x"}))
    try:
        k8s.wait_phase("labelled", ["Running"])
        uid = k8s.get("pod", "labelled")["metadata"]["uid"]
        [t] = wait_for(lambda: [t for t in k8s.ps().values() if t["labels"].get("pod") == "labelled"
                                  and t["gpus"][0]["vram_used_bytes"] >= 2 * GIB], 30, step=0.3, what="the pod's memory in ps")
        assert t["labels"]["namespace"] == "default" and t["labels"]["container"] == "work"
        assert t["labels"]["pod_uid"] == uid and t["labels"]["app"] == "vllm"
        assert "team" not in t["labels"], "only the pod labels the agent is told to copy"
        text = k8s.metrics()
        series = [line for line in text.splitlines() if line.startswith("gpuslice_tenant_vram_used_bytes{")
                  and f'tenant="{t["name"]}"' in line]
        assert series and 'namespace="default"' in series[0] and 'pod="labelled"' in series[0] and \
            'container="work"' in series[0], series
    finally:
        k8s.delete("labelled")
    wait_for(lambda: t["name"] not in k8s.ps(), 30, step=0.3, what="the tenant to end with its pod")
    rows = k8s.ledger(f"SELECT COUNT(*), MAX(vram_byte_seconds) FROM intervals i JOIN tenants t ON "
                      f"i.tenant_id = t.id WHERE t.name = '{t['name']}' AND t.ended_at IS NOT NULL")
    count, vram = rows.strip().split("|")
    assert int(count) > 0 and float(vram) > 0, rows
    assert not list((k8s.dir / "cdi").glob("*.json")), "the claim's CDI spec is removed"


def test_the_agent_killed_and_restarted_keeps_the_pods_limits_and_still_cleans_up(k8s):
    k8s.apply(claim_template("t6", "6Gi"))
    k8s.apply(pod("survivor", "t6", f"{WORKLOAD} hold --bytes 1Gi </dev/zero & sleep 3600"))
    try:
        k8s.wait_phase("survivor", ["Running"])
        name = wait_for(lambda: [n for n, t in k8s.ps().items() if t["labels"].get("pod") == "survivor"], 30,
                          step=0.3, what="the tenant")[0]
        p = k8s.script("restart-agent", 120)
        assert p.returncode == 0, p.stderr
        tenants = k8s.ps()
        assert [n for n, t in tenants.items() if t["labels"].get("pod") == "survivor"] == [name]
        assert tenants[name]["limits"]["vram_bytes"] == 6 * GIB
        # A process started in the pod after the restart is still held to the claim.
        out = k8s.kubectl("exec", "survivor", "--", str(WORKLOAD), "alloc-until-oom", "--chunk", "64Mi").stdout
        line = json.loads(out.strip().splitlines()[-1])
        assert line["allocated_bytes"] == 5 * GIB, line  # 6 GiB less the 1 GiB the first process holds
    finally:
        k8s.delete("survivor")
    wait_for(lambda: name not in k8s.ps(), 30, step=0.3, what="the restarted agent to unprepare the claim")
    assert not list((k8s.dir / "gpuslice" / "k8s" / "claims").iterdir())


def test_bad_claims_get_a_one_line_reason_and_leave_the_others_alone(k8s):
    k8s.apply(claim_template("t4ok", "4Gi"))
    k8s.apply(pod("bystander", "t4ok", hold("1Gi")))
    k8s.wait_phase("bystander", ["Running"])
    before = {n: t["limits"] for n, t in k8s.ps().items()}
    try:
        k8s.apply(claim_template("t200", "200Gi") + "---\n" +
                  claim_template("tparam", "1Gi", params={"sharing": "timeslice"}))
        k8s.apply(pod("too-big", "t200", hold("1Gi")) + "---\n" + pod("bad-param", "tparam", hold("1Gi")))
        big = wait_for(lambda: [m for r, m in k8s.events("too-big") if r == "FailedScheduling"], 60, step=0.3, what="too-big")
        assert "cannot allocate all claims" in big[0] and "\n" not in big[0], big
        bad = wait_for(lambda: [m for r, m in k8s.events("bad-param") if r == "FailedPrepareDynamicResources"],
                         60, step=0.3, what="bad-param's preparation to fail")
        assert 'unknown field "sharing"' in bad[0] and "(known: computePolicy, priority)" in bad[0], bad
        # A negative capacity passes the API server's validation; the scheduler refuses it (the
        # driver would too: test ShareOf in integrations/k8s/agent), and the pod's events say why.
        k8s.apply(claim_template("tneg", "-1Gi"))
        k8s.apply(pod("negative", "tneg", hold("1Gi")))
        neg = wait_for(lambda: [m for r, m in k8s.events("negative") if r == "FailedScheduling"], 60, step=0.3, what="negative")
        assert 'capacity "memory": capacity value is negative' in neg[0] and "\n" not in neg[0], neg
        assert k8s.phase("negative") == "Pending"
        # Not a number: the API server refuses the claim at once, in one line naming it.
        p = k8s.kubectl("apply", "-f", "-", stdin=claim_template("tnan", "lots"), check=False)
        assert p.returncode != 0 and p.stderr.count("\n") == 1 and "quantit" in p.stderr.lower(), p.stderr
        after = {n: t["limits"] for n, t in k8s.ps().items()}
        assert after == before, "the node's other tenants are untouched; nothing of the bad claims is registered"
    finally:
        k8s.delete("too-big", "bad-param", "negative", "bystander")


def test_two_busy_pods_at_70_and_30_get_their_shares_of_the_gpu(k8s):
    """Both pods' kernels run in one 10 s window that starts at one CLOCK_MONOTONIC instant (the
    node's clock, the same in every container), as in test_compute_share.py; each pod's device
    time inside the window is its share, to within 3 points."""
    k8s.apply(claim_template("tc70", "8Gi", "70") + "---\n" + claim_template("tc30", "8Gi", "30"))
    start = time.monotonic_ns() + 20 * 10**9  # room for both pods to start
    win = (start + 10**9, start + 11 * 10**9)
    busy = (f"exec {WORKLOAD} busy --kernel-us 1000 --seconds 11 --start-at-ns {start} "
            f"--window-start-ns {win[0]} --window-end-ns {win[1]}")
    k8s.apply(pod("busy-70", "tc70", busy) + "---\n" + pod("busy-30", "tc30", busy))
    try:
        for p in ("busy-70", "busy-30"):
            assert k8s.wait_phase(p, ["Succeeded", "Failed"], 120) == "Succeeded", k8s.describe(p)
        shares = []
        for p in ("busy-70", "busy-30"):
            [line] = [x for x in k8s.logs(p) if x.get("mode") == "busy"]
            assert line["start_ns"] <= win[0], f"{p} started late"
            shares.append(100.0 * line["window_kernel_seconds"] / 10.0)
        print(f"\n[k8s compute] 70->{shares[0]:.2f} 30->{shares[1]:.2f}")
        assert abs(shares[0] - 70) <= 3 and abs(shares[1] - 30) <= 3, shares
    finally:
        k8s.delete("busy-70", "busy-30")


def vram_pod(name, gib, command, env=None):
    envs = "".join(f"\n    - name: {k}\n      value: \"{v}\"" for k, v in (env or {}).items())
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: work
    image: gpuslice/workload:test
    imagePullPolicy: Never
    command: {json.dumps(["sh", "-c", command])}
    env:{envs or " []"}
    resources:
      limits:
        gpuslice.io/vram: {gib}
"""


@pytest.fixture
def device_plugin(k8s):
    """The agent with the device plugin only (--dra=false), as on a cluster before DRA; the DRA
    driver again afterwards. Tests using it come last in the module."""
    def restart(mode):
        p = subprocess.run(["bash", str(CLUSTER), "restart-agent"], env=dict(k8s.env, GS_K8S_AGENT_MODE=mode),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
    restart("device-plugin")
    yield k8s
    restart("dra")


def test_device_plugin_holds_a_pod_to_its_vram_labels_it_and_ends_its_tenant_with_it(device_plugin):
    k8s = device_plugin
    alloc = k8s.get("node", "gpuslice-node")["status"]["allocatable"]
    assert alloc["gpuslice.io/vram"] == "79", alloc  # whole GiB of the 81559 MiB
    k8s.apply(vram_pod("dp-20", 20, "exec sleep 3600"))
    try:
        k8s.wait_phase("dp-20", ["Running"])
        lines = []
        for a in ("plain", "managed", "vmm"):
            out = k8s.kubectl("exec", "dp-20", "--", str(WORKLOAD), "alloc-until-oom", "--chunk", "64Mi",
                              "--alloc", a).stdout
            lines.append(json.loads(out.strip().splitlines()[-1]))
        for x in lines:
            assert x["allocated_bytes"] == 20 * GIB, x
        info = json.loads(k8s.kubectl("exec", "dp-20", "--", str(WORKLOAD), "info").stdout.strip().splitlines()[-1])
        assert info["devices"][0]["ctx_total_bytes"] == 20 * GIB, info
        # Allocate is not told the pod; the plugin labels the tenant once kubelet lists it.
        [t] = wait_for(lambda: [t for t in k8s.ps().values() if t["labels"].get("pod") == "dp-20"], 30,
                         step=0.3, what="the device plugin's tenant labelled with its pod")
        assert t["labels"] == {"resource": "gpuslice.io/vram", "namespace": "default", "pod": "dp-20",
                               "container": "work"}, t["labels"]
        assert t["limits"]["vram_bytes"] == 20 * GIB
    finally:
        k8s.delete("dp-20")
    wait_for(lambda: t["name"] not in k8s.ps(), 90, step=0.3, what="the device plugin to end the tenant of the ended pod")


def test_device_plugin_pod_with_hamis_variable_is_held_to_it(device_plugin):
    k8s = device_plugin
    k8s.apply(vram_pod("dp-hami", 20, f"{WORKLOAD} alloc-until-oom --chunk 64Mi; {WORKLOAD} info",
                       env={"CUDA_DEVICE_MEMORY_LIMIT": "4g"}))
    try:
        assert k8s.wait_phase("dp-hami", ["Succeeded", "Failed"], 120) == "Succeeded", k8s.describe("dp-hami")
        lines = k8s.logs("dp-hami")
        [oom] = [x for x in lines if x.get("mode") == "alloc-until-oom"]
        assert oom["allocated_bytes"] == 4 * GIB, oom
        [info] = [x for x in lines if x.get("mode") == "info"]
        assert info["devices"][0]["ctx_total_bytes"] == 4 * GIB, info
    finally:
        k8s.delete("dp-hami")


CHART = REPO / "integrations" / "k8s" / "chart" / "gpuslice"


def helm(k8s, *args):
    return subprocess.run(["helm"] + [str(a) for a in args], env=k8s.env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("mode", ["dra", "device-plugin"])
def test_the_chart_lints_renders_and_the_api_server_accepts_it(k8s, mode):
    """What the chart would install (the DaemonSet, its RBAC, the DeviceClass) is valid for this
    cluster's API server: a server-side dry run, admission included. The test cluster runs the
    agent and the daemon as host processes, with the chart's RBAC and DeviceClass (cluster.sh)."""
    p = helm(k8s, "lint", CHART, "--set", f"mode={mode}")
    assert p.returncode == 0, p.stdout + p.stderr
    p = helm(k8s, "template", "gpuslice", CHART, "--namespace", "gpuslice-system", "--kube-version", "v1.37.2",
             "--set", f"mode={mode}")
    assert p.returncode == 0, p.stderr
    kinds = sorted(doc.split("\nkind: ")[1].split("\n")[0] for doc in p.stdout.split("\n---") if "\nkind: " in doc)
    want = ["ClusterRole", "ClusterRoleBinding", "DaemonSet", "ServiceAccount"] + (["DeviceClass"] if mode == "dra" else [])
    assert kinds == sorted(want), kinds
    args = ["--dra"] if mode == "dra" else ["--dra=false", "--device-plugin"]
    assert all(f"- {a}\n" in p.stdout for a in args), p.stdout
    dry = k8s.kubectl("apply", "--dry-run=server", "-f", "-", stdin=p.stdout)
    assert "daemonset.apps/gpuslice created (server dry run)" in dry.stdout, dry.stdout


def test_the_chart_refuses_an_unknown_mode_in_one_line(k8s):
    p = helm(k8s, "template", "gpuslice", CHART, "--kube-version", "v1.37.2", "--set", "mode=timeslice")
    assert p.returncode != 0 and 'mode "timeslice": want dra or device-plugin' in p.stderr, p.stderr
