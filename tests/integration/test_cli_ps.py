"""`gpuslice ps` and `gpuslice gpus`: against a stand-in daemon, the aligned table has one row
per tenant and GPU with human units, labels sorted, and --json prints the daemon's reply as-is;
against the real daemon on the simulated GPU, three tenants with different limits show up in
`ps --json` with those limits (test_daemon_ps_*; see test_cli_live.py)."""
import json

from conftest import BIN, run
from fake_daemon import FakeDaemon, gpu, tenant, tenant_gpu

GPUSLICE = BIN / "gpuslice"

TENANTS = {"tenants": [
    tenant("alpha", labels={"team": "vision", "env": "prod"}, vram=8 << 30, compute=40, policy="cap",
           gpus=[tenant_gpu(0, used=3 << 30, limit=8 << 30, peak=5 << 30, share=0.375, gpu_s=75.5,
                            throttled_s=1.25)]),
    tenant("beta", user="bob", uid=1001, pid=77,
           gpus=[tenant_gpu(0, used=512 << 20), tenant_gpu(1, used=1 << 30, share=0.1)]),
    tenant("gamma", pid=9),
]}


def ps(sock, *extra):
    with FakeDaemon(sock, {("GET", "/v1/tenants"): (200, TENANTS)}):
        return run([GPUSLICE, "ps", "--socket", sock, *extra])


def test_ps_table_has_one_row_per_tenant_and_gpu(tmp_path):
    r = ps(tmp_path / "d.sock")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["TENANT", "USER", "PID", "STATE", "GPU", "VRAM", "VRAM-LIMIT", "PEAK",
                                "COMPUTE", "COMPUTE-LIMIT", "GPU-TIME", "THROTTLED", "VIOLATION",
                                "LABELS"]
    assert len(lines) == 1 + 1 + 2 + 1
    alpha = lines[1]
    for cell in ["alpha", "alice", "4242", "running", "3.0 GiB", "8.0 GiB", "5.0 GiB", "37.5%",
                 "40% cap", "1m15s", "1.2s", "env=prod,team=vision"]:
        assert cell in alpha, (cell, alpha)
    assert [ln.split()[0] for ln in lines[1:]] == ["alpha", "beta", "beta", "gamma"]
    assert "none" in lines[2]  # beta: no memory limit, no compute limit
    assert lines[4].split()[4] == "-"  # gamma uses no GPU yet


def test_ps_columns_are_aligned(tmp_path):
    lines = ps(tmp_path / "d.sock").stdout.splitlines()
    # Every row starts its USER column where the header's does.
    col = lines[0].index("USER")
    assert all(ln[col - 2:col] == "  " and ln[col] != " " for ln in lines)
    assert all(not ln.endswith(" ") for ln in lines)


def test_ps_json_is_the_daemons_reply(tmp_path):
    r = ps(tmp_path / "d.sock", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == TENANTS


def test_gpus_table_and_json(tmp_path):
    sock = tmp_path / "d.sock"
    reply = {"gpus": [gpu(0), gpu(1, tenants=0, utilization_pct=0)]}
    with FakeDaemon(sock, {("GET", "/v1/gpus"): (200, reply)}):
        t = run([GPUSLICE, "gpus", "--socket", sock])
        j = run([GPUSLICE, "gpus", "--socket", sock, "--json"])
    assert t.returncode == 0, t.stderr
    lines = t.stdout.splitlines()
    assert lines[0].split()[:4] == ["GPU", "NAME", "UUID", "PCI"]
    assert len(lines) == 3
    for cell in ["NVIDIA H100 80GB HBM3", "GPU-00000000-aaaa", "3.0 GiB / 80.0 GiB", "37%", "123.4 W",
                 "41 C", "1980 MHz", "2619 MHz"]:
        assert cell in lines[1]
    assert json.loads(j.stdout) == reply
