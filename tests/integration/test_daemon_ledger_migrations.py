"""The usage ledger's schema has a version and migrations: a daemon started on a ledger written
by an older gpuslice (schema version 1) brings it up to date, one recorded step at a time,
keeping every row; a ledger newer than the daemon knows is refused in one line, untouched."""
import sqlite3
import subprocess

from daemon_env import GPUSLICE, Daemon, shared_root  # noqa: F401 (fixture)

# The schema as gpuslice's first daemon wrote it (daemon/usage-db-schema.c, migration 1).
V1 = """
CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at REAL NOT NULL);
CREATE TABLE tenants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, uid INTEGER NOT NULL, user TEXT NOT NULL,
  owner_pid INTEGER NOT NULL, created_unix_ns INTEGER NOT NULL, started_at REAL NOT NULL, ended_at REAL,
  exit_status INTEGER, UNIQUE (name, created_unix_ns));
CREATE TABLE tenant_labels (tenant_id INTEGER NOT NULL REFERENCES tenants(id), key TEXT NOT NULL,
  value TEXT NOT NULL, PRIMARY KEY (tenant_id, key));
CREATE TABLE intervals (tenant_id INTEGER NOT NULL REFERENCES tenants(id), gpu INTEGER NOT NULL,
  start_at REAL NOT NULL, end_at REAL NOT NULL, gpu_seconds REAL NOT NULL, vram_byte_seconds REAL NOT NULL,
  vram_used_bytes INTEGER NOT NULL, vram_limit_bytes INTEGER, compute_limit_ppm INTEGER,
  throttled_seconds REAL NOT NULL, gpu_ns_total INTEGER NOT NULL, throttled_ns_total INTEGER NOT NULL);
CREATE INDEX intervals_by_end ON intervals(end_at);
CREATE INDEX intervals_by_tenant ON intervals(tenant_id, gpu, end_at);
INSERT INTO schema_migrations VALUES (1, 'tenants, their labels, and per-interval usage', 1700000000);
INSERT INTO tenants VALUES (1, 'old-job', 0, 'root', 1, 1700000000000000000, 1700000000, 1700003600, 0);
INSERT INTO tenant_labels VALUES (1, 'team', 'vision');
INSERT INTO intervals VALUES (1, 0, 1700000000, 1700003600, 1800.5, 3600.0, 1, NULL, 500000, 0, 1, 0);
PRAGMA user_version = 1;
"""


def make_ledger(path, script):
    con = sqlite3.connect(path)
    con.executescript(script)
    con.close()


def test_old_ledger_is_migrated_and_keeps_its_rows(shared_root):
    d = Daemon(shared_root)
    make_ledger(d.db, V1)
    d.start()
    try:
        versions = [v for (v,) in d.sql("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions[0] == 1 and versions == list(range(1, len(versions) + 1)) and len(versions) >= 3
        assert d.sql("PRAGMA user_version")[0][0] == versions[-1]
        assert d.sql("SELECT name, ended_at, served_requests FROM tenants") == [("old-job", 1700003600.0, 0)]
        assert d.sql("SELECT gpu_seconds, compute_limit_ppm, allocated_gpu_seconds FROM intervals") == \
            [(1800.5, 500000, 0.0)]
        assert d.sql("PRAGMA integrity_check") == [("ok",)]
        status, body = d.get("/v1/usage?by=label:team&since=2023-11-01T00:00:00Z")
        assert status == 200 and body["rows"][0]["key"] == "vision" and body["rows"][0]["gpu_seconds"] == 1800.5
    finally:
        d.stop()


def test_newer_ledger_is_refused_in_one_line_and_left_alone(shared_root):
    d = Daemon(shared_root)
    make_ledger(d.db, V1 + "PRAGMA user_version = 99;")
    before = d.db.read_bytes()
    r = subprocess.run([str(GPUSLICE), "daemon", "--foreground"], env=d.env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("\n") == 1 and "99" in r.stderr, r.stderr
    assert d.db.read_bytes() == before
