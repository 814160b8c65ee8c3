"""Idle tenants found and acted on per tenant (docs/idle.md), on the simulated GPU: rules in the
config and through the API, the detector with a test-only fake clock (GPUSLICE_TEST_CLOCK_FILE),
`gpuslice idle`, the dry run, /metrics, the ledger's idle_actions, each action end to end, the
hard cases that must not be acted on, and schedules."""
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from daemon_env import GPUSLICE, MIB, Daemon, shared_root, wait_for  # noqa: F401 (a fixture)
from quota_env import for_python

HERE = Path(__file__).resolve().parent
PROBE = HERE / "idle_probe.py"
NVML = HERE / "nvml_probe.py"
T0 = 1767949140.0  # Friday 2026-01-09 08:59:00 UTC (09:59 in Paris)


class Clock:
    """The daemon's idle clock (GPUSLICE_TEST_CLOCK_FILE)."""

    def __init__(self, path, t=T0):
        self.path = path
        self.set(t)

    def set(self, t):
        self.t = t
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(f"{t:.3f}\n")
        os.replace(tmp, self.path)

    def advance(self, s):
        self.set(self.t + s)


class Tenant:
    def __init__(self, daemon, name, labels=(), env=None):
        self.name = name
        opts = []
        for l in labels:
            opts += ["--label", l]
        e = for_python(dict(daemon.env, **(env or {})))
        self.p = subprocess.Popen([str(GPUSLICE), "run", "--name", name, *opts, "--", sys.executable, str(PROBE)],
                                  env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        assert line, self.p.stderr.read()
        self.pid = json.loads(line)["pid"]

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        assert out, f"tenant {self.name}: {self.p.stderr.read()}"
        return json.loads(out)

    def end(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("exit\n")
                self.p.stdin.flush()
                self.p.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait()


@pytest.fixture
def tenants():
    made = []
    yield made
    for t in made:
        t.end()


def holding(daemon, name, labels=(), env=None, size=256 * MIB):
    t = Tenant(daemon, name, labels, env)
    assert t.cmd(f"alloc plain {size}")["ptr"]
    return t


def rules_file(root, rules, schedules=()):
    p = Path(root) / "idle-rules.json"
    p.write_text(json.dumps({"rules": list(rules), "schedules": list(schedules)}))
    return p


def start(root, rules, schedules=(), mode="dry-run", *opts):
    clock = Clock(Path(root) / "clock")
    d = Daemon(root, spec="a100-80gb", interval=0.2)
    d.env["GPUSLICE_TEST_CLOCK_FILE"] = str(clock.path)
    d.start("--idle-rules", rules_file(root, rules, schedules), "--idle-mode", mode, *opts)
    d.clock = clock
    return d


def idle_of(daemon, name):
    status, body = daemon.get("/v1/idle")
    assert status == 200, body
    return next(t for t in body["tenants"] if t["name"] == name)


def rows(daemon, name):
    return daemon.sql("SELECT a.rule, a.action, a.dry_run, a.idle_seconds, a.reason, a.error FROM idle_actions a "
                      "JOIN tenants t ON t.id = a.tenant_id WHERE t.name = ? ORDER BY a.at", name)


def settle(daemon, n=3):
    """n samples' worth of time (0.2 s each)."""
    time.sleep(0.25 * n)


NOTEBOOK = {"name": "notebooks", "match": "type=notebook", "threshold": 0.05, "duration": "15m",
            "actions": [{"action": "signal"}, {"action": "suspend", "after": "15m"}]}


# ---- bad input ----

@pytest.mark.parametrize("rule, field", [
    ({"name": "nb", "match": "type=notebook", "duration": "30x"}, "duration"),
    ({"name": "nb", "match": "type notebook", "duration": "30m"}, "match"),
    ({"name": "nb", "duration": "30m", "threshold": 2}, "threshold"),
    ({"name": "nb", "duration": "30m", "actions": [{"action": "explode"}]}, "actions[].action"),
    ({"name": "nb", "duration": "30m", "actions": [{"action": "signal", "signal": "SIGFOO"}]}, "actions[].signal"),
    ({"name": "nb", "duration": "30m", "colour": "red"}, "colour"),
])
def test_bad_rule_in_config_refuses_start_with_one_line_naming_rule_and_field(shared_root, rule, field):
    d = Daemon(shared_root, spec="a100-80gb")
    r = subprocess.run([str(GPUSLICE), "daemon", "--foreground", "--idle-rules", rules_file(shared_root, [rule])],
                       env=d.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "rule 'nb'" in lines[0] and f"field '{field}'" in lines[0], lines[0]


@pytest.mark.parametrize("sched, field", [
    ({"name": "dev", "match": "team=dev", "tz": "Mars/Olympus", "windows": ["Sat-Sun"]}, "tz"),
    ({"name": "dev", "match": "team=dev", "windows": ["Mon-Fry 18:00-08:00"]}, "windows"),
    ({"name": "dev", "match": "team=dev", "windows": ["Mon-Fri 18:00-25:00"]}, "windows"),
])
def test_bad_schedule_in_config_refuses_start_naming_schedule_and_field(shared_root, sched, field):
    d = Daemon(shared_root, spec="a100-80gb")
    r = subprocess.run([str(GPUSLICE), "daemon", "--foreground", "--idle-rules",
                        rules_file(shared_root, [], [sched])], env=d.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "schedule 'dev'" in lines[0] and f"field '{field}'" in lines[0], r.stderr


def test_put_bad_rule_is_400_and_old_rules_stay_in_force(shared_root):
    d = start(shared_root, [NOTEBOOK])
    try:
        status, body = d.request("PUT", "/v1/idle/rules",
                                 {"rules": [{"name": "x", "duration": "15m", "grace": "soon"}]})
        assert status == 400 and "rule 'x'" in body["error"] and "field 'grace'" in body["error"], body
        status, body = d.get("/v1/idle/rules")
        assert status == 200 and [r["name"] for r in body["rules"]] == ["notebooks"], body
        status, body = d.request("PUT", "/v1/idle/rules", {"rules": [dict(NOTEBOOK, name="nb2")]})
        assert status == 200, body
        assert [r["name"] for r in d.get("/v1/idle/rules")[1]["rules"]] == ["nb2"]
    finally:
        d.stop()


# ---- the detector, the dry run, the CLI, metrics and the ledger ----

def test_idle_tenant_is_detected_and_dry_run_records_without_acting(shared_root, tenants):
    d = start(shared_root, [NOTEBOOK])
    try:
        nb = holding(d, "nb", ["type=notebook"])
        tenants.append(nb)
        wait_for(lambda: idle_of(d, "nb")["holds_memory"], what="nb holds memory")
        settle(d)
        assert idle_of(d, "nb")["rule"] == "notebooks"
        d.clock.advance(16 * 60)
        t = wait_for(lambda: (lambda x: x if x["idle_seconds"] >= 900 and x["did"] else None)(idle_of(d, "nb")),
                     what="nb idle for 15 min")
        assert t["state"] == "idle" and t["did"].startswith("would signal"), t
        assert t["would"].startswith("suspend in"), t
        r = rows(d, "nb")
        assert [(x[0], x[1], x[2]) for x in r] == [("notebooks", "signal", 1)], r
        assert r[0][3] >= 900 and "device time" in r[0][4]
        # Nothing was done: it is not suspended.
        assert d.get("/v1/tenants/nb")[1]["state"] == "running"
        # The CLI, both ways.
        out = subprocess.run([str(GPUSLICE), "idle", "--json"], env=d.env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        j = json.loads(out.stdout)
        assert j["mode"] == "dry-run" and any(x["name"] == "nb" and x["idle_seconds"] >= 900 for x in j["tenants"])
        out = subprocess.run([str(GPUSLICE), "idle"], env=d.env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "nb" in out.stdout and "would signal" in out.stdout, out.stdout
        # /metrics.
        import urllib.request
        text = urllib.request.urlopen(f"http://127.0.0.1:{d.port}/metrics", timeout=10).read().decode()
        line = next(l for l in text.splitlines() if l.startswith('gpuslice_tenant_idle_seconds{tenant="nb"'))
        assert float(line.split()[-1]) >= 900, line
        assert 'gpuslice_idle_actions_total{action="signal",rule="notebooks",dry_run="true"} 1' in text
        # GPU 0 holds the tenant's memory: not empty.
        assert 'gpuslice_gpu_empty{gpu="0"' in text and d.get("/v1/idle")[1]["empty_gpus"] == []
    finally:
        d.stop()


def test_busy_tenant_is_not_idle(shared_root, tenants):
    d = start(shared_root, [NOTEBOOK])
    try:
        nb = holding(d, "busy", ["type=notebook"])
        tenants.append(nb)
        nb.cmd("launch 60000000")  # a 60 s kernel: the GPU is busy for the tenant
        settle(d, 5)
        for _ in range(20):
            d.clock.advance(60)
            time.sleep(0.25)
        t = idle_of(d, "busy")
        assert t["state"] == "active" and t["idle_seconds"] == 0 and t["device_time_fraction"] > 0.5, t
        assert rows(d, "busy") == []
    finally:
        d.stop()


def test_gpu_with_no_tenant_memory_is_reported_empty(shared_root):
    d = start(shared_root, [NOTEBOOK])
    try:
        settle(d)
        assert d.get("/v1/idle")[1]["empty_gpus"] == [0]
    finally:
        d.stop()
