"""The daemon verifies from outside: a process of a tenant that the interposer never sees (a
child started without LD_PRELOAD) and that allocates past the tenant's limit shows as a
violation, with the bytes over, in `gpuslice ps` (table and --json), in /metrics and in the
usage ledger, within two samples; with violation_action kill the offending process is
killed; one that runs kernels past a cap-policy compute limit is a compute violation, and
violation_action signal ends it with SIGTERM; so is a tenant whose own process rewrites its
row on the compute board (the interposer cannot stop that) to run past its cap; a tenant
within its limit shows none."""
import json
import os
import subprocess

import struct

from daemon_env import GIB, GPUSLICE, MIB, PYTHON, WORKLOAD, Daemon, Tenant, shared_root, tenant_env, wait_for  # noqa: F401
from prometheus_server import cli, metrics
from wl_run import start_hold, stop_hold

# struct gs_ledger: gpu[0].used_bytes (include/gpuslice/tenant-ledger.h pins the offsets).
LEDGER_GPU0_USED = 1152 + 16


def bypass_run(daemon, name, run_opts, workload):
    """`gpuslice run RUN_OPTS -- sh -c 'env -u LD_PRELOAD gpusim-workload WORKLOAD'`: the workload
    is the shell's child, a grandchild of run, with no interposer; the shell then reports its
    exit status on stderr (holder-status=N)."""
    script = f"env -u LD_PRELOAD {WORKLOAD} {workload}; echo \"holder-status=$?\" >&2"
    return subprocess.Popen([str(GPUSLICE), "run", "--name", name, *run_opts, "--", "sh", "-c", script],
                            env=daemon.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def bypass_tenant(daemon, name, vram, hold):
    """A bypassing holder of HOLD bytes in a tenant limited to VRAM. Returns (Popen, ready)."""
    proc = bypass_run(daemon, name, ["--vram", vram], f"hold --bytes {hold}")
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"tenant {name}: exit {proc.returncode}: {proc.stderr.read()}")
    return proc, json.loads(line)


def samples(daemon):
    return daemon.get("/v1/health")[1]["samples_total"]


def after_two_samples(daemon):
    """Waits until the daemon has sampled twice since now."""
    s0 = samples(daemon)
    wait_for(lambda: samples(daemon) >= s0 + 2, what="two samples")


def gpu0(daemon, name):
    return next(g for g in daemon.tenants()[name]["gpus"] if g["index"] == 0)


def metric(text, name, tenant):
    for line in text.splitlines():
        if line.startswith(name + "{") and f'tenant="{tenant}"' in line and 'gpu="0"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def test_child_without_preload_over_limit_shows_violation_within_two_samples(shared_root):
    d = Daemon(shared_root).start()
    proc, ready = bypass_tenant(d, "sneaky", "2Gi", "6Gi")
    try:
        assert ready["ready"] is True
        after_two_samples(d)
        v = gpu0(d, "sneaky")["violation"]
        assert v is not None, gpu0(d, "sneaky")
        assert v["vram_over_bytes"] == 4 * GIB and v["nvml_vram_bytes"] == 6 * GIB and v["vram_violations"] == 1
        assert gpu0(d, "sneaky")["vram_used_bytes"] < 2 * GIB  # the ledger never saw it
        table = cli(d, "ps").stdout.splitlines()
        assert "VIOLATION" in table[0].split()
        assert any(ln.startswith("sneaky") and "vram +4.0 GiB" in ln for ln in table[1:]), table
        ps_json = json.loads(cli(d, "ps", "--json").stdout)
        assert ps_json["tenants"][0]["gpus"][0]["violation"]["vram_over_bytes"] == 4 * GIB
        text = metrics(d)
        assert metric(text, "gpuslice_tenant_violation_bytes", "sneaky") == 4 * GIB
        assert metric(text, "gpuslice_tenant_vram_violations_total", "sneaky") == 1
        rows = d.sql("SELECT gpu, kind, measured, limit_value, over, action, pids FROM violations")
        assert rows == [(0, "vram", 6 * GIB, 2 * GIB, 4 * GIB, "none", str(ready["pid"]))]
        assert proc.poll() is None, "violation_action none kills nothing"
        log = d.log.read_text()
        assert log.count("vram violation") == 1, log
    finally:
        proc.communicate(timeout=60)
        d.stop()


def test_violation_action_kill_ends_the_offending_process(shared_root):
    d = Daemon(shared_root).start("--violation-action", "kill")
    proc, ready = bypass_tenant(d, "sneaky", "2Gi", "6Gi")
    try:
        # The ready line is printed by the holder once it holds the 6 GiB: it was alive then.
        assert ready["ready"] is True and ready["pid"] > 0
        proc.wait(timeout=60)  # stdin stays open: the holder ends only if it is killed; then the shell ends
        err = proc.stderr.read()
        assert "holder-status=137" in err, err  # 128 + SIGKILL
        assert not os.path.exists(f"/proc/{ready['pid']}") or \
            open(f"/proc/{ready['pid']}/stat").read().split(") ")[1][0] in "ZX"
        rows = d.sql("SELECT kind, over, action, pids FROM violations")
        assert rows == [("vram", 4 * GIB, "kill", str(ready["pid"]))]
    finally:
        if proc.poll() is None:
            proc.kill()
        d.stop()


def test_rewritten_ledger_does_not_hide_memory_over_the_limit(shared_root):
    d = Daemon(shared_root).start()
    t = Tenant(d, "forger", ["--vram", "2Gi"], 1536 * MIB)
    extra = None
    try:
        # The tenant zeroes what its ledger says it uses; the interposer then lets it allocate again.
        with open(d.state / "tenants" / "forger", "r+b") as f:
            f.seek(LEDGER_GPU0_USED)
            f.write(struct.pack("<Q", 0))
        extra, _ = start_hold(["--bytes", "1536Mi"], tenant_env(d, "forger"))
        after_two_samples(d)
        g = gpu0(d, "forger")
        assert g["vram_used_bytes"] <= 2 * GIB  # what the ledger says
        assert g["violation"] is not None and g["violation"]["vram_over_bytes"] >= GIB, (g, cli(d, "gpus", "--json").stdout)
        assert d.sql("SELECT kind FROM violations") == [("vram",)]
    finally:
        if extra:
            stop_hold(extra)
        t.end()
        d.stop()


def hog(daemon):
    """A tenant capped at 20% of the GPU whose child, without the interposer, keeps it busy."""
    return bypass_run(daemon, "hog", ["--compute", "20", "--compute-policy", "cap"],
                      "busy --kernel-us 2000 --duty 1 --seconds 60")


def test_child_without_preload_over_compute_cap_shows_compute_violation(shared_root):
    d = Daemon(shared_root).start()
    proc = hog(d)
    try:
        def violation():
            g = [g for g in d.tenants().get("hog", {}).get("gpus", []) if g["index"] == 0]
            return g and g[0]["violation"]
        v = wait_for(violation, timeout=30, what="a compute violation")
        assert v["compute_over_pct"] > 10 and v["compute_violations"] == 1 and v["vram_over_bytes"] == 0
        assert any(ln.startswith("hog") and "compute +" in ln for ln in cli(d, "ps").stdout.splitlines())
        assert metric(metrics(d), "gpuslice_tenant_compute_violations_total", "hog") == 1
        rows = d.sql("SELECT kind, limit_value, action FROM violations")
        assert rows == [("compute", 200000, "none")]
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
        d.stop()


def test_violation_action_signal_ends_the_offending_process_with_sigterm(shared_root):
    d = Daemon(shared_root).start("--violation-action", "signal")
    proc = hog(d)
    try:
        proc.wait(timeout=30)  # the busy workload would run 60 s; SIGTERM ends it, then the shell
        err = proc.stderr.read()
        assert "holder-status=143" in err, err  # 128 + SIGTERM
        assert d.sql("SELECT kind, action FROM violations") == [("compute", "signal")]
    finally:
        if proc.poll() is None:
            proc.kill()
        d.stop()


def test_tenant_within_its_limit_shows_no_violation(shared_root):
    d = Daemon(shared_root).start("--violation-action", "kill")
    t = Tenant(d, "polite", ["--vram", "2Gi"], 1536 * MIB)
    try:
        after_two_samples(d)
        after_two_samples(d)
        g = gpu0(d, "polite")
        assert g["violation"] is None and g["vram_used_bytes"] >= 1536 * MIB
        text = metrics(d)
        assert metric(text, "gpuslice_tenant_violation_bytes", "polite") == 0
        assert metric(text, "gpuslice_tenant_vram_violations_total", "polite") == 0
        assert d.sql("SELECT COUNT(*) FROM violations") == [(0,)]
        assert t.proc.poll() is None
    finally:
        t.end()
        d.stop()


def test_capped_tenant_through_the_interposer_shows_no_compute_violation(shared_root):
    d = Daemon(shared_root).start("--violation-action", "kill")
    try:
        r = subprocess.run([str(GPUSLICE), "run", "--name", "capped", "--compute", "30", "--compute-policy", "cap",
                            "--", str(WORKLOAD), "busy", "--kernel-us", "2000", "--duty", "1", "--seconds", "4"],
                           env=d.env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr  # not killed: the gate held it at its cap
        assert d.sql("SELECT COUNT(*) FROM violations") == [(0,)]
    finally:
        d.stop()


# struct gs_board_row (include/gpuslice/compute.h pins it; compute_util.py reads the same).
BOARD_ROW_AT, BOARD_ROW_SIZE, BOARD_ROWS = 512, 128, 1024
ROW_WEIGHT_AT, ROW_TENANT_AT, ROW_POLICY_AT, ROW_CREDIT_AT = 4, 8, 72, 96

# A process of the tenant (same uid, no interposer) that finds the tenant's row on every
# compute board in the state dir and keeps rewriting it: the whole GPU as its weight, the
# share policy, and a credit that never runs out. It prints "rewrote" once it has.
REWRITER = f"""
import glob, mmap, os, struct, sys, time
name, state = sys.argv[1].encode(), sys.argv[2]
said = False
while True:
    for path in glob.glob(os.path.join(state, "gpus", "*")):
        with open(path, "r+b") as f:
            m = mmap.mmap(f.fileno(), 0)
        for i in range({BOARD_ROWS}):
            at = {BOARD_ROW_AT} + i * {BOARD_ROW_SIZE}
            if m[at + {ROW_TENANT_AT}:at + {ROW_TENANT_AT} + 64].split(b"\\0")[0] != name:
                continue
            struct.pack_into("<I", m, at + {ROW_WEIGHT_AT}, 1000000)
            struct.pack_into("<I", m, at + {ROW_POLICY_AT}, 0)
            struct.pack_into("<q", m, at + {ROW_CREDIT_AT}, 1 << 62)
            if not said:
                print("rewrote", file=sys.stderr, flush=True)
                said = True
        m.close()
    time.sleep(0.002)
"""


def rewriting_tenant(daemon, name):
    """`gpuslice run --compute 20 --compute-policy cap` whose busy workload goes through the
    interposer while another of its processes rewrites its board row (REWRITER)."""
    script = (f"env -u LD_PRELOAD {PYTHON} -c '{REWRITER}' {name} \"$GPUSLICE_STATE_DIR\" & "
              f"{WORKLOAD} busy --kernel-us 2000 --duty 1 --seconds 60; kill $!")
    return subprocess.Popen([str(GPUSLICE), "run", "--name", name, "--compute", "20", "--compute-policy", "cap",
                             "--", "sh", "-c", script], env=daemon.env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_rewritten(proc):
    for line in proc.stderr:
        if line.strip() == "rewrote":
            return
    raise AssertionError(f"the rewriter never found its row: exit {proc.wait(timeout=30)}")


def compute_violation(daemon, name):
    g = [g for g in daemon.tenants().get(name, {}).get("gpus", []) if g["index"] == 0]
    return g and g[0]["violation"]


def test_tenant_rewriting_its_board_row_past_its_cap_shows_compute_violation(shared_root):
    d = Daemon(shared_root).start()
    proc = rewriting_tenant(d, "cheat")
    try:
        wait_rewritten(proc)
        after_two_samples(d)
        v = compute_violation(d, "cheat")
        assert v and v["compute_over_pct"] >= 30 and v["compute_violations"] >= 1, (v, d.tenants().get("cheat"))
        assert any(ln.startswith("cheat") and "compute +" in ln for ln in cli(d, "ps").stdout.splitlines())
        assert metric(metrics(d), "gpuslice_tenant_compute_violations_total", "cheat") >= 1
    finally:
        proc.kill()
        proc.wait()
        d.stop()
