"""gpusim-workload itself: its option parsing, usage errors, exit statuses, how `hold` is
stopped, and the shape of the JSON line each mode prints. The simulator's behaviour is
tested in test_sim_cuda.py."""
import signal

import pytest

from wl_run import GIB, MIB, WORKLOAD, start_hold, stop_hold, workload, workload_ok
from conftest import run


def usage_error(args, env):
    proc = run([WORKLOAD] + args, env=env)
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpusim-workload: ")
    return lines[0]


@pytest.mark.parametrize("args,needle", [
    (["alloc-until-oom", "--chunk", "12X"], "12X"),
    (["hold", "--bytes", "1Q"], "1Q"),
    (["hold", "--bytes", "-5"], "-5"),
    (["hold", "--bytes", "99999999999T"], "99999999999T"),
    (["frobnicate"], "frobnicate"),
    ([], "no mode"),
    (["info", "extra"], "extra"),
    (["info", "--bogus"], "--bogus"),
    (["info", "--path", "ouija"], "ouija"),
    (["info", "--alloc", "heap"], "heap"),
    (["busy", "--seconds", "1", "--launch", "warp"], "warp"),
    (["busy", "--seconds", "1", "--duty", "1.5"], "--duty"),
    (["busy", "--seconds", "1", "--duty", "0"], "--duty"),
    (["busy"], "--seconds"),
    (["hold"], "--bytes"),
    (["alloc-until-oom"], "--chunk"),
    (["kernel-time", "--count", "3"], "--us"),
    (["churn", "--ops", "10"], "--max-bytes"),
    (["info", "--device", "x"], "x"),
    (["info", "--device"], "--device"),
])
def test_bad_usage_exits_2_with_one_line_naming_the_problem(args, needle, sim_env):
    assert needle in usage_error(args, sim_env)


def test_help_prints_usage_and_exits_0(sim_env):
    proc = run([WORKLOAD, "--help"], env=sim_env)
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: gpusim-workload MODE")
    for mode in ["info", "alloc-until-oom", "hold", "busy", "kernel-time", "churn", "procaddr-check"]:
        assert mode in proc.stdout


@pytest.mark.parametrize("size,expected", [
    ("4096", 4096), ("1K", 1 << 10), ("1Ki", 1 << 10), ("3M", 3 * MIB), ("3Mi", 3 * MIB),
    ("2G", 2 * GIB), ("2GiB", 2 * GIB), ("1T", 1 << 40), ("1Ti", 1 << 40), ("5MB", 5 * MIB),
])
def test_sizes_accept_binary_suffixes(size, expected, sim_env):
    if expected > 80 * GIB:
        # More than a simulated H100 has: the parsed size shows in the driver's refusal.
        proc, _ = workload(["hold", "--bytes", size], sim_env)
        assert proc.returncode == 1 and f"{expected} bytes: CUDA_ERROR_OUT_OF_MEMORY" in proc.stderr
        return
    proc, ready = start_hold(["--bytes", size], sim_env)
    assert ready["requested_bytes"] == expected
    stop_hold(proc)


def test_info_line_shape(tmp_path):
    from conftest import make_sim_env
    line = workload_ok(["info"], make_sim_env(tmp_path, "t4,h100-80gb"))
    assert line["mode"] == "info"
    assert line["device_count"] == 2
    assert [d["index"] for d in line["devices"]] == [0, 1]
    t4, h100 = line["devices"]
    assert t4["name"] == "Tesla T4" and h100["name"] == "NVIDIA H100 80GB HBM3"
    assert t4["sm_count"] == 40 and h100["sm_count"] == 132
    assert t4["total_bytes"] == 15360 * MIB and h100["total_bytes"] == 81559 * MIB
    for d in line["devices"]:
        assert set(d) == {"index", "name", "total_bytes", "sm_count", "uuid", "free_bytes", "ctx_total_bytes"}
        assert d["uuid"].startswith("GPU-") and len(d["uuid"]) == 40
        assert d["ctx_total_bytes"] == d["total_bytes"]
    assert t4["uuid"] != h100["uuid"]


def test_alloc_until_oom_line_shape(sim_env):
    line = workload_ok(["alloc-until-oom", "--chunk", "16G"], sim_env)
    assert set(line) == {"mode", "alloc", "chunk", "allocated_bytes", "allocations", "stopped_by"}
    assert line["mode"] == "alloc-until-oom" and line["alloc"] == "plain" and line["chunk"] == 16 * GIB
    assert line["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert line["allocated_bytes"] == line["allocations"] * 16 * GIB


def test_hold_prints_ready_then_release_line_on_eof(sim_env):
    proc, ready = start_hold(["--bytes", "3G", "--chunk", "1G"], sim_env)
    assert ready["mode"] == "hold" and ready["allocations"] == 3
    assert ready["allocated_bytes"] == 3 * GIB and ready["pid"] == proc.pid
    final = stop_hold(proc)
    assert final == {"mode": "hold", "released_bytes": 3 * GIB, "stopped_by": "eof"}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1])
def test_hold_stops_cleanly_on_signal(sig, sim_env):
    proc, _ = start_hold(["--bytes", "1G"], sim_env)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)   # communicate also closes stdin, after the signal
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == (
        '{"mode":"hold","released_bytes":%d,"stopped_by":"%s"}' % (GIB, sig.name))


def test_hold_with_stdin_from_dev_null_waits_for_a_signal(sim_env):
    import json
    import subprocess
    proc = subprocess.Popen([str(WORKLOAD), "hold", "--bytes", "1M"], env=sim_env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert json.loads(proc.stdout.readline())["ready"] is True
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.3)
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert json.loads(out)["stopped_by"] == "SIGTERM"


def test_busy_line_shape(sim_env):
    line = workload_ok(["busy", "--seconds", "0.2", "--duty", "0.5", "--kernel-us", "5000"], sim_env)
    assert set(line) == {"mode", "launch", "duty", "kernels", "kernel_seconds", "wall_seconds",
                         "requested_kernel_seconds", "start_ns", "end_ns"}
    assert line["mode"] == "busy" and line["launch"] == "plain" and line["duty"] == 0.5
    assert line["kernels"] >= 10
    assert line["requested_kernel_seconds"] == pytest.approx(line["kernels"] * 0.005)
    assert line["end_ns"] > line["start_ns"]
    assert line["wall_seconds"] == pytest.approx((line["end_ns"] - line["start_ns"]) / 1e9, abs=1e-5)


def test_busy_duty_cycle_is_kept(sim_env):
    line = workload_ok(["busy", "--seconds", "1", "--duty", "0.3", "--kernel-us", "10000"], sim_env)
    assert line["kernel_seconds"] / line["wall_seconds"] == pytest.approx(0.3, abs=0.03)
    assert line["wall_seconds"] == pytest.approx(1.0, abs=0.1)


def test_kernel_time_line_shape(sim_env):
    line = workload_ok(["kernel-time", "--us", "2000", "--count", "4"], sim_env)
    assert set(line) == {"mode", "launch", "requested_us", "event_us", "wall_us"}
    assert line["mode"] == "kernel-time" and line["requested_us"] == 2000
    assert len(line["event_us"]) == 4 and len(line["wall_us"]) == 4


def test_churn_is_reproducible_by_seed(sim_env):
    a = workload_ok(["churn", "--ops", "300", "--max-bytes", "1M", "--seed", "7"], sim_env)
    b = workload_ok(["churn", "--ops", "300", "--max-bytes", "1M", "--seed", "7"], sim_env)
    c = workload_ok(["churn", "--ops", "300", "--max-bytes", "1M", "--seed", "8"], sim_env)
    assert a == b
    assert a["mode"] == "churn" and a["ops"] == 300 and a["seed"] == 7 and a["alloc"] == "plain"
    assert 1 <= a["peak_live"] <= 300
    assert c["seed"] == 8


def test_cuda_failure_exits_1_with_one_error_line(sim_env):
    proc, lines = workload(["hold", "--bytes", "200G"], sim_env)
    assert proc.returncode == 1
    assert lines == []
    assert proc.stderr.splitlines() == ["gpusim-workload: alloc plain 214748364800 bytes: CUDA_ERROR_OUT_OF_MEMORY"]


def test_device_out_of_range_is_a_failure(sim_env):
    proc, _ = workload(["hold", "--bytes", "1M", "--device", "3"], sim_env)
    assert proc.returncode == 1
    assert "--device 3" in proc.stderr


def test_binary_has_no_rpath_and_needs_libcuda_by_soname():
    import subprocess
    dyn = subprocess.run(["readelf", "-d", str(WORKLOAD)], capture_output=True, text=True, check=True).stdout
    assert "(NEEDED)" in dyn and "[libcuda.so.1]" in dyn
    assert "RPATH" not in dyn and "RUNPATH" not in dyn
