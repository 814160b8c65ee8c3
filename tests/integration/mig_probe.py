"""A probe of the simulated NVML's MIG calls and of a CUDA process on a MIG device, through
ctypes, printing one JSON object per line. It runs as its own process (the simulator reads
GPUSLICE_SIM, GPUSIM_STATE_DIR and CUDA_VISIBLE_DEVICES when its libraries load);
test_sim_nvml_mig.py and the MIG tests of gpuslice start it with the environment they need.
Usage: python3 mig_probe.py COMMAND [ARGS...]; see COMMANDS at the bottom."""
import ctypes as C
import json
import os
import sys

NVML_SUCCESS = 0
NAME_V2 = 96


class Placement(C.Structure):
    _fields_ = [("start", C.c_uint), ("size", C.c_uint)]


class GiProfileInfo(C.Structure):
    _fields_ = [("id", C.c_uint), ("isP2pSupported", C.c_uint), ("sliceCount", C.c_uint),
                ("instanceCount", C.c_uint), ("multiprocessorCount", C.c_uint), ("copyEngineCount", C.c_uint),
                ("decoderCount", C.c_uint), ("encoderCount", C.c_uint), ("jpegCount", C.c_uint),
                ("ofaCount", C.c_uint), ("memorySizeMB", C.c_ulonglong)]


class GiProfileInfoV2(C.Structure):
    _fields_ = [("version", C.c_uint)] + GiProfileInfo._fields_ + [("name", C.c_char * NAME_V2)]


class GiInfo(C.Structure):
    _fields_ = [("device", C.c_void_p), ("id", C.c_uint), ("profileId", C.c_uint), ("placement", Placement)]


class CiInfo(C.Structure):
    _fields_ = [("device", C.c_void_p), ("gpuInstance", C.c_void_p), ("id", C.c_uint), ("profileId", C.c_uint),
                ("placement", Placement)]


class Memory(C.Structure):
    _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class ProcessInfo(C.Structure):
    _fields_ = [("pid", C.c_uint), ("usedGpuMemory", C.c_ulonglong), ("gpuInstanceId", C.c_uint),
                ("computeInstanceId", C.c_uint)]


GI_PROFILE_V2 = C.sizeof(GiProfileInfoV2) | (2 << 24)
CI_PROFILE_BY_SLICES = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}


def out(**kw):
    print(json.dumps(kw), flush=True)


def nvml():
    lib = C.CDLL("libnvidia-ml.so.1")
    assert lib.nvmlInit_v2() == NVML_SUCCESS
    return lib


def gpu(lib, index):
    h = C.c_void_p()
    assert lib.nvmlDeviceGetHandleByIndex_v2(C.c_uint(index), C.byref(h)) == NVML_SUCCESS
    return h


def profiles(lib, h):
    """Every GPU instance profile the device has, by NVML_GPU_INSTANCE_PROFILE_* value."""
    res = {}
    for enum in range(10):
        info = GiProfileInfoV2(version=GI_PROFILE_V2)
        rc = lib.nvmlDeviceGetGpuInstanceProfileInfoV(h, C.c_uint(enum), C.byref(info))
        if rc != NVML_SUCCESS:
            continue
        count = C.c_uint()
        assert lib.nvmlDeviceGetGpuInstancePossiblePlacements_v2(h, info.id, None, C.byref(count)) == 0
        pl = (Placement * count.value)()
        assert lib.nvmlDeviceGetGpuInstancePossiblePlacements_v2(h, info.id, pl, C.byref(count)) == 0
        res[info.name.decode().removeprefix("MIG ")] = {
            "enum": enum, "id": info.id, "compute": info.sliceCount, "max": info.instanceCount,
            "sms": info.multiprocessorCount, "mem_mib": info.memorySizeMB,
            "starts": [p.start for p in pl], "mem_slices": pl[0].size if count.value else 0}
    return res


def mig_devices(lib, h):
    count = C.c_uint()
    assert lib.nvmlDeviceGetMaxMigDeviceCount(h, C.byref(count)) == NVML_SUCCESS
    devs = []
    for i in range(count.value):
        m = C.c_void_p()
        if lib.nvmlDeviceGetMigDeviceHandleByIndex(h, C.c_uint(i), C.byref(m)) != NVML_SUCCESS:
            continue
        uuid, name = C.create_string_buffer(96), C.create_string_buffer(96)
        gi, ci, mem = C.c_uint(), C.c_uint(), Memory()
        assert lib.nvmlDeviceGetUUID(m, uuid, 96) == 0 and lib.nvmlDeviceGetName(m, name, 96) == 0
        assert lib.nvmlDeviceGetGpuInstanceId(m, C.byref(gi)) == 0
        assert lib.nvmlDeviceGetComputeInstanceId(m, C.byref(ci)) == 0
        assert lib.nvmlDeviceGetMemoryInfo(m, C.byref(mem)) == 0
        n = C.c_uint(64)
        procs = (ProcessInfo * 64)()
        assert lib.nvmlDeviceGetComputeRunningProcesses_v3(m, C.byref(n), procs) == 0
        devs.append({"uuid": uuid.value.decode(), "name": name.value.decode(), "gi_id": gi.value, "ci_id": ci.value,
                     "total": mem.total, "used": mem.used, "free": mem.free,
                     "pids": [procs[k].pid for k in range(n.value)]})
    return devs


def instances(lib, h, profs):
    """The GPU instances, as profile@start with their ids and compute instances."""
    res = []
    for name, p in profs.items():
        arr = (C.c_void_p * 8)()
        n = C.c_uint()
        if lib.nvmlDeviceGetGpuInstances(h, C.c_uint(p["id"]), arr, C.byref(n)) != NVML_SUCCESS:
            continue
        for k in range(n.value):
            info = GiInfo()
            assert lib.nvmlGpuInstanceGetInfo(C.c_void_p(arr[k]), C.byref(info)) == 0
            cis = []
            for cp in range(8):
                carr, cn = (C.c_void_p * 8)(), C.c_uint()
                if lib.nvmlGpuInstanceGetComputeInstances(C.c_void_p(arr[k]), C.c_uint(cp), carr, C.byref(cn)) != 0:
                    continue
                for j in range(cn.value):
                    ci = CiInfo()
                    assert lib.nvmlComputeInstanceGetInfo_v2(C.c_void_p(carr[j]), C.byref(ci)) == 0
                    cis.append({"id": ci.id, "profile": ci.profileId, "start": ci.placement.start,
                                "size": ci.placement.size})
            res.append({"profile": name, "start": info.placement.start, "size": info.placement.size, "id": info.id,
                        "cis": cis})
    return sorted(res, key=lambda r: r["start"])


def mode(lib, h):
    cur, pend = C.c_uint(), C.c_uint()
    rc = lib.nvmlDeviceGetMigMode(h, C.byref(cur), C.byref(pend))
    return {"rc": rc, "current": cur.value, "pending": pend.value}


# ---- commands ----

def cmd_state(argv):
    """MIG mode, profiles, instances and MIG devices of GPU DEV."""
    lib = nvml()
    h = gpu(lib, int(argv[0]))
    m = mode(lib, h)
    profs = profiles(lib, h) if m["current"] == 1 else {}
    out(mode=m, profiles=profs, instances=instances(lib, h, profs) if profs else [],
        mig_devices=mig_devices(lib, h) if m["current"] == 1 else [])


def cmd_set_mode(argv):
    lib = nvml()
    h = gpu(lib, int(argv[0]))
    act = C.c_int(-1)
    rc = lib.nvmlDeviceSetMigMode(h, C.c_uint(int(argv[1])), C.byref(act))
    out(rc=rc, activation=act.value, mode=mode(lib, h))


def cmd_create(argv):
    """Creates, on GPU DEV, a GPU instance of PROFILE (its name) at START with one compute
    instance over all of it; prints each return code."""
    lib = nvml()
    h = gpu(lib, int(argv[0]))
    p = profiles(lib, h)[argv[1]]
    gi = C.c_void_p()
    rc = lib.nvmlDeviceCreateGpuInstanceWithPlacement(h, C.c_uint(p["id"]),
                                                      C.byref(Placement(int(argv[2]), p["mem_slices"])), C.byref(gi))
    res = {"gi_rc": rc}
    if rc == NVML_SUCCESS:
        ci = C.c_void_p()
        res["ci_rc"] = lib.nvmlGpuInstanceCreateComputeInstance(gi, C.c_uint(CI_PROFILE_BY_SLICES[p["compute"]]),
                                                                C.byref(ci))
    out(**res)


def cmd_destroy(argv):
    """Destroys GPU DEV's instance at memory slice START: its compute instances, then it."""
    lib = nvml()
    h = gpu(lib, int(argv[0]))
    res = {"ci_rc": [], "gi_rc": None}
    for name, p in profiles(lib, h).items():
        arr, n = (C.c_void_p * 8)(), C.c_uint()
        lib.nvmlDeviceGetGpuInstances(h, C.c_uint(p["id"]), arr, C.byref(n))
        for k in range(n.value):
            info = GiInfo()
            lib.nvmlGpuInstanceGetInfo(C.c_void_p(arr[k]), C.byref(info))
            if info.placement.start != int(argv[1]):
                continue
            for cp in range(8):
                carr, cn = (C.c_void_p * 8)(), C.c_uint()
                if lib.nvmlGpuInstanceGetComputeInstances(C.c_void_p(arr[k]), C.c_uint(cp), carr, C.byref(cn)) == 0:
                    res["ci_rc"] += [lib.nvmlComputeInstanceDestroy(C.c_void_p(carr[j])) for j in range(cn.value)]
            res["gi_rc"] = lib.nvmlGpuInstanceDestroy(C.c_void_p(arr[k]))
    out(**res)


def cmd_reset(argv):
    lib = C.CDLL("libnvidia-ml.so.1")
    err = C.create_string_buffer(256)
    rc = lib.gpusim_gpu_reset(C.c_uint(int(argv[0])), err, C.c_size_t(256))
    out(rc=rc, err=err.value.decode())


def cmd_fail(argv):
    """The simulator's test control: the Nth next instance creation on GPU DEV fails."""
    lib = C.CDLL("libnvidia-ml.so.1")
    err = C.create_string_buffer(256)
    rc = lib.gpusim_mig_fail_inject(C.c_uint(int(argv[0])), C.c_uint(int(argv[1])), err, C.c_size_t(256))
    out(rc=rc, err=err.value.decode())


def cmd_compute_mode(argv):
    """GPU DEV's compute mode, after setting it to MODE when given."""
    lib = nvml()
    h = gpu(lib, int(argv[0]))
    res = {}
    if len(argv) > 1:
        res["set_rc"] = lib.nvmlDeviceSetComputeMode(h, C.c_int(int(argv[1])))
    m = C.c_int(-1)
    res["get_rc"] = lib.nvmlDeviceGetComputeMode(h, C.byref(m))
    out(mode=m.value, **res)


def cuda_device():
    """cuInit, the devices this process sees (name, UUID, memory) and device 0's primary context."""
    lib = C.CDLL("libcuda.so.1")
    assert lib.cuInit(0) == 0
    n = C.c_int()
    assert lib.cuDeviceGetCount(C.byref(n)) == 0
    devs = []
    for i in range(n.value):
        d, name, uuid, total, sms = C.c_int(), C.create_string_buffer(128), (C.c_ubyte * 16)(), C.c_size_t(), C.c_int()
        assert lib.cuDeviceGet(C.byref(d), i) == 0
        assert lib.cuDeviceGetName(name, 128, d) == 0
        assert lib.cuDeviceGetUuid(uuid, d) == 0
        assert lib.cuDeviceTotalMem_v2(C.byref(total), d) == 0
        assert lib.cuDeviceGetAttribute(C.byref(sms), 16, d) == 0  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        devs.append({"name": name.value.decode(), "uuid": bytes(uuid).hex(), "total": total.value, "sms": sms.value})
    return lib, devs


def cmd_cuda(argv):
    """The CUDA devices this process sees; with BYTES, allocates that much on device 0, says so
    and holds it until stdin closes."""
    lib, devs = cuda_device()
    res = {"devices": devs, "pid": os.getpid()}
    if argv and devs:
        ctx = C.c_void_p()
        assert lib.cuDevicePrimaryCtxRetain(C.byref(ctx), 0) == 0 and lib.cuCtxSetCurrent(ctx) == 0
        p = C.c_uint64()
        res["alloc_rc"] = lib.cuMemAlloc_v2(C.byref(p), C.c_size_t(int(argv[0])))
        free, total = C.c_size_t(), C.c_size_t()
        assert lib.cuMemGetInfo_v2(C.byref(free), C.byref(total)) == 0
        res.update(free=free.value, total=total.value, ready=True)
        out(**res)
        sys.stdin.read()
        return
    out(**res)


def cmd_tenant_view(argv):
    """What a process sees of MIG device UUID: cuMemGetInfo on its device 0, NVML's memory
    info of the MIG device's handle; with BYTES, after allocating that much."""
    lib, devs = cuda_device()
    ctx = C.c_void_p()
    assert lib.cuDevicePrimaryCtxRetain(C.byref(ctx), 0) == 0 and lib.cuCtxSetCurrent(ctx) == 0
    res = {"devices": devs}
    if len(argv) > 1:
        p = C.c_uint64()
        res["alloc_rc"] = lib.cuMemAlloc_v2(C.byref(p), C.c_size_t(int(argv[1])))
    free, total = C.c_size_t(), C.c_size_t()
    assert lib.cuMemGetInfo_v2(C.byref(free), C.byref(total)) == 0
    res["cuda"] = {"free": free.value, "total": total.value}
    nv = nvml()
    h = C.c_void_p()
    res["by_uuid_rc"] = nv.nvmlDeviceGetHandleByUUID(argv[0].encode(), C.byref(h))
    m = Memory()
    res["nvml_rc"] = nv.nvmlDeviceGetMemoryInfo(h, C.byref(m))
    res["nvml"] = {"total": m.total, "free": m.free, "used": m.used}
    out(**res)


COMMANDS = {"state": cmd_state, "set_mode": cmd_set_mode, "create": cmd_create, "destroy": cmd_destroy,
            "reset": cmd_reset, "fail": cmd_fail, "compute_mode": cmd_compute_mode, "cuda": cmd_cuda,
            "tenant_view": cmd_tenant_view}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](sys.argv[2:])
