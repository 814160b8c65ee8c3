"""The daemon's /metrics end to end: `gpuslice daemon` on the simulated GPU with tenants holding
memory serves text that passes `promtool check metrics`; a real Prometheus (Debian's package,
started here on loopback, scraping every second) scrapes it; and PromQL through Prometheus's HTTP
API returns what the simulated GPU reports for DCGM_FI_DEV_FB_USED (with dcgm-exporter's labels)
and what each tenant holds for gpuslice_tenant_vram_used_bytes{tenant="..."}."""
import re
import shutil
import socket
import subprocess

import pytest

from daemon_env import GIB, MIB, Daemon, Tenant, wait_for
from prometheus_server import PROMETHEUS, Prometheus, metrics
from test_sim_nvml import probe

PROMTOOL = shutil.which("promtool")
# The tenant series carry dcgm-exporter's modelName too, so that they join with the GPU series.
CAMEL = re.compile(r"^(DCGM_FI_(DEV|PROF)_[A-Z_]+|gpuslice_tenant_[a-z_]+) label names should be written in 'snake_case' not 'camelCase'$")
TOTAL = re.compile(r'^DCGM_FI_DEV_[A-Z_]+ counter metrics should have "_total" suffix$'
                   r"|^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'$")

pytestmark = pytest.mark.skipif(not PROMTOOL or not shutil.which(PROMETHEUS),
                                reason="prometheus and promtool (Debian package prometheus) are not installed")


def tenant_sample(text, name):
    m = re.search(r'^gpuslice_tenant_vram_used_bytes\{tenant="%s",[^}]*\} (\S+)$' % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def sim_gpu(env, index=0):
    """GPU `index` as the simulated NVML reports it, read by a process outside the daemon."""
    lines, _ = probe(env, "devices")
    return next(d for d in lines if d["index"] == index)


@pytest.fixture
def node(tmp_path):
    """The daemon with two tenants: alpha holds 1 GiB under a 4 GiB limit, labelled team=vision;
    beta holds 256 MiB with no limit."""
    d = Daemon(tmp_path).start()
    tenants = []
    try:
        tenants.append(Tenant(d, "alpha", ["--vram", "4GiB", "--label", "team=vision"], GIB))
        tenants.append(Tenant(d, "beta", [], 256 * MIB))
        wait_for(lambda: (lambda m: tenant_sample(m, "alpha") == GIB and tenant_sample(m, "beta") == 256 * MIB)(
            metrics(d)), what="both tenants in /metrics")
        yield d
    finally:
        for t in tenants:
            t.end()
        d.stop()


def test_metrics_pass_promtool(node):
    text = metrics(node)
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    problems = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert r.returncode in (0, 3), problems  # 3: lint remarks only
    # The remarks are about dcgm-exporter's own names, kept for its dashboards: the modelName
    # label, and its counters without the _total suffix.
    assert all(CAMEL.match(p) or TOTAL.match(p) for p in problems), problems
    assert "gpuslice_daemon_up 1" in text


def test_prometheus_scrapes_and_promql_returns_sim_values(node, tmp_path):
    dev = sim_gpu(node.env)
    with Prometheus(tmp_path, [f"127.0.0.1:{node.port}"]) as prom:
        fb = wait_for(lambda: prom.query('DCGM_FI_DEV_FB_USED{gpu="0"}'), timeout=60, what="a scrape")
        tenant = wait_for(lambda: prom.query('gpuslice_tenant_vram_used_bytes{tenant="alpha"}'),
                          what="alpha's series")
        limit = prom.query('gpuslice_tenant_vram_limit_bytes{tenant="alpha"}')
        beta_limit = prom.query('gpuslice_tenant_vram_limit_bytes{tenant="beta"}')
        by_team = prom.query('sum by (label_team) (gpuslice_tenant_vram_used_bytes{label_team="vision"})')
        up = prom.query('up{job="gpuslice"}')
    (fb,) = fb
    assert float(fb["value"][1]) == dev["memory"]["v2"]["used"] // MIB
    labels = fb["metric"]
    assert labels["UUID"] == dev["uuid"]
    assert labels["pci_bus_id"] == dev["bus_id"]
    assert labels["modelName"] == dev["name"]
    assert labels["device"] == "nvidia0"
    assert labels["Hostname"] == socket.gethostname()
    assert labels["DCGM_FI_DRIVER_VERSION"]
    (tenant,) = tenant
    assert float(tenant["value"][1]) == GIB
    assert tenant["metric"]["label_team"] == "vision" and tenant["metric"]["UUID"] == dev["uuid"]
    assert float(limit[0]["value"][1]) == 4 * GIB
    assert beta_limit == []  # unlimited: no sample
    assert float(by_team[0]["value"][1]) == GIB
    assert float(up[0]["value"][1]) == 1
