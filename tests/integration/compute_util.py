"""Helpers for the compute-share tests (test_compute_*.py): a reader for the tenant ledger
(struct gs_ledger, version 4, in include/gpuslice/tenant-ledger.h), the compute board's layout
(struct gs_board, version 3, in include/gpuslice/compute.h), and saturating or paced tenants that start
together on the simulated GPU and report the device time they got inside one common window.

Why a common window: each tenant's `gpuslice run` and workload start at slightly different
moments, and the gate needs a moment to see who competes. Every tenant is therefore told one
CLOCK_MONOTONIC instant to start at (`busy --start-at-ns`), and reports the device time of
its own kernels inside [start + warm-up, start + warm-up + window] (`--window-start-ns`,
`--window-end-ns`). On the simulated GPU a sim_busy kernel runs exactly --kernel-us, so that
figure is the tenant's true device time, whatever the gate believes."""
import json
import os
import resource
import struct
import subprocess
import time
import warnings

import pytest

from quota_env import GPUSLICE, json_lines, state_dir
from wl_run import WORKLOAD

# struct gs_ledger, version 4 (include/gpuslice/tenant-ledger.h); the offsets are pinned by `size`.
LEDGER_MAGIC = 0x4753544E414E5431
LEDGER_VERSION = 4
LEDGER_SIZE = 149536
LEDGER_MAX_GPUS = 16
_HEAD = struct.Struct("<QII64s1024siIQQQ")       # magic .. context_reserve_bytes
_COMPUTE = struct.Struct("<IIII")                # limit_ppm, policy, priority, slice_ms
_GPU = struct.Struct("<QIIQQQQII")               # one struct gs_ledger_gpu, 56 bytes
_COMPUTE_AT, _GPU_AT = 1136, 1152

# struct gs_board, version 3 (include/gpuslice/compute.h), pinned there by _Static_asserts.
BOARD_MAGIC = 0x314452414F425347
BOARD_VERSION = 3
BOARD_ROWS = 1024
BOARD_ROW_AT, BOARD_ROW_SIZE = 512, 128
BOARD_SIZE = BOARD_ROW_AT + BOARD_ROWS * BOARD_ROW_SIZE + BOARD_ROWS * 4   # rows, then a wake word each
_BOARD_HEAD = struct.Struct("<QII96sIIQII")       # magic .. gen, rows_used
BOARD_ROWS_USED_AT = 132
ROW_FREE, ROW_LIVE = 0, 2
_ROW_TENANT_AT, _ROW_ACTIVE_AT = 8, 120


def board_header(raw):
    """magic, version, size, uuid, slice_ms, seq, turn, gen, rows_used of a board file's bytes."""
    f = _BOARD_HEAD.unpack_from(raw, 0)
    return {"magic": f[0], "version": f[1], "size": f[2], "uuid": f[3].split(b"\0")[0].decode(),
            "slice_ms": f[4], "seq": f[5], "turn": f[6], "gen": f[7], "rows_used": f[8]}


def board_rows(raw):
    """How many rows the board file holds, from the size in its own header: a reader of any
    version's board (the tests that fill one must fill all of it, whatever it is)."""
    return (board_header(raw)["size"] - BOARD_ROW_AT) // (BOARD_ROW_SIZE + 4)


def board_row(raw, i):
    """(state, tenant) of row i."""
    at = BOARD_ROW_AT + i * BOARD_ROW_SIZE
    state = struct.unpack_from("<I", raw, at)[0]
    return state, raw[at + _ROW_TENANT_AT:at + _ROW_TENANT_AT + 64].split(b"\0")[0].decode()


def board_fill(path, prefix="filler"):
    """Takes every row of the board at path for live tenants `<prefix><i>` that launched just
    now (so that none is stale for a minute), as that many tenants would."""
    with open(path, "r+b") as f:
        rows = board_rows(f.read())
        now = time.monotonic_ns()
        for i in range(rows):
            at = BOARD_ROW_AT + i * BOARD_ROW_SIZE
            f.seek(at + _ROW_TENANT_AT)
            f.write(f"{prefix}{i}".encode().ljust(64, b"\0"))
            f.seek(at + _ROW_ACTIVE_AT)
            f.write(struct.pack("<Q", now))
            f.seek(at)
            f.write(struct.pack("<I", ROW_LIVE))
        f.seek(BOARD_ROWS_USED_AT)
        f.write(struct.pack("<I", rows))
    return rows


def board_free_row(path, i):
    """Frees row i, as a tenant that ended long ago leaves it."""
    with open(path, "r+b") as f:
        f.seek(BOARD_ROW_AT + i * BOARD_ROW_SIZE)
        f.write(struct.pack("<I", ROW_FREE))


POLICY = {"share": 0, "cap": 1}
CPU_SHARE_MAX = 0.5   # of one CPU, for all the tenants of a group together
PRIORITY = {"normal": 0, "low": 1, "high": 2}


def parse_ledger(raw):
    """The fields of a v3 ledger file's bytes, as a dict; fails on a wrong magic, version or size."""
    magic, version, size, name, labels, owner_pid, _, _, created, reserve = _HEAD.unpack_from(raw, 0)
    assert magic == LEDGER_MAGIC, hex(magic)
    assert (version, size) == (LEDGER_VERSION, LEDGER_SIZE), (version, size)
    assert len(raw) >= size, len(raw)
    limit_ppm, policy, priority, slice_ms = _COMPUTE.unpack_from(raw, _COMPUTE_AT)
    gpus = []
    for g in range(LEDGER_MAX_GPUS):
        f = _GPU.unpack_from(raw, _GPU_AT + g * _GPU.size)
        gpus.append({"limit_bytes": f[0], "limit_ppm": f[1], "used_bytes": f[3], "peak_bytes": f[4],
                     "gpu_ns": f[5], "throttled_ns": f[6], "share_ppm": f[7]})
    return {"name": name.split(b"\0")[0].decode(), "labels": labels.split(b"\0")[0].decode(),
            "owner_pid": owner_pid, "created_unix_ns": created, "context_reserve_bytes": reserve,
            "compute": {"limit_ppm": limit_ppm, "policy": policy, "priority": priority, "slice_ms": slice_ms},
            "gpu": gpus}


def read_ledger(env, name):
    """The live ledger of tenant `name` in env's state directory."""
    return parse_ledger((state_dir(env) / "tenants" / name).read_bytes())


class Tenant:
    """One `gpuslice run OPTIONS -- gpusim-workload busy ARGS` in a group started together.
    `wrap` puts the workload inside another command: a list with "{}" where the workload's
    argv goes (e.g. a shell that waits after it)."""

    def __init__(self, options=(), busy=(), kernel_us=1000, wrap=None):
        self.options = [str(o) for o in options]
        self.busy = [str(a) for a in busy]
        self.kernel_us = kernel_us
        self.wrap = wrap
        self.proc = None
        self.line = None

    def argv(self, timing):
        wl = [str(WORKLOAD), "busy", "--kernel-us", str(self.kernel_us)] + timing + self.busy
        cmd = wl if self.wrap is None else [x for w in self.wrap for x in (wl if w == "{}" else [w])]
        return [str(GPUSLICE), "run"] + self.options + ["--"] + cmd


class Group:
    """Tenants that start at one instant, `margin` seconds after they are spawned, run for
    `warmup` + `window` seconds, and report their device time inside the last `window`."""

    def __init__(self, env, tenants, window=10.0, warmup=1.0, margin=2.0):
        self.env, self.tenants = env, tenants
        self.window, self.warmup = window, warmup
        self.start_ns = time.monotonic_ns() + int(margin * 1e9)
        self.win_start = self.start_ns + int(warmup * 1e9)
        self.win_end = self.win_start + int(window * 1e9)

    def timing(self):
        return ["--seconds", f"{self.warmup + self.window:.3f}", "--start-at-ns", str(self.start_ns),
                "--window-start-ns", str(self.win_start), "--window-end-ns", str(self.win_end)]

    def start(self):
        for t in self.tenants:
            t.line = None   # a tenant measured again reports afresh
            t.proc = subprocess.Popen(t.argv(self.timing()), env=self.env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return self

    def read_lines(self, timeout=120):
        """Each tenant's busy line as soon as it is printed (the tenant may still be running)."""
        for t in self.tenants:
            t.line = _busy_line(t, timeout)
        return [t.line for t in self.tenants]

    def finish(self, timeout=120):
        """Waits for every tenant (closing stdin first) and returns their busy lines."""
        for t in self.tenants:
            out, err = t.proc.communicate(timeout=timeout)
            assert t.proc.returncode == 0, f"{t.argv([])}: exit {t.proc.returncode}\n{out}\n{err}"
            if t.line is None:
                lines = [x for x in json_lines(out) if x.get("mode") == "busy"]
                assert len(lines) == 1, out
                t.line = lines[0]
        for t in self.tenants:
            # A tenant that started after the window opened would lose time for that reason alone.
            assert t.line["start_ns"] <= self.win_start, f"tenant started {t.line['start_ns'] - self.start_ns} ns late"
            assert (t.line["window_start_ns"], t.line["window_end_ns"]) == (self.win_start, self.win_end)
        return [t.line for t in self.tenants]

    def kill(self):
        for t in self.tenants:
            if t.proc and t.proc.poll() is None:
                t.proc.kill()
                t.proc.wait()

    def shares(self):
        """Each tenant's device time inside the window, as a percentage of the window."""
        return [100.0 * t.line["window_kernel_seconds"] / self.window for t in self.tenants]


def _busy_line(t, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = t.proc.stdout.readline()
        if not raw:
            break
        if raw.strip().startswith("{"):
            line = json.loads(raw)
            if line.get("mode") == "busy":
                return line
    raise AssertionError(f"no busy line from {t.argv([])}: exit {t.proc.poll()}")


def _children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_group(env, tenants, **kw):
    """Starts the tenants together, waits for all of them, and returns (group, shares in %).
    g.cpu_seconds is the CPU time all the tenants' processes took (each `run` waits for its
    command, so its children count too), g.wall_seconds the time from spawn to the end."""
    g = Group(env, tenants, **kw)
    cpu0, t0 = _children_cpu_s(), time.monotonic()
    try:
        g.start().finish(timeout=kw.get("window", 10.0) + 120)
    finally:
        g.kill()
    g.cpu_seconds, g.wall_seconds = _children_cpu_s() - cpu0, time.monotonic() - t0
    return g, g.shares()


def report(label, targets, shares, busy=None):
    """One line for the log (pytest -s): target and measured share per tenant."""
    pairs = " ".join(f"{t:g}->{s:.2f}" for t, s in zip(targets, shares))
    extra = f" busy {busy:.2f}%" if busy is not None else ""
    print(f"\n[compute] {label}: {pairs}{extra}")


TRIES = 3          # measurements of one timing case, at most (measure_until)
STOLEN_MAX = 0.03  # of the machine's CPU time taken by the VM's host, above which a try is disturbed


def _stolen_cpu_seconds():
    """CPU time the VM's host took from this machine since boot (/proc/stat's steal)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def measure_until(measure, holds, tries=TRIES, label=None):
    """Runs measure() until holds(result) is true, at most `tries` times, and returns the last
    result; the caller asserts on it, so a case missed on every try fails with its figures.

    Why: the simulated GPU runs its kernels in real time on the test machine's CPUs, and on a
    shared VM the host can take those CPUs away for seconds (steal) or another process can.
    The device then idles because no tenant could launch, whatever the gate did. A bound is
    never loosened for that: the case is measured again, and each miss is reported with the
    share of the machine's CPU time the host stole during it (a warning named by `label`, in
    pytest's summary even when a later try holds). When every try missed and the host stole
    more than STOLEN_MAX in each, the case could not be measured on this machine: it is
    skipped, with those figures, rather than failed or passed. A wrong gate misses on a
    machine left alone, and fails there."""
    if tries < 1:
        raise ValueError(f"tries must be at least 1, not {tries}")
    stolen_in = []
    for attempt in range(1, tries + 1):
        stolen, t0 = _stolen_cpu_seconds(), time.monotonic()
        result = measure()
        if holds(result):
            return result
        cpu = max(time.monotonic() - t0, 1e-3) * os.cpu_count()
        stolen_in.append((_stolen_cpu_seconds() - stolen) / cpu)
        # A warning, so that the summary of a run that passes in the end still shows the miss.
        warnings.warn(f"{label or 'a timing case'}: try {attempt} of {tries} missed; the host stole "
                      f"{100 * stolen_in[-1]:.1f}% of the machine's CPU time during it", stacklevel=2)
    if min(stolen_in) > STOLEN_MAX:
        pytest.skip(f"the VM's host stole {', '.join(f'{100 * x:.1f}%' for x in stolen_in)} of the CPU time "
                    f"in the {tries} tries: the timing case could not be measured")
    return result


def measure_shares(env, label, tenants, targets, holds):
    """Each tenant's share of the window, in %, measured again while `holds` misses."""

    def measure():
        _, shares = run_group(env, tenants)
        report(label, targets, shares, sum(shares))
        return shares

    return measure_until(measure, holds, label=label)


def assert_shares(env, targets, policy, tolerance=3.0, busy_min=0.0):
    """Saturating tenants with --compute targets under one policy, started together: each gets
    its target to within `tolerance` percentage points, and together at least `busy_min` % of
    the window (measure_until says why a miss is measured again). Returns the shares, in %."""

    def measure():
        g, shares = run_group(env, [Tenant(pct_args(p, policy)) for p in targets])
        report(f"{policy} {'/'.join(f'{t:g}' for t in targets)}", targets, shares, sum(shares))
        print(f"[compute] tenants' CPU {g.cpu_seconds:.2f} s over {g.wall_seconds:.2f} s")
        return g, shares

    def holds(result):
        g, shares = result
        return (all(abs(got - t) <= tolerance for t, got in zip(targets, shares)) and sum(shares) >= busy_min
                and g.cpu_seconds < CPU_SHARE_MAX * g.wall_seconds)

    g, shares = measure_until(measure, holds, label=f"{policy} {'/'.join(f'{t:g}' for t in targets)}")
    for target, got in zip(targets, shares):
        assert abs(got - target) <= tolerance, (targets, shares)
    assert sum(shares) >= busy_min, shares
    # Tenants held at the gate sleep: a gate that spun would take a CPU per waiting process.
    assert g.cpu_seconds < CPU_SHARE_MAX * g.wall_seconds, (g.cpu_seconds, g.wall_seconds)
    return shares


def pct_args(pct, policy, extra=()):
    return ["--compute", f"{pct:g}", "--compute-policy", policy] + list(extra)
