"""A tenant process whose threads allocate and free each other's memory: THREADS threads (more
than a process's own ledger slots, GS_THREAD_SLOTS_MAX) run ROUNDS rounds, in each of which
thread i allocates CHUNKS * (1 + i % 3) chunks of CHUNK bytes and hands them to the next
thread, which frees them: most threads free more or less than they allocated. Then every thread allocates HOLD chunks more and keeps them.

Usage: python3 thread_probe.py THREADS ROUNDS CHUNKS CHUNK HOLD
Prints {"pid": ...} at start and {"held": BYTES, "frees": N} once everything is held; then
sleeps until killed. Exit 1 (with {"error": ...}) when a driver call fails."""
import ctypes as C
import json
import queue
import sys
import threading
import time

from nvml_probe import Cuda


def out(**kw):
    print(json.dumps(kw), flush=True)


def worker(cu, i, n, rounds, chunks, chunk, hold, inbox, barrier, failed, frees):
    cu.check(cu.lib.cuCtxSetCurrent(cu.ctx), "cuCtxSetCurrent")
    try:
        for _ in range(rounds):
            for _ in range(chunks * (1 + i % 3)):
                inbox[(i + 1) % n].put(cu.alloc(chunk))
            barrier.wait()
            while True:
                try:
                    p = inbox[i].get_nowait()
                except queue.Empty:
                    break
                if cu.lib.cuMemFree_v2(C.c_uint64(p)) != 0:
                    failed.append(f"cuMemFree_v2 on thread {i}")
                frees[i] += 1
            barrier.wait()
        for _ in range(hold):
            cu.alloc(chunk)
    except threading.BrokenBarrierError:
        failed.append(f"thread {i}: barrier broken")


def main(argv):
    n, rounds, chunks, chunk, hold = (int(x) for x in argv)
    out(pid=__import__("os").getpid())
    cu = Cuda()
    inbox = [queue.Queue() for _ in range(n)]
    barrier = threading.Barrier(n)
    failed, frees = [], [0] * n
    threads = [threading.Thread(target=worker, args=(cu, i, n, rounds, chunks, chunk, hold, inbox, barrier,
                                                     failed, frees)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        out(error=failed)
        return 1
    out(held=n * hold * chunk, frees=sum(frees))
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
