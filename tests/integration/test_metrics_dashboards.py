"""The Grafana dashboards against gpuslice (issue #16): every PromQL expression of dashboard
12239 (dcgm-exporter's own, data/dcgm-exporter/dcgm-exporter-dashboard.json, unchanged) and of
gpuslice's own (packaging/grafana/gpuslice.json), extracted from the JSON, returns data from a
real Prometheus (Debian's package) scraping `gpuslice daemon` on two simulated H100s (which have
GPM, so the DCGM_FI_PROF_* panels have data); none is empty. A tenant from "Kubernetes"
(namespace, pod and container labels) is busy at its compute limit and holds memory under its
limit, so that every series has a sample.

The template variables are substituted as Grafana does with the defaults, "All" selected:
a query variable's label_values(METRIC, LABEL) is asked of Prometheus, and "All" becomes the
variable's allValue when it has one, else the regex (v1|v2|...) of every value, each escaped as
Grafana's Prometheus data source escapes regex values; $__rate_interval is 1m (4 x Grafana's
default 15 s scrape interval), $__interval 15s, $__range the dashboard's 1h."""
import json
import pathlib
import re
import shutil
import subprocess

import pytest

from daemon_env import GIB, GPUSLICE, WORKLOAD, Daemon, wait_for
from prometheus_server import PROMETHEUS, Prometheus, metrics

ROOT = pathlib.Path(__file__).resolve().parents[2]
DCGM_DASHBOARD = ROOT / "data" / "dcgm-exporter" / "dcgm-exporter-dashboard.json"
GPUSLICE_DASHBOARD = ROOT / "packaging" / "grafana" / "gpuslice.json"
BUILTIN = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h", "__range_s": "3600",
           "__interval_ms": "15000"}

pytestmark = pytest.mark.skipif(not shutil.which(PROMETHEUS), reason="prometheus (Debian package) is not installed")


def panels(items):
    for p in items:
        yield p
        yield from panels(p.get("panels", []))


def expressions(dashboard):
    """(panel title, expr) of every target of every panel, rows' panels included."""
    return [(p.get("title", ""), t["expr"]) for p in panels(dashboard["panels"]) for t in p.get("targets", [])
            if t.get("expr")]


VAR = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)")
LABEL_VALUES = re.compile(r"^\s*label_values\((?:(.*),\s*)?(\w+)\)\s*$", re.S)


def interpolate(expr, values):
    def sub(m):
        name = m.group(1) or m.group(2) or m.group(3)
        return values.get(name, m.group(0))
    return VAR.sub(sub, expr)


def regex_escape(v):
    """Grafana's Prometheus data source on a multi-value variable: regex specials escaped, and
    the backslash doubled for the PromQL string."""
    return re.sub(r"([$^*+?.()|\\{}\[\]])", r"\\\\\1", v)


def all_values(dashboard, prom):
    """Each variable's value with "All" selected, as Grafana substitutes it."""
    values = dict(BUILTIN)
    for var in dashboard["templating"]["list"]:
        if var["type"] != "query":
            continue
        q = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        m = LABEL_VALUES.match(interpolate(q, values))
        assert m, (var["name"], q)
        found = prom.label_values(m.group(2), m.group(1) or "{__name__=~'.+'}")
        if var.get("allValue"):
            values[var["name"]] = var["allValue"]
        else:
            assert found, f"variable {var['name']}: {q} has no values"
            values[var["name"]] = "(" + "|".join(regex_escape(v) for v in found) + ")"
    return values


def busy_tenant(d):
    """A pod-like tenant at its 30% compute limit, holding 1 GiB under a 4 GiB limit."""
    cmd = [str(GPUSLICE), "run", "--name", "busy", "--vram", "4GiB", "--compute", "30",
           "--label", "namespace=ns1", "--label", "pod=p1", "--label", "container=c1", "--",
           str(WORKLOAD), "busy", "--seconds", "300", "--kernel-us", "1000", "--hold-bytes", str(GIB)]
    return subprocess.Popen(cmd, env=d.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    root = tmp_path_factory.mktemp("dash")
    d = Daemon(root, spec="h100-80gb:2", interval=0.5).start()
    t = busy_tenant(d)
    try:
        def ready():
            m = metrics(d)
            return ('gpuslice_tenant_throttled_seconds_total{tenant="busy"' in m and "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in m
                    and re.search(r'^gpuslice_tenant_gpu_seconds_total\{tenant="busy",gpu="0".*\} [1-9]', m, re.M))
        wait_for(ready, timeout=60, what=f"the busy tenant in /metrics ({t.poll()})")
        with Prometheus(root, [f"127.0.0.1:{d.port}"]) as p:
            # Two scrapes at least, so that rate() and increase() have data.
            wait_for(lambda: p.query("count_over_time(gpuslice_daemon_up[1m]) >= 3"), timeout=60, what="3 scrapes")
            yield p
    finally:
        if t.poll() is None:
            t.terminate()
        t.communicate(timeout=60)
        d.stop()


def empty_expressions(dashboard, prom):
    values = all_values(dashboard, prom)
    empty = []
    for title, expr in expressions(dashboard):
        q = interpolate(expr, values)
        assert "$" not in q and "[[" not in q, (title, q)
        if not prom.query(q):
            empty.append((title, q))
    return empty


def test_every_expression_of_dashboard_12239_returns_data(prom):
    dashboard = json.loads(DCGM_DASHBOARD.read_text())
    assert dashboard["gnetId"] == 12239 and len(expressions(dashboard)) == 8
    assert empty_expressions(dashboard, prom) == []


def test_every_expression_of_gpuslices_dashboard_returns_data(prom):
    dashboard = json.loads(GPUSLICE_DASHBOARD.read_text())
    assert empty_expressions(dashboard, prom) == []


def test_gpuslices_dashboard_is_grafana_json_with_a_datasource_variable():
    dashboard = json.loads(GPUSLICE_DASHBOARD.read_text())
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["title"] and dashboard["uid"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in panels(dashboard["panels"])]
    assert len(ids) == len(set(ids))
    for p in panels(dashboard["panels"]):
        assert {"h", "w", "x", "y"} <= set(p["gridPos"]), p["title"]
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}" and p["targets"], p["title"]
            assert all(t["expr"] and t["refId"] for t in p["targets"]), p["title"]
    exprs = " ".join(e for _, e in expressions(dashboard))
    # Per tenant: memory and compute against their limits, throttled time; per GPU, dcgm's series.
    for series in ("gpuslice_tenant_vram_used_bytes", "gpuslice_tenant_vram_limit_bytes",
                   "gpuslice_tenant_compute_used_ratio", "gpuslice_tenant_compute_limit_ratio",
                   "gpuslice_tenant_throttled_seconds_total", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
                   "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"):
        assert series in exprs, series
    assert "gpuslice_tenant_compute_share" not in exprs  # the deprecated names are not used
