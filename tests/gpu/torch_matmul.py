#!/usr/bin/env python3
"""A PyTorch matmul loop whose throughput check_compute_share.sh compares between tenants:
one JSON object on stdout.

  torch_matmul.py info
      The device and PyTorch version, or why there is none.
  torch_matmul.py loop --sync-dir DIR --name NAME [--size 8192] [--batch 4]
                       [--warmup 2] [--seconds 8]
      Prepares two SIZE x SIZE float16 matrices on device 0 and runs a few matmuls (cuBLAS
      setup, lazy module loading), then writes DIR/ready.NAME and waits for DIR/go, which
      holds a CLOCK_MONOTONIC instant S in ns. From S it multiplies in batches of BATCH
      (synchronizing after each) until S + WARMUP + SECONDS, and counts the matmuls of the
      batches that completed inside [S + WARMUP, S + WARMUP + SECONDS]. The loops of one run
      share that window whenever they started, so their counts compare directly.

Exit status: 0 when it ran; 1 on any other error, with the error in the JSON; 3 when PyTorch
or a CUDA device is missing.
"""
import argparse
import pathlib
import sys
import time

import torch_run

GO_TIMEOUT_S = 240


def info(torch, _args):
    props = torch.cuda.get_device_properties(0)
    return {"device_name": props.name, "total_bytes": props.total_memory}


def wait_go(sync_dir, name):
    """Says this loop is ready, then returns the start instant once the script gives it."""
    d = pathlib.Path(sync_dir)
    (d / f"ready.{name}").write_text("ready\n")
    go = d / "go"
    deadline = time.monotonic() + GO_TIMEOUT_S
    while time.monotonic() < deadline:
        if go.exists() and go.read_text().strip():
            return int(go.read_text().strip())
        time.sleep(0.005)
    raise TimeoutError(f"no {go} within {GO_TIMEOUT_S} s")


def run_batches(torch, a, b, c, batch, until):
    """Completion instants (monotonic ns) of batches of matmuls run until `until`."""
    done = []
    while time.monotonic_ns() < until:
        for _ in range(batch):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        done.append(time.monotonic_ns())
    return done


def loop(torch, args):
    n = args.size
    a = torch.randn(n, n, device="cuda:0", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda:0", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda:0", dtype=torch.float16)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    start = wait_go(args.sync_dir, args.name)
    while time.monotonic_ns() < start:
        time.sleep(0.001)
    w0 = start + int(args.warmup * 1e9)
    w1 = w0 + int(args.seconds * 1e9)
    done = run_batches(torch, a, b, c, args.batch, w1)
    inside = sum(1 for t in done if w0 <= t <= w1) * args.batch
    flops = 2.0 * n ** 3 * inside
    return {"name": args.name, "size": n, "dtype": "float16", "batch": args.batch,
            "window_seconds": args.seconds, "matmuls_in_window": inside,
            "matmuls_per_second": inside / args.seconds, "tflops": flops / args.seconds / 1e12,
            "batches": len(done), "start_late_ns": max(0, done[0] - start) if done else None}


def parse_args():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info")
    lo = sub.add_parser("loop")
    lo.add_argument("--sync-dir", required=True)
    lo.add_argument("--name", required=True)
    lo.add_argument("--size", type=int, default=8192)
    lo.add_argument("--batch", type=int, default=4)
    lo.add_argument("--warmup", type=float, default=2.0)
    lo.add_argument("--seconds", type=float, default=8.0)
    return p.parse_args()


def main():
    args = parse_args()
    return torch_run.run(lambda torch: (info if args.cmd == "info" else loop)(torch, args))


if __name__ == "__main__":
    sys.exit(main())
