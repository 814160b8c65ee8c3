/* The usage report (GET /v1/usage, `gpuslice usage`): the usage database's intervals in a time
 * range, summed per tenant and then per group: the tenant's name, its user, or one of its
 * labels. Each row also sums the GPU-seconds its tenants held (allocated), for cost
 * attribution, the time its tenants spent suspended within the range, and the GPU-seconds
 * those suspensions gave back (reclaimed: docs/idle.md). Intervals are
 * counted whole when they overlap the range (they are one sampling interval long). A tenant's
 * wall time counts each interval once, however many GPUs it used. */
#include "daemon.h"

#include <sqlite3.h>
#include <string.h>

static const char usage_sql[] =
  "SELECT key, COUNT(*), SUM(gs), SUM(vbs), SUM(wall), SUM(served), SUM(alloc), SUM(susp), "
  "SUM(recl) FROM ("
  "  SELECT CASE ?4 WHEN 'tenant' THEN t.name WHEN 'user' THEN t.user"
  "         ELSE COALESCE((SELECT value FROM tenant_labels WHERE tenant_id = t.id AND key = ?5), "
  "'') END AS key,"
  "    SUM(i.gpu_seconds) AS gs, SUM(i.vram_byte_seconds) AS vbs, MAX(t.served_requests) AS served,"
  "    SUM(i.allocated_gpu_seconds) AS alloc,"
  "    (SELECT SUM(e - s) FROM (SELECT DISTINCT start_at AS s, end_at AS e FROM intervals"
  "       WHERE tenant_id = t.id AND end_at > ?1 AND start_at < ?2)) AS wall,"
  "    (SELECT SUM(MIN(COALESCE(resumed_at, ?2), ?2) - MAX(suspended_at, ?1)) FROM suspensions"
  "       WHERE tenant_id = t.id AND COALESCE(resumed_at, ?2) > ?1 AND suspended_at < ?2) AS susp,"
  /* Reclaimed: each suspension's time in the range times the share of the GPUs the tenant
   * held (allocated) in its last interval before it: what the suspension gave back. */
  "    (SELECT SUM((MIN(COALESCE(s.resumed_at, ?2), ?2) - MAX(s.suspended_at, ?1)) *"
  "       COALESCE((SELECT SUM(a.allocated_gpu_seconds) / MAX(a.end_at - a.start_at, 1e-9)"
  "         FROM intervals a WHERE a.tenant_id = t.id AND a.end_at = (SELECT MAX(end_at)"
  "           FROM intervals WHERE tenant_id = t.id AND end_at <= s.suspended_at)), 0))"
  "     FROM suspensions s WHERE s.tenant_id = t.id AND COALESCE(s.resumed_at, ?2) > ?1"
  "       AND s.suspended_at < ?2) AS recl"
  "  FROM tenants t JOIN intervals i ON i.tenant_id = t.id"
  "  WHERE i.end_at > ?1 AND i.start_at < ?2 AND (?3 < 0 OR t.uid = ?3)"
  "  GROUP BY t.id)"
  " GROUP BY key ORDER BY key";

static json_t *row_json(sqlite3_stmt *st)
{
  double vbs = sqlite3_column_double(st, 3);
  return json_pack(
    "{s:s, s:I, s:f, s:f, s:f, s:f, s:I, s:f, s:f, s:f}", "key",
    (const char *) sqlite3_column_text(st, 0), "tenants", (json_int_t) sqlite3_column_int64(st, 1),
    "gpu_seconds", sqlite3_column_double(st, 2), "vram_byte_seconds", vbs, "vram_gib_hours",
    vbs / (1024.0 * 1024.0 * 1024.0) / 3600.0, "wall_seconds", sqlite3_column_double(st, 4),
    "served_requests", (json_int_t) sqlite3_column_int64(st, 5), "allocated_gpu_seconds",
    sqlite3_column_double(st, 6), "suspended_seconds", sqlite3_column_double(st, 7),
    "reclaimed_gpu_seconds", sqlite3_column_double(st, 8));
}

json_t *usage_db_usage(struct usage_db *db, const char *by, double since, double until, uid_t uid,
                       gs_error_t *err)
{
  sqlite3 *h = usage_db_handle(db);
  sqlite3_stmt *st = NULL;
  const char *kind = strncmp(by, "label:", 6) == 0 ? "label" : by;
  if (sqlite3_prepare_v2(h, usage_sql, -1, &st, NULL) != SQLITE_OK) {
    gs_make_error(err, 0, "usage ledger: %s", sqlite3_errmsg(h));
    return NULL;
  }
  sqlite3_bind_double(st, 1, since);
  sqlite3_bind_double(st, 2, until);
  sqlite3_bind_int64(st, 3, uid == (uid_t) -1 ? -1 : (int64_t) uid);
  sqlite3_bind_text(st, 4, kind, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, strcmp(kind, "label") == 0 ? by + 6 : "", -1, SQLITE_STATIC);
  json_t *rows = json_array();
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    json_array_append_new(rows, row_json(st));
  if (rc != SQLITE_DONE) {
    gs_make_error(err, 0, "usage ledger: %s", sqlite3_errmsg(h));
    json_decref(rows);
    rows = NULL;
  }
  sqlite3_finalize(st);
  return rows;
}

double usage_db_first_start(struct usage_db *db, double since, double until)
{
  sqlite3_stmt *st = NULL;
  double first = 0;
  if (sqlite3_prepare_v2(usage_db_handle(db),
                         "SELECT MIN(start_at) FROM intervals WHERE end_at > ?1 AND start_at < ?2",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_double(st, 1, since);
    sqlite3_bind_double(st, 2, until);
    if (sqlite3_step(st) == SQLITE_ROW)
      first = sqlite3_column_double(st, 0);
  }
  sqlite3_finalize(st);
  return first;
}
