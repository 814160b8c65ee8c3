"""MIG on the simulated GPU (build/lib/sim): the profiles and placements of data/mig, the rules
a real driver applies to MIG mode and to GPU and compute instances, the test controls, and a
CUDA process on a MIG device. Driven through mig_probe.py in child processes."""
import csv
import json
import pathlib
import subprocess
import sys

import pytest

from conftest import asan_runtime, make_sim_env

PROBE = pathlib.Path(__file__).with_name("mig_probe.py")
MIG_CSV = pathlib.Path(__file__).resolve().parents[2] / "data" / "mig" / "mig_gi_profiles.csv"
MIB = 1024 * 1024

NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_IN_USE = 19
NVML_ERROR_INSUFFICIENT_RESOURCES = 23
NVML_ERROR_UNKNOWN = 999
CUDA_ERROR_OUT_OF_MEMORY = 2

ASAN = asan_runtime("libnvidia-ml.so.1")


def penv(env):
    env = dict(env)
    if ASAN:
        env["LD_PRELOAD"] = ASAN
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def probe(env, *args):
    p = subprocess.run([sys.executable, str(PROBE), *map(str, args)], env=penv(env), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, f"probe {args}: {p.stdout} {p.stderr}"
    return json.loads(p.stdout.splitlines()[-1])


def hold(env, nbytes, **extra):
    """A CUDA process holding nbytes on its device 0 until stopped; returns (Popen, its report)."""
    env = penv({**env, **{k: str(v) for k, v in extra.items()}})
    p = subprocess.Popen([sys.executable, str(PROBE), "cuda", str(nbytes)], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line, p.stderr.read()
    return p, json.loads(line)


def stop(p):
    p.stdin.close()
    p.wait(timeout=30)


@pytest.fixture
def holders():
    procs = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)


def enabled(tmp_path, spec="h100-80gb"):
    env = make_sim_env(tmp_path, spec)
    assert probe(env, "set_mode", 0, 1)["activation"] == NVML_SUCCESS
    return env


# ---- the profiles are data/mig's ----

SIM_MODELS = {"A100-40GB": "a100-40gb", "A100-80GB": "a100-80gb", "H100-80GB(SXM5 HBM3)": "h100-80gb",
              "H200-141GB(SXM5/NVL)": "h200-141gb"}


def csv_profiles():
    rows = [r for r in csv.reader(line for line in MIG_CSV.open() if not line.startswith("#"))]
    head = rows[0]
    out = {}
    for r in rows[1:]:
        row = dict(zip(head, r))
        if row["gpu"] in SIM_MODELS:
            out.setdefault(SIM_MODELS[row["gpu"]], {})[row["profile"]] = row
    return out


@pytest.mark.parametrize("model", sorted(SIM_MODELS.values()))
def test_profiles_and_placements_are_those_of_data_mig(tmp_path, model):
    env = enabled(tmp_path, model)
    sim = probe(env, "state", 0)["profiles"]
    table = csv_profiles()[model]
    assert set(sim) == set(table)
    for name, row in table.items():
        p = sim[name]
        assert p["id"] == int(row["smi_profile_id"]), name
        assert p["enum"] == int(row["nvml_enum"].split("(")[1].rstrip(")")), name
        assert p["compute"] == int(row["compute_slices"]) and p["mem_slices"] == int(row["mem_slices"]), name
        assert p["max"] == int(row["max_instances"]), name
        assert p["starts"] == [int(s) for s in row["placements_start"].split("|")], name
        if row["sm_count"].rstrip("?").isdigit():
            assert p["sms"] == int(row["sm_count"].rstrip("?")), name
        gib = row["mem_gib"].rstrip("?")
        if gib:  # where the table has a size, it is the sim's to 1/100 GiB; '?' is estimated
            assert abs(p["mem_mib"] / 1024 - float(gib)) < 0.01, name


def test_a_gpu_without_mig_says_not_supported(tmp_path):
    env = make_sim_env(tmp_path, "t4")
    assert probe(env, "state", 0)["mode"]["rc"] == NVML_ERROR_NOT_SUPPORTED
    assert probe(env, "set_mode", 0, 1)["rc"] == NVML_ERROR_NOT_SUPPORTED


# ---- placement rules ----

def test_three_2g_and_one_1g_fill_an_h100_at_their_placements(tmp_path):
    env = enabled(tmp_path)
    for start in (0, 2, 4):
        assert probe(env, "create", 0, "2g.20gb", start) == {"gi_rc": 0, "ci_rc": 0}
    assert probe(env, "create", 0, "1g.10gb", 6) == {"gi_rc": 0, "ci_rc": 0}
    st = probe(env, "state", 0)
    assert [(i["profile"], i["start"], i["size"]) for i in st["instances"]] == [
        ("2g.20gb", 0, 2), ("2g.20gb", 2, 2), ("2g.20gb", 4, 2), ("1g.10gb", 6, 1)]
    # GPU instance ids are the memory-slice tree's nodes: unique, from the placement.
    assert [i["id"] for i in st["instances"]] == [3, 4, 5, 13]
    assert [len(i["cis"]) for i in st["instances"]] == [1, 1, 1, 1]
    devs = st["mig_devices"]
    assert [d["name"] for d in devs] == ["NVIDIA H100 80GB HBM3 MIG 2g.20gb"] * 3 + ["NVIDIA H100 80GB HBM3 MIG 1g.10gb"]
    assert [d["total"] for d in devs] == [20096 * MIB] * 3 + [9984 * MIB]
    assert all(d["uuid"].startswith("MIG-") for d in devs) and len({d["uuid"] for d in devs}) == 4
    # Seven compute slices are taken: one more 1g fits nowhere, even on free memory slice 7.
    assert probe(env, "create", 0, "1g.10gb", 7)["gi_rc"] == NVML_ERROR_INVALID_ARGUMENT  # not a 1g start
    assert probe(env, "create", 0, "1g.20gb", 6)["gi_rc"] == NVML_ERROR_INSUFFICIENT_RESOURCES


def test_overlapping_placements_and_too_many_of_a_profile_are_refused(tmp_path):
    env = enabled(tmp_path)
    assert probe(env, "create", 0, "3g.40gb", 4)["gi_rc"] == NVML_SUCCESS
    assert probe(env, "create", 0, "1g.10gb", 5)["gi_rc"] == NVML_ERROR_INSUFFICIENT_RESOURCES  # inside 4..7
    assert probe(env, "create", 0, "2g.20gb", 4)["gi_rc"] == NVML_ERROR_INSUFFICIENT_RESOURCES
    assert probe(env, "create", 0, "3g.40gb", 2)["gi_rc"] == NVML_ERROR_INVALID_ARGUMENT  # 3g starts at 0 or 4
    assert probe(env, "create", 0, "3g.40gb", 0)["gi_rc"] == NVML_SUCCESS
    st = probe(env, "state", 0)
    assert [(i["profile"], i["start"]) for i in st["instances"]] == [("3g.40gb", 0), ("3g.40gb", 4)]
    # The 4g's only placement is taken, and 3 + 3 + 4 would be past 7 compute slices anyway.
    assert probe(env, "create", 0, "4g.40gb", 0)["gi_rc"] == NVML_ERROR_INSUFFICIENT_RESOURCES


def test_creating_instances_needs_mig_mode(tmp_path):
    env = make_sim_env(tmp_path)
    st = probe(env, "state", 0)
    assert st["mode"] == {"rc": 0, "current": 0, "pending": 0}
    p = probe(env, "set_mode", 0, 1)
    assert p["mode"]["current"] == 1
    assert probe(env, "set_mode", 0, 0)["mode"] == {"rc": 0, "current": 0, "pending": 0}


def test_instances_are_destroyed_compute_first_and_not_while_used(tmp_path, holders):
    env = enabled(tmp_path)
    assert probe(env, "create", 0, "3g.40gb", 0)["ci_rc"] == 0
    uuid = probe(env, "state", 0)["mig_devices"][0]["uuid"]
    p, rep = hold(env, 10**9, CUDA_VISIBLE_DEVICES=uuid)
    holders.append(p)
    assert rep["alloc_rc"] == 0
    d = probe(env, "destroy", 0, 0)
    assert d == {"ci_rc": [NVML_ERROR_IN_USE], "gi_rc": NVML_ERROR_IN_USE}  # a process, then a compute instance
    # MIG mode cannot be turned off under instances.
    assert probe(env, "set_mode", 0, 0)["rc"] == NVML_ERROR_IN_USE
    stop(p)
    assert probe(env, "destroy", 0, 0) == {"ci_rc": [NVML_SUCCESS], "gi_rc": NVML_SUCCESS}
    assert probe(env, "state", 0)["instances"] == []


# ---- MIG mode: pending until a reset while the GPU is used ----

def test_a_mode_change_on_a_busy_gpu_stays_pending_until_a_reset(tmp_path, holders):
    env = make_sim_env(tmp_path)
    p, rep = hold(env, 10**9)
    holders.append(p)
    assert rep["alloc_rc"] == 0
    s = probe(env, "set_mode", 0, 1)
    assert (s["rc"], s["activation"], s["mode"]) == (0, NVML_ERROR_IN_USE, {"rc": 0, "current": 0, "pending": 1})
    assert probe(env, "reset", 0)["rc"] == -1  # a reset is refused while the GPU is in use
    assert probe(env, "state", 0)["mode"]["current"] == 0
    stop(p)
    assert probe(env, "state", 0)["mode"] == {"rc": 0, "current": 0, "pending": 1}  # no process: still pending
    assert probe(env, "reset", 0) == {"rc": 0, "err": ""}
    assert probe(env, "state", 0)["mode"] == {"rc": 0, "current": 1, "pending": 1}


def test_a_reset_destroys_every_instance(tmp_path):
    env = enabled(tmp_path)
    assert probe(env, "create", 0, "7g.80gb", 0)["ci_rc"] == 0
    assert probe(env, "reset", 0)["rc"] == 0
    st = probe(env, "state", 0)
    assert st["mode"]["current"] == 1 and st["instances"] == [] and st["mig_devices"] == []


# ---- test control: a failed creation ----

def test_an_injected_failure_fails_the_nth_next_creation(tmp_path):
    env = enabled(tmp_path)
    assert probe(env, "fail", 0, 2)["rc"] == 0
    assert probe(env, "create", 0, "1g.10gb", 0) == {"gi_rc": 0, "ci_rc": NVML_ERROR_UNKNOWN}
    assert probe(env, "create", 0, "1g.10gb", 1) == {"gi_rc": 0, "ci_rc": 0}  # once only
    assert probe(env, "fail", 5, 1)["rc"] == -1


# ---- CUDA on a MIG device ----

def test_a_cuda_process_on_a_mig_device_has_the_instance_memory(tmp_path, holders):
    env = enabled(tmp_path)
    for start in (0, 1):
        assert probe(env, "create", 0, "1g.10gb", start)["ci_rc"] == 0
    assert probe(env, "create", 0, "3g.40gb", 4)["ci_rc"] == 0
    devs = probe(env, "state", 0)["mig_devices"]
    one = devs[1]
    seen = probe({**env, "CUDA_VISIBLE_DEVICES": one["uuid"]}, "cuda")["devices"]
    assert seen == [{"name": one["name"], "uuid": one["uuid"][4:].replace("-", ""), "total": 9984 * MIB, "sms": 16}]
    # Without CUDA_VISIBLE_DEVICES, one MIG device: the first.
    assert [d["uuid"] for d in probe(env, "cuda")["devices"]] == [devs[0]["uuid"][4:].replace("-", "")]
    # The instance's memory is the limit: 6 GB fits in 9.75 GiB, 6 GB more does not.
    p, rep = hold(env, 6 * 10**9, CUDA_VISIBLE_DEVICES=one["uuid"])
    holders.append(p)
    assert rep["alloc_rc"] == 0 and rep["total"] == 9984 * MIB and rep["free"] == 9984 * MIB - 6 * 10**9
    q, rep2 = hold(env, 6 * 10**9, CUDA_VISIBLE_DEVICES=one["uuid"])
    holders.append(q)
    assert rep2["alloc_rc"] == CUDA_ERROR_OUT_OF_MEMORY
    # NVML sees the process on its MIG device only, with its GPU and compute instance ids.
    after = {d["uuid"]: d for d in probe(env, "state", 0)["mig_devices"]}
    assert sorted(after[one["uuid"]]["pids"]) == sorted([rep["pid"], rep2["pid"]])  # both have a context
    assert after[one["uuid"]]["used"] == 6 * 10**9
    assert after[devs[0]["uuid"]]["used"] == 0 and after[devs[0]["uuid"]]["pids"] == []


def test_a_gpu_in_mig_mode_is_no_cuda_device_of_its_own(tmp_path):
    env = enabled(tmp_path, "h100-80gb:2")
    assert probe(env, "cuda")["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"  # GPU 1; GPU 0 has no MIG device
    assert len(probe(env, "cuda")["devices"]) == 1
    assert probe({**env, "CUDA_VISIBLE_DEVICES": "1,0"}, "cuda")["devices"][0]["total"] == 81559 * MIB
    assert probe({**env, "CUDA_VISIBLE_DEVICES": "bogus,1"}, "cuda")["devices"] == []  # stops at a bad entry


def test_compute_mode_is_set_and_read_and_refused_in_mig_mode(tmp_path):
    env = make_sim_env(tmp_path, "h100-80gb:2")
    assert probe(env, "compute_mode", 0) == {"mode": 0, "get_rc": 0}
    assert probe(env, "compute_mode", 0, 3) == {"mode": 3, "get_rc": 0, "set_rc": 0}
    assert probe(env, "compute_mode", 1) == {"mode": 0, "get_rc": 0}
    assert probe(env, "compute_mode", 0, 1)["set_rc"] == NVML_ERROR_INVALID_ARGUMENT  # exclusive-thread: removed
    assert probe(env, "set_mode", 1, 1)["mode"]["current"] == 1
    assert probe(env, "compute_mode", 1, 3)["set_rc"] == NVML_ERROR_NOT_SUPPORTED
