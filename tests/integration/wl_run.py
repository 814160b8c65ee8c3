"""Helpers for tests that drive build/bin/gpusim-workload: run it to completion and parse its
JSON lines, or start a long-running mode (hold) and wait for its ready line."""
import json
import subprocess

from conftest import BIN, run

WORKLOAD = BIN / "gpusim-workload"
GIB = 1 << 30
MIB = 1 << 20


def workload(args, env, timeout=120):
    """Runs the workload with args; returns (CompletedProcess, list of parsed JSON lines)."""
    proc = run([WORKLOAD] + [str(a) for a in args], env=env, timeout=timeout)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc, lines


def workload_ok(args, env, timeout=120):
    """Runs the workload, requires exit 0 and exactly one JSON line, and returns that line."""
    proc, lines = workload(args, env, timeout)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}: {proc.stderr}"
    assert len(lines) == 1, proc.stdout
    return lines[0]


def info(env):
    return workload_ok(["info"], env)


def start_hold(args, env):
    """Starts `hold` with a pipe on stdin and returns (Popen, ready line) once it holds memory."""
    proc = subprocess.Popen([str(WORKLOAD), "hold"] + [str(a) for a in args], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"hold {args} exited {proc.returncode}: {proc.stderr.read()}")
    ready = json.loads(line)
    assert ready["ready"] is True
    return proc, ready


def stop_hold(proc):
    """Ends a hold by closing its stdin; returns its final JSON line."""
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return json.loads(out.splitlines()[-1])
