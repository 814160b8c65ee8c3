"""The daemon watches the processes it knows (a tenant's owner, the processes in its ledger's
slots, the processes NVML reports) by pidfd, and through /proc where it can have none: under
an open files limit of 256 (`ulimit -n 256`: no pidfd at all) as under the default. Either way a
tenant whose `gpuslice run` was killed stays registered while its process runs, a DELETE then is
refused, and the tenant ends once that process exits; the verifier still flags a child without
the interposer over the limit, and violation_action kill still ends it."""
import json
import resource
import signal
import subprocess

import pytest

from daemon_env import GIB, GPUSLICE, MIB, WORKLOAD, Daemon, Tenant, shared_root, wait_for  # noqa: F401

LIMITS = {"default": None, "ulimit-n-256": 256}


def start_daemon(root, nofile, *args):
    def preexec():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    d = Daemon(root).start("--log-level", "info", *args, preexec=preexec)
    line = wait_for(lambda: next((ln for ln in d.log.read_text().splitlines() if "watched by pidfd" in ln), None),
                    what="the pidfd budget in the log")
    budget = int(line.split("watched by pidfd: ")[1].split()[0])
    assert (budget == 0) == bool(nofile), line
    return d


def samples(d):
    return d.get("/v1/health")[1]["samples_total"]


def after_two_samples(d):
    s0 = samples(d)
    wait_for(lambda: samples(d) >= s0 + 2, what="two samples")


@pytest.mark.parametrize("nofile", LIMITS.values(), ids=LIMITS.keys())
def test_a_tenant_whose_run_was_killed_ends_when_its_last_process_exits(shared_root, nofile):
    d = start_daemon(shared_root, nofile)
    t = Tenant(d, "orphan", ["--vram", "1Gi"], 64 * MIB)
    try:
        after_two_samples(d)  # its process seen in the ledger's slots
        t.proc.send_signal(signal.SIGKILL)  # run dies; its command holds on, stdin still open
        t.proc.wait(timeout=30)
        after_two_samples(d)
        assert "orphan" in d.tenants(), "its process still runs"
        status, body = d.request("DELETE", "/v1/tenants/orphan")
        assert status == 409, body
        t.proc.stdin.close()  # the hold ends
        wait_for(lambda: "orphan" not in d.tenants(), what="the tenant to end with its last process")
        assert d.sql("SELECT ended_at IS NOT NULL FROM tenants WHERE name = 'orphan'") == [(1,)]
    finally:
        if not t.proc.stdin.closed:
            t.proc.stdin.close()
        d.stop()


def bypass(d, name, vram, hold):
    """A tenant limited to VRAM whose command's child, without the interposer, holds HOLD."""
    script = f"env -u LD_PRELOAD {WORKLOAD} hold --bytes {hold}; echo \"holder-status=$?\" >&2"
    proc = subprocess.Popen([str(GPUSLICE), "run", "--name", name, "--vram", vram, "--", "sh", "-c", script],
                            env=d.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    line = proc.stdout.readline()
    assert line, proc.communicate(timeout=30)
    return proc, json.loads(line)


def gpu0(d, name):
    return next(g for g in d.tenants()[name]["gpus"] if g["index"] == 0)


@pytest.mark.parametrize("nofile", LIMITS.values(), ids=LIMITS.keys())
def test_the_verifier_flags_a_child_without_the_interposer_and_keeps_flagging_it(shared_root, nofile):
    d = start_daemon(shared_root, nofile)
    proc, ready = bypass(d, "sneaky", "1Gi", "3Gi")
    try:
        after_two_samples(d)
        v = gpu0(d, "sneaky")["violation"]
        assert v is not None and v["vram_over_bytes"] == 2 * GIB, gpu0(d, "sneaky")
        # The verdict kept from the first samples still holds at the later ones, counted once.
        after_two_samples(d)
        v = gpu0(d, "sneaky")["violation"]
        assert v is not None and v["vram_violations"] == 1, v
        assert d.sql("SELECT pids FROM violations") == [(str(ready["pid"]),)]
    finally:
        proc.communicate(timeout=60)
        d.stop()


@pytest.mark.parametrize("nofile", LIMITS.values(), ids=LIMITS.keys())
def test_violation_action_kill_ends_the_offender_with_or_without_pidfds(shared_root, nofile):
    d = start_daemon(shared_root, nofile, "--violation-action", "kill")
    proc, ready = bypass(d, "killed", "1Gi", "3Gi")
    try:
        proc.wait(timeout=60)  # stdin stays open: the holder ends only if it is killed; then the shell ends
        err = proc.stderr.read()
        assert "holder-status=137" in err, err  # 128 + SIGKILL
        rows = wait_for(lambda: d.sql("SELECT action, pids FROM violations"), what="the violation's row")
        assert rows == [("kill", str(ready["pid"]))]
        wait_for(lambda: "killed" not in d.tenants(), what="the tenant to end")
    finally:
        if proc.poll() is None:
            proc.kill()
        d.stop()
