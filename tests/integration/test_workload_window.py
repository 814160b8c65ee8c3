"""The measuring stick of the compute-share tests: `gpusim-workload busy` started at a given
CLOCK_MONOTONIC instant (--start-at-ns) reports the device time of its own kernels inside a
window (--window-start-ns/--window-end-ns) exactly, and with --latency the launch-to-
completion time of each step, waits behind other processes' kernels included. No gpuslice
here: plain processes on the simulated GPU, which runs one kernel at a time."""
import json
import subprocess
import time

import pytest

from compute_util import measure_until
from conftest import run
from wl_run import WORKLOAD, workload, workload_ok

S = 1_000_000_000


def busy_at(env, start, *args):
    return subprocess.Popen([str(WORKLOAD), "busy", "--start-at-ns", str(start)] + [str(a) for a in args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def line_of(p):
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return json.loads(out)


def test_start_at_starts_then_and_stops_after_the_given_seconds(sim_env):
    def measure():
        start = time.monotonic_ns() + S // 2
        return start, line_of(busy_at(sim_env, start, "--seconds", "1", "--kernel-us", "1000"))

    # measure_until: a try the VM's host starved of CPU is measured again.
    start, line = measure_until(measure, lambda r: r[1]["window_kernel_seconds"] >= 0.995, label="alone for 1 s")
    assert start <= line["start_ns"] < start + S // 2
    assert (line["window_start_ns"], line["window_end_ns"]) == (start, start + S)
    # Alone, the device is this process's for the whole window, to within a kernel at each edge.
    assert 0.995 <= line["window_kernel_seconds"] <= 1.0 + 1e-5
    assert line["end_ns"] >= start + S


def test_window_counts_only_device_time_inside_it(sim_env):
    def measure():
        start = time.monotonic_ns() + S // 2
        return line_of(busy_at(sim_env, start, "--seconds", "2", "--kernel-us", "1000",
                               "--window-start-ns", start + S // 2, "--window-end-ns", start + S))

    line = measure_until(measure, lambda x: x["window_kernel_seconds"] == pytest.approx(0.5, abs=0.005),
                         label="a 0.5 s window of 2 s")
    assert line["window_kernel_seconds"] == pytest.approx(0.5, abs=0.005)
    assert line["window_kernel_seconds"] <= 0.5 + 1e-5
    assert line["requested_kernel_seconds"] > 1.9


@pytest.mark.parametrize("launch", ["plain", "graph"])
def test_processes_started_together_account_for_the_whole_window_between_them(sim_env, launch):
    def measure():
        start = time.monotonic_ns() + S
        procs = [busy_at(sim_env, start, "--seconds", "2", "--kernel-us", "700", "--launch", launch) for _ in range(3)]
        return [line_of(p) for p in procs]

    lines = measure_until(measure, lambda ls: sum(x["window_kernel_seconds"] for x in ls) >= 1.99,
                          label=f"three together, {launch}")
    total = sum(x["window_kernel_seconds"] for x in lines)
    # One kernel at a time: never more than the window, and saturating tenants leave no gap.
    assert 1.99 <= total <= 2.0 + 1e-4
    for x in lines:
        assert x["window_kernel_seconds"] > 0.3


def test_latency_of_a_lone_paced_tenant_is_its_kernel_time(sim_env):
    line = workload_ok(["busy", "--seconds", "1", "--duty", "0.2", "--kernel-us", "2000", "--latency"], sim_env)
    assert line["latency_steps"] == line["kernels"] >= 50
    # Never shorter than the kernel, to within the reference event's host time (~10 us).
    assert 0.99 * 2000 <= line["latency_p50_us"] <= line["latency_p99_us"] <= line["latency_max_us"]
    assert "window_kernel_seconds" not in line


def test_latency_includes_waiting_behind_other_processes_kernels(sim_env):
    start = time.monotonic_ns() + S // 2
    hog = busy_at(sim_env, start, "--seconds", "1.5", "--kernel-us", "10000")
    paced = busy_at(sim_env, start, "--seconds", "1.5", "--duty", "0.1", "--kernel-us", "1000", "--latency")
    hog_line, line = line_of(hog), line_of(paced)
    assert hog_line["window_kernel_seconds"] > 1.0
    # The hog keeps 4 kernels of 10 ms queued: a paced kernel waits behind at least 3 of them.
    assert line["latency_p50_us"] >= 30000


@pytest.mark.parametrize("args,why", [
    (["--window-start-ns", "10", "--window-end-ns", "10"], "--window-end-ns"),
    (["--start-at-ns", "x"], "--start-at-ns"),
    (["--latency", "5"], "unexpected argument"),
])
def test_bad_window_options_are_usage_errors(sim_env, args, why):
    proc, lines = workload(["busy", "--seconds", "0.1"] + args, sim_env)
    assert proc.returncode == 2 and lines == []
    assert len(proc.stderr.splitlines()) == 1 and why in proc.stderr, proc.stderr


def test_start_at_in_the_past_starts_at_once_and_keeps_the_end(sim_env):
    start = time.monotonic_ns() - S // 2
    r = run([WORKLOAD, "busy", "--start-at-ns", start, "--seconds", "1", "--kernel-us", "1000"], env=sim_env)
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout)
    assert line["start_ns"] > start + S // 2
    assert line["end_ns"] >= start + S and line["wall_seconds"] < 0.9
