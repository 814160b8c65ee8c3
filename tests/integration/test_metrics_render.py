"""The /metrics text for a big node (8 GPUs x 256 tenants, every tenant on all 8 GPUs, with
labels, every GPU with dcgm-exporter's whole default field set), rendered by gs_metrics_render
through gs-bench-metrics --dump, passes `promtool check metrics`. promtool's only remarks are
style lints on dcgm-exporter's own names, which dcgm-exporter itself draws and dashboards depend
on: its `modelName` label (camelCase), and its five counters that lack Prometheus's `_total`
suffix (one of them also names its type); with the label taken out, only the counter names
remain."""
import re
import shutil
import subprocess

import pytest

from conftest import BIN

PROMTOOL = shutil.which("promtool")
# The tenant series carry dcgm-exporter's modelName too, so that they join with the GPU series.
CAMEL = re.compile(r"^(DCGM_FI_(DEV|PROF)_[A-Z_]+|gpuslice_tenant_[a-z_]+) label names should be written in 'snake_case' not 'camelCase'$")
# dcgm-exporter's counters keep their DCGM names, without Prometheus's _total suffix.
TOTAL = re.compile(r'^DCGM_FI_DEV_[A-Z_]+ counter metrics should have "_total" suffix$'
                   r"|^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'$")


def dcgm_remark(line):
    return CAMEL.match(line) or TOTAL.match(line)


def render(*args):
    r = subprocess.run([str(BIN / "gs-bench-metrics"), "--dump", *args], capture_output=True, text=True,
                       timeout=60, check=True)
    return r.stdout


def promtool(text):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    problems = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    return r.returncode, problems


@pytest.fixture(scope="module")
def big():
    return render("--gpus", "8", "--tenants", "256", "--gpus-per-tenant", "8", "--labels", "6")


@pytest.mark.skipif(not PROMTOOL, reason="promtool (Debian package prometheus) is not installed")
def test_big_snapshot_passes_promtool_except_dcgm_camelcase_label(big):
    rc, problems = promtool(big)
    assert rc in (0, 3), problems  # 3: lint remarks only; 1 would be a parse error
    assert problems and all(dcgm_remark(p) for p in problems), problems


@pytest.mark.skipif(not PROMTOOL, reason="promtool (Debian package prometheus) is not installed")
def test_without_modelname_promtool_finds_nothing_but_dcgm_counter_names(big):
    rc, problems = promtool(re.sub(r',modelName="[^"]*"', "", big))
    assert rc in (0, 3) and all(TOTAL.match(p) for p in problems), problems
    # The five counters of dcgm-exporter's default set, and nothing of gpuslice's own.
    assert sorted({p.split()[0] for p in problems}) == [
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"]


def test_big_snapshot_has_every_row(big):
    samples = [ln for ln in big.splitlines() if ln and not ln.startswith("#")]
    rows = 256 * 8
    # GPU series: dcgm-exporter's 25 default fields x 8; tenants: used, share, gpu, throttled and
    # idle seconds, and the four violation series, for every row, and the two limits only where set (3/4 of the tenants have a memory
    # limit, 2/3 a compute limit); the deprecated names of the two 0-1 series every row has and
    # of the compute limit.
    vram_limited = sum(1 for t in range(256) if t % 4) * 8
    compute_limited = sum(1 for t in range(256) if t % 3) * 8
    assert len(samples) == 25 * 8 + 9 * rows + vram_limited + compute_limited + 7 + 2 * rows + compute_limited
    assert len({ln.rsplit(" ", 1)[0] for ln in samples}) == len(samples), "duplicate series"
