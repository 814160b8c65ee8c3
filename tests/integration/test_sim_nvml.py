"""The simulated NVML (build/lib/sim/libnvidia-ml.so.1), driven through ctypes by
nvml_probe.py in child processes, and cross-checked against the simulated CUDA driver."""
import json
import os
import pathlib
import resource
import signal
import subprocess
import sys

import pytest

from conftest import SIMLIB, asan_runtime, make_sim_env

PROBE = pathlib.Path(__file__).with_name("nvml_probe.py")
MIB = 1024 * 1024
GIB = 1024 * MIB

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
NVML_ERROR_UNKNOWN = 999


ASAN = asan_runtime("libnvidia-ml.so.1")


def reserved_of(total):
    """The simulated driver's own reserve: 1/160 of the device, whole MiB."""
    return total // 160 // MIB * MIB


def probe_env(env):
    env = dict(env)
    if ASAN:
        env["LD_PRELOAD"] = ASAN
        # The interpreter's own allocations at exit are not the simulator's leaks.
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def probe(env, *args, timeout=60):
    """Runs one probe command to completion and returns (JSON lines, CompletedProcess)."""
    p = subprocess.run([sys.executable, str(PROBE), *map(str, args)], env=probe_env(env), capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, f"probe {args} exited {p.returncode}: {p.stdout} {p.stderr}"
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()], p


def start(env, *args, nofile=None):
    """Starts a long-running probe (hold, memwatch) and waits for its first JSON line; nofile:
    its soft limit of open files."""
    limit = None if nofile is None else (lambda: resource.setrlimit(
        resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1])))
    p = subprocess.Popen([sys.executable, str(PROBE), *map(str, args)], env=probe_env(env),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=limit)
    line = p.stdout.readline()
    if not line:
        p.kill()
        raise AssertionError(f"probe {args} died: {p.stderr.read()}")
    return p, json.loads(line)


def stop(p):
    if p.poll() is None:
        p.stdin.close()
        p.wait(timeout=10)


@pytest.fixture
def holders():
    procs = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def test_libraries_are_built():
    assert (SIMLIB / "libnvidia-ml.so.1").is_file()
    assert (SIMLIB / "libcuda.so.1").is_file()


def test_devices_report_model_names_memory_pci_and_capability(tmp_path):
    devs, _ = probe(make_sim_env(tmp_path, "h100-80gb:2,t4"), "devices")
    assert [d["name"] for d in devs] == ["NVIDIA H100 80GB HBM3"] * 2 + ["Tesla T4"]
    assert [d["memory"]["total"] for d in devs] == [81559 * MIB] * 2 + [15360 * MIB]
    for i, d in enumerate(devs):
        assert d["index"] == i
        # The driver's reserve: v1 counts it as used, v2 reports it apart.
        reserved = reserved_of(d["memory"]["total"])
        assert reserved > 0
        assert d["memory"]["used"] == reserved and d["memory"]["free"] == d["memory"]["total"] - reserved
        assert d["memory"]["v2"] == {"total": d["memory"]["total"], "used": 0,
                                     "free": d["memory"]["total"] - reserved, "reserved": reserved}
        assert d["bus_id"] == f"00000000:{0x10 + i:02X}:00.0"
        assert d["bus_id_legacy"] == d["legacy_bus_id"] == f"0000:{0x10 + i:02X}:00.0"
        assert d["pci_device_id"] & 0xFFFF == 0x10DE and d["legacy_pci_device_id"] == d["pci_device_id"]
        assert d["by_uuid_same"] and d["by_pci_same"]
    assert [d["pci_device_id"] >> 16 for d in devs] == [0x2330, 0x2330, 0x1EB8]
    assert [d["cc"] for d in devs] == [[9, 0], [9, 0], [7, 5]]
    assert [(d["mig_rc"], d["mig"]) for d in devs[:2]] == [(NVML_SUCCESS, [0, 0])] * 2
    assert devs[2]["mig_rc"] == NVML_ERROR_NOT_SUPPORTED


def test_uuids_are_stable_across_processes_and_distinct_per_index(tmp_path):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    env = make_sim_env(tmp_path / "a", "h100-80gb:2,t4")
    first, _ = probe(env, "devices")
    again, _ = probe(env, "devices")
    elsewhere, _ = probe(make_sim_env(tmp_path / "b", "h100-80gb:2,t4"), "devices")
    uuids = [d["uuid"] for d in first]
    assert uuids == [d["uuid"] for d in again] == [d["uuid"] for d in elsewhere]
    assert len(set(uuids)) == 3
    assert all(u.startswith("GPU-") and len(u) == 40 for u in uuids)


def test_lifecycle_is_reference_counted_and_bad_arguments_are_rejected(tmp_path):
    (r,), _ = probe(make_sim_env(tmp_path, "h100-80gb"), "api")
    assert r["before_init"] == NVML_ERROR_UNINITIALIZED
    assert r["init"] == r["init_again"] == NVML_SUCCESS
    assert r["null_count"] == r["null_memory"] == r["bad_index"] == r["bad_handle"] == NVML_ERROR_INVALID_ARGUMENT
    assert r["memory_v2_bad_version"] == NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    assert r["name_small_buffer"] == NVML_ERROR_INSUFFICIENT_SIZE
    assert r["driver_version"] == "580.65.06" and r["nvml_version"].endswith("580.65.06")
    assert r["cuda_version"] == 13000
    # Two inits need two shutdowns; a third shutdown finds nothing to shut down.
    assert r["shutdown"] == NVML_SUCCESS and r["still_ready"] == NVML_SUCCESS
    assert r["shutdown_last"] == NVML_SUCCESS and r["after_shutdown"] == NVML_ERROR_UNINITIALIZED
    assert r["shutdown_extra"] == NVML_ERROR_UNINITIALIZED
    errors = r["errors"]
    assert errors["0"] == "Success"
    assert all(errors[str(rc)] for rc in list(range(0, 31)) + [999])
    assert len({errors[str(rc)] for rc in list(range(0, 31)) + [999]}) == 32  # one distinct text per code


def test_idle_device_sensors_read_idle_values_and_model_limits(tmp_path):
    (s,), _ = probe(make_sim_env(tmp_path, "t4"), "sensors", 0)
    assert s["temp"] == 30
    assert s["limit"] == s["pm_limit"] == 70000
    assert s["power"] == 70000 * 15 // 100
    assert s["sm_max"] == 1590 and s["mem_max"] == s["mem_clock"] == 5001
    assert s["sm_clock"] < s["sm_max"]


@pytest.mark.parametrize("spec,token", [("h100-80gb,bogus", "bogus"), ("t4:x", "t4:x"), ("t4:0", "t4:0")])
def test_bad_gpuslice_sim_fails_init_with_one_stderr_line_naming_the_token(tmp_path, spec, token):
    (r,), p = probe(make_sim_env(tmp_path, spec), "init")
    assert r["rc"] == r["rc_again"] == NVML_ERROR_UNKNOWN
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("gpusim: ") and token in lines[0]


def test_missing_gpuslice_sim_is_driver_not_loaded(tmp_path):
    env = make_sim_env(tmp_path)
    del env["GPUSLICE_SIM"]
    (r,), p = probe(env, "init")
    assert r["rc"] == NVML_ERROR_DRIVER_NOT_LOADED
    assert len(p.stderr.splitlines()) == 1 and "GPUSLICE_SIM" in p.stderr


# ---- cross-checks with the simulated CUDA driver ----

def test_nvml_and_cuda_report_the_same_names_uuids_bus_ids_and_totals(tmp_path):
    devs, _ = probe(make_sim_env(tmp_path, "h100-80gb:2,t4"), "identity")
    assert len(devs) == 3
    for d in devs:
        nv, cu = d["nvml"], d["cuda"]
        assert nv["name"] == cu["name"]
        assert nv["uuid"][len("GPU-"):].replace("-", "") == cu["uuid_hex"]
        assert nv["bus_id"].upper() == cu["bus_id"].upper()
        assert nv["total"] == cu["total"]


def test_memory_used_agrees_between_nvml_and_cuda_while_another_process_holds_memory(tmp_path, holders):
    env = make_sim_env(tmp_path, "h100-80gb:2,t4")
    holder, ready = start(env, "hold", 3 * GIB, 0)
    holders.append(holder)
    assert ready["ready"] and ready["total"] - ready["free"] >= 3 * GIB
    (m,), _ = probe(env, "meminfo", 0)
    nv, cu = m["nvml"], m["cuda"]
    reserved = reserved_of(81559 * MIB)
    assert nv["total"] == cu["total"] == 81559 * MIB
    assert nv["v2"]["used"] == cu["used"] == nv["used"] - reserved
    assert nv["v2"]["used"] >= 3 * GIB
    assert nv["free"] == nv["v2"]["free"] == cu["free"] - reserved == nv["total"] - nv["used"]
    assert nv["v2"]["used"] + nv["v2"]["free"] + nv["v2"]["reserved"] == nv["total"]
    # Other devices are untouched.
    (m2,), _ = probe(env, "meminfo", 2)
    assert m2["nvml"]["v2"]["used"] == m2["cuda"]["used"] < 3 * GIB


# A monitor that may open 4096 files or more checks the processes through a pidfd each
# (sim/proc-watch.c); one with fewer reads /proc as before.
@pytest.mark.parametrize("nofile", [None, 1024], ids=["pidfds", "proc-reads"])
def test_sigkilled_holder_memory_is_gone_from_nvml_used_within_1s(tmp_path, holders, nofile):
    env = make_sim_env(tmp_path, "h100-80gb")
    holder, _ = start(env, "hold", 5 * GIB)
    holders.append(holder)
    watcher, seen = start(env, "memwatch", 0, nofile=nofile)
    holders.append(watcher)
    assert seen["used"] >= 5 * GIB
    os.kill(holder.pid, signal.SIGKILL)
    watcher.stdin.write("go\n")
    watcher.stdin.flush()
    result = json.loads(watcher.stdout.readline())
    stop(watcher)
    assert result["used"] == 0
    assert result["seconds"] < 1.0


def test_running_processes_list_holders_with_their_memory_in_v1_v2_v3_layouts(tmp_path, holders):
    env = make_sim_env(tmp_path, "h100-80gb")
    sizes = {}
    for size in (1 * GIB, 2 * GIB):
        h, ready = start(env, "hold", size)
        holders.append(h)
        sizes[ready["pid"]] = size
    (r,), _ = probe(env, "procs", 0)
    # Asking with no room reports how many there are.
    assert r["query"]["rc"] == NVML_ERROR_INSUFFICIENT_SIZE and r["query"]["count"] == 2
    assert r["too_small"]["rc"] == NVML_ERROR_INSUFFICIENT_SIZE and r["too_small"]["count"] == 2
    assert r["too_small"]["tail_untouched"]
    assert r["v1"]["size"] == 16 and r["v2"]["size"] == r["v3"]["size"] == 24
    for key in ("v1", "v2", "v3"):
        res = r[key]
        assert res["rc"] == NVML_SUCCESS and res["count"] == 2
        assert res["tail_untouched"], f"{key} wrote past its entries"
        assert {e["pid"]: e["usedGpuMemory"] for e in res["entries"]} == sizes
        if key != "v1":
            assert all(e["gpuInstanceId"] == e["computeInstanceId"] == 0xFFFFFFFF for e in res["entries"])
    assert r["graphics"]["rc"] == NVML_SUCCESS and r["graphics"]["count"] == 0


def test_nvml_utilization_is_within_5_points_of_the_true_busy_fraction(tmp_path):
    env = make_sim_env(tmp_path, "h100-80gb")
    (r,), _ = probe(env, "busy", 2.0, 0.5, 10000, timeout=60)
    assert r["kernels"] > 50
    assert 30 <= r["true_percent"] <= 70, r
    assert abs(r["gpu"] - r["true_percent"]) <= 5, r
    assert r["memory"] == r["gpu"] // 2
    # Per-process: a size query first, then this process's own sample.
    assert r["proc_query_rc"] == NVML_ERROR_INSUFFICIENT_SIZE and r["proc_rc"] == NVML_SUCCESS, r
    assert r["proc_count"] == 1 and len(r["proc_mine"]) == 1
    assert abs(r["proc_mine"][0] - r["true_percent"]) <= 5, r
    assert abs(r["proc_stamp_us"][0] - r["now_us"]) < 2_000_000


# ---- the readings behind dcgm-exporter's default fields ----

NVML_ERROR_TIMEOUT = 10
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3


def test_field_values_and_their_calls_follow_the_model_hbm_parts_have_memory_temperature_and_row_remapping(tmp_path):
    env = make_sim_env(tmp_path, "h100-80gb,t4")
    (h100,), _ = probe(env, "fields", 0)
    (t4,), _ = probe(env, "fields", 1)
    f = h100["fields"]
    # An idle H100: 30 C die, its HBM 4 C above; a healthy link and memory; NVLink idle.
    assert f["memory_temp"] == {"rc": NVML_SUCCESS, "type": NVML_VALUE_TYPE_UNSIGNED_INT, "value": 34,
                                "stamp_us": f["memory_temp"]["stamp_us"]}
    assert abs(f["memory_temp"]["stamp_us"] - h100["now_us"]) < 5_000_000
    assert f["energy"]["rc"] == NVML_SUCCESS and f["energy"]["type"] == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    assert 0 < f["energy"]["value"] <= h100["energy"]  # the counter only grows
    for name in ("pcie_replay", "remapped_cor", "remapped_unc", "remapped_pending", "remapped_failure",
                 "nvlink_tx", "nvlink_rx"):
        assert (f[name]["rc"], f[name]["value"]) == (NVML_SUCCESS, 0), name
    assert f["unsimulated"]["rc"] == NVML_ERROR_NOT_SUPPORTED
    assert f["out_of_range"]["rc"] == NVML_ERROR_INVALID_ARGUMENT
    assert (h100["energy_rc"], h100["replay_rc"], h100["replay"]) == (NVML_SUCCESS, NVML_SUCCESS, 0)
    assert h100["encoder"] == h100["decoder"] == {"rc": NVML_SUCCESS, "util": 0, "period_us": 1_000_000}
    assert h100["remapped"] == {"rc": NVML_SUCCESS, "rows": [0, 0, 0, 0]}
    assert (h100["virt_rc"], h100["virt"]) == (NVML_SUCCESS, 0)  # bare metal
    # A T4 is a PCIe card with GDDR6: no memory sensor, no row remapper, no NVLink.
    g = t4["fields"]
    for name in ("memory_temp", "remapped_cor", "remapped_failure", "nvlink_tx"):
        assert g[name]["rc"] == NVML_ERROR_NOT_SUPPORTED, name
    assert g["energy"]["rc"] == g["pcie_replay"]["rc"] == NVML_SUCCESS
    assert t4["remapped"]["rc"] == NVML_ERROR_NOT_SUPPORTED


def test_total_energy_grows_at_idle_power_when_idle_and_near_full_power_when_busy(tmp_path):
    env = make_sim_env(tmp_path, "h100-80gb")
    (e,), _ = probe(env, "energy", 1.0, 1.0)
    idle_mw, limit_mw = 700_000 * 15 // 100, 700_000
    assert e["idle_mj"] / e["idle_s"] == pytest.approx(idle_mw, rel=0.05)
    assert 0.85 * limit_mw <= e["busy_mj"] / e["busy_s"] <= 1.02 * limit_mw


def test_an_injected_xid_reaches_every_event_set_registered_for_it_in_order(tmp_path, holders):
    env = make_sim_env(tmp_path, "h100-80gb:2")
    (early,), _ = probe(env, "xid_inject", 0, 13)  # before anyone listens: not delivered
    assert early == {"rc": 0, "err": ""}
    watcher, ready = start(env, "events", 300)
    holders.append(watcher)
    assert ready == {"ready": True, "supported": 0x8, "registered": [NVML_SUCCESS] * 2,
                     "bad_type": NVML_ERROR_NOT_SUPPORTED}
    for dev, code in ((1, 79), (0, 48), (1, 31)):
        (r,), _ = probe(env, "xid_inject", dev, code)
        assert r["rc"] == 0
    watcher.stdin.write("go\n")
    watcher.stdin.flush()
    res = json.loads(watcher.stdout.readline())
    stop(watcher)
    got = sorted((e["gpu"], e["xid"]) for e in res["events"])
    assert got == [(0, 48), (1, 31), (1, 79)]
    assert [e["xid"] for e in res["events"] if e["gpu"] == 1] == [79, 31]  # each device's in order
    assert all(e["type"] == 0x8 and e["gi"] == 0xFFFFFFFF for e in res["events"])
    assert (res["end_rc"], res["free_rc"]) == (NVML_ERROR_TIMEOUT, NVML_SUCCESS)
    (bad,), _ = probe(env, "xid_inject", 5, 13)
    assert bad["rc"] == -1 and "no simulated device 5" in bad["err"]


def test_gpm_on_hopper_measures_the_timeline_between_two_samples_and_is_unsupported_before_it(tmp_path):
    env = make_sim_env(tmp_path, "h100-80gb,a100-80gb")
    (h,), _ = probe(env, "gpm", 0, 1.0, 0.5)
    assert (h["support_rc"], h["supported"], h["bad_version"]) == (NVML_SUCCESS, 1, NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
    assert h["metrics_rc"] == NVML_SUCCESS
    m = h["metrics"]
    assert m["graphics"]["rc"] == NVML_SUCCESS and m["graphics"]["value"] == pytest.approx(50, abs=8)
    assert m["dram"]["value"] == pytest.approx(m["graphics"]["value"] / 2)
    assert (m["tensor"]["value"], m["pcie_tx"]["value"], m["pcie_rx"]["value"]) == (0, 0, 0)
    assert m["unsimulated"]["rc"] == NVML_ERROR_NOT_SUPPORTED
    assert h["free_rc"] == [NVML_SUCCESS] * 2
    (a,), _ = probe(env, "gpm", 1, 0.1, 0.5)
    assert (a["support_rc"], a["supported"], a["sample_rc"]) == (NVML_SUCCESS, 0, NVML_ERROR_NOT_SUPPORTED)
