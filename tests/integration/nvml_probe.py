"""A probe that drives the simulated NVML (and, for cross-checks, the simulated CUDA driver)
through ctypes and prints what it saw as one JSON object per line.

It runs as its own process because the simulator reads GPUSLICE_SIM and GPUSIM_STATE_DIR
when the libraries load; test_sim_nvml.py starts it with the environment each test needs.
Usage: python3 nvml_probe.py COMMAND [ARGS...]; see COMMANDS at the bottom."""
import ctypes as C
import json
import os
import sys
import time

NVML_SUCCESS = 0
NVML_ERROR_INSUFFICIENT_SIZE = 7
nvmlMemory_v2 = 40 | (2 << 24)


class Memory(C.Structure):
    _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class MemoryV2(C.Structure):
    _fields_ = [("version", C.c_uint), ("total", C.c_ulonglong), ("reserved", C.c_ulonglong),
                ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class PciInfo(C.Structure):
    _fields_ = [("busIdLegacy", C.c_char * 16), ("domain", C.c_uint), ("bus", C.c_uint), ("device", C.c_uint),
                ("pciDeviceId", C.c_uint), ("pciSubSystemId", C.c_uint), ("busId", C.c_char * 32)]


class PciInfoLegacy(C.Structure):
    _fields_ = [("busId", C.c_char * 16), ("domain", C.c_uint), ("bus", C.c_uint), ("device", C.c_uint),
                ("pciDeviceId", C.c_uint), ("pciSubSystemId", C.c_uint), ("reserved", C.c_uint * 4)]


class Utilization(C.Structure):
    _fields_ = [("gpu", C.c_uint), ("memory", C.c_uint)]


class ProcessInfoV1(C.Structure):
    _fields_ = [("pid", C.c_uint), ("usedGpuMemory", C.c_ulonglong)]


class ProcessInfoV2(C.Structure):
    _fields_ = [("pid", C.c_uint), ("usedGpuMemory", C.c_ulonglong), ("gpuInstanceId", C.c_uint),
                ("computeInstanceId", C.c_uint)]


class ProcessUtilSample(C.Structure):
    _fields_ = [("pid", C.c_uint), ("timeStamp", C.c_ulonglong), ("smUtil", C.c_uint), ("memUtil", C.c_uint),
                ("encUtil", C.c_uint), ("decUtil", C.c_uint)]


class FieldValue(C.Structure):
    _fields_ = [("fieldId", C.c_uint), ("scopeId", C.c_uint), ("timestamp", C.c_longlong),
                ("latencyUsec", C.c_longlong), ("valueType", C.c_int), ("nvmlReturn", C.c_int),
                ("value", C.c_ulonglong)]  # the union, read as its widest integer member


class EventData(C.Structure):
    _fields_ = [("device", C.c_void_p), ("eventType", C.c_ulonglong), ("eventData", C.c_ulonglong),
                ("gpuInstanceId", C.c_uint), ("computeInstanceId", C.c_uint)]


class GpmMetric(C.Structure):
    _fields_ = [("metricId", C.c_uint), ("nvmlReturn", C.c_int), ("value", C.c_double),
                ("shortName", C.c_char_p), ("longName", C.c_char_p), ("unit", C.c_char_p)]


NVML_GPM_METRIC_MAX = 333


class GpmMetricsGet(C.Structure):
    _fields_ = [("version", C.c_uint), ("numMetrics", C.c_uint), ("sample1", C.c_void_p), ("sample2", C.c_void_p),
                ("metrics", GpmMetric * NVML_GPM_METRIC_MAX)]


class GpmSupport(C.Structure):
    _fields_ = [("version", C.c_uint), ("isSupportedDevice", C.c_uint)]


FIELDS = {"memory_temp": 82, "energy": 83, "pcie_replay": 94, "nvlink_tx": 138, "nvlink_rx": 139,
          "remapped_cor": 142, "remapped_unc": 143, "remapped_pending": 144, "remapped_failure": 145,
          "unsimulated": 1, "out_of_range": 9999}
XID_EVENT = 0x8


def out(**kw):
    print(json.dumps(kw), flush=True)


def nvml():
    lib = C.CDLL("libnvidia-ml.so.1")
    lib.nvmlErrorString.restype = C.c_char_p
    return lib


def nvml_init():
    lib = nvml()
    rc = lib.nvmlInit_v2()
    if rc != NVML_SUCCESS:
        out(error="nvmlInit_v2", rc=rc)
        sys.exit(1)
    return lib


def handle(lib, index):
    h = C.c_void_p()
    rc = lib.nvmlDeviceGetHandleByIndex_v2(C.c_uint(index), C.byref(h))
    assert rc == NVML_SUCCESS, rc
    return h


def nvml_mem(lib, h):
    m = Memory()
    assert lib.nvmlDeviceGetMemoryInfo(h, C.byref(m)) == NVML_SUCCESS
    m2 = MemoryV2(version=nvmlMemory_v2)
    assert lib.nvmlDeviceGetMemoryInfo_v2(h, C.byref(m2)) == NVML_SUCCESS
    return {"total": m.total, "used": m.used, "free": m.free,
            "v2": {"total": m2.total, "used": m2.used, "free": m2.free, "reserved": m2.reserved}}


class Cuda:
    """The handful of driver calls the cross-checks need, on one device's primary context."""

    def __init__(self, dev=0):
        self.lib = C.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")
        d = C.c_int()
        self.check(self.lib.cuDeviceGet(C.byref(d), dev), "cuDeviceGet")
        self.ctx = C.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(C.byref(self.ctx), d), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    @staticmethod
    def check(rc, what):
        if rc != 0:
            out(error=what, rc=rc)
            sys.exit(1)

    def alloc(self, size):
        p = C.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(C.byref(p), C.c_size_t(size)), "cuMemAlloc_v2")
        return p.value

    def mem_info(self):
        free, total = C.c_size_t(), C.c_size_t()
        self.check(self.lib.cuMemGetInfo_v2(C.byref(free), C.byref(total)), "cuMemGetInfo_v2")
        return free.value, total.value

    def busy_kernel(self):
        mod, fn = C.c_void_p(), C.c_void_p()
        image = C.create_string_buffer(b"// any image: the simulator keys on the kernel name\n")
        self.check(self.lib.cuModuleLoadData(C.byref(mod), image), "cuModuleLoadData")
        self.check(self.lib.cuModuleGetFunction(C.byref(fn), mod, b"sim_busy"), "cuModuleGetFunction")
        return fn

    def launch_busy(self, fn, us):
        arg = C.c_uint64(us)
        params = (C.c_void_p * 1)(C.cast(C.byref(arg), C.c_void_p))
        self.check(self.lib.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, params, None), "cuLaunchKernel")

    def sync(self):
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


# ---- commands ----

def cmd_init(argv):
    """nvmlInit_v2 (twice, to show a bad configuration is reported once), then the codes."""
    lib = nvml()
    rc1 = lib.nvmlInit_v2()
    rc2 = lib.nvmlInit_v2()
    out(rc=rc1, rc_again=rc2, text=lib.nvmlErrorString(rc1).decode())


def cmd_devices(argv):
    lib = nvml_init()
    count = C.c_uint()
    assert lib.nvmlDeviceGetCount_v2(C.byref(count)) == NVML_SUCCESS
    for i in range(count.value):
        h = handle(lib, i)
        name, uuid = C.create_string_buffer(96), C.create_string_buffer(96)
        assert lib.nvmlDeviceGetName(h, name, 96) == NVML_SUCCESS
        assert lib.nvmlDeviceGetUUID(h, uuid, 96) == NVML_SUCCESS
        pci, legacy = PciInfo(), PciInfoLegacy()
        assert lib.nvmlDeviceGetPciInfo_v3(h, C.byref(pci)) == NVML_SUCCESS
        assert lib.nvmlDeviceGetPciInfo(h, C.byref(legacy)) == NVML_SUCCESS
        major, minor = C.c_int(), C.c_int()
        assert lib.nvmlDeviceGetCudaComputeCapability(h, C.byref(major), C.byref(minor)) == NVML_SUCCESS
        cur, pend = C.c_uint(7), C.c_uint(7)
        mig_rc = lib.nvmlDeviceGetMigMode(h, C.byref(cur), C.byref(pend))
        idx = C.c_uint()
        assert lib.nvmlDeviceGetIndex(h, C.byref(idx)) == NVML_SUCCESS
        by_uuid, by_pci = C.c_void_p(), C.c_void_p()
        assert lib.nvmlDeviceGetHandleByUUID(uuid.value, C.byref(by_uuid)) == NVML_SUCCESS
        assert lib.nvmlDeviceGetHandleByPciBusId_v2(pci.busId, C.byref(by_pci)) == NVML_SUCCESS
        out(index=idx.value, name=name.value.decode(), uuid=uuid.value.decode(), memory=nvml_mem(lib, h),
            bus_id=pci.busId.decode(), bus_id_legacy=pci.busIdLegacy.decode(), legacy_bus_id=legacy.busId.decode(),
            pci_device_id=pci.pciDeviceId, legacy_pci_device_id=legacy.pciDeviceId, cc=[major.value, minor.value],
            mig_rc=mig_rc, mig=[cur.value, pend.value], by_uuid_same=by_uuid.value == h.value,
            by_pci_same=by_pci.value == h.value)
    assert lib.nvmlShutdown() == NVML_SUCCESS


def cmd_api(argv):
    """Argument and lifecycle checks that need no other process."""
    lib = nvml()
    count = C.c_uint()
    res = {"before_init": lib.nvmlDeviceGetCount_v2(C.byref(count))}
    res["init"] = lib.nvmlInit_v2()
    res["init_again"] = lib.nvmlInitWithFlags(0)
    h = handle(lib, 0)
    res["null_count"] = lib.nvmlDeviceGetCount_v2(None)
    res["null_memory"] = lib.nvmlDeviceGetMemoryInfo(h, None)
    res["bad_index"] = lib.nvmlDeviceGetHandleByIndex_v2(C.c_uint(99), C.byref(C.c_void_p()))
    res["bad_handle"] = lib.nvmlDeviceGetMemoryInfo(C.c_void_p(16), C.byref(Memory()))
    res["memory_v2_bad_version"] = lib.nvmlDeviceGetMemoryInfo_v2(h, C.byref(MemoryV2(version=1)))
    small = C.create_string_buffer(4)
    res["name_small_buffer"] = lib.nvmlDeviceGetName(h, small, 4)
    ver = C.create_string_buffer(80)
    assert lib.nvmlSystemGetDriverVersion(ver, 80) == NVML_SUCCESS
    res["driver_version"] = ver.value.decode()
    assert lib.nvmlSystemGetNVMLVersion(ver, 80) == NVML_SUCCESS
    res["nvml_version"] = ver.value.decode()
    cuda = C.c_int()
    assert lib.nvmlSystemGetCudaDriverVersion_v2(C.byref(cuda)) == NVML_SUCCESS
    res["cuda_version"] = cuda.value
    res["errors"] = {str(rc): lib.nvmlErrorString(rc).decode() for rc in list(range(0, 31)) + [999, 12345]}
    res["shutdown"] = lib.nvmlShutdown()
    res["still_ready"] = lib.nvmlDeviceGetCount_v2(C.byref(count))
    res["shutdown_last"] = lib.nvmlShutdown()
    res["after_shutdown"] = lib.nvmlDeviceGetCount_v2(C.byref(count))
    res["shutdown_extra"] = lib.nvmlShutdown()
    out(**res)


def cmd_sensors(argv):
    lib = nvml_init()
    h = handle(lib, int(argv[0]) if argv else 0)
    vals = {}
    for name, fn, args in [("temp", "nvmlDeviceGetTemperature", [0]), ("power", "nvmlDeviceGetPowerUsage", []),
                           ("limit", "nvmlDeviceGetEnforcedPowerLimit", []),
                           ("pm_limit", "nvmlDeviceGetPowerManagementLimit", []),
                           ("sm_clock", "nvmlDeviceGetClockInfo", [1]), ("mem_clock", "nvmlDeviceGetClockInfo", [2]),
                           ("sm_max", "nvmlDeviceGetMaxClockInfo", [1]), ("mem_max", "nvmlDeviceGetMaxClockInfo", [2])]:
        v = C.c_uint()
        rc = getattr(lib, fn)(h, *args, C.byref(v))
        vals[name] = v.value if rc == NVML_SUCCESS else {"rc": rc}
    out(**vals)


def cmd_hold(argv):
    """Allocates BYTES on device DEV, says so, and holds it until stdin closes."""
    size, dev = int(argv[0]), int(argv[1]) if len(argv) > 1 else 0
    cuda = Cuda(dev)
    cuda.alloc(size)
    free, total = cuda.mem_info()
    out(pid=os.getpid(), ready=True, free=free, total=total)
    sys.stdin.read()


def cmd_meminfo(argv):
    """Device memory as NVML and as cuMemGetInfo_v2 see it, from this one process."""
    dev = int(argv[0]) if argv else 0
    lib = nvml_init()
    cuda = Cuda(dev)
    free, total = cuda.mem_info()
    out(nvml=nvml_mem(lib, handle(lib, dev)), cuda={"free": free, "total": total, "used": total - free})


def cmd_memwatch(argv):
    """Says ready, waits for a line on stdin, then polls NVML until used <= LIMIT; prints how long it took."""
    limit, dev = int(argv[0]), int(argv[1]) if len(argv) > 1 else 0
    lib = nvml_init()
    h = handle(lib, dev)
    out(ready=True, used=nvml_mem(lib, h)["v2"]["used"])
    sys.stdin.readline()
    t0 = time.monotonic()
    while True:
        used = nvml_mem(lib, h)["v2"]["used"]
        if used <= limit or time.monotonic() - t0 > 5:
            break
        time.sleep(0.01)
    out(used=used, seconds=time.monotonic() - t0)


def procs_call(lib, fn, h, struct, room):
    """Calls a running-processes entry point with a buffer of `room` entries (plus one guard
    entry of 0xAB bytes) and reports the code, the count and the decoded entries."""
    buf = (struct * (room + 1))()
    C.memset(buf, 0xAB, C.sizeof(buf))
    count = C.c_uint(room)
    rc = getattr(lib, fn)(h, C.byref(count), buf if room else None)
    n = min(count.value, room) if rc == NVML_SUCCESS else 0
    entries = [{f: getattr(buf[i], f) for f, _ in struct._fields_} for i in range(n)]
    tail = bytes(C.string_at(C.addressof(buf) + n * C.sizeof(struct), C.sizeof(struct) * (room + 1 - n)))
    return {"rc": rc, "count": count.value, "entries": entries, "tail_untouched": set(tail) <= {0xAB},
            "size": C.sizeof(struct)}


def cmd_procs(argv):
    dev = int(argv[0]) if argv else 0
    lib = nvml_init()
    h = handle(lib, dev)
    res = {"query": procs_call(lib, "nvmlDeviceGetComputeRunningProcesses_v3", h, ProcessInfoV2, 0)}
    need = res["query"]["count"]
    if need > 1:
        res["too_small"] = procs_call(lib, "nvmlDeviceGetComputeRunningProcesses_v3", h, ProcessInfoV2, need - 1)
    for key, fn, struct in [("v1", "nvmlDeviceGetComputeRunningProcesses", ProcessInfoV1),
                            ("v2", "nvmlDeviceGetComputeRunningProcesses_v2", ProcessInfoV2),
                            ("v3", "nvmlDeviceGetComputeRunningProcesses_v3", ProcessInfoV2)]:
        res[key] = procs_call(lib, fn, h, struct, need + 2)
    res["graphics"] = procs_call(lib, "nvmlDeviceGetGraphicsRunningProcesses_v3", h, ProcessInfoV2, 4)
    out(**res)


def busy_fraction(intervals, start, end):
    busy = sum(max(0, min(e, end) - max(s, start)) for s, e in intervals)
    return busy / (end - start)


def cmd_busy(argv):
    """Runs KERNEL_US kernels at DUTY for SECONDS on device 0, then compares NVML's utilization
    (and this process's sample) with the busy fraction of what it launched."""
    seconds, duty, kernel_us = float(argv[0]), float(argv[1]), int(argv[2])
    period = int(os.environ.get("GPUSIM_UTIL_PERIOD_MS", "1000")) / 1000.0
    lib = nvml_init()
    h = handle(lib, 0)
    cuda = Cuda(0)
    fn = cuda.busy_kernel()
    intervals = []
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        cuda.launch_busy(fn, kernel_us)
        cuda.sync()
        t1 = time.monotonic()
        intervals.append((t0, t1))
        idle = (t1 - t0) * (1 - duty) / duty
        time.sleep(idle)
    util = Utilization()
    q = time.monotonic()
    assert lib.nvmlDeviceGetUtilizationRates(h, C.byref(util)) == NVML_SUCCESS
    true = busy_fraction(intervals, q - period, q)
    count = C.c_uint(0)
    rc_query = lib.nvmlDeviceGetProcessUtilization(h, None, C.byref(count), C.c_ulonglong(0))
    samples = (ProcessUtilSample * max(count.value, 1))()
    rc = lib.nvmlDeviceGetProcessUtilization(h, samples, C.byref(count), C.c_ulonglong(0))
    mine = [s.smUtil for s in samples[:count.value] if rc == NVML_SUCCESS and s.pid == os.getpid()]
    stamp = [s.timeStamp for s in samples[:count.value]]
    out(gpu=util.gpu, memory=util.memory, true_percent=100 * true, kernels=len(intervals),
        proc_query_rc=rc_query, proc_rc=rc, proc_count=count.value, proc_mine=mine,
        proc_stamp_us=stamp, now_us=int(time.time() * 1e6))


def cmd_identity(argv):
    """Each device's name, UUID, bus id and total memory as NVML and as the CUDA driver report them."""
    lib = nvml_init()
    cu = C.CDLL("libcuda.so.1")
    Cuda.check(cu.cuInit(0), "cuInit")
    count = C.c_int()
    Cuda.check(cu.cuDeviceGetCount(C.byref(count)), "cuDeviceGetCount")
    for i in range(count.value):
        h = handle(lib, i)
        name, uuid, pci = C.create_string_buffer(96), C.create_string_buffer(96), PciInfo()
        assert lib.nvmlDeviceGetName(h, name, 96) == NVML_SUCCESS
        assert lib.nvmlDeviceGetUUID(h, uuid, 96) == NVML_SUCCESS
        assert lib.nvmlDeviceGetPciInfo_v3(h, C.byref(pci)) == NVML_SUCCESS
        cu_name, cu_bus, cu_uuid, cu_total = C.create_string_buffer(256), C.create_string_buffer(64), \
            (C.c_ubyte * 16)(), C.c_size_t()
        Cuda.check(cu.cuDeviceGetName(cu_name, 256, i), "cuDeviceGetName")
        Cuda.check(cu.cuDeviceGetPCIBusId(cu_bus, 64, i), "cuDeviceGetPCIBusId")
        Cuda.check(cu.cuDeviceGetUuid_v2(cu_uuid, i), "cuDeviceGetUuid_v2")
        Cuda.check(cu.cuDeviceTotalMem_v2(C.byref(cu_total), i), "cuDeviceTotalMem_v2")
        out(nvml={"name": name.value.decode(), "uuid": uuid.value.decode(), "bus_id": pci.busIdLegacy.decode(),
                  "total": nvml_mem(lib, h)["total"]},
            cuda={"name": cu_name.value.decode(), "uuid_hex": bytes(cu_uuid).hex(), "bus_id": cu_bus.value.decode(),
                  "total": cu_total.value})


def field_values(lib, h, names, scope=0xFFFFFFFF):
    vals = (FieldValue * len(names))()
    for i, n in enumerate(names):
        vals[i].fieldId, vals[i].scopeId = FIELDS[n], scope
    rc = lib.nvmlDeviceGetFieldValues(h, len(names), vals)
    assert rc == NVML_SUCCESS, rc
    return {n: {"rc": v.nvmlReturn, "type": v.valueType,
                "value": v.value & 0xFFFFFFFF if v.valueType == 1 else v.value,
                "stamp_us": v.timestamp} for n, v in zip(names, vals)}


def cmd_fields(argv):
    """Every reading behind dcgm-exporter's default fields that has its own call, for device DEV."""
    dev = int(argv[0]) if argv else 0
    lib = nvml_init()
    h = handle(lib, dev)
    res = {"fields": field_values(lib, h, list(FIELDS)), "now_us": int(time.time() * 1e6)}
    energy, u, period, replay = C.c_ulonglong(), C.c_uint(), C.c_uint(), C.c_uint()
    res["energy_rc"] = lib.nvmlDeviceGetTotalEnergyConsumption(h, C.byref(energy))
    res["energy"] = energy.value
    res["replay_rc"] = lib.nvmlDeviceGetPcieReplayCounter(h, C.byref(replay))
    res["replay"] = replay.value
    for what in ("Encoder", "Decoder"):
        u.value, period.value = 77, 0
        rc = getattr(lib, f"nvmlDeviceGet{what}Utilization")(h, C.byref(u), C.byref(period))
        res[what.lower()] = {"rc": rc, "util": u.value, "period_us": period.value}
    rows = [C.c_uint(7) for _ in range(4)]
    rc = lib.nvmlDeviceGetRemappedRows(h, *map(C.byref, rows))
    res["remapped"] = {"rc": rc, "rows": [r.value for r in rows]}
    mode = C.c_int(-1)
    res["virt_rc"] = lib.nvmlDeviceGetVirtualizationMode(h, C.byref(mode))
    res["virt"] = mode.value
    out(**res)


def cmd_energy(argv):
    """Total energy (mJ) before and after SECONDS of DUTY busy kernels on device 0, and idle for as long."""
    seconds, duty = float(argv[0]), float(argv[1])
    lib = nvml_init()
    h = handle(lib, 0)
    cuda = Cuda(0)
    fn = cuda.busy_kernel()
    e = C.c_ulonglong()

    def energy():
        assert lib.nvmlDeviceGetTotalEnergyConsumption(h, C.byref(e)) == NVML_SUCCESS
        return e.value, time.monotonic()
    e0, t0 = energy()
    time.sleep(seconds)
    e1, t1 = energy()
    while time.monotonic() < t1 + seconds:
        cuda.launch_busy(fn, int(10000 * duty))
        cuda.sync()
        time.sleep(0.01 * (1 - duty))
    e2, t2 = energy()
    out(idle_mj=e1 - e0, idle_s=t1 - t0, busy_mj=e2 - e1, busy_s=t2 - t1)


def cmd_xid_inject(argv):
    """The simulator's test control: records XID CODE on device DEV."""
    dev, code = int(argv[0]), int(argv[1])
    lib = nvml()
    err = C.create_string_buffer(256)
    rc = lib.gpusim_xid_inject(C.c_uint(dev), C.c_ulonglong(code), err, C.c_size_t(256))
    out(rc=rc, err=err.value.decode())


def cmd_events(argv):
    """Registers for XIDs on every device, says ready, waits for a line on stdin, then reads
    events until one wait of TIMEOUT_MS times out."""
    timeout = int(argv[0]) if argv else 200
    lib = nvml_init()
    count = C.c_uint()
    assert lib.nvmlDeviceGetCount_v2(C.byref(count)) == NVML_SUCCESS
    handles = [handle(lib, i) for i in range(count.value)]
    es = C.c_void_p()
    assert lib.nvmlEventSetCreate(C.byref(es)) == NVML_SUCCESS
    types = C.c_ulonglong()
    assert lib.nvmlDeviceGetSupportedEventTypes(handles[0], C.byref(types)) == NVML_SUCCESS
    regs = [lib.nvmlDeviceRegisterEvents(h, C.c_ulonglong(XID_EVENT), es) for h in handles]
    bad_type = lib.nvmlDeviceRegisterEvents(handles[0], C.c_ulonglong(0x1), es)
    out(ready=True, supported=types.value, registered=regs, bad_type=bad_type)
    sys.stdin.readline()
    events = []
    while True:
        d = EventData()
        rc = lib.nvmlEventSetWait_v2(es, C.byref(d), C.c_uint(timeout))
        if rc != NVML_SUCCESS:
            break
        events.append({"gpu": [h.value for h in handles].index(d.device), "type": d.eventType, "xid": d.eventData,
                       "gi": d.gpuInstanceId})
    out(events=events, end_rc=rc, free_rc=lib.nvmlEventSetFree(es))


def cmd_gpm(argv):
    """GPM on device DEV: support, then two samples around SECONDS of DUTY busy kernels and the metrics."""
    dev, seconds, duty = int(argv[0]), float(argv[1]), float(argv[2])
    lib = nvml_init()
    h = handle(lib, dev)
    sup = GpmSupport(version=1)
    res = {"support_rc": lib.nvmlGpmQueryDeviceSupport(h, C.byref(sup)), "supported": sup.isSupportedDevice,
           "bad_version": lib.nvmlGpmQueryDeviceSupport(h, C.byref(GpmSupport(version=9)))}
    a, b = C.c_void_p(), C.c_void_p()
    assert lib.nvmlGpmSampleAlloc(C.byref(a)) == NVML_SUCCESS and lib.nvmlGpmSampleAlloc(C.byref(b)) == NVML_SUCCESS
    res["sample_rc"] = lib.nvmlGpmSampleGet(h, a)
    if res["sample_rc"] == NVML_SUCCESS:
        cuda = Cuda(dev)
        fn = cuda.busy_kernel()
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            cuda.launch_busy(fn, int(10000 * duty))
            cuda.sync()
            time.sleep(0.01 * (1 - duty))
        assert lib.nvmlGpmSampleGet(h, b) == NVML_SUCCESS
        ids = {"graphics": 1, "tensor": 5, "dram": 10, "pcie_tx": 20, "pcie_rx": 21, "unsimulated": 30}
        m = GpmMetricsGet(version=1, numMetrics=len(ids), sample1=a, sample2=b)
        for i, mid in enumerate(ids.values()):
            m.metrics[i].metricId = mid
        res["metrics_rc"] = lib.nvmlGpmMetricsGet(C.byref(m))
        res["metrics"] = {k: {"rc": m.metrics[i].nvmlReturn, "value": m.metrics[i].value} for i, k in enumerate(ids)}
    res["free_rc"] = [lib.nvmlGpmSampleFree(a), lib.nvmlGpmSampleFree(b)]
    out(**res)


COMMANDS = {"fields": cmd_fields, "energy": cmd_energy, "xid_inject": cmd_xid_inject, "events": cmd_events,
            "gpm": cmd_gpm, "identity": cmd_identity, "init": cmd_init, "devices": cmd_devices, "api": cmd_api, "sensors": cmd_sensors, "hold": cmd_hold,
            "meminfo": cmd_meminfo, "memwatch": cmd_memwatch, "procs": cmd_procs, "busy": cmd_busy}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](sys.argv[2:])
