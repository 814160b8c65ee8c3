/* The usage database's schema and its migrations. The schema has a version (PRAGMA
 * user_version, and one row per applied migration in schema_migrations); a daemon brings an
 * older database up to date at start, each step in its own transaction, and refuses one
 * newer than it knows. docs/ledger-schema.md describes every table and column.
 *
 * Times are unix seconds (REAL); byte figures are INTEGER; NULL limits mean unlimited. */
#include "daemon.h"

#include <sqlite3.h>
#include <stdio.h>

struct migration {
  int version;
  const char *description;
  const char *sql;
};

static const struct migration migrations[] = {
  { 1, "tenants, their labels, and per-interval usage",
    "CREATE TABLE tenants ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  uid INTEGER NOT NULL,"
    "  user TEXT NOT NULL,"
    "  owner_pid INTEGER NOT NULL,"
    "  created_unix_ns INTEGER NOT NULL,"
    "  started_at REAL NOT NULL,"
    "  ended_at REAL,"
    "  exit_status INTEGER,"
    "  UNIQUE (name, created_unix_ns));"
    "CREATE TABLE tenant_labels ("
    "  tenant_id INTEGER NOT NULL REFERENCES tenants(id),"
    "  key TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  PRIMARY KEY (tenant_id, key));"
    "CREATE TABLE intervals ("
    "  tenant_id INTEGER NOT NULL REFERENCES tenants(id),"
    "  gpu INTEGER NOT NULL,"
    "  start_at REAL NOT NULL,"
    "  end_at REAL NOT NULL,"
    "  gpu_seconds REAL NOT NULL,"
    "  vram_byte_seconds REAL NOT NULL,"
    "  vram_used_bytes INTEGER NOT NULL,"
    "  vram_limit_bytes INTEGER,"
    "  compute_limit_ppm INTEGER,"
    "  throttled_seconds REAL NOT NULL,"
    "  gpu_ns_total INTEGER NOT NULL,"
    "  throttled_ns_total INTEGER NOT NULL);"
    "CREATE INDEX intervals_by_end ON intervals(end_at);"
    "CREATE INDEX intervals_by_tenant ON intervals(tenant_id, gpu, end_at);" },
  { 2, "served requests per tenant; compute policy and priority per interval",
    "ALTER TABLE tenants ADD COLUMN served_requests INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE intervals ADD COLUMN compute_policy TEXT;"
    "ALTER TABLE intervals ADD COLUMN priority TEXT;" },
  { 3, "GPU-seconds allocated per interval, for cost attribution",
    "ALTER TABLE intervals ADD COLUMN allocated_gpu_seconds REAL NOT NULL DEFAULT 0;" },
  { 4, "violations the verifier found in NVML's accounting",
    "CREATE TABLE violations ("
    "  tenant_id INTEGER NOT NULL REFERENCES tenants(id),"
    "  gpu INTEGER NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  at REAL NOT NULL,"
    "  measured INTEGER NOT NULL,"
    "  limit_value INTEGER NOT NULL,"
    "  over INTEGER NOT NULL,"
    "  action TEXT NOT NULL,"
    "  pids TEXT NOT NULL);"
    "CREATE INDEX violations_by_tenant ON violations(tenant_id, at);" },
  { 5, "suspensions of tenants: when, how much memory, how long the suspend and the resume took",
    "CREATE TABLE suspensions ("
    "  tenant_id INTEGER NOT NULL REFERENCES tenants(id),"
    "  suspended_at REAL NOT NULL,"
    "  bytes INTEGER NOT NULL,"
    "  suspend_seconds REAL NOT NULL,"
    "  resumed_at REAL,"
    "  resumed_by TEXT,"
    "  resume_seconds REAL);"
    "CREATE INDEX suspensions_by_tenant ON suspensions(tenant_id, suspended_at);" },
  { 6, "idle actions: what the idle rules and schedules did (or, in a dry run, would do), and why",
    "CREATE TABLE idle_actions ("
    "  tenant_id INTEGER NOT NULL REFERENCES tenants(id),"
    "  at REAL NOT NULL,"
    "  rule TEXT NOT NULL,"
    "  action TEXT NOT NULL,"
    "  dry_run INTEGER NOT NULL,"
    "  idle_seconds REAL NOT NULL,"
    "  device_fraction REAL NOT NULL,"
    "  threshold REAL NOT NULL,"
    "  cpu_cores REAL NOT NULL,"
    "  vram_bytes INTEGER NOT NULL,"
    "  reason TEXT NOT NULL,"
    "  error TEXT NOT NULL);"
    "CREATE INDEX idle_actions_by_tenant ON idle_actions(tenant_id, at);" },
};
#define SCHEMA_VERSION ((int) (sizeof(migrations) / sizeof(migrations[0])))

static int db_fail(sqlite3 *db, const char *what, gs_error_t *err)
{
  return gs_make_error(err, 0, "usage ledger: %s: %s", what, sqlite3_errmsg(db));
}

int usage_db_schema_version(sqlite3 *db)
{
  sqlite3_stmt *st = NULL;
  int v = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return v;
}

static int record(sqlite3 *db, const struct migration *m, gs_error_t *err)
{
  sqlite3_stmt *st = NULL;
  char pragma[64];
  int rc = sqlite3_prepare_v2(db,
                              "INSERT INTO schema_migrations(version, description, applied_at) "
                              "VALUES (?, ?, (julianday('now') - 2440587.5) * 86400.0)",
                              -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int(st, 1, m->version);
    sqlite3_bind_text(st, 2, m->description, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  }
  sqlite3_finalize(st);
  snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", m->version);
  if (rc != SQLITE_OK || sqlite3_exec(db, pragma, NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, "record the migration", err);
  return 0;
}

static int apply(sqlite3 *db, const struct migration *m, gs_error_t *err)
{
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, "begin migration", err);
  if (sqlite3_exec(db, m->sql, NULL, NULL, NULL) != SQLITE_OK || record(db, m, err) < 0) {
    if (!*err)
      db_fail(db, m->description, err);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return gs_error_prepend(err, "migration %d", m->version);
  }
  if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, "commit migration", err);
  return 0;
}

int usage_db_schema_check(sqlite3 *db, gs_error_t *err)
{
  int have = usage_db_schema_version(db);
  if (have < 0)
    return db_fail(db, "read the schema version", err);
  if (have > SCHEMA_VERSION)
    return gs_make_error(err, 0, "usage ledger has schema version %d; this gpuslice knows up to %d",
                         have, SCHEMA_VERSION);
  return have;
}

int usage_db_schema_migrate(sqlite3 *db, gs_error_t *err)
{
  int have = usage_db_schema_check(db, err);
  if (have < 0)
    return -1;
  if (sqlite3_exec(
        db,
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "  version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at REAL NOT NULL)",
        NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, "create schema_migrations", err);
  for (int i = have; i < SCHEMA_VERSION; i++)
    if (apply(db, &migrations[i], err) < 0)
      return -1;
  return 0;
}
