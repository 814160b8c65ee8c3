"""ckpt_probe.py's target (a CUDA process that takes commands on stdin) with two additions for
the idle tests (test_idle.py):
  IDLE_USR1_FILE=PATH  a SIGUSR1 handler that appends "usr1 PID" to PATH (the signal action)
  IDLE_SPIN=1          a thread that keeps one CPU busy, as a job loading data does
  IDLE_IGNORE_TERM=1   SIGTERM ignored, as a job stuck in a driver call would"""
import os
import runpy
import signal
import sys
import threading
import time
from pathlib import Path

marker = os.environ.get("IDLE_USR1_FILE")
if marker:
    def on_usr1(signo, frame):
        with open(marker, "a") as f:
            f.write(f"usr1 {os.getpid()}\n")
    signal.signal(signal.SIGUSR1, on_usr1)

if os.environ.get("IDLE_IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

if os.environ.get("IDLE_SPIN") == "1":
    def spin():
        x = 0
        while True:
            x += 1
            if x % 200000 == 0:
                time.sleep(0)  # lets the main thread read its commands
    threading.Thread(target=spin, daemon=True).start()

probe = Path(__file__).resolve().parent / "ckpt_probe.py"
sys.argv = [str(probe), "target"]
runpy.run_path(str(probe), run_name="__main__")
