"""Memory quotas on every allocation path, however the program finds the driver: by linking
libcuda, by dlopen + dlsym, or by cuGetProcAddress_v2 (at 13.0 and at an older version) and
the legacy cuGetProcAddress. Each quota must hold exactly and give its charge back on free,
the refusal must be one line per process, and the context reserve must count."""
import sys

import pytest

from conftest import run
from quota_env import H100_TOTAL, HERE, for_python, gpuslice_run, json_lines, quota_env, refusal_lines
from wl_run import GIB, MIB, WORKLOAD, workload

KINDS = ["plain", "pitch", "managed", "async", "pool", "vmm", "array"]
PATHS = {
    "direct": ["--path", "direct"],
    "dlsym": ["--path", "dlsym"],
    "procaddr": ["--path", "procaddr"],
    "procaddr@12000": ["--path", "procaddr", "--procaddr-version", "12000"],
    "procaddr-v1": ["--path", "procaddr-v1"],
    "procaddr-v1@12000": ["--path", "procaddr-v1", "--procaddr-version", "12000"],
}
CHUNK = 64 * MIB
CUDA_ERROR_OUT_OF_MEMORY = 2


def whole_chunks(limit, chunk=CHUNK):
    return limit // chunk * chunk


def oom(path_args, kind, rounds=2):
    return path_args + ["alloc-until-oom", "--chunk", "64Mi", "--alloc", kind, "--rounds", str(rounds)]


def one_oom_line(r):
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    lines = json_lines(r.stdout)
    assert len(lines) == 1, r.stdout
    return lines[0]


@pytest.fixture
def env(tmp_path):
    return quota_env(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("path", list(PATHS))
def test_quota_is_enforced_and_released_on_every_path(path, kind, env):
    line = one_oom_line(gpuslice_run(["--vram", "1Gi"], [WORKLOAD] + oom(PATHS[path], kind), env))
    assert line["stopped_by"] == "CUDA_ERROR_OUT_OF_MEMORY"
    # Round 2 gets the whole quota again only if every free of round 1 gave its charge back.
    assert line["rounds"] == [GIB, GIB]
    assert line["allocated_bytes"] == GIB


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("path", list(PATHS))
def test_same_command_without_gpuslice_gets_the_whole_device(path, kind, env):
    """The check above means something: without the interposer the same command is stopped
    by the device, not at 1 GiB."""
    proc, lines = workload(oom(PATHS[path], kind), env)
    assert proc.returncode == 0, proc.stderr
    assert lines[0]["rounds"] == [whole_chunks(H100_TOTAL)] * 2
    assert refusal_lines(proc.stderr) == []


def test_procaddr_at_12000_fills_only_non_allocation_entries_by_name(env):
    """At 12000 the driver hands out older ABIs for two of the workload's entries, which it
    then takes by exported name; no allocation or free entry is among them, so the coverage
    above really goes through cuGetProcAddress at 12000."""
    for path in ("procaddr", "procaddr-v1"):
        proc, lines = workload(["--path", path, "--procaddr-version", "12000", "procaddr-check"], env)
        assert proc.returncode == 0, proc.stderr
        assert lines[0]["filled_by_exported_name"] == ["cuCtxCreate", "cuEventElapsedTime"]
        proc, lines = workload(["--path", path, "procaddr-check"], env)
        assert lines[0]["filled_by_exported_name"] == []


def test_percentage_quota_is_that_share_of_the_device(env):
    line = one_oom_line(gpuslice_run(["--vram", "25%"], [WORKLOAD] + oom([], "plain"), env))
    assert line["rounds"] == [whole_chunks(H100_TOTAL // 4)] * 2


@pytest.mark.parametrize("kind", ["plain", "vmm"])
def test_refusal_is_one_line_naming_tenant_limit_usage_and_request(kind, env):
    limit = 1000 * MIB            # not a multiple of the chunk, so usage differs from the limit
    used = whole_chunks(limit)
    r = gpuslice_run(["--vram", "1000Mi", "--name", "reftest"], [WORKLOAD] + oom([], kind, rounds=3), env)
    assert one_oom_line(r)["rounds"] == [used] * 3
    lines = refusal_lines(r.stderr)
    assert len(lines) == 1, r.stderr    # 3 refusals, one line
    line = lines[0]
    assert "'reftest'" in line
    for number in (limit, used, CHUNK):
        assert str(number) in line, line
    assert r.stderr.strip() == line     # and nothing else on stderr


@pytest.mark.parametrize("kind", ["plain", "pitch", "managed", "async"])
def test_an_allocation_past_a_pebibyte_is_refused_before_the_driver_is_asked(kind, env):
    """One charge is at most 2^50 - 1 bytes (what a map entry packs with its GPU); a tenant
    with no memory limit asking for 2 PiB is refused by gpuslice with a line that says so,
    not charged, and its next allocation is charged as usual."""
    cmd = f"{WORKLOAD} hold --bytes 2048T --alloc {kind} </dev/null; {WORKLOAD} alloc-until-oom --chunk 64Mi"
    r = gpuslice_run(["--compute", "50", "--name", "huge"], ["sh", "-c", cmd], env)
    lines = refusal_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    assert "'huge'" in lines[0] and str(2 ** 51) in lines[0], lines[0]
    assert "more than the 1125899906842623 bytes one allocation may be" in lines[0], lines[0]
    assert "CUDA_ERROR_OUT_OF_MEMORY" in r.stderr
    # The second program is stopped by the device (80 GB), not by a charge left behind.
    assert one_oom_line(r)["allocated_bytes"] > 70 * GIB


def test_refusal_line_is_once_per_process_not_once_per_tenant(env):
    cmd = f"{WORKLOAD} alloc-until-oom --chunk 64Mi --rounds 2 && {WORKLOAD} alloc-until-oom --chunk 64Mi --rounds 2"
    r = gpuslice_run(["--vram", "1Gi", "--name", "twice"], ["sh", "-c", cmd], env)
    assert r.returncode == 0, r.stderr
    assert [x["rounds"] for x in json_lines(r.stdout)] == [[GIB, GIB], [GIB, GIB]]
    lines = refusal_lines(r.stderr)
    assert len(lines) == 2 and all("'twice'" in x for x in lines), r.stderr


@pytest.mark.parametrize("path", ["direct", "procaddr", "procaddr@12000"])
def test_context_reserve_is_charged_per_context(path, env):
    r = gpuslice_run(["--vram", "1Gi", "--context-reserve", "256Mi"], [WORKLOAD] + oom(PATHS[path], "plain"), env)
    assert one_oom_line(r)["rounds"] == [768 * MIB] * 2


def test_host_allocations_are_not_charged(env, tmp_path):
    """Pinned host memory is not device memory: a tenant with a tiny quota may take plenty."""
    script = tmp_path / "host.py"
    script.write_text(
        "import ctypes as C, json\n"
        "from nvml_probe import Cuda\n"
        "cu = Cuda(0)\n"
        "p = C.c_void_p()\n"
        "rc = cu.lib.cuMemAllocHost_v2(C.byref(p), C.c_size_t(512 << 20))\n"
        "free, total = cu.mem_info()\n"
        "print(json.dumps({'rc': rc, 'free': free, 'total': total}))\n")
    env = dict(for_python(env), PYTHONPATH=str(HERE))
    r = gpuslice_run(["--vram", "64Mi"], ["python3", script], env)
    assert r.returncode == 0, r.stderr
    line = json_lines(r.stdout)[0]
    assert line == {"rc": 0, "free": 64 * MIB, "total": 64 * MIB}



@pytest.mark.parametrize("args,needle", [
    (["--path", "procaddr", "--procaddr-version", "11999"], "--procaddr-version"),
    (["--path", "procaddr-v1", "--procaddr-version", "13001"], "--procaddr-version"),
    (["--path", "direct", "--procaddr-version", "12000"], "--procaddr-version"),
    (["--rounds", "0"], "--rounds"),
    (["--rounds", "65"], "--rounds"),
    (["--path", "procaddr-v2"], "procaddr-v2"),
])
def test_workload_refuses_versions_and_rounds_it_cannot_honour(args, needle, env):
    """Below 12000 cuGetProcAddress_v2 did not exist, and above 13000 the table's ABIs are
    not known to hold; a version for another path would be silently ignored."""
    proc, lines = workload(args + ["alloc-until-oom", "--chunk", "64Mi"], env)
    assert proc.returncode == 2 and lines == []
    [line] = proc.stderr.splitlines()
    assert needle in line, line


V1_ARRAY_PATHS = ["dlsym", "procaddr@2000", "procaddr@3019", "legacy@3000"]


@pytest.mark.parametrize("how", V1_ARRAY_PATHS)
def test_v1_array_abi_is_charged_and_released(how, env):
    """cuArrayCreate and cuArray3DCreate, the unversioned symbols with the 32-bit v1
    descriptors, are what cuGetProcAddress hands out below 3020: a 2 GiB tenant gets two
    1 GiB arrays of each, not the 16 the device would give, and gets them again once
    destroyed."""
    argv = [sys.executable, HERE / "quota_probe.py", "array-v1", how]
    r = gpuslice_run(["--vram", "2Gi"], argv, dict(for_python(env), PYTHONPATH=str(HERE)))
    assert r.returncode == 0, r.stderr
    line = json_lines(r.stdout)[0]
    for key in ("2d", "3d", "again"):
        assert line[key]["gib"] == 2, line
        assert line[key]["refused"] == CUDA_ERROR_OUT_OF_MEMORY, line
        assert line[key]["destroyed"] == [0, 0], line


def test_v1_array_abi_without_gpuslice_gets_the_device(env):
    """The check above means something: outside a tenant the same arrays are not refused."""
    argv = [sys.executable, HERE / "quota_probe.py", "array-v1", "procaddr@3019"]
    r = run(argv, env=dict(for_python(env), PYTHONPATH=str(HERE)))
    assert r.returncode == 0, r.stderr
    assert json_lines(r.stdout)[0]["2d"]["gib"] == 16
