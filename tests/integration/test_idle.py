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

from daemon_env import (GPUSLICE, MIB, Daemon, as_user_request, ensure_user, needs_root, shared_root,  # noqa: F401
                        wait_for)
from quota_env import for_python, start_python_tenant

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
    def __init__(self, daemon, name, labels=(), env=None, opts=()):
        self.name = name
        opts = list(opts)
        for l in labels:
            opts += ["--label", l]
        self.p, self.pid = start_python_tenant(name, opts, [str(PROBE)], dict(daemon.env, **(env or {})))

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


def holding(daemon, name, labels=(), env=None, size=256 * MIB, opts=()):
    t = Tenant(daemon, name, labels, env, opts)
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


def test_bad_duration_line_is_exactly_the_rule_the_field_and_what_is_wanted(shared_root):
    d = Daemon(shared_root, spec="a100-80gb")
    f = rules_file(shared_root, [{"name": "notebooks", "match": "type=notebook", "duration": "30x"}])
    r = subprocess.run([str(GPUSLICE), "daemon", "--foreground", "--idle-rules", f], env=d.env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr == (f"gpuslice: daemon: idle rules {f}: rule 'notebooks': field 'duration': "
                        "want a duration such as 900, \"30m\" or \"1h\"\n"), r.stderr


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
        # a tenant series like the others: the tenant's labels and its GPU's
        line = next(l for l in text.splitlines() if l.startswith("gpuslice_tenant_idle_seconds{") and 'tenant="nb"' in l)
        assert 'gpu="0"' in line and 'UUID="GPU-' in line and 'label_type="notebook"' in line, line
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


# ---- each action, end to end (idle_mode act) ----

def rule(*actions, **kw):
    return dict({"name": "nb", "match": "type=notebook", "threshold": 0.05, "duration": "15m",
                 "actions": list(actions)}, **kw)


def go_idle(d, name, minutes=16):
    """Moves the idle clock past the rule's 15 minutes."""
    wait_for(lambda: idle_of(d, name)["holds_memory"], what=f"{name} holds memory")
    settle(d)
    d.clock.advance(minutes * 60)


class Hook(http.server.BaseHTTPRequestHandler):
    bodies = []

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        Hook.bodies.append((self.headers["Content-Type"], json.loads(self.rfile.read(n))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


def test_notify_posts_the_documented_json_to_the_webhook(shared_root, tenants):
    srv = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Hook.bodies.clear()
    url = f"http://127.0.0.1:{srv.server_address[1]}/hook"
    d = start(shared_root, [rule({"action": "notify", "url": url})], (), "act")
    try:
        tenants.append(holding(d, "nb", ["type=notebook", "team=ml"]))
        go_idle(d, "nb")
        wait_for(lambda: Hook.bodies, what="the webhook's POST")
        ctype, body = Hook.bodies[0]
        assert ctype == "application/json"
        assert body["event"] == "idle" and body["tenant"] == "nb" and body["rule"] == "nb"
        assert body["labels"] == {"type": "notebook", "team": "ml"} and body["dry_run"] is False
        assert body["idle_seconds"] >= 900 and body["threshold"] == 0.05
        assert 0 <= body["device_time_fraction"] < 0.05 and body["vram_bytes"] >= 256 * MIB
        for k in ("node", "uid", "user", "cpu_cores", "at"):
            assert k in body, k
        assert [(r[1], r[2], r[5]) for r in rows(d, "nb")] == [("notify", 0, "")]
    finally:
        d.stop()
        srv.shutdown()


def test_signal_reaches_the_tenants_processes_which_keep_running(shared_root, tenants, tmp_path):
    marker = tmp_path / "usr1"
    d = start(shared_root, [rule({"action": "signal"})], (), "act")
    try:
        nb = holding(d, "nb", ["type=notebook"], env={"IDLE_USR1_FILE": str(marker)})
        tenants.append(nb)
        go_idle(d, "nb")
        wait_for(lambda: marker.exists() and marker.read_text(), what="SIGUSR1 in the tenant")
        assert marker.read_text().split() == ["usr1", str(nb.pid)]
        assert nb.cmd("meminfo")["total"] > 0  # it runs on
        assert [(r[1], r[2]) for r in rows(d, "nb")] == [("signal", 0)]
    finally:
        d.stop()


def nvml_used(daemon):
    r = subprocess.run([sys.executable, str(NVML), "meminfo"], env=for_python(daemon.env), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["nvml"]["v2"]["used"]


def test_suspend_frees_the_tenants_gpu_memory(shared_root, tenants):
    d = start(shared_root, [rule({"action": "suspend"})], (), "act", "--oversubscribe", "on")
    try:
        nb = holding(d, "nb", ["type=notebook"], size=8 << 30)
        tenants.append(nb)
        before = nvml_used(d)
        assert before >= 8 << 30
        go_idle(d, "nb")
        wait_for(lambda: d.get("/v1/tenants/nb")[1]["state"] == "suspended", what="nb suspended")
        assert nvml_used(d) <= before - (8 << 30)
        assert [(r[1], r[2], r[5]) for r in rows(d, "nb")] == [("suspend", 0, "")]
        wait_for(lambda: idle_of(d, "nb")["state"] == "suspended", what="the detector sees it suspended")
    finally:
        d.stop()


def test_stop_ends_the_tenant_and_the_ledger_records_why(shared_root, tenants):
    d = start(shared_root, [rule({"action": "stop", "grace": "5s"})], (), "act")
    try:
        nb = holding(d, "nb", ["type=notebook"])
        tenants.append(nb)
        go_idle(d, "nb")
        nb.p.wait(timeout=30)
        wait_for(lambda: "nb" not in d.tenants(), what="nb ended")
        (r,) = rows(d, "nb")
        assert r[0] == "nb" and r[1] == "stop" and r[2] == 0 and r[3] >= 900 and r[5] == ""
        assert "idle" in r[4] and "device time" in r[4] and "under 0.0500" in r[4], r[4]
        assert d.sql("SELECT ended_at IS NOT NULL FROM tenants WHERE name = 'nb'") == [(1,)]
    finally:
        d.stop()


def test_shrink_lowers_the_limits_live_to_what_the_tenant_holds(shared_root, tenants):
    d = start(shared_root, [rule({"action": "shrink"})], (), "act")
    try:
        nb = holding(d, "nb", ["type=notebook"], size=100 * MIB + 4096, opts=["--vram", "40Gi"])
        tenants.append(nb)
        go_idle(d, "nb")
        wait_for(lambda: d.get("/v1/tenants/nb")[1]["gpus"][0]["vram_limit_bytes"] < 40 << 30, what="nb shrunk")
        t = d.get("/v1/tenants/nb")[1]
        held = t["gpus"][0]["vram_used_bytes"]
        assert held >= 100 * MIB + 4096
        # what it holds, rounded up to a MiB, and a compute cap of what it used, at least 1%
        assert t["gpus"][0]["vram_limit_bytes"] == (held + MIB - 1) // MIB * MIB
        assert t["limits"]["compute_pct"] == pytest.approx(1.0, abs=0.01)
        assert nb.cmd(f"alloc plain {2 * MIB}") == {"rc": 2}  # CUDA_ERROR_OUT_OF_MEMORY, and it runs on
        assert nb.cmd("meminfo")["total"] > 0
        assert [(r[1], r[2], r[5]) for r in rows(d, "nb")] == [("shrink", 0, "")]
    finally:
        d.stop()


def test_suspension_by_an_idle_rule_shows_as_reclaimed_cost(shared_root, tenants):
    d = start(shared_root, [rule({"action": "suspend"})], (), "act")
    try:
        # A 40 GiB limit on an 80 GiB GPU: it holds half the GPU while it runs.
        tenants.append(holding(d, "nb", ["type=notebook"], opts=["--vram", "40Gi"]))
        go_idle(d, "nb")
        wait_for(lambda: d.get("/v1/tenants/nb")[1]["state"] == "suspended", what="nb suspended")
        time.sleep(3)
        status, body = d.get("/v1/usage?by=tenant")
        row = next(r for r in body["rows"] if r["key"] == "nb")
        assert row["suspended_seconds"] >= 2.5
        assert abs(row["reclaimed_gpu_seconds"] - 0.5 * row["suspended_seconds"]) < 0.05 * row["suspended_seconds"], row
        out = subprocess.run([str(GPUSLICE), "usage", "--cost", "--json", "--by", "tenant"], env=d.env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        j = json.loads(out.stdout)
        rate = j["cost"]["price_per_gpu_hour"]
        nb = next(r for r in j["rows"] if r["key"] == "nb")
        assert nb["cost"]["reclaimed"] > 0 and j["cost"]["reclaimed"] >= nb["cost"]["reclaimed"]
        assert abs(nb["cost"]["reclaimed"] - nb["reclaimed_gpu_seconds"] * rate / 3600) < 1e-6
    finally:
        d.stop()


def test_stop_kills_a_tenant_that_ignores_sigterm_after_the_grace(shared_root, tenants):
    d = start(shared_root, [rule({"action": "stop", "grace": "3s"})], (), "act")
    try:
        nb = holding(d, "stuck", ["type=notebook"], env={"IDLE_IGNORE_TERM": "1"})
        tenants.append(nb)
        go_idle(d, "stuck")
        wait_for(lambda: rows(d, "stuck"), what="the stop recorded")
        t0 = time.monotonic()
        time.sleep(1.5)
        assert nb.p.poll() is None  # SIGTERM ignored: it runs through the grace
        nb.p.wait(timeout=30)
        assert time.monotonic() - t0 >= 1.5
        wait_for(lambda: "stuck" not in d.tenants(), what="stuck ended")
        assert [(r[1], r[2]) for r in rows(d, "stuck")] == [("stop", 0)]
    finally:
        d.stop()


# ---- no false positives on the hard cases ----

def twenty_minutes(d, each=None):
    """20 minutes of the idle clock, a minute at a time, a sample or more apart."""
    for _ in range(20):
        if each:
            each()
        d.clock.advance(60)
        time.sleep(0.3)


def test_data_loading_tenant_cpu_busy_gpu_idle_is_not_acted_on_under_cpu_exemption(shared_root, tenants):
    d = start(shared_root, [rule({"action": "stop"}, cpu_exempt=0.3)], (), "act")
    try:
        nb = holding(d, "loader", ["type=notebook"], env={"IDLE_SPIN": "1"})
        tenants.append(nb)
        wait_for(lambda: idle_of(d, "loader")["holds_memory"], what="loader holds memory")
        settle(d)
        twenty_minutes(d)
        t = idle_of(d, "loader")
        assert t["state"] == "busy-cpu" and t["idle_seconds"] == 0 and t["cpu_cores"] >= 0.3, t
        assert t["device_time_fraction"] < 0.05
        assert rows(d, "loader") == [] and nb.p.poll() is None
    finally:
        d.stop()


def test_serving_tenant_with_moving_requests_counter_is_not_acted_on(shared_root, tenants):
    srv = rule({"action": "stop"}, name="serving", match="type=serving", requests_exempt=True)
    d = start(shared_root, [srv], (), "act")
    try:
        s = holding(d, "srv", ["type=serving"])
        tenants.append(s)
        wait_for(lambda: idle_of(d, "srv")["holds_memory"], what="srv holds memory")
        settle(d)
        twenty_minutes(d, lambda: d.request("POST", "/v1/tenants/srv/served", {"requests": 3}))
        t = idle_of(d, "srv")
        # Between two requests it is idle for a moment: never longer than a minute of the clock.
        assert t["state"] in ("serving", "idle") and t["idle_seconds"] <= 60, t
        assert rows(d, "srv") == [] and s.p.poll() is None
    finally:
        d.stop()


def test_tenant_in_its_grace_period_is_not_acted_on(shared_root, tenants):
    d = start(shared_root, [rule({"action": "stop"}, grace="1h")], (), "act")
    try:
        nb = holding(d, "young", ["type=notebook"])
        tenants.append(nb)
        wait_for(lambda: idle_of(d, "young")["holds_memory"], what="young holds memory")
        settle(d)
        twenty_minutes(d)
        t = idle_of(d, "young")
        assert t["state"] == "grace" and t["idle_seconds"] >= 1200 and t["would"].startswith("nothing: in grace"), t
        assert rows(d, "young") == [] and nb.p.poll() is None
    finally:
        d.stop()


# ---- schedules ----

PARIS_NIGHTS = {"name": "dev-nights", "match": "team=dev", "tz": "Europe/Paris",
                "windows": ["Mon-Fri 18:00-08:00", "Sat-Sun"]}
FRI_1759_PARIS = 1767977940.0  # Friday 2026-01-09 16:59:00 UTC


def state(d, name):
    return d.get(f"/v1/tenants/{name}")[1]["state"]


def test_schedule_suspends_at_18_holds_the_weekend_and_resumes_at_08(shared_root, tenants):
    d = start(shared_root, [], [PARIS_NIGHTS], "act")
    try:
        d.clock.set(FRI_1759_PARIS)
        dev = holding(d, "dev", ["team=dev"])
        other = holding(d, "prod", ["team=prod"])
        tenants += [dev, other]
        settle(d, 4)
        assert state(d, "dev") == "running"
        d.clock.set(FRI_1759_PARIS + 90)  # Friday 18:00:30 in Paris
        wait_for(lambda: state(d, "dev") == "suspended", what="dev suspended at 18:00")
        for t in (FRI_1759_PARIS + 64860, FRI_1759_PARIS + 2 * 86400 + 3660,
                  FRI_1759_PARIS + 3 * 86400 - 36000):  # Sat 12:00, Sun 19:00, Mon 07:59 in Paris
            d.clock.set(t)
            settle(d, 3)
            assert state(d, "dev") == "suspended", t
        d.clock.set(FRI_1759_PARIS + 3 * 86400 - 36000 + 90)  # Monday 08:00:30 in Paris
        wait_for(lambda: state(d, "dev") == "running", what="dev resumed at 08:00")
        assert state(d, "prod") == "running"
        acts = [(r[0], r[1], r[2]) for r in rows(d, "dev")]
        assert acts == [("schedule:dev-nights", "suspend", 0), ("schedule:dev-nights", "resume", 0)], acts
        assert rows(d, "prod") == []
        assert dev.cmd("meminfo")["total"] > 0
    finally:
        d.stop()


@needs_root
def test_only_an_admin_may_change_the_rules_and_a_user_sees_only_their_tenants(shared_root, tenants):
    d = start(shared_root, [NOTEBOOK])
    try:
        pw = ensure_user("gs-idle-user")
        tenants.append(holding(d, "root-nb", ["type=notebook"]))
        wait_for(lambda: idle_of(d, "root-nb"), what="root-nb listed")
        status, body = as_user_request(d, pw, "PUT", "/v1/idle/rules", {"rules": []})
        assert status == 403, body
        assert [r["name"] for r in d.get("/v1/idle/rules")[1]["rules"]] == ["notebooks"]
        status, body = as_user_request(d, pw, "GET", "/v1/idle")
        assert status == 200 and body["tenants"] == [], body
    finally:
        d.stop()
