"""Both sides of the checkpoint API on the simulated GPU, through ctypes.

  python3 ckpt_probe.py target
      A CUDA process that holds device memory and takes commands on stdin, one a line, each
      answered by one JSON line on stdout (after {"ready": true, "pid": PID} at start):
        alloc KIND BYTES   KIND plain, managed, pool (cuMemAllocAsync) or vmm (cuMemCreate, mapped
                           at a reservation; BYTES a multiple of 2 MiB); {"index", "ptr", "bytes"}
        ipc-export I       cuIpcGetMemHandle of allocation I: it is shared from then on
        fill I [full]      writes random bytes into allocation I: all of it with `full`, else
                           its first and last MiB and one MiB at each eighth of it
        sums               per allocation {"ptr", "bytes", "sum"}: a SHA-256 of what fill wrote
                           (all of it, or its regions) and of one MiB between each two written
                           regions, which must read zero; read back with cuMemcpyDtoH
        launch US          a sim_busy kernel of US microseconds on the legacy stream; {"rc",
                           "seconds"}: how long the call took (a locked process blocks in it)
        sync               cuCtxSynchronize; {"rc", "seconds"}
        meminfo            cuMemGetInfo_v2: {"free", "total"}
        exit
  python3 ckpt_probe.py ctl OP PID [TIMEOUT_MS]
      OP state, lock, checkpoint, restore, unlock or tid on process PID: {"rc", "state",
      "seconds"} (state after the call; -1 when GetState fails)."""
import ctypes as C
import hashlib
import json
import os
import sys
import time

MIB = 1 << 20


def out(**kw):
    print(json.dumps(kw), flush=True)


class Location(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


class AllocProp(C.Structure):
    _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int), ("location", Location),
                ("win32HandleMetaData", C.c_void_p), ("allocFlags", C.c_ubyte * 8)]


class AccessDesc(C.Structure):
    _fields_ = [("location", Location), ("flags", C.c_int)]


class LockArgs(C.Structure):
    _fields_ = [("timeoutMs", C.c_uint), ("reserved0", C.c_uint), ("reserved1", C.c_uint64 * 7)]


def driver():
    lib = C.CDLL("libcuda.so.1")
    rc = lib.cuInit(0)
    if rc:
        out(error="cuInit", rc=rc)
        sys.exit(1)
    return lib


def state(lib, pid):
    s = C.c_int(-1)
    rc = lib.cuCheckpointProcessGetState(pid, C.byref(s))
    return s.value if rc == 0 else -1


def ctl(op, pid, timeout_ms=0):
    lib = driver()
    t0 = time.monotonic()
    if op == "state":
        rc = 0
    elif op == "tid":
        tid = C.c_int()
        rc = lib.cuCheckpointProcessGetRestoreThreadId(pid, C.byref(tid))
        out(rc=rc, tid=tid.value, state=state(lib, pid), seconds=0)
        return
    elif op == "lock":
        rc = lib.cuCheckpointProcessLock(pid, C.byref(LockArgs(timeoutMs=timeout_ms)))
    else:
        fn = {"checkpoint": lib.cuCheckpointProcessCheckpoint, "restore": lib.cuCheckpointProcessRestore,
              "unlock": lib.cuCheckpointProcessUnlock}[op]
        rc = fn(pid, None)
    out(rc=rc, state=state(lib, pid), seconds=time.monotonic() - t0)


class Target:
    def __init__(self):
        self.lib = lib = driver()
        dev, self.ctx = C.c_int(), C.c_void_p()
        self.check(lib.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
        self.check(lib.cuDevicePrimaryCtxRetain(C.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        self.check(lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.allocs = []  # [ptr, bytes, written regions or None]
        mod, self.fn = C.c_void_p(), C.c_void_p()
        self.check(lib.cuModuleLoadData(C.byref(mod), b"\0"), "cuModuleLoadData")
        self.check(lib.cuModuleGetFunction(C.byref(self.fn), mod, b"sim_busy"), "cuModuleGetFunction")

    @staticmethod
    def check(rc, what):
        if rc:
            out(error=what, rc=rc)
            sys.exit(1)

    def vmm(self, p, size):
        """cuMemCreate of size bytes on device 0, mapped read-write at a reservation."""
        prop = AllocProp(type=1, location=Location(type=1, id=0))  # pinned, on device 0
        h = C.c_uint64()
        rc = self.lib.cuMemCreate(C.byref(h), C.c_size_t(size), C.byref(prop), C.c_uint64(0))
        rc = rc or self.lib.cuMemAddressReserve(C.byref(p), C.c_size_t(size), C.c_size_t(0), C.c_uint64(0),
                                                C.c_uint64(0))
        rc = rc or self.lib.cuMemMap(p, C.c_size_t(size), C.c_size_t(0), h, C.c_uint64(0))
        access = AccessDesc(location=Location(type=1, id=0), flags=3)  # read-write
        return rc or self.lib.cuMemSetAccess(p, C.c_size_t(size), C.byref(access), C.c_size_t(1))

    def alloc(self, kind, size):
        p = C.c_uint64()
        if kind == "plain":
            rc = self.lib.cuMemAlloc_v2(C.byref(p), C.c_size_t(size))
        elif kind == "managed":
            rc = self.lib.cuMemAllocManaged(C.byref(p), C.c_size_t(size), 1)
        elif kind == "pool":
            rc = self.lib.cuMemAllocAsync(C.byref(p), C.c_size_t(size), None)
        else:
            rc = self.vmm(p, size)
        if rc:
            return {"rc": rc}
        self.allocs.append([p.value, size, None])
        return {"index": len(self.allocs) - 1, "ptr": p.value, "bytes": size}

    def ipc_export(self, i):
        handle = (C.c_char * 64)()
        return {"rc": self.lib.cuIpcGetMemHandle(handle, C.c_uint64(self.allocs[i][0]))}

    @staticmethod
    def regions(size):
        """The written regions of an allocation not filled whole, and the gaps between them."""
        starts = sorted({0, size - MIB} | {size * k // 8 // MIB * MIB for k in range(1, 8)})
        written = [(s, MIB) for s in starts]
        gaps = [(a + MIB + (b - a - MIB) // 2 // MIB * MIB, MIB) for a, b in zip(starts, starts[1:])
                if b - a >= 3 * MIB]
        return written, gaps

    def fill(self, i, full):
        ptr, size, _ = self.allocs[i]
        written = [(0, size)] if full else self.regions(size)[0]
        for off, n in written:
            for o in range(off, off + n, 64 * MIB):
                chunk = os.urandom(min(64 * MIB, off + n - o))
                self.check(self.lib.cuMemcpyHtoD_v2(C.c_uint64(ptr + o), chunk, C.c_size_t(len(chunk))),
                           "cuMemcpyHtoD_v2")
        self.allocs[i][2] = "full" if full else "regions"
        return {"written": sum(n for _, n in written)}

    def read(self, ptr, off, n):
        buf = C.create_string_buffer(n)
        self.check(self.lib.cuMemcpyDtoH_v2(buf, C.c_uint64(ptr + off), C.c_size_t(n)), "cuMemcpyDtoH_v2")
        return buf.raw

    def sums(self):
        res = []
        for ptr, size, how in self.allocs:
            h, zero_ok = hashlib.sha256(), True
            if how == "full":
                for o in range(0, size, 64 * MIB):
                    h.update(self.read(ptr, o, min(64 * MIB, size - o)))
            elif how == "regions":
                written, gaps = self.regions(size)
                for off, n in written:
                    h.update(self.read(ptr, off, n))
                zero_ok = all(self.read(ptr, off, n) == bytes(n) for off, n in gaps)
            res.append({"ptr": ptr, "bytes": size, "sum": h.hexdigest(), "gaps_zero": zero_ok})
        return {"allocs": res}

    def launch(self, us):
        arg = C.c_uint64(us)
        params = (C.c_void_p * 1)(C.cast(C.byref(arg), C.c_void_p))
        t0 = time.monotonic()
        rc = self.lib.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, None, params, None)
        return {"rc": rc, "seconds": time.monotonic() - t0}

    def sync(self):
        t0 = time.monotonic()
        rc = self.lib.cuCtxSynchronize()
        return {"rc": rc, "seconds": time.monotonic() - t0}

    def meminfo(self):
        f, t = C.c_size_t(), C.c_size_t()
        self.check(self.lib.cuMemGetInfo_v2(C.byref(f), C.byref(t)), "cuMemGetInfo_v2")
        return {"free": f.value, "total": t.value}

    def serve(self):
        out(ready=True, pid=os.getpid())
        for line in sys.stdin:
            w = line.split()
            if not w:
                continue
            if w[0] == "exit":
                break
            if w[0] == "alloc":
                r = self.alloc(w[1], int(w[2]))
            elif w[0] == "ipc-export":
                r = self.ipc_export(int(w[1]))
            elif w[0] == "fill":
                r = self.fill(int(w[1]), len(w) > 2 and w[2] == "full")
            elif w[0] == "launch":
                r = self.launch(int(w[1]))
            else:
                r = getattr(self, w[0])()
            out(**r)


if __name__ == "__main__":
    if sys.argv[1] == "target":
        Target().serve()
    else:
        ctl(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
