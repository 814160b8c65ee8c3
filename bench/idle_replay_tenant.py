"""One pod of the Alibaba GenAI sample replayed as a tenant on the simulated GPU (run by
bench/run-idle-genai.py under `gpuslice run`). Reads its series (JSON: {"steps": [[duty_pct,
bytes], ...]}), prints {"ready": true}, reads START (a CLOCK_MONOTONIC instant common to all
pods) from stdin, and at each step, every STEP_S seconds from START, holds the step's bytes (in CHUNK-sized allocations) and runs one sim_busy kernel of
duty x SCALE x STEP_S: the pod's duty cycle and memory, at accelerated time.

  python3 idle_replay_tenant.py SERIES STEP_S SCALE"""
import ctypes as C
import json
import sys
import time

CHUNK = 64 << 20


def main():
    series, step_s, scale = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    steps = json.load(open(series))["steps"]
    lib = C.CDLL("libcuda.so.1")
    assert lib.cuInit(0) == 0
    dev, ctx = C.c_int(), C.c_void_p()
    assert lib.cuDeviceGet(C.byref(dev), 0) == 0
    assert lib.cuDevicePrimaryCtxRetain(C.byref(ctx), dev) == 0
    assert lib.cuCtxSetCurrent(ctx) == 0
    mod, fn = C.c_void_p(), C.c_void_p()
    assert lib.cuModuleLoadData(C.byref(mod), b"\0") == 0
    assert lib.cuModuleGetFunction(C.byref(fn), mod, b"sim_busy") == 0
    held = []
    print(json.dumps({"ready": True}), flush=True)
    start = float(sys.stdin.readline())
    for k, (duty, nbytes) in enumerate(steps):
        delay = start + k * step_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        want = (int(nbytes) + CHUNK - 1) // CHUNK
        while len(held) < want:
            p = C.c_uint64()
            if lib.cuMemAlloc_v2(C.byref(p), C.c_size_t(CHUNK)) != 0:
                break
            held.append(p)
        while len(held) > want:
            lib.cuMemFree_v2(held.pop())
        us = int(duty / 100.0 * scale * step_s * 1e6)
        if us > 0:
            arg = C.c_uint64(us)
            params = (C.c_void_p * 1)(C.cast(C.byref(arg), C.c_void_p))
            lib.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, params, None)
    lib.cuCtxSynchronize()
    sys.stdin.read()  # holds on until the bench closes stdin


if __name__ == "__main__":
    main()
