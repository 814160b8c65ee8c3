"""Starting the daemon: without a driver it says so in one line and exits 1; with
GPUSLICE_SIM set it runs on the simulated GPU and serves /v1/health, /v1/gpus, /metrics and
/health. Its settings come from one table: --help lists them, --print-config is the shipped
sample, a config file is read with the documented precedence, and mistakes are usage errors.
A second daemon on the same socket is refused; without --foreground it detaches once serving."""
import json
import os
import pathlib
import signal
import subprocess
import urllib.request

from conftest import run
from daemon_env import GPUSLICE, Daemon, daemon, shared_root, wait_for  # noqa: F401

REPO = pathlib.Path(__file__).resolve().parents[2]
SETTINGS = ["socket", "socket_mode", "metrics_listen", "ledger", "state_dir", "interval", "admin_group", "log_level"]


def test_without_a_driver_it_says_so_in_one_line(shared_root):
    d = Daemon(shared_root)
    env = {k: v for k, v in d.env.items() if k not in ("GPUSLICE_SIM", "LD_LIBRARY_PATH")}
    r = run([GPUSLICE, "daemon", "--foreground"], env=env, timeout=30)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuslice: daemon: no NVIDIA driver"), r.stderr
    assert "GPUSLICE_SIM" in lines[0]


def test_on_the_simulated_gpu_it_serves_the_node(shared_root):
    d = Daemon(shared_root, spec="h100-80gb:2,t4").start()
    try:
        status, health = d.get("/v1/health")
        assert status == 200 and health["status"] == "ok" and health["gpus"] == 3 and health["tenants"] == 0
        status, gpus = d.get("/v1/gpus")
        assert [g["name"] for g in gpus["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2 + ["Tesla T4"]
        assert gpus["gpus"][2]["pci_bus_id"] == "00000000:12:00.0"
        assert gpus["gpus"][0]["uuid"].startswith("GPU-")
        # What the simulated NVML says of each model (sim/README.md): Hopper 9.0, Turing 7.5.
        assert [g["compute_capability"] for g in gpus["gpus"]] == ["9.0", "9.0", "7.5"]
        text = urllib.request.urlopen(f"http://127.0.0.1:{d.port}/metrics", timeout=10).read().decode()
        assert "DCGM_FI_DEV_FB_FREE{" in text
        tcp = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{d.port}/health", timeout=10).read())
        assert tcp["status"] == "ok"
    finally:
        d.stop()
    assert not d.sock.exists(), "a daemon that stops removes its socket"


def test_help_lists_every_setting():
    r = run([GPUSLICE, "daemon", "--help"])
    assert r.returncode == 0
    for name in SETTINGS:
        assert f"--{name.replace('_', '-')}" in r.stdout


def test_the_shipped_sample_config_is_the_settings_table():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSLICE_")}
    r = run([GPUSLICE, "daemon", "--print-config"], env=env)
    assert r.returncode == 0
    assert r.stdout == (REPO / "packaging" / "gpuslice.conf.sample").read_text()
    for name in SETTINGS:
        assert f"\n#{name} " in r.stdout


def test_config_file_then_environment_then_flags(shared_root):
    d = Daemon(shared_root)
    conf = shared_root / "gpuslice.conf"
    conf.write_text(f"# comment\ninterval = 7\nlog_level debug\nmetrics_listen off\nsocket {d.sock}\n")
    env = dict(d.env)
    del env["GPUSLICE_METRICS_LISTEN"]
    env["GPUSLICE_INTERVAL"] = "0.2"  # the environment beats the file...
    p = subprocess.Popen([str(GPUSLICE), "daemon", "--foreground", "--config", str(conf), "--interval", "0.3"],
                         env=env, stderr=subprocess.PIPE, text=True)  # ...and the flag beats both
    try:
        d.proc = p
        wait_for(lambda: d.sock.exists() and d.get("/v1/health")[0] == 200, what="the daemon")
        t0 = d.get("/v1/health")[1]["samples_total"]
        wait_for(lambda: d.get("/v1/health")[1]["samples_total"] >= t0 + 3, what="three samples")
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    assert "metrics on off" in err  # from the file
    assert p.returncode == 0


def test_setting_mistakes_are_usage_errors(shared_root):
    conf = shared_root / "bad.conf"
    conf.write_text("colour blue\n")
    for args in (["--interval", "0"], ["--interval", "x"], ["--socket-mode", "999"], ["--log-level", "loud"],
                 ["--config", str(conf)], ["--bogus"], ["extra"]):
        r = run([GPUSLICE, "daemon", "--foreground"] + args)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("gpuslice: daemon: "), r.stderr
    r = run([GPUSLICE, "daemon", "--config", str(shared_root / "missing.conf")])
    assert r.returncode == 1 and "missing.conf" in r.stderr


def test_a_second_daemon_on_the_same_socket_is_refused(daemon):
    # Its own state dir and ledger: one state dir is refused earlier, by its lock.
    env = dict(daemon.env, GPUSLICE_STATE_DIR=str(daemon.root / "state2"), GPUSLICE_LEDGER_DB=str(daemon.root / "l2.db"))
    r = run([GPUSLICE, "daemon", "--foreground", "--metrics-listen", "off"], env=env, timeout=30)
    assert r.returncode == 1 and "another daemon is listening" in r.stderr, r.stderr
    assert daemon.get("/v1/health")[0] == 200


def test_without_foreground_it_detaches_once_serving(shared_root):
    d = Daemon(shared_root)
    r = run([GPUSLICE, "daemon"], env=d.env, timeout=60)
    assert r.returncode == 0, r.stderr
    status, health = d.get("/v1/health")  # serving as soon as the command returns
    assert status == 200
    os.kill(health["pid"], signal.SIGTERM)
    wait_for(lambda: not d.sock.exists(), what="the detached daemon to stop")
