"""dcgm-exporter's whole default field set on /metrics (issue #16), end to end: `gpuslice daemon`
on the simulated GPU serves every field of dcgm-exporter's own default counter list
(data/dcgm-exporter/default-counters.csv, read here as dcgm-exporter reads it) under the same
name, TYPE and HELP text, with dcgm-exporter's labels; FB_USED + FB_FREE + FB_RESERVED is the
GPU's total; an XID error injected into the simulated GPU shows in DCGM_FI_DEV_XID_ERRORS, with
its code and NVIDIA's name for it, within one interval; promtool accepts the text; and the
`counters` setting takes a counters file in dcgm-exporter's format (dcgm-exporter's own file as
it is), refusing one with an unknown field or a malformed line in one line naming the line.

Labels (the rest of #16): a tenant registered with namespace, pod and container labels (as the
Kubernetes agent registers them) has them on every gpuslice_tenant_* series; every tenant series
has the Hostname and modelName of its GPU's series, so that a PromQL join through a real
Prometheus finds them; NODE_NAME names the node on both, as in dcgm-exporter; the hostname-label
setting spells the label hostname; and the 0-1 series are served under their _ratio names and,
for one release, under the old ones with the same values."""
import pathlib
import re
import shutil
import socket
import subprocess
import time

import pytest

from conftest import run
from daemon_env import GIB, GPUSLICE, MIB, Daemon, Tenant, wait_for
from prometheus_server import PROMETHEUS, Prometheus, metrics
from test_sim_nvml import probe

COUNTERS = pathlib.Path(__file__).resolve().parents[2] / "data" / "dcgm-exporter" / "default-counters.csv"
PROMTOOL = shutil.which("promtool")
INTERVAL = 0.5
GPU_LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"]


def default_counters(path=COUNTERS):
    """(field, type, help) per active line of a dcgm-exporter counters file: '#' starts a
    comment line, fields are comma-separated and padded with spaces."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        field, kind, help_ = (part.strip() for part in line.split(",", 2))
        out.append((field, kind, help_))
    return out


SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\} (\S+)$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def families(text):
    """{name: {"help": ..., "type": ..., "samples": [(labels as ordered pairs, value)]}}."""
    fams = {}
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, rest = line.split(" ", 3)
            fams.setdefault(name, {"samples": []})[kind.lower()] = rest
        elif (m := SAMPLE.match(line)):
            fams.setdefault(m.group(1), {"samples": []})["samples"].append(
                (LABEL.findall(m.group(2)), float(m.group(3))))
    return fams


def sample(fams, name, gpu):
    """The one sample of family `name` for GPU `gpu`: (labels dict, value)."""
    rows = [(dict(labels), v) for labels, v in fams.get(name, {"samples": []})["samples"]
            if dict(labels).get("gpu") == str(gpu)]
    assert len(rows) == 1, (name, gpu, rows)
    return rows[0]


def test_the_shipped_counter_list_is_dcgm_exporters_default_set():
    fields = default_counters()
    metrics_ = [f for f in fields if f[1] != "label"]
    assert len(metrics_) == 25 and [f for f in fields if f[1] == "label"] == [
        ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version")]
    assert ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).") in fields  # padded "FIELD ,"
    assert sum(1 for f in metrics_ if f[1] == "counter") == 5


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """The daemon on two simulated H100s, a tenant holding 1 GiB on the first, and /metrics once
    every field is there (the profiling ratios need two GPM samples, so two intervals)."""
    d = Daemon(tmp_path_factory.mktemp("dcgm"), spec="h100-80gb:2", interval=INTERVAL).start()
    t = None
    try:
        t = Tenant(d, "alpha", ["--vram", "4GiB"], GIB)
        names = [f for f, kind, _ in default_counters() if kind != "label"]
        wait_for(lambda: (lambda f: all(n in f for n in names) and
                          sample(f, "DCGM_FI_DEV_FB_USED", 0)[1] == 1024)(families(metrics(d))),
                 timeout=30, what="every default field and alpha's memory in /metrics")
        yield d
    finally:
        if t:
            t.end()
        d.stop()


def test_every_default_field_is_served_with_dcgm_exporters_type_help_and_labels(node):
    fams = families(metrics(node))
    for field, kind, help_ in default_counters():
        if kind == "label":
            continue
        assert field in fams, field
        assert (fams[field].get("type"), fams[field].get("help")) == (kind, help_), field
        for gpu in (0, 1):
            labels, value = sample(fams, field, gpu)
            names = list(labels)
            expect = GPU_LABELS + (["err_code", "err_msg"] if field == "DCGM_FI_DEV_XID_ERRORS" else [])
            assert names == expect, (field, names)
            assert labels["Hostname"] == socket.gethostname() and labels["device"] == f"nvidia{gpu}"
            assert value >= 0, field
    # The label field of the list is a label on every GPU series.
    assert sample(fams, "DCGM_FI_DEV_GPU_TEMP", 0)[0]["DCGM_FI_DRIVER_VERSION"] == "580.65.06"


def test_counters_and_readings_follow_the_simulated_gpu(node):
    first = families(metrics(node))
    time.sleep(2 * INTERVAL + 0.2)
    later = families(metrics(node))
    e0 = sample(first, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0)[1]
    e1 = sample(later, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0)[1]
    assert e1 > e0  # mJ: an idle H100 still draws 105 W
    temp = sample(later, "DCGM_FI_DEV_GPU_TEMP", 0)[1]
    assert sample(later, "DCGM_FI_DEV_MEMORY_TEMP", 0)[1] == temp + 4
    assert sample(later, "DCGM_FI_DEV_MEM_COPY_UTIL", 0)[1] == sample(later, "DCGM_FI_DEV_GPU_UTIL", 0)[1] // 2
    for ratio in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
        assert 0 <= sample(later, ratio, 1)[1] <= 1, ratio


def test_fb_used_free_and_reserved_add_up_to_the_gpus_total(node):
    fams = families(metrics(node))
    total_mib = 81559  # the simulated H100's memory, as NVML reports it
    for gpu in (0, 1):
        used = sample(fams, "DCGM_FI_DEV_FB_USED", gpu)[1]
        free = sample(fams, "DCGM_FI_DEV_FB_FREE", gpu)[1]
        reserved = sample(fams, "DCGM_FI_DEV_FB_RESERVED", gpu)[1]
        assert used + free + reserved == total_mib, (gpu, used, free, reserved)
        assert reserved == total_mib // 160  # the simulated driver's reserve
    # Memory info v2's used leaves the driver's reserve out: GPU 0's is alpha's 1 GiB exactly.
    assert sample(fams, "DCGM_FI_DEV_FB_USED", 0)[1] == 1024
    assert sample(fams, "DCGM_FI_DEV_FB_USED", 1)[1] == 0


def xid(fams, gpu):
    labels, value = sample(fams, "DCGM_FI_DEV_XID_ERRORS", gpu)
    return value, labels["err_code"], labels["err_msg"]


def test_an_injected_xid_shows_with_its_code_within_one_interval(node):
    fams = families(metrics(node))
    assert xid(fams, 0) == xid(fams, 1) == (0, "0", "No Error")
    (r,), _ = probe(node.env, "xid_inject", 1, 79)
    assert r == {"rc": 0, "err": ""}
    t0 = time.monotonic()
    while xid(families(metrics(node)), 1)[0] != 79:
        assert time.monotonic() - t0 < 10, "the XID never showed"
        time.sleep(0.02)
    seen = time.monotonic() - t0
    fams = families(metrics(node))
    assert xid(fams, 1) == (79, "79", "GPU has fallen off the bus")
    assert xid(fams, 0) == (0, "0", "No Error")
    # The next sample shows it: at most one interval, plus the sample's own time and a scrape.
    assert seen <= INTERVAL + 0.3, seen
    # A code NVIDIA's table does not name keeps its number.
    (r,), _ = probe(node.env, "xid_inject", 0, 100000)
    wait_for(lambda: xid(families(metrics(node)), 0) == (100000, "100000", "Unknown Error"),
             timeout=5, what="the second XID")


@pytest.mark.skipif(not PROMTOOL, reason="promtool (Debian package prometheus) is not installed")
def test_promtool_accepts_the_full_field_set_remarking_only_on_dcgm_exporters_own_names(node):
    text = metrics(node)
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    problems = sorted({ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()})
    assert r.returncode in (0, 3), problems  # 3: lint remarks only; 1 would be a parse error
    counters = {f for f, kind, _ in default_counters() if kind == "counter"}
    allowed = set()
    for f, kind, _ in default_counters():
        if kind != "label":
            allowed.add(f"{f} label names should be written in 'snake_case' not 'camelCase'")  # modelName
    # The tenant series carry modelName too, so that they join with the GPU series.
    allowed |= {f"{f} label names should be written in 'snake_case' not 'camelCase'"
                for f in families(text) if f.startswith("gpuslice_tenant_")}
    allowed |= {f'{f} counter metrics should have "_total" suffix' for f in counters}
    allowed.add("DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'")
    assert set(problems) <= allowed, set(problems) - allowed
    # Without dcgm-exporter's modelName label, only its counter names remain.
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=re.sub(r',modelName="[^"]*"', "", text),
                       capture_output=True, text=True, timeout=60)
    assert {ln.split()[0] for ln in (r.stdout + r.stderr).splitlines() if ln.strip()} == counters


# ---- the counters setting ----

def dcgm_families(text):
    return {name: fam for name, fam in families(text).items() if name.startswith("DCGM_")}


def test_dcgm_exporters_own_counters_file_works_as_it_is(tmp_path):
    d = Daemon(tmp_path, interval=INTERVAL).start("--counters", str(COUNTERS))
    try:
        want = {f for f, kind, _ in default_counters() if kind != "label"}
        fams = wait_for(lambda: (lambda f: f if set(f) == want else None)(dcgm_families(metrics(d))),
                        timeout=20, what="the default set from dcgm-exporter's file")
        assert sample(fams, "DCGM_FI_DEV_GPU_TEMP", 0)[0]["DCGM_FI_DRIVER_VERSION"] == "580.65.06"
    finally:
        d.stop()


def test_a_counters_file_chooses_the_fields_their_types_and_help(tmp_path):
    counters = tmp_path / "mine.csv"
    counters.write_text("# two fields, no driver label\n"
                        "DCGM_FI_DEV_FB_RESERVED, gauge, Reserved by the driver (MiB).\n"
                        "DCGM_FI_DEV_GPU_TEMP,    counter,\"Die, hot\"\n")
    d = Daemon(tmp_path / "d", interval=INTERVAL)
    d.env["GPUSLICE_COUNTERS"] = str(counters)  # the setting's environment variable
    d.start()
    try:
        fams = wait_for(lambda: (lambda f: f if f else None)(dcgm_families(metrics(d))), what="GPU series")
        assert list(fams) == ["DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_GPU_TEMP"]
        assert (fams["DCGM_FI_DEV_GPU_TEMP"]["type"], fams["DCGM_FI_DEV_GPU_TEMP"]["help"]) == ("counter", "Die, hot")
        assert fams["DCGM_FI_DEV_FB_RESERVED"]["help"] == "Reserved by the driver (MiB)."
        labels, _ = sample(fams, "DCGM_FI_DEV_GPU_TEMP", 0)
        assert "DCGM_FI_DRIVER_VERSION" not in labels  # the file leaves the label field out
        assert "gpuslice_daemon_up 1" in metrics(d)  # gpuslice's own series stay
    finally:
        d.stop()


@pytest.mark.parametrize("line,why", [
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total number of single-bit volatile ECC errors.",
     "unknown field 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL'"),
    ("DCGM_FI_DEV_GPU_TEMP gauge GPU temperature", "1 field, want 3"),
    ("DCGM_FI_DEV_GPU_TEMP, summary, GPU temperature (in C).", "type 'summary'"),
])
def test_a_bad_counters_file_refuses_the_start_in_one_line_naming_the_line(tmp_path, line, why):
    counters = tmp_path / "bad.csv"
    counters.write_text("# Format\nDCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n\n" + line + "\n")
    d = Daemon(tmp_path)
    r = run([GPUSLICE, "daemon", "--foreground", "--counters", str(counters)], env=d.env, timeout=30)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"gpuslice: daemon: counters file {counters}: line 4: {why}"), lines[0]
    assert lines[0].endswith(f"(`{line}`)"), lines[0]


# ---- labels for joins, and the _ratio names ----

K8S = ["--label", "namespace=ns1", "--label", "pod=p1", "--label", "container=c1"]


def tenant_rows(fams, tenant):
    """{family: [labels dict]} of every gpuslice_tenant_* sample of `tenant`."""
    return {name: [dict(lb) for lb, _ in fam["samples"] if dict(lb).get("tenant") == tenant]
            for name, fam in fams.items() if name.startswith("gpuslice_tenant_")}


@pytest.fixture(scope="module")
def k8s_node(tmp_path_factory):
    """The daemon with pod-like tenant k (namespace, pod and container labels, a 4 GiB and 50%
    limit, holding 1 GiB) and plain tenant p (no such labels), both on GPU 0."""
    d = Daemon(tmp_path_factory.mktemp("k8s"), interval=INTERVAL).start()
    ts = []
    try:
        ts.append(Tenant(d, "k", K8S + ["--vram", "4GiB", "--compute", "50"], GIB))
        ts.append(Tenant(d, "p", [], 256 * MIB))
        wait_for(lambda: (lambda f: all(tenant_rows(f, n)["gpuslice_tenant_vram_used_bytes"] for n in "kp"))(
            families(metrics(d))), timeout=30, what="both tenants in /metrics")
        yield d
    finally:
        for t in ts:
            t.end()
        d.stop()


def test_a_kubernetes_tenant_has_namespace_pod_container_on_every_series(k8s_node):
    fams = families(metrics(k8s_node))
    gpu = sample(fams, "DCGM_FI_DEV_FB_USED", 0)[0]
    rows = tenant_rows(fams, "k")
    assert len(rows) == 14 and all(rows.values()), rows  # 11 series (idle seconds the 11th) and 3 deprecated names
    for name, samples in rows.items():
        for lb in samples:
            assert (lb["namespace"], lb["pod"], lb["container"]) == ("ns1", "p1", "c1"), name
            assert (lb["Hostname"], lb["modelName"], lb["UUID"]) == (gpu["Hostname"], gpu["modelName"],
                                                                     gpu["UUID"]), name
    # A tenant without them has none of the three (absent, which PromQL reads as empty).
    for lb in tenant_rows(fams, "p")["gpuslice_tenant_vram_used_bytes"]:
        assert not {"namespace", "pod", "container"} & set(lb) and lb["Hostname"] == socket.gethostname()


@pytest.mark.skipif(not shutil.which(PROMETHEUS), reason="prometheus (Debian package) is not installed")
def test_tenant_series_join_the_gpu_series_on_hostname_and_gpu_in_promql(k8s_node, tmp_path):
    with Prometheus(tmp_path, [f"127.0.0.1:{k8s_node.port}"]) as prom:
        # Each pod's memory as a share of its GPU's framebuffer, with the GPU's model.
        q = ('gpuslice_tenant_vram_used_bytes{pod="p1"} / 1048576 / on (Hostname, gpu) '
             'group_left (pci_bus_id) DCGM_FI_DEV_FB_USED')
        joined = wait_for(lambda: prom.query(q), timeout=60, what="the join")
        by_model = prom.query('sum by (modelName, Hostname) (gpuslice_tenant_vram_used_bytes) '
                              '* on (modelName, Hostname) group_left count by (modelName, Hostname) (DCGM_FI_DEV_GPU_TEMP)')
    (row,) = joined
    assert row["metric"]["namespace"] == "ns1" and row["metric"]["pci_bus_id"]
    assert 0 < float(row["value"][1]) <= 1
    assert by_model and by_model[0]["metric"]["modelName"] == "NVIDIA H100 80GB HBM3"


def test_node_name_names_the_node_on_gpu_and_tenant_series(tmp_path):
    d = Daemon(tmp_path, interval=INTERVAL)
    d.env["NODE_NAME"] = "foo"
    d.start()
    t = None
    try:
        t = Tenant(d, "k", K8S, 64 * MIB)
        fams = wait_for(lambda: (lambda f: f if tenant_rows(f, "k")["gpuslice_tenant_vram_used_bytes"] else None)(
            families(metrics(d))), timeout=30, what="k in /metrics")
        assert sample(fams, "DCGM_FI_DEV_GPU_TEMP", 0)[0]["Hostname"] == "foo"
        assert tenant_rows(fams, "k")["gpuslice_tenant_vram_used_bytes"][0]["Hostname"] == "foo"
    finally:
        if t:
            t.end()
        d.stop()


def test_hostname_label_setting_spells_it_hostname_on_both(tmp_path):
    d = Daemon(tmp_path, interval=INTERVAL).start("--hostname-label", "hostname")
    t = None
    try:
        t = Tenant(d, "k", K8S, 64 * MIB)
        text = wait_for(lambda: (lambda m: m if 'tenant="k"' in m else None)(metrics(d)), timeout=30,
                        what="k in /metrics")
        fams = families(text)
        gpu = sample(fams, "DCGM_FI_DEV_GPU_TEMP", 0)[0]
        assert list(gpu) == [n if n != "Hostname" else "hostname" for n in GPU_LABELS]
        assert gpu["hostname"] == socket.gethostname()
        assert tenant_rows(fams, "k")["gpuslice_tenant_vram_used_bytes"][0]["hostname"] == gpu["hostname"]
        assert "Hostname=" not in text
    finally:
        if t:
            t.end()
        d.stop()
    r = run([str(GPUSLICE), "daemon", "--hostname-label", "HOSTNAME"], env=d.env)
    assert r.returncode == 2 and "hostname-label" in r.stderr, r.stderr


RENAMED = {"gpuslice_tenant_compute_share": "gpuslice_tenant_compute_used_ratio",
           "gpuslice_tenant_compute_limit": "gpuslice_tenant_compute_limit_ratio",
           "gpuslice_tenant_violation_compute_share": "gpuslice_tenant_violation_compute_ratio"}


def test_zero_to_one_series_end_in_ratio_and_keep_their_old_names_for_one_release(k8s_node):
    fams = families(metrics(k8s_node))
    for old, new in RENAMED.items():
        assert fams[new]["type"] == fams[old]["type"] == "gauge"
        assert fams[old]["help"].startswith(f"Deprecated, use {new} "), fams[old]["help"]
        assert "Deprecated" not in fams[new]["help"]
        assert sorted(fams[old]["samples"]) == sorted(fams[new]["samples"]), old
    assert [v for lb, v in fams["gpuslice_tenant_compute_limit_ratio"]["samples"]
            if dict(lb)["tenant"] == "k"] == [0.5]
    # Every gpuslice series with a 0-1 value is a _ratio one, or one of the old names.
    zero_one = {n for n, f in fams.items() if n.startswith("gpuslice_") and "(0 to 1" in f.get("help", "")}
    assert zero_one and all(n.endswith("_ratio") for n in zero_one), zero_one
