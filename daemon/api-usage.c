/* GET /v1/usage?by=tenant|user|label:KEY&since=7d|24h|30m|RFC3339: the usage report from the
 * usage database (usage-db-report.c), with the node's capacity in GPU-seconds over the range
 * the database covers. A user's report covers their own tenants only. */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The part of an RFC 3339 time after the seconds: an optional fraction, then Z or an offset
 * (+HH:MM or -HH:MM); the offset in seconds east of UTC into *off. false when it is neither. */
static bool rfc3339_tail(const char *p, double *frac, long *off)
{
  char *fend = NULL;
  const char *end = p;
  int hh, mm, n = 0;
  *frac = 0;
  *off = 0;
  if (*p == '.' && p[1] >= '0' && p[1] <= '9') {
    *frac = strtod(p, &fend);
    end = fend;
  }
  if ((*end == 'Z' || *end == 'z') && !end[1])
    return true;
  if ((*end != '+' && *end != '-') || sscanf(end + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5 ||
      end[6])
    return false;
  *off = (*end == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
  return true;
}

/* "2w", "7d", "24h", "30m", "90s" before now, or an RFC 3339 time, as the CLI's --since
 * takes them. -1 when bad. */
static double parse_since(const char *s, double now)
{
  static const char units[] = "smhdw";
  static const double secs[] = { 1, 60, 3600, 86400, 604800 };
  char *end = NULL;
  double n = strtod(s, &end), frac;
  long off;
  struct tm tm;
  if (end != s && n >= 0 && end[0] && !end[1] && strchr(units, end[0]))
    return now - n * secs[strchr(units, end[0]) - units];
  memset(&tm, 0, sizeof(tm));
  end = strptime(s, "%Y-%m-%d", &tm);
  if (!end || (*end != 'T' && *end != 't' && *end != ' '))
    return -1;
  end = strptime(end + 1, "%H:%M:%S", &tm);
  if (!end || !rfc3339_tail(end, &frac, &off))
    return -1;
  return (double) timegm(&tm) + frac - (double) off;
}

static bool by_valid(const char *by)
{
  if (strcmp(by, "tenant") == 0 || strcmp(by, "user") == 0)
    return true;
  return strncmp(by, "label:", 6) == 0 && by[6] &&
    strspn(by + 6, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
    strlen(by + 6);
}

int api_usage_report(struct api_req *rq, struct api_reply *r)
{
  gs_error_t err = NULL;
  const char *by = rq->query(rq, "by"), *since_arg = rq->query(rq, "since");
  double now = daemon_now_unix();
  by = by && *by ? by : "tenant";
  if (!by_valid(by))
    return api_error(r, 400, "query 'by': want tenant, user or label:KEY");
  double since = since_arg && *since_arg ? parse_since(since_arg, now) : 0;
  if (since < 0)
    return api_error(
      r, 400, "query 'since': want a duration such as 2w, 7d, 24h, 30m, or an RFC 3339 time");
  json_t *rows =
    usage_db_usage(rq->d->db, by, since, now + 1, rq->peer.admin ? (uid_t) -1 : rq->peer.uid, &err);
  if (!rows) {
    api_error(r, 500, "%s", err->msg);
    gs_error_release(&err);
    return 0;
  }
  /* What the node's GPUs could have given over the part of the range the ledger covers; only
   * in a report of every tenant, where what is not allocated is known. */
  double first = usage_db_first_start(rq->d->db, since, now + 1);
  double from = first > since ? first : since,
         capacity = first > 0 && now > from ? rq->d->snap.ngpus * (now - from) : 0;
  return api_ok(r, 200,
                json_pack("{s:o, s:o, s:s, s:o, s:i, s:o}", "since", api_time_json(since), "until",
                          api_time_json(now), "by", by, "rows", rows, "gpus", rq->d->snap.ngpus,
                          "capacity_gpu_seconds",
                          rq->peer.admin ? json_real(capacity) : json_null()));
}
