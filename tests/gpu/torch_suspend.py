#!/usr/bin/env python3
"""A PyTorch tenant for check_suspend.sh: holds GPU memory, and takes commands on stdin, one a
line, each answered by one JSON line on stdout (the first line says it is ready).

  torch_suspend.py hold GIB            allocates GIB GiB in 1 GiB tensors of random bytes, then
                                       says {"ready": true, "pid": PID}
      sums          {"sums": [...], "ptrs": [...]}: a SHA-256 of each tensor (copied to the
                    host) and its device address
      work MS       queues about MS milliseconds of matmuls without waiting for them; {"queued"}
      kernel        one small kernel and a synchronize; {"seconds"}: how long they took (a
                    suspended tenant's first kernel waits for its resume)
      managed MIB   cuMemAllocManaged of MIB MiB through the driver (ctypes): {"rc"}
      exit
  torch_suspend.py bandwidth           host<->device copy bandwidth of 1 GiB, pinned: {"h2d", "d2h"}
      in bytes per second, the median of 5

Exit status: 0 done; 1 an error (in the JSON); 3 no PyTorch or no CUDA device."""
import ctypes
import hashlib
import json
import os
import statistics
import sys
import time

import torch_run

GIB = 1 << 30


def hold(torch, gib):
    tensors = [torch.randint(0, 256, (GIB,), dtype=torch.uint8, device="cuda:0") for _ in range(gib)]
    torch.cuda.synchronize()
    a = torch.randn(4096, 4096, device="cuda:0", dtype=torch.float16)
    print(json.dumps({"ready": True, "gib": gib, "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w or w[0] == "exit":
            break
        try:
            if w[0] == "sums":
                out = {"sums": [hashlib.sha256(t.cpu().numpy().tobytes()).hexdigest() for t in tensors],
                       "ptrs": [t.data_ptr() for t in tensors]}
            elif w[0] == "work":
                t0 = time.monotonic()
                b = a
                # About 1 ms a matmul on a recent GPU; queued, not waited for.
                for _ in range(int(w[1])):
                    b = a @ b
                out = {"queued": int(w[1]), "seconds": time.monotonic() - t0}
            elif w[0] == "kernel":
                t0 = time.monotonic()
                (a + 1).sum().item()
                out = {"seconds": time.monotonic() - t0}
            elif w[0] == "managed":
                cuda = ctypes.CDLL("libcuda.so.1")
                p = ctypes.c_uint64()
                out = {"rc": cuda.cuMemAllocManaged(ctypes.byref(p), ctypes.c_size_t(int(w[1]) << 20), 1)}
            else:
                out = {"error": f"unknown command {w[0]}"}
        except Exception as e:  # the check reports it
            out = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out), flush=True)
    return {"done": True}


def bandwidth(torch):
    host = torch.empty(GIB, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(GIB, dtype=torch.uint8, device="cuda:0")
    h2d, d2h = [], []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dev.copy_(host)
        torch.cuda.synchronize()
        h2d.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        host.copy_(dev)
        torch.cuda.synchronize()
        d2h.append(time.perf_counter() - t0)
    return {"h2d": GIB / statistics.median(h2d), "d2h": GIB / statistics.median(d2h)}


def main():
    if sys.argv[1:2] == ["hold"]:
        return torch_run.run(lambda torch: hold(torch, int(sys.argv[2])))
    if sys.argv[1:2] == ["bandwidth"]:
        return torch_run.run(bandwidth)
    print(json.dumps({"error": "usage: torch_suspend.py hold GIB | bandwidth"}))
    return 1


if __name__ == "__main__":
    sys.exit(main())
