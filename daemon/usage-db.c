/* The usage database (the docs' "usage ledger"): SQLite in WAL mode, one transaction per
 * sampling interval, so that a daemon killed with SIGKILL loses at most the interval it was in. Each interval row keeps
 * the tenant's cumulative device-time counters too: a restarted daemon picks up from the
 * last row, and the gap while it was down is charged in full at its first interval.
 * The schema is in usage-db-schema.c, the usage report in usage-db-report.c. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuslice/fs.h>

struct usage_db {
  sqlite3 *db;
  sqlite3_stmt *insert_interval;
};

static int db_fail(struct usage_db *db, const char *what, gs_error_t *err)
{
  return gs_make_error(err, 0, "usage ledger: %s: %s", what, sqlite3_errmsg(db->db));
}

/* The file is made 0640 before SQLite opens it: it holds every user's usage. */
static int create_file(const char *path, gs_error_t *err)
{
  _cleanup_free_ char *dir = xstrdup(path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    if (gs_mkdir_p(dir, 0755, err) < 0)
      return -1;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0)
    return gs_make_error(err, errno, "usage ledger '%s'", path);
  close(fd);
  return 0;
}

static const char insert_interval_sql[] =
  "INSERT INTO intervals(tenant_id, gpu, start_at, end_at, gpu_seconds, vram_byte_seconds, "
  "vram_used_bytes,"
  " vram_limit_bytes, compute_limit_ppm, throttled_seconds, gpu_ns_total, throttled_ns_total, "
  "compute_policy,"
  " priority, allocated_gpu_seconds) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
  "?13, ?14, ?15)";

/* PRAGMA quick_check at start: a ledger with damaged pages would let the daemon run and
 * answer every usage report with a 500. Its cost grows with the file (a second or so per
 * GiB), once per start. */
static int integrity(struct usage_db *db, gs_error_t *err)
{
  sqlite3_stmt *st = NULL;
  _cleanup_free_ char *problem = NULL;
  int rc = sqlite3_prepare_v2(db->db, "PRAGMA quick_check(1)", -1, &st, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *text = (const char *) sqlite3_column_text(st, 0);
    if (!text || strcmp(text, "ok") != 0)
      problem = xstrdup(text ? text : "no answer");
  } else {
    problem = xstrdup(sqlite3_errmsg(db->db));
  }
  sqlite3_finalize(st);
  if (!problem)
    return 0;
  return gs_make_error(
    err, 0,
    "usage ledger is damaged (quick_check: %s); move it aside and the daemon starts a new "
    "one, or rebuild it with sqlite3's .recover (see docs/daemon.md)",
    problem);
}

static int configure(struct usage_db *db, gs_error_t *err)
{
  if (integrity(db, err) < 0)
    return -1;
  /* A database newer than this daemon is refused before anything is written to it. */
  if (usage_db_schema_check(db->db, err) < 0)
    return -1;
  /* A page cache of up to 8 MiB: with a thousand tenants writing an interval row each a second,
   * the indexes' hot pages no longer fit 512 KiB, and re-reading them was a fifth of the
   * sample (bench/run-daemon.py --tenants 1024: 26 -> 20 ms a sample). A small ledger never
   * fills it.
   * A checkpoint at 8,192 WAL pages (32 MiB at 4 KiB pages) rather than SQLite's 1,000: each
   * tenant's interval row lands in a leaf of its own of the per-tenant index, so a thousand
   * tenants dirty about a thousand pages a second, and at 1,000 every commit was followed by a
   * checkpoint writing them all again into the database and syncing it twice. Now a checkpoint
   * comes every few seconds and writes each page once for all the commits it holds. A commit
   * is in the WAL when it returns, so a killed daemon loses no committed row; with synchronous
   * NORMAL (as before) a power cut may lose the commits since the last sync, now a few seconds
   * of rows rather than one. */
  if (sqlite3_exec(db->db,
                   "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = "
                   "ON; PRAGMA cache_size = -8192; PRAGMA wal_autocheckpoint = 8192;",
                   NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, "set WAL mode", err);
  sqlite3_busy_timeout(db->db, 5000);
  if (usage_db_schema_migrate(db->db, err) < 0)
    return -1;
  if (sqlite3_prepare_v3(db->db, insert_interval_sql, -1, SQLITE_PREPARE_PERSISTENT,
                         &db->insert_interval, NULL) != SQLITE_OK)
    return db_fail(db, "prepare", err);
  return 0;
}

int usage_db_open(const char *path, struct usage_db **out, gs_error_t *err)
{
  if (create_file(path, err) < 0)
    return -1;
  struct usage_db *db = xcalloc(1, sizeof(*db));
  if (sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
      SQLITE_OK) {
    gs_make_error(err, 0, "usage ledger '%s': %s", path,
                  db->db ? sqlite3_errmsg(db->db) : "out of memory");
    usage_db_close(db);
    return -1;
  }
  if (configure(db, err) < 0) {
    gs_error_prepend(err, "'%s'", path);
    usage_db_close(db);
    return -1;
  }
  *out = db;
  return 0;
}

void usage_db_close(struct usage_db *db)
{
  if (!db)
    return;
  sqlite3_finalize(db->insert_interval);
  sqlite3_close(db->db);
  free(db);
}

/* Runs sql with the binds given as "i" (int64) and "t" (text) and "d" (double); 0 or -1. */
static int exec_bound(struct usage_db *db, const char *sql, const char *types,
                      const void *const *vals, gs_error_t *err)
{
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_fail(db, "prepare", err);
  for (int i = 0; types[i]; i++) {
    if (types[i] == 'i')
      sqlite3_bind_int64(st, i + 1, *(const int64_t *) vals[i]);
    else if (types[i] == 'd')
      sqlite3_bind_double(st, i + 1, *(const double *) vals[i]);
    else
      sqlite3_bind_text(st, i + 1, vals[i], -1, SQLITE_TRANSIENT);
  }
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : db_fail(db, "write", err);
}

struct label_insert {
  struct usage_db *db;
  int64_t id;
  int rc;
  gs_error_t *err;
};

static void insert_label(const char *key, const char *value, void *data)
{
  struct label_insert *li = data;
  const void *vals[] = { &li->id, key, value };
  if (li->rc == 0)
    li->rc = exec_bound(
      li->db, "INSERT OR REPLACE INTO tenant_labels(tenant_id, key, value) VALUES (?, ?, ?)", "itt",
      vals, li->err);
}

static int insert_labels(struct usage_db *db, const struct tenant *t, gs_error_t *err)
{
  struct label_insert li = { db, t->db_id, 0, err };
  gs_labels_foreach(t->labels, insert_label, &li);
  return li.rc;
}

int usage_db_tenant_labels(struct usage_db *db, const struct tenant *t, gs_error_t *err)
{
  const void *vals[] = { &t->db_id };
  if (t->db_id == 0)
    return 0;
  if (exec_bound(db, "DELETE FROM tenant_labels WHERE tenant_id = ?", "i", vals, err) < 0)
    return -1;
  return insert_labels(db, t, err);
}

static int insert_tenant(struct usage_db *db, struct tenant *t, gs_error_t *err)
{
  int64_t uid = t->uid, pid = t->owner_pid, created = (int64_t) t->created_unix_ns;
  double started = (double) t->created_unix_ns / 1e9;
  const void *vals[] = { t->name, &uid, t->user, &pid, &created, &started };
  if (exec_bound(db,
                 "INSERT INTO tenants(name, uid, user, owner_pid, created_unix_ns, started_at) "
                 "VALUES (?, ?, ?, ?, ?, ?)",
                 "titiid", vals, err) < 0)
    return -1;
  t->db_id = sqlite3_last_insert_rowid(db->db);
  return insert_labels(db, t, err);
}

/* The counters at the tenant's last interval row, so that the next row carries on from there. */
static void restore_counters(struct usage_db *db, struct tenant *t)
{
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(
        db->db,
        "SELECT gpu, gpu_ns_total, throttled_ns_total, end_at FROM intervals i WHERE tenant_id = ? "
        "AND end_at = (SELECT MAX(end_at) FROM intervals WHERE tenant_id = i.tenant_id AND gpu = "
        "i.gpu)",
        -1, &st, NULL) != SQLITE_OK)
    return;
  sqlite3_bind_int64(st, 1, t->db_id);
  while (sqlite3_step(st) == SQLITE_ROW) {
    int g = sqlite3_column_int(st, 0);
    if (g < 0 || g >= GS_LEDGER_MAX_GPUS)
      continue;
    t->gpu[g].last_gpu_ns = (uint64_t) sqlite3_column_int64(st, 1);
    if (t->gpu[g].gpu_ns < t->gpu[g].last_gpu_ns)
      t->gpu[g].gpu_ns = t->gpu[g].last_gpu_ns; /* carries on from what was counted */
    t->gpu[g].last_throttled_ns = (uint64_t) sqlite3_column_int64(st, 2);
    double end = sqlite3_column_double(st, 3);
    if (end > t->last_end)
      t->last_end = end;
  }
  sqlite3_finalize(st);
}

int usage_db_tenant(struct usage_db *db, struct tenant *t, gs_error_t *err)
{
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(
        db->db, "SELECT id, served_requests FROM tenants WHERE name = ? AND created_unix_ns = ?",
        -1, &st, NULL) != SQLITE_OK)
    return db_fail(db, "prepare", err);
  sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, (int64_t) t->created_unix_ns);
  if (sqlite3_step(st) == SQLITE_ROW) {
    t->db_id = sqlite3_column_int64(st, 0);
    t->served_requests = (uint64_t) sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  if (!t->db_id)
    return insert_tenant(db, t, err);
  restore_counters(db, t);
  const void *vals[] = { &t->db_id };
  return exec_bound(db, "UPDATE tenants SET ended_at = NULL, exit_status = NULL WHERE id = ?", "i",
                    vals, err);
}

/* The GPU-seconds a tenant held on a GPU over an interval: the larger of its compute share
 * and its memory limit as a fraction of the GPU, for the interval's length. A tenant with
 * neither limit holds what it used. */
static double allocated_seconds(uint32_t cppm, uint64_t limit, uint64_t total, double used,
                                double len)
{
  double compute = cppm ? cppm / 1e6 : 0;
  double memory = limit != GS_LIMIT_NONE && total ? (double) limit / (double) total : 0;
  double frac = compute > memory ? compute : memory;
  if (frac > 1)
    frac = 1;
  return frac > 0 ? (frac * len > used ? frac * len : used) : used;
}

static int insert_row(struct usage_db *db, struct tenant *t, int g, uint64_t gpu_total,
                      double start, double end)
{
  sqlite3_stmt *st = db->insert_interval;
  struct tenant_gpu *tg = &t->gpu[g];
  uint64_t limit = atomic_load(&t->limits->limit_bytes[g]);
  uint32_t cppm = atomic_load(&t->limits->compute.limit_ppm);
  uint64_t dgpu = tg->gpu_ns >= tg->last_gpu_ns ? tg->gpu_ns - tg->last_gpu_ns : tg->gpu_ns;
  uint64_t dthr = tg->throttled_ns >= tg->last_throttled_ns
    ? tg->throttled_ns - tg->last_throttled_ns
    : tg->throttled_ns;
  sqlite3_reset(st);
  sqlite3_bind_int64(st, 1, t->db_id);
  sqlite3_bind_int(st, 2, g);
  sqlite3_bind_double(st, 3, start);
  sqlite3_bind_double(st, 4, end);
  sqlite3_bind_double(st, 5, (double) dgpu / 1e9);
  sqlite3_bind_double(st, 6, (double) tg->used_bytes * (end - start));
  sqlite3_bind_int64(st, 7, (int64_t) tg->used_bytes);
  limit == GS_LIMIT_NONE ? sqlite3_bind_null(st, 8) : sqlite3_bind_int64(st, 8, (int64_t) limit);
  cppm ? sqlite3_bind_int64(st, 9, cppm) : sqlite3_bind_null(st, 9);
  sqlite3_bind_double(st, 10, (double) dthr / 1e9);
  sqlite3_bind_int64(st, 11, (int64_t) tg->gpu_ns);
  sqlite3_bind_int64(st, 12, (int64_t) tg->throttled_ns);
  sqlite3_bind_text(st, 13, gs_compute_policy_name(atomic_load(&t->limits->compute.policy)), -1,
                    SQLITE_STATIC);
  sqlite3_bind_text(st, 14, gs_priority_name(atomic_load(&t->limits->compute.priority)), -1,
                    SQLITE_STATIC);
  sqlite3_bind_double(st, 15,
                      allocated_seconds(cppm, limit, gpu_total, (double) dgpu / 1e9, end - start));
  return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

static int tenant_rows(struct usage_db *db, struct tenant *t, int ngpus, const uint64_t *gpu_totals,
                       double end)
{
  double start = t->last_end > 0 ? t->last_end : (double) t->created_unix_ns / 1e9;
  if (!t->db_id || !t->sampled || end <= start)
    return 0;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    if (!tenant_gpu_row(t, g, ngpus))
      continue;
    if (insert_row(db, t, g, g < ngpus ? gpu_totals[g] : 0, start, end) < 0)
      return -1;
  }
  return 0;
}

/* The counters move on only once the transaction has committed. */
static void advance(struct tenant **v, int n, double end)
{
  for (int i = 0; i < n; i++) {
    struct tenant *t = v[i];
    if (!t->db_id || !t->sampled)
      continue;
    for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
      t->gpu[g].last_gpu_ns = t->gpu[g].gpu_ns;
      t->gpu[g].last_throttled_ns = t->gpu[g].throttled_ns;
    }
    t->last_end = end;
  }
}

int usage_db_interval(struct usage_db *db, struct tenant **v, int n, int ngpus,
                      const uint64_t *gpu_totals, double end, gs_error_t *err)
{
  if (sqlite3_exec(db->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, "begin", err);
  for (int i = 0; i < n; i++) {
    if (tenant_rows(db, v[i], ngpus, gpu_totals, end) < 0) {
      db_fail(db, "write an interval", err);
      sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
      return -1;
    }
  }
  if (sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    db_fail(db, "commit an interval", err);
    sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
  }
  advance(v, n, end);
  return 0;
}

int usage_db_tenant_end(struct usage_db *db, const struct tenant *t, double end, gs_error_t *err)
{
  int64_t status = t->exit_status;
  if (!t->db_id)
    return 0;
  if (t->exit_status < 0) {
    const void *vals[] = { &end, &t->db_id };
    return exec_bound(db, "UPDATE tenants SET ended_at = ? WHERE id = ?", "di", vals, err);
  }
  const void *vals[] = { &end, &status, &t->db_id };
  return exec_bound(db, "UPDATE tenants SET ended_at = ?, exit_status = ? WHERE id = ?", "dii",
                    vals, err);
}

int usage_db_served(struct usage_db *db, const struct tenant *t, uint64_t requests, gs_error_t *err)
{
  int64_t n = (int64_t) requests;
  const void *vals[] = { &n, &t->db_id };
  return exec_bound(db, "UPDATE tenants SET served_requests = served_requests + ? WHERE id = ?",
                    "ii", vals, err);
}

int usage_db_violation(struct usage_db *db, const struct tenant *t, const struct usage_violation *v,
                       gs_error_t *err)
{
  int64_t gpu = v->gpu, measured = (int64_t) v->measured, limit = (int64_t) v->limit,
          over = (int64_t) v->over;
  const void *vals[] = { &t->db_id, &gpu,  v->kind,   &v->at, &measured,
                         &limit,    &over, v->action, v->pids };
  return exec_bound(
    db,
    "INSERT INTO violations(tenant_id, gpu, kind, at, measured, limit_value, over, action, pids) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "iisdiiiss", vals, err);
}

int usage_db_idle_action(struct usage_db *db, const struct tenant *t,
                         const struct usage_idle_action *a, gs_error_t *err)
{
  int64_t dry = a->dry_run, vram = (int64_t) a->vram_bytes;
  const void *vals[] = { &t->db_id,    &a->at,        a->rule, a->action, &dry,      &a->idle_s,
                         &a->fraction, &a->threshold, &a->cpu, &vram,     a->reason, a->error };
  if (!t->db_id)
    return 0;
  return exec_bound(db,
                    "INSERT INTO idle_actions(tenant_id, at, rule, action, dry_run, idle_seconds, "
                    "device_fraction, threshold, cpu_cores, vram_bytes, reason, error) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    "idttiddddiss", vals, err);
}

int usage_db_suspended(struct usage_db *db, struct tenant *t, uint64_t bytes, gs_error_t *err)
{
  int64_t b = (int64_t) bytes;
  double at = t->sus.started_unix, took = t->sus.suspend_s;
  const void *vals[] = { &t->db_id, &at, &b, &took };
  if (!t->db_id)
    return 0;
  if (exec_bound(db,
                 "INSERT INTO suspensions(tenant_id, suspended_at, bytes, suspend_seconds) "
                 "VALUES (?, ?, ?, ?)",
                 "idid", vals, err) < 0)
    return -1;
  t->sus.db_row = sqlite3_last_insert_rowid(db->db);
  return 0;
}

int usage_db_resumed(struct usage_db *db, struct tenant *t, const char *by, gs_error_t *err)
{
  double at = daemon_now_unix(), took = t->sus.resume_s;
  const void *vals[] = { &at, by, &took, &t->sus.db_row };
  if (!t->sus.db_row)
    return 0;
  int rc = exec_bound(db,
                      "UPDATE suspensions SET resumed_at = ?, resumed_by = ?, resume_seconds = ? "
                      "WHERE rowid = ?",
                      "dtdi", vals, err);
  t->sus.db_row = 0;
  return rc;
}

static bool registered(const struct registry *r, int64_t id)
{
  for (int i = 0; i < r->n; i++)
    if (r->v[i]->db_id == id)
      return true;
  return false;
}

int usage_db_close_orphans(struct usage_db *db, const struct registry *r, gs_error_t *err)
{
  sqlite3_stmt *st = NULL;
  int64_t ids[256];
  int n = 0;
  if (sqlite3_prepare_v2(db->db, "SELECT id FROM tenants WHERE ended_at IS NULL", -1, &st, NULL) !=
      SQLITE_OK)
    return db_fail(db, "prepare", err);
  while (sqlite3_step(st) == SQLITE_ROW && n < 256) {
    int64_t id = sqlite3_column_int64(st, 0);
    if (!registered(r, id))
      ids[n++] = id;
  }
  sqlite3_finalize(st);
  for (int i = 0; i < n; i++) {
    const void *vals[] = { &ids[i] };
    if (exec_bound(db,
                   "UPDATE tenants SET ended_at = COALESCE((SELECT MAX(end_at) FROM intervals "
                   "WHERE tenant_id = ?1),"
                   " started_at) WHERE id = ?1",
                   "i", vals, err) < 0)
      return -1;
  }
  return 0;
}

double usage_db_last_end(struct usage_db *db)
{
  sqlite3_stmt *st = NULL;
  double end = 0;
  if (sqlite3_prepare_v2(db->db, "SELECT MAX(end_at) FROM intervals", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    end = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  return end;
}

struct sqlite3 *usage_db_handle(struct usage_db *db)
{
  return db->db;
}
