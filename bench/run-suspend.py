#!/usr/bin/env python3
"""Suspend and resume latency against the bytes moved, on the simulated GPU, with this
machine's host memory copy bandwidth (memmove of 1 GiB) measured in the same run as the
baseline (docs/suspend.md, bench/RESULTS.md).

For each size (GiB allocated) a tenant process allocates it on one simulated H200 and writes a
pattern over `touched` bytes of it (all of it, unless this machine's RAM cannot hold that:
--max-touched, default what /proc/meminfo leaves, less 6 GiB); the simulator moves only the
pages written. Each repetition then measures:

  driver  cuCheckpointProcessLock + cuCheckpointProcessCheckpoint (suspend) and
          cuCheckpointProcessRestore + cuCheckpointProcessUnlock (resume), called from this
          process on the tenant's pid: the mechanism alone
  daemon  `gpuslice suspend` and `gpuslice resume` against a daemon on the same GPU: the
          mechanism, the daemon's checks and bookkeeping, and the CLI's start

and checks the tenant's data after each resume. Medians are reported, with each one's
bandwidth (bytes moved / time) against memmove's: into a buffer already written (warm), and
into new pages, which is what any copy to freshly allocated host memory pays (the simulator's
copies go to new pages, both ways, as a driver's do).

  python3 bench/run-suspend.py --build build                  # sizes 1, 8, 32 GiB, 3 runs each
  python3 bench/run-suspend.py --build build --quick          # 64 MiB, once: checks it runs
  python3 bench/run-suspend.py --target SIZE TOUCHED          # (internal) the tenant process
  python3 bench/run-suspend.py --ctl PID                       # (internal) one driver-level cycle
"""
import argparse
import ctypes as C
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib

GIB, MIB = 1 << 30, 1 << 20
SPEC = "h200-141gb"  # room for 32 GiB and more
HERE = pathlib.Path(__file__).resolve().parent


class LockArgs(C.Structure):
    _fields_ = [("timeoutMs", C.c_uint), ("reserved0", C.c_uint), ("reserved1", C.c_uint64 * 7)]


def driver():
    lib = C.CDLL("libcuda.so.1")
    rc = lib.cuInit(0)
    if rc:
        raise SystemExit(f"run-suspend: cuInit: {rc}")
    return lib


# ---- the tenant process ----

def target(size, touched):
    """Allocates size bytes, writes a word pattern over the first `touched`, says ready, then
    answers `check` (is the pattern intact?) until stdin closes."""
    lib = driver()
    dev, ctx, ptr = C.c_int(), C.c_void_p(), C.c_uint64()
    for rc, what in ((lib.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet"),
                     (lib.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "cuDevicePrimaryCtxRetain"),
                     (lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"),
                     (lib.cuMemAlloc_v2(C.byref(ptr), C.c_size_t(size)), "cuMemAlloc_v2")):
        if rc:
            raise SystemExit(f"run-suspend: {what}: {rc}")
    for off in range(0, touched, GIB):
        n = min(GIB, touched - off)
        lib.cuMemsetD32_v2(C.c_uint64(ptr.value + off), C.c_uint(0xA5A5A5A5), C.c_size_t(n // 4))
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    probe = C.create_string_buffer(4096)
    for line in sys.stdin:
        ok = True
        for off in sorted({0, touched // 2 // 4096 * 4096, max(0, touched - 4096)}):
            lib.cuMemcpyDtoH_v2(probe, C.c_uint64(ptr.value + off), C.c_size_t(4096))
            ok = ok and probe.raw == b"\xa5" * 4096
        print(json.dumps({"intact": ok}), flush=True)


# ---- the measurements ----

LIBC = C.CDLL(None, use_errno=True)
LIBC.mmap.restype = C.c_void_p
LIBC.mmap.argtypes = [C.c_void_p, C.c_size_t, C.c_int, C.c_int, C.c_int, C.c_long]
LIBC.munmap.argtypes = [C.c_void_p, C.c_size_t]
LIBC.madvise.argtypes = [C.c_void_p, C.c_size_t, C.c_int]
PROT_RW, MAP_PRIVATE_ANON_NORESERVE, MADV_POPULATE_WRITE = 3, 0x02 | 0x20 | 0x4000, 23


def fresh(n):
    p = LIBC.mmap(None, n, PROT_RW, MAP_PRIVATE_ANON_NORESERVE, -1, 0)
    if p in (None, C.c_void_p(-1).value):
        raise SystemExit("run-suspend: mmap failed")
    return p


def memmove_bandwidth(reps):
    """Bytes per second of memmove of 1 GiB, the median of reps: into a buffer already written
    (warm), and into new pages, made first in one call as the simulator makes its copies'
    (new: what the kernel's page allocation costs on this machine)."""
    src, warm = fresh(GIB), fresh(GIB)
    C.memset(src, 0xA5, GIB)
    C.memset(warm, 1, GIB)
    t_warm, t_new = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        C.memmove(warm, src, GIB)
        t_warm.append(time.perf_counter() - t0)
        dst = fresh(GIB)
        t0 = time.perf_counter()
        LIBC.madvise(dst, GIB, MADV_POPULATE_WRITE)
        C.memmove(dst, src, GIB)
        t_new.append(time.perf_counter() - t0)
        LIBC.munmap(dst, GIB)
    LIBC.munmap(src, GIB)
    LIBC.munmap(warm, GIB)
    return GIB / statistics.median(t_warm), GIB / statistics.median(t_new)


def asan_runtime(build):
    """The ASan runtime a sanitizer build's simulated libcuda needs, else None: Python is not
    built with it, so a Python process that loads that library must preload it."""
    ldd = subprocess.run(["ldd", str(build / "lib" / "sim" / "libcuda.so.1")], capture_output=True, text=True)
    for line in ldd.stdout.splitlines():
        if "libasan" in line and "=>" in line:
            return line.split("=>")[1].split()[0]
    return None


def mem_available():
    for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


class Tenant:
    def __init__(self, env, gpuslice, size, touched):
        cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--target", str(size), str(touched)]
        if gpuslice:
            cmd = [gpuslice, "run", "--name", "bench", "--"] + cmd
        self.p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit(f"run-suspend: the tenant exited {self.p.wait()}")
        self.pid = json.loads(line)["pid"]

    def intact(self):
        self.p.stdin.write("check\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())["intact"]

    def end(self):
        self.p.stdin.close()
        self.p.wait(timeout=300)


def ctl(pid):
    """One driver-level cycle on pid from this process, which the caller started with the
    tenant's simulator state: prints the suspend and resume times."""
    lib = driver()
    calls = (("lock", lambda: lib.cuCheckpointProcessLock(pid, C.byref(LockArgs(timeoutMs=60000)))),
             ("checkpoint", lambda: lib.cuCheckpointProcessCheckpoint(pid, None)),
             ("restore", lambda: lib.cuCheckpointProcessRestore(pid, None)),
             ("unlock", lambda: lib.cuCheckpointProcessUnlock(pid, None)))
    t = [time.perf_counter()]
    for name, call in calls:
        rc = call()
        if rc:
            raise SystemExit(f"run-suspend: {name} of process {pid}: CUresult {rc}")
        t.append(time.perf_counter())
    t0, t1, t2 = t[0], t[2], t[4]
    print(json.dumps({"suspend_s": t1 - t0, "resume_s": t2 - t1}), flush=True)


def driver_cycle(env, pid):
    r = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--ctl", str(pid)], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr.strip() or f"run-suspend: --ctl exited {r.returncode}")
    j = json.loads(r.stdout)
    return j["suspend_s"], j["resume_s"]


def daemon_cycle(gpuslice, env):
    t0 = time.perf_counter()
    subprocess.run([gpuslice, "suspend", "bench"], env=env, check=True, capture_output=True)
    t1 = time.perf_counter()
    subprocess.run([gpuslice, "resume", "bench"], env=env, check=True, capture_output=True)
    return t1 - t0, time.perf_counter() - t1


class Daemon:
    def __init__(self, gpuslice, env, root):
        self.env = dict(env, GPUSLICE_STATE_DIR=str(root / "state"), GPUSLICE_LEDGER_DB=str(root / "ledger.db"),
                        GPUSLICE_SOCKET=str(root / "state" / "gpuslice.sock"), GPUSLICE_METRICS_LISTEN="off")
        self.p = subprocess.Popen([gpuslice, "daemon", "--foreground", "--oversubscribe", "on"], env=self.env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if subprocess.run([gpuslice, "ps"], env=self.env, capture_output=True).returncode == 0:
                return
            time.sleep(0.05)
        raise SystemExit("run-suspend: the daemon did not answer")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=60)


def measure(a, size, touched):
    """Medians of a.reps driver-level and daemon cycles on a tenant of size bytes, touched
    written, each cycle followed by a check of the tenant's data."""
    gpuslice = str(a.build / "bin" / "gpuslice")
    root = pathlib.Path(tempfile.mkdtemp(prefix="gs-bench-suspend-"))
    os.chmod(root, 0o755)
    env = dict(os.environ, GPUSLICE_SIM=SPEC, GPUSIM_STATE_DIR=str(root),
               LD_LIBRARY_PATH=str(a.build / "lib" / "sim"))
    for k in ("LD_PRELOAD", "GPUSLICE_TENANT"):
        env.pop(k, None)
    asan = asan_runtime(a.build)
    if asan:  # the interpreter's own allocations at exit are not the simulator's leaks
        env.update(LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0")
    d = Daemon(gpuslice, env, root)
    t = Tenant(d.env, gpuslice, size, touched)
    rows = {"driver": ([], []), "daemon": ([], [])}
    try:
        for _ in range(a.reps):
            for how in ("driver", "daemon"):
                s, r = driver_cycle(env, t.pid) if how == "driver" else daemon_cycle(gpuslice, d.env)
                if not t.intact():
                    raise SystemExit(f"run-suspend: {how}: the tenant's data changed")
                rows[how][0].append(s)
                rows[how][1].append(r)
    finally:
        t.end()
        d.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {how: {"suspend_s": statistics.median(s), "resume_s": statistics.median(r), "suspend_runs": s,
                  "resume_runs": r} for how, (s, r) in rows.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=pathlib.Path, default=HERE.parent / "build")
    ap.add_argument("--sizes", default="1,8,32", help="GiB allocated, comma-separated")
    ap.add_argument("--max-touched", type=float, help="GiB written at most (default: RAM available less 6)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="64 MiB, once")
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--target", nargs=2, type=int, metavar=("SIZE", "TOUCHED"), help=argparse.SUPPRESS)
    ap.add_argument("--ctl", type=int, metavar="PID", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.target:
        return target(*a.target)
    if a.ctl:
        return ctl(a.ctl)
    a.build = a.build.resolve()
    sizes = [64 * MIB] if a.quick else [int(float(x) * GIB) for x in a.sizes.split(",")]
    a.reps = 1 if a.quick else a.reps
    cap = int(a.max_touched * GIB) if a.max_touched else max(GIB, mem_available() - 6 * GIB) // GIB * GIB
    bw, bw_new = memmove_bandwidth(1 if a.quick else 5)
    results = []
    for size in sizes:
        touched = min(size, cap)
        results.append(dict(allocated=size, moved=touched, **measure(a, size, touched)))
    print(f"host memmove of 1 GiB, median of {1 if a.quick else 5}: {bw / 1e9:.2f} GB/s warm, "
          f"{bw_new / 1e9:.2f} GB/s into new pages")
    print(f"{'allocated':>9} {'moved':>9} | {'how':6} {'suspend s':>9} {'GB/s':>6} {'resume s':>9} {'GB/s':>6}"
          f" | {'of new-page memmove':>19}")
    for r in results:
        for how in ("driver", "daemon"):
            m = r[how]
            sbw, rbw = r["moved"] / m["suspend_s"], r["moved"] / m["resume_s"]
            print(f"{r['allocated'] / GIB:>7.2f}Gi {r['moved'] / GIB:>7.2f}Gi | {how:6} {m['suspend_s']:>9.3f} "
                  f"{sbw / 1e9:>6.2f} {m['resume_s']:>9.3f} {rbw / 1e9:>6.2f} | "
                  f"{sbw / bw_new:>8.2f} {rbw / bw_new:>8.2f}")
    summary = {"memmove_bytes_per_s": bw, "memmove_new_pages_bytes_per_s": bw_new, "spec": SPEC,
               "results": results}
    benchlib.write_samples(a, "suspend", summary, [])


if __name__ == "__main__":
    sys.exit(main())
