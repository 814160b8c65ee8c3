"""A driver that the quota tests run as the command of `gpuslice run`, so that every
workload process it starts belongs to that one tenant. It prints one JSON object per line.

Usage: python3 quota_driver.py WORKLOAD COMMAND [ARGS...]
  race TRIALS PROCS BYTES      each trial starts PROCS `hold --bytes BYTES` at once, counts
                               those that hold and those refused with OUT_OF_MEMORY, and,
                               while the winners hold, reads the device's used memory with
                               an `info` outside the tenant
  kill-watch BYTES FREE        holds BYTES, SIGKILLs the holder, then polls `info` in the
                               tenant every 50 ms until it reports FREE bytes free
  kill-alloc BYTES AGAIN N     N times: holds BYTES, SIGKILLs the holder, and at once holds
                               AGAIN bytes, which needs the dead holder's memory
  with-hold HOLDARGS... -- [@outside] CMD... [-- [@outside] CMD...]
                               runs each CMD while a `hold HOLDARGS` of the tenant holds;
                               @outside runs CMD outside the tenant
"""
import json
import os
import signal
import subprocess
import sys
import time

WORKLOAD = None


def out(**kw):
    print(json.dumps(kw), flush=True)


def outside_env():
    """This environment less the tenant: no GPUSLICE_TENANT, and no interposer in LD_PRELOAD
    (anything else preloaded, such as a sanitizer runtime, stays)."""
    env = {k: v for k, v in os.environ.items() if k != "GPUSLICE_TENANT"}
    keep = [x for x in env.pop("LD_PRELOAD", "").split(":") if x and "libgpuslice" not in x]
    if keep:
        env["LD_PRELOAD"] = ":".join(keep)
    return env


def start_hold(args):
    return subprocess.Popen([WORKLOAD, "hold"] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_ready(p):
    """The hold's ready line, or None once it has exited without one."""
    line = p.stdout.readline()
    if line:
        ready = json.loads(line)
        assert ready["ready"] is True, line
        return ready
    p.wait()
    return None


def release(p):
    """Ends a hold that is ready; returns (exit status, stderr)."""
    _, err = p.communicate(timeout=60)
    return p.returncode, err


def info(env=None):
    r = subprocess.run([WORKLOAD, "info"], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"info: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def device_used(line, index=0):
    d = line["devices"][index]
    return d["ctx_total_bytes"] - d["free_bytes"]


def race_trial(procs, size, env_out):
    holds = [start_hold(["--bytes", size]) for _ in range(procs)]
    ready, oom, other = [], 0, []
    for p in holds:
        if wait_ready(p):
            ready.append(p)
            continue
        err = p.stderr.read()
        if p.returncode != 0 and "CUDA_ERROR_OUT_OF_MEMORY" in err:
            oom += 1
        else:
            other.append({"rc": p.returncode, "stderr": err})
    used = device_used(info(env_out))
    ends = [release(p) for p in ready]
    other += [{"rc": rc, "stderr": err} for rc, err in ends if rc != 0]
    return {"ready": len(ready), "oom": oom, "other": other, "outside_used": used}


def cmd_race(argv):
    trials, procs, size = int(argv[0]), int(argv[1]), argv[2]
    env_out = outside_env()
    t0 = time.monotonic()
    for i in range(trials):
        out(trial=i, **race_trial(procs, size, env_out))
    out(done=True, seconds=time.monotonic() - t0)


def kill_hold(size):
    p = start_hold(["--bytes", size])
    ready = wait_ready(p)
    if not ready:
        raise SystemExit(f"hold {size}: exit {p.returncode}: {p.stderr.read()}")
    os.kill(p.pid, signal.SIGKILL)
    # Waiting makes it a dead process rather than a zombie, as its parent would.
    p.wait()
    p.stderr.close()
    p.stdin.close()
    p.stdout.close()
    return ready


def cmd_kill_watch(argv):
    size, want = argv[0], int(argv[1])
    before = info()["devices"][0]["free_bytes"]
    kill_hold(size)
    t0 = time.monotonic()
    polls, free = 0, None
    while time.monotonic() - t0 < 3.0:
        free = info()["devices"][0]["free_bytes"]
        polls += 1
        if free == want:
            break
        time.sleep(0.05)
    out(free_before=before, free=free, seconds=time.monotonic() - t0, polls=polls)


def cmd_kill_alloc(argv):
    size, again, n = argv[0], argv[1], int(argv[2])
    for i in range(n):
        kill_hold(size)
        t0 = time.monotonic()
        p = start_hold(["--bytes", again])
        ready = wait_ready(p)
        seconds = time.monotonic() - t0
        err = p.stderr.read() if not ready else None
        if ready:
            rc, err = release(p)
        out(iteration=i, ok=bool(ready), seconds=seconds, stderr=err)


def cmd_with_hold(argv):
    parts, cur = [], []
    for a in argv:
        if a == "--":
            parts.append(cur)
            cur = []
        else:
            cur.append(a)
    parts.append(cur)
    p = start_hold(parts[0])
    ready = wait_ready(p)
    if not ready:
        raise SystemExit(f"hold {parts[0]}: exit {p.returncode}: {p.stderr.read()}")
    out(hold=ready)
    for i, cmd in enumerate(parts[1:]):
        env = None
        if cmd and cmd[0] == "@outside":
            env, cmd = outside_env(), cmd[1:]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        out(command=i, rc=r.returncode, out=lines, stderr=r.stderr)
    rc, err = release(p)
    out(released=rc, stderr=err)


COMMANDS = {"race": cmd_race, "kill-watch": cmd_kill_watch, "kill-alloc": cmd_kill_alloc,
            "with-hold": cmd_with_hold}

if __name__ == "__main__":
    WORKLOAD = sys.argv[1]
    COMMANDS[sys.argv[2]](sys.argv[3:])
