"""The daemon can die at any moment without harm: SIGKILL it while tenants run, and the
tenants keep running and keep the limits it last set; a restarted daemon adopts them again
with those limits; and the usage ledger passes integrity_check, with every interval before
the kill still there and no gap in any tenant's accounting (the interval in flight at the
kill is charged by the restarted daemon's first interval)."""
import signal
import sqlite3

from daemon_env import GIB, MIB, Daemon, Tenant, alloc_until_oom, shared_root, tenant_env, wait_for  # noqa: F401
from conftest import run
from daemon_env import GPUSLICE


def ends(d):
    return d.sql("SELECT COALESCE(MAX(end_at), 0) FROM intervals")[0][0]


def contiguous(d, name):
    spans = d.sql("SELECT DISTINCT start_at, end_at FROM intervals i JOIN tenants t ON t.id = i.tenant_id "
                  "WHERE t.name = ? ORDER BY start_at", name)
    return spans, all(abs(spans[i + 1][0] - spans[i][1]) < 1e-6 for i in range(len(spans) - 1))


def test_sigkilled_daemon_loses_nothing_and_is_adopted_again(shared_root):
    d = Daemon(shared_root, interval=0.3).start()
    a = Tenant(d, "a", ["--vram", "1Gi", "--label", "team=x"], 256 * MIB)
    b = Tenant(d, "b", ["--vram", "2Gi"], 512 * MIB)
    try:
        r = run([GPUSLICE, "set", "a", "--vram", "768Mi"], env=d.env)
        assert r.returncode == 0, r.stderr
        # Each interval is its own transaction: a reader sees the ledger grow interval by interval.
        seen = {ends(d)}
        wait_for(lambda: seen.add(ends(d)) or len(seen) >= 4, what="four committed intervals")
        before = ends(d)
        rows_before = d.sql("SELECT COUNT(*) FROM intervals WHERE end_at <= ?", before)[0][0]
        d.stop(signal.SIGKILL)

        # The tenants run on, held to the limits the daemon last set.
        assert a.proc.poll() is None and b.proc.poll() is None
        assert alloc_until_oom(tenant_env(d, "a"))["allocated_bytes"] == 512 * MIB
        assert alloc_until_oom(tenant_env(d, "b"))["allocated_bytes"] == 1536 * MIB

        con = sqlite3.connect(str(d.db))
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        con.close()
        assert d.sql("SELECT COUNT(*) FROM intervals WHERE end_at <= ?", before)[0][0] == rows_before

        d.start()
        adopted = wait_for(lambda: (lambda t: t if {"a", "b"} <= set(t) else None)(d.tenants()),
                           what="the restarted daemon to adopt a and b")
        assert adopted["a"]["limits"]["vram_bytes"] == 768 * MIB
        assert adopted["a"]["labels"] == {"team": "x"}
        assert adopted["b"]["limits"]["vram_bytes"] == 2 * GIB
        last = ends(d)
        wait_for(lambda: ends(d) > last, what="an interval after the restart")
        assert d.sql("SELECT COUNT(*) FROM tenants")[0][0] == 2
        for name in ("a", "b"):
            spans, ok = contiguous(d, name)
            assert ok, f"gap in {name}'s intervals: {spans}"
        # A limit changed after the restart still reaches the running tenant.
        r = run([GPUSLICE, "set", "b", "--vram", "1Gi"], env=d.env)
        assert r.returncode == 0, r.stderr
        assert alloc_until_oom(tenant_env(d, "b"))["allocated_bytes"] == 512 * MIB
    finally:
        a.end()
        b.end()
        d.stop()
    assert d.sql("SELECT COUNT(*) FROM tenants WHERE ended_at IS NULL")[0][0] == 0
