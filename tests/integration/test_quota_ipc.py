"""Memory another process shares counts against the tenant that imports it: legacy IPC handles
(cuIpcOpenMemHandle) are charged when opened and released when closed; VMM handles imported
with cuMemImportFromShareableHandle are charged as cuMemMap maps them and released with
cuMemRelease. The simulated driver itself spends no new device memory on an import.

The exporter runs outside any tenant; the importer runs under `gpuslice run --vram 1Gi` and
finds the hooked functions by direct link, dlsym, cuGetProcAddress_v2 (at 13000, and at 10020
where the first cuIpcOpenMemHandle ABI is handed out) and the legacy cuGetProcAddress.
ipc_probe.c does the CUDA side; it is compiled here against the simulator."""
import json
import os
import pathlib
import subprocess

import pytest

from conftest import BIN, SIMLIB, make_sim_env, run

HERE = pathlib.Path(__file__).resolve().parent
ABI = HERE.parents[1] / "abi"
GPUSLICE = BIN / "gpuslice"
MIB = 1024 * 1024
SHARED_MIB, CHUNK_MIB, BIG_MIB = 600, 64, 500
PATHS = ["direct", "dlsym", "procaddr", "procaddr-10020", "legacy"]

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_NOT_SUPPORTED = 801


def sanitized():
    """True in GS_SANITIZE builds: the probe is then built with ASan too, as the workload is,
    so that the runtime comes first in its load order."""
    ldd = subprocess.run(["ldd", str(SIMLIB / "libcuda.so.1")], capture_output=True, text=True).stdout
    return "libasan" in ldd


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    out = tmp_path_factory.mktemp("ipc") / "ipc_probe"
    cc = os.environ.get("CC", "cc")
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"] if sanitized() else []
    r = run([cc, "-std=gnu11", "-O1", *san, "-I", ABI, HERE / "ipc_probe.c", "-L", SIMLIB, "-lcuda", "-ldl", "-o", out])
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture
def env(tmp_path):
    for d in ("sim", "gs"):
        (tmp_path / d).mkdir()
    return make_sim_env(tmp_path / "sim", GPUSLICE_STATE_DIR=tmp_path / "gs")


class Exporter:
    """An exporter process, holding its allocation until stop()."""

    def __init__(self, probe, env, *args):
        self.p = subprocess.Popen([str(probe), *map(str, args)], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line:
            self.p.kill()
            raise AssertionError(f"exporter {args} died: {self.p.stderr.read()}")
        self.info = json.loads(line)
        assert self.info.get("ready"), self.info

    def stop(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=30)
        return self.p.returncode


@pytest.fixture
def exporters():
    started = []

    def start(probe, env, *args):
        e = Exporter(probe, env, *args)
        started.append(e)
        return e

    yield start
    for e in started:
        if e.p.poll() is None:
            e.p.kill()
            e.p.wait()


def importer(probe, env, *args, vram=None):
    """Runs one importer script, under a 1Gi tenant when vram is given; returns (result, stderr)."""
    cmd = [probe, *args] if vram is None else [GPUSLICE, "run", "--vram", vram, "--", probe, *args]
    r = run(cmd, env=env, timeout=120)
    assert r.returncode == 0, f"{args}: {r.stdout} {r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def refusal_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("gpuslice: ")]


# ---- the simulated driver ----

def test_ipc_open_maps_the_size_without_new_device_memory(probe, env, exporters):
    exp = exporters(probe, env, "export-ipc", SHARED_MIB)
    res, _ = importer(probe, env, "import-ipc", "direct", exp.info["handle"], CHUNK_MIB, BIG_MIB)
    assert res["rc_open"] == CUDA_SUCCESS
    assert res["size"] == SHARED_MIB * MIB
    # Outside a tenant cuMemGetInfo shows the whole device: the exporter's 600 MiB, nothing more.
    assert res["used_before"] == res["used_open"] == SHARED_MIB * MIB
    assert res["rc_close"] == CUDA_SUCCESS and res["used_closed"] == SHARED_MIB * MIB
    assert exp.stop() == 0


def test_ipc_open_of_a_dead_exporters_handle_is_invalid(probe, env, exporters):
    exp = exporters(probe, env, "export-ipc", SHARED_MIB)
    handle = exp.info["handle"]
    exp.p.kill()
    exp.p.wait()
    res, _ = importer(probe, env, "import-ipc", "direct", handle, CHUNK_MIB, BIG_MIB)
    assert res["rc_open"] == CUDA_ERROR_INVALID_HANDLE


def test_vmm_import_shares_pages_without_new_device_memory(probe, env, exporters, tmp_path):
    sock = tmp_path / "fd.sock"
    exporters(probe, env, "export-vmm", SHARED_MIB, sock)
    res, _ = importer(probe, env, "import-vmm", "direct", sock, SHARED_MIB, CHUNK_MIB, BIG_MIB)
    assert res["rc_import"] == CUDA_SUCCESS and res["rc_map"] == CUDA_SUCCESS
    assert res["byte"] == 0x5A  # written by the exporter, read through the importer's mapping
    assert res["used_before"] == res["used_import"] == res["used_map"] == SHARED_MIB * MIB
    assert res["used_released"] == SHARED_MIB * MIB


def test_ipc_and_shareable_handle_misuse_get_the_drivers_codes(probe, env):
    r = run([probe, "errors"], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == {
        "own": CUDA_ERROR_INVALID_CONTEXT,      # a process cannot open its own handle
        "garbage": CUDA_ERROR_INVALID_HANDLE,
        "bad_flags": CUDA_ERROR_INVALID_VALUE,
        "close_unknown": CUDA_ERROR_INVALID_VALUE,
        "get_unknown": CUDA_ERROR_INVALID_VALUE,
        "export_unrequested": CUDA_ERROR_INVALID_VALUE,  # cuMemCreate did not ask for a POSIX fd
        "export_win32": CUDA_ERROR_NOT_SUPPORTED,
        "import_stdin": CUDA_ERROR_INVALID_VALUE,       # not a descriptor the driver exported
    }


# ---- the interposer ----

@pytest.mark.parametrize("path", PATHS)
def test_ipc_open_is_charged_to_the_importing_tenant_and_released_on_close(probe, env, exporters, path):
    exp = exporters(probe, env, "export-ipc", SHARED_MIB)
    res, err = importer(probe, env, "import-ipc", path, exp.info["handle"], CHUNK_MIB, BIG_MIB, vram="1Gi")
    assert res["rc_open"] == CUDA_SUCCESS
    assert res["used_before"] == 0 and res["used_open"] == SHARED_MIB * MIB
    # What is left of the slice: (1024 - 600) MiB holds six 64 MiB chunks.
    assert res["chunks_open"] == (1024 - SHARED_MIB) // CHUNK_MIB
    assert res["rc_close"] == CUDA_SUCCESS and res["used_closed"] == 0
    assert res["chunks_closed"] == 1024 // CHUNK_MIB
    # 500 MiB held: opening 600 more is refused, and the refused open leaves nothing behind.
    assert res["rc_over"] == CUDA_ERROR_OUT_OF_MEMORY
    assert res["rc_again"] == CUDA_SUCCESS and res["rc_close_again"] == CUDA_SUCCESS
    assert res["chunks_end"] == 1024 // CHUNK_MIB
    assert len(refusal_lines(err)) == 1, err
    assert exp.stop() == 0


@pytest.mark.parametrize("path", PATHS)
def test_vmm_import_is_charged_when_mapped_and_released_with_the_handle(probe, env, exporters, tmp_path, path):
    sock = tmp_path / "fd.sock"
    exporters(probe, env, "export-vmm", SHARED_MIB, sock)
    res, err = importer(probe, env, "import-vmm", path, sock, SHARED_MIB, CHUNK_MIB, BIG_MIB, vram="1Gi")
    assert res["rc_import"] == CUDA_SUCCESS and res["rc_map"] == CUDA_SUCCESS and res["byte"] == 0x5A
    # The size of an imported handle is known only when it is mapped: charged then.
    assert res["used_import"] == 0 and res["used_map"] == SHARED_MIB * MIB
    assert res["chunks_mapped"] == (1024 - SHARED_MIB) // CHUNK_MIB
    assert res["used_released"] == 0 and res["chunks_released"] == 1024 // CHUNK_MIB
    assert res["rc_map_over"] == CUDA_ERROR_OUT_OF_MEMORY
    # Mapped in two halves: each half is charged as it is mapped.
    assert res["used_half"] == SHARED_MIB // 2 * MIB and res["used_halves"] == SHARED_MIB * MIB
    assert res["chunks_halves"] == (1024 - SHARED_MIB) // CHUNK_MIB
    assert res["chunks_end"] == 1024 // CHUNK_MIB
    assert len(refusal_lines(err)) == 1, err


def test_import_outside_a_tenant_is_not_charged_anywhere(probe, env, exporters, tmp_path):
    """Without GPUSLICE_TENANT the hooks pass through: the preloaded interposer changes nothing."""
    exp = exporters(probe, env, "export-ipc", SHARED_MIB)
    e = dict(env)
    e["LD_PRELOAD"] = str(BIN.parent / "lib" / "libgpuslice.so")
    e["ASAN_OPTIONS"] = "verify_asan_link_order=0"
    res, _ = importer(probe, e, "import-ipc", "procaddr", exp.info["handle"], CHUNK_MIB, BIG_MIB)
    assert res["rc_open"] == CUDA_SUCCESS and res["rc_over"] == CUDA_SUCCESS
    assert res["used_open"] == SHARED_MIB * MIB  # the device's own count: nothing added
