"""MPS for a GPU in mps mode, with tests/mps/mps_control_standin.py standing in for
nvidia-cuda-mps-control (the real one needs a GPU; tests/gpu/check_mps.sh runs it where one is
lent): one control daemon per GPU with its own pipe and log directories and the GPU
exclusive-process; two tenants' thread percentages and pinned memory limits sent to it before
their commands start, and their own in their clients' environment; a server fault reported
and the control daemon restarted once its clients are gone; the daemon's shutdown stopping it
all and giving the GPU its compute mode back."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import BIN, run
from daemon_env import Daemon, wait_for
from quota_env import for_python

GPUSLICE = BIN / "gpuslice"
HERE = pathlib.Path(__file__).resolve().parent
STANDIN = HERE.parent / "mps" / "mps_control_standin.py"
PROBE = HERE / "mig_probe.py"
EXCLUSIVE_PROCESS = 3
# A tenant's command: its MPS environment and when it started, then it waits for stdin.
CLIENT = ("import json, os, sys, time; print(json.dumps({'t': time.time(), 'env': {k: v for k, v in os.environ.items() "
          "if k.startswith('CUDA_MPS_')}}), flush=True); sys.stdin.read()")


def running(pid):
    """Whether pid runs: a zombie does not (whoever adopted it may not have reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def compute_mode(env, gpu):
    p = subprocess.run([sys.executable, str(PROBE), "compute_mode", str(gpu)], env=for_python(env),
                       capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout)["mode"]


def control(d, gpu, line):
    """A command to GPU gpu's control daemon, through the stand-in's client, as a test's own."""
    mps = d.get("/v1/gpus")[1]["gpus"][gpu]["mps"]
    env = dict(d.env, CUDA_MPS_PIPE_DIRECTORY=mps["pipe_directory"], CUDA_MPS_LOG_DIRECTORY=mps["log_directory"])
    return subprocess.run([sys.executable, str(STANDIN)], input=line + "\n", env=env, capture_output=True,
                          text=True, timeout=60).stdout.strip()


def told(d, gpu=0):
    """What the stand-in was told: (time, command) in order."""
    log = pathlib.Path(d.get("/v1/gpus")[1]["gpus"][gpu]["mps"]["log_directory"]) / "control.log"
    out = []
    for line in log.read_text().splitlines():
        t, cmd = line.split(" ", 1)
        out.append((float(t), cmd))
    return out


@pytest.fixture
def node(tmp_path):
    d = Daemon(tmp_path / "node", spec="h100-80gb:2", interval=0.3)
    d.env["GPUSLICE_MPS_CONTROL"] = str(STANDIN)
    yield d
    d.stop()


@pytest.fixture
def clients():
    procs = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.stdin.close()
            p.wait(timeout=30)


def start_client(node, name, *opts):
    p = subprocess.Popen([str(GPUSLICE), "run", "--name", name, *opts, "--", sys.executable, "-c", CLIENT],
                         env=node.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line, p.stderr.read()
    return p, json.loads(line)


def test_a_gpu_in_mps_mode_gets_its_own_control_daemon_and_exclusive_process(node):
    node.start("--sharing", "0=mps")
    gpus = node.get("/v1/gpus")[1]["gpus"]
    mps = gpus[0]["mps"]
    assert mps["state"] == "running" and gpus[1]["mps"] is None
    assert mps["pipe_directory"] == str(node.state / "mps" / "gpu0" / "pipe")
    assert mps["log_directory"] == str(node.state / "mps" / "gpu0" / "log")
    pid = int((pathlib.Path(mps["pipe_directory"]) / "nvidia-cuda-mps-control.pid").read_text())
    assert pid == mps["control_pid"] and running(pid)
    # The control daemon serves its GPU only.
    assert told(node)[0][1] == f"started pid={pid} CUDA_VISIBLE_DEVICES={gpus[0]['uuid']}"
    assert compute_mode(node.env, 0) == EXCLUSIVE_PROCESS and compute_mode(node.env, 1) == 0


def test_two_tenants_limits_reach_the_control_daemon_before_their_contexts(node, clients):
    node.start("--sharing", "0=mps")
    a, ra = start_client(node, "a", "--gpu", "0", "--compute", "30", "--vram", "4Gi")
    clients.append(a)
    b, rb = start_client(node, "b", "--gpu", "0", "--compute", "70", "--vram", "8Gi")
    clients.append(b)
    cmds = told(node)
    server = next(c.split()[1] for _, c in cmds if c.startswith("set_active_thread_percentage"))
    assert int(control(node, 0, "get_server_list")) == int(server)
    uid = os.getuid()
    settings = [(t, c) for t, c in cmds if not c.startswith(("get_", "started"))]
    assert [c for _, c in settings] == [
        f"start_server -uid {uid}",
        f"set_active_thread_percentage {server} 30", f"set_device_pinned_mem_limit {server} 0 4096M",
        # One user, one server: it gets the largest of its tenants', each client lowers its own.
        f"set_active_thread_percentage {server} 70", f"set_device_pinned_mem_limit {server} 0 8192M",
    ]
    assert settings[2][0] < ra["t"] < settings[3][0] and settings[4][0] < rb["t"]
    pipe = str(node.state / "mps" / "gpu0" / "pipe")
    assert ra["env"] == {"CUDA_MPS_PIPE_DIRECTORY": pipe, "CUDA_MPS_LOG_DIRECTORY": pipe[:-4] + "log",
                         "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4096M"}
    assert rb["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "70"
    assert rb["env"]["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=8192M"
    assert control(node, 0, f"get_active_thread_percentage {server}") == "70"
    mps = node.get("/v1/tenants/a")[1]["mps"]
    assert mps == {"gpu": 0, "pipe_directory": pipe, "log_directory": pipe[:-4] + "log",
                   "active_thread_percentage": 30, "pinned_device_mem_limit": "0=4096M"}
    # A tenant on a GPU that is not in mps mode is no MPS client.
    c, rc = start_client(node, "c", "--gpu", "1", "--compute", "50")
    clients.append(c)
    assert rc["env"] == {} and "mps" not in node.get("/v1/tenants/c")[1]


def test_a_server_fault_is_reported_and_the_server_restarted_once_its_clients_exit(node, clients):
    node.start("--sharing", "0=mps")
    a, _ = start_client(node, "a", "--gpu", "0", "--compute", "40")
    clients.append(a)
    server = control(node, 0, "get_server_list")
    first = node.get("/v1/gpus")[1]["gpus"][0]["mps"]["control_pid"]
    held = subprocess.Popen(["sleep", "300"])  # a client of the server, still running
    try:
        control(node, 0, f"standin_client {server} {held.pid}")
        control(node, 0, f"standin_fault {server}")
        wait_for(lambda: node.get("/v1/gpus")[1]["gpus"][0]["mps"]["state"] == "fault", timeout=30,
                 what="the fault")
        log = node.log.read_text()
        assert f"MPS: GPU 0: server {server} is in FAULT" in log and "tenants affected: 'a'" in log
        time.sleep(3)  # while a client runs, the server stays
        assert node.get("/v1/gpus")[1]["gpus"][0]["mps"]["control_pid"] == first
    finally:
        held.kill()
        held.wait()
    wait_for(lambda: node.get("/v1/gpus")[1]["gpus"][0]["mps"]["state"] == "running", timeout=30,
             what="the restart")
    mps = node.get("/v1/gpus")[1]["gpus"][0]["mps"]
    assert mps["control_pid"] != first and running(mps["control_pid"])
    assert "control daemon restarted after a server fault" in node.log.read_text()
    assert [c for _, c in told(node)][-1].startswith(("started", "get_"))


def test_the_daemons_shutdown_stops_the_control_daemon_and_gives_the_compute_mode_back(node, clients):
    node.start("--sharing", "0=mps")
    mps = node.get("/v1/gpus")[1]["gpus"][0]["mps"]
    a, _ = start_client(node, "a", "--gpu", "0", "--compute", "40")
    clients.append(a)
    server = int(control(node, 0, "get_server_list"))
    node.stop()
    assert not running(mps["control_pid"]) and not running(server)
    assert not (pathlib.Path(mps["pipe_directory"]) / "nvidia-cuda-mps-control.pid").exists()
    log = pathlib.Path(mps["log_directory"]) / "control.log"
    assert log.read_text().splitlines()[-1].split(" ", 1)[1] == "quit"
    assert compute_mode(node.env, 0) == 0


def test_a_missing_control_program_stops_the_start_with_one_line(node):
    node.env["GPUSLICE_MPS_CONTROL"] = str(node.root / "no-such-mps-control")
    p = run([GPUSLICE, "daemon", "--foreground", "--sharing", "0=mps"], env=node.env, timeout=60)
    assert p.returncode == 1 and p.stderr.count("\n") == 1
    assert p.stderr.startswith("gpuslice: daemon: MPS: GPU 0: cannot run ") and "mps_control setting" in p.stderr


def test_mps_exclusive_off_leaves_the_compute_mode_alone(node):
    node.start("--sharing", "0=mps", "--mps-exclusive", "off")
    assert node.get("/v1/gpus")[1]["gpus"][0]["mps"]["state"] == "running"
    assert compute_mode(node.env, 0) == 0
