#!/usr/bin/env python3
"""What PyTorch sees of GPU memory, for check_memory_quota.sh: one JSON object on stdout.

  torch_probe.py info
      torch.cuda.mem_get_info() (cudaMemGetInfo, i.e. cuMemGetInfo_v2) and the device's
      total_memory (cudaGetDeviceProperties, from cuDeviceTotalMem_v2).
  torch_probe.py oom [--chunk-mib 256] [--stop-after BYTES]
      Allocates CHUNK tensors on device 0 until torch.cuda.OutOfMemoryError (or until
      STOP-AFTER bytes are held, so that a run without a limit does not take the whole GPU),
      and reports what it held, what the caching allocator reserved, and whether the
      allocator used expandable segments (the VMM path, cuMemCreate) when PyTorch says so.

Exit status: 0 when it ran (an OOM is a result, not a failure); 1 on any other error, with
the error in the JSON; 3 when PyTorch or a CUDA device is missing.
"""
import argparse
import sys

import torch_run


def expandable_in_use(torch):
    """True/False when PyTorch's memory snapshot says whether its segments are expandable,
    None when this PyTorch does not say."""
    try:
        segs = torch.cuda.memory._snapshot().get("segments", [])
    except Exception:  # the snapshot API is private and changes between versions
        return None
    flags = [s["is_expandable"] for s in segs if "is_expandable" in s]
    return any(flags) if flags else None


def info(torch):
    free, total = torch.cuda.mem_get_info(0)
    props = torch.cuda.get_device_properties(0)
    return {"free_bytes": free, "total_bytes": total, "device_total_memory": props.total_memory,
            "device_name": props.name}


def oom(torch, chunk_mib, stop_after):
    chunk = chunk_mib << 20
    held, out = [], {"chunk_bytes": chunk, "oom": False, "stopped_at_cap": False}
    try:
        while True:
            if stop_after and len(held) * chunk >= stop_after:
                out["stopped_at_cap"] = True
                break
            held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda:0"))
    except torch.cuda.OutOfMemoryError as e:
        out["oom"] = True
        out["oom_message"] = str(e).splitlines()[0] if str(e) else ""
    out["allocated_bytes"] = len(held) * chunk
    out["tensors"] = len(held)
    out["reserved_bytes"] = torch.cuda.memory_reserved(0)
    out["max_reserved_bytes"] = torch.cuda.max_memory_reserved(0)
    out["expandable_segments"] = expandable_in_use(torch)
    return out


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info")
    o = sub.add_parser("oom")
    o.add_argument("--chunk-mib", type=int, default=256)
    o.add_argument("--stop-after", type=int, default=0, help="stop once this many bytes are held (0: never)")
    a = p.parse_args()
    # Anything but an OOM is a failure of the check, reported as such.
    return torch_run.run(lambda torch: info(torch) if a.cmd == "info" else oom(torch, a.chunk_mib, a.stop_after))


if __name__ == "__main__":
    sys.exit(main())
