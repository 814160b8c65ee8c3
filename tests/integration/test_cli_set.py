"""`gpuslice set`: sends exactly the changes asked for as PATCH /v1/tenants/NAME with a JSON body,
checks values before sending (a bad size, percentage, policy or priority is a usage error and
nothing is sent), prints the tenant's new limits, and reports an unknown tenant with the daemon's
text and exit 1. The real daemon's side (the limit applies at the next allocation) is in
test_cli_live.py."""
import json

import pytest

from conftest import BIN, run
from fake_daemon import FakeDaemon, tenant

GPUSLICE = BIN / "gpuslice"


def set_(sock, *args, routes=None):
    routes = routes or {("PATCH", "/v1/tenants/alpha"):
                        (200, tenant("alpha", vram=8 << 30, compute=40, policy="cap", priority="high"))}
    with FakeDaemon(sock, routes) as d:
        r = run([GPUSLICE, "set", "--socket", sock, *args])
    return r, d.requests


def test_set_sends_only_what_was_given(tmp_path):
    r, reqs = set_(tmp_path / "d.sock", "alpha", "--vram", "8G", "--compute", "40")
    assert r.returncode == 0, r.stderr
    (method, path, body, ctype), = reqs
    assert (method, path, ctype) == ("PATCH", "/v1/tenants/alpha", "application/json")
    assert body == {"vram": "8G", "compute_pct": 40.0}


def test_set_all_fields_and_decimal_compute(tmp_path):
    r, reqs = set_(tmp_path / "d.sock", "alpha", "--compute", "12.5", "--compute-policy", "cap",
                   "--priority", "high")
    assert r.returncode == 0, r.stderr
    assert reqs[0][2] == {"compute_pct": 12.5, "compute_policy": "cap", "priority": "high"}


def test_set_prints_the_new_limits(tmp_path):
    r, _ = set_(tmp_path / "d.sock", "alpha", "--vram", "8G")
    assert r.stdout == "alpha: vram 8.0 GiB, compute 40% cap, priority high\n"


def test_set_json_prints_the_tenant(tmp_path):
    r, _ = set_(tmp_path / "d.sock", "--json", "alpha", "--priority", "high")
    assert json.loads(r.stdout)["limits"]["priority"] == "high"


def test_tenant_name_is_escaped_in_the_path(tmp_path):
    routes = {("PATCH", "/v1/tenants/a%2Fb%20c"): (200, tenant("a/b c"))}
    r, reqs = set_(tmp_path / "d.sock", "a/b c", "--priority", "low", routes=routes)
    assert r.returncode == 0, r.stderr
    assert reqs[0][1] == "/v1/tenants/a%2Fb%20c"


def test_unknown_tenant_reports_daemon_text_and_exit_1(tmp_path):
    routes = {("PATCH", "/v1/tenants/ghost"): (404, {"error": "no tenant 'ghost'"})}
    r, _ = set_(tmp_path / "d.sock", "ghost", "--vram", "1G", routes=routes)
    assert r.returncode == 1
    assert r.stderr == "gpuslice: set: no tenant 'ghost'\n"


@pytest.mark.parametrize("args,why", [
    (["alpha"], "nothing to change"),
    (["alpha", "--vram", "8X"], "--vram"),
    (["alpha", "--compute", "0"], "--compute '0'"),
    (["alpha", "--compute", "101"], "--compute '101'"),
    (["alpha", "--compute-policy", "greedy"], "--compute-policy 'greedy'"),
    (["alpha", "--priority", "urgent"], "--priority 'urgent'"),
    (["alpha", "beta", "--priority", "low"], "'beta': unexpected argument"),
])
def test_bad_values_are_usage_errors_and_nothing_is_sent(tmp_path, args, why):
    r, reqs = set_(tmp_path / "d.sock", *args)
    assert r.returncode == 2
    assert r.stderr.startswith("gpuslice: set: ") and why in r.stderr
    assert reqs == []


@pytest.mark.parametrize("pct", ["0.00001", "0.00005", "1e-9"])
def test_compute_below_a_millionth_is_one_usage_line_naming_the_smallest(tmp_path, pct):
    # The limit is held in millionths: sent, it would arrive as 0, which means no limit.
    r, reqs = set_(tmp_path / "d.sock", "alpha", "--compute", pct)
    assert r.returncode == 2 and reqs == []
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("gpuslice: set: "), r.stderr
    assert f"'{pct}'" in r.stderr and "0.0001" in r.stderr, r.stderr


def test_none_lifts_limits_and_gpu_picks_one(tmp_path):
    r, reqs = set_(tmp_path / "d.sock", "alpha", "--vram", "none", "--compute", "none")
    assert r.returncode == 0, r.stderr
    assert reqs[0][2] == {"vram": None, "compute_pct": None}
    r, reqs = set_(tmp_path / "d2.sock", "alpha", "--vram", "25%", "--gpu", "1")
    assert r.returncode == 0, r.stderr
    assert reqs[0][2] == {"vram": "25%", "gpu": 1}


def test_gpu_without_vram_is_a_usage_error(tmp_path):
    r, reqs = set_(tmp_path / "d.sock", "alpha", "--gpu", "1", "--priority", "low")
    assert r.returncode == 2 and "--gpu applies to --vram" in r.stderr
    assert reqs == []
