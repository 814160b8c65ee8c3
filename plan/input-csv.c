/* The plain CSV input of `gpuslice plan`: one sample per line,
 *   timestamp,workload,gpu_util_pct,fb_used_bytes[,label=value...]
 * with an optional header line starting "timestamp,". The timestamp is Unix seconds
 * (fractions allowed) or ISO 8601 UTC ("2024-05-01T12:00:00Z"). Blank lines and lines
 * starting with '#' are skipped. No quoting: fields hold no commas, and a quote is an
 * ordinary character (gs_csv_split's GS_CSV_PLAIN, gs-csv.h). The first bad line refuses
 * the file with "FILE:LINE: reason".
 *
 * Not lib's table reader (csv-read.h): that one holds the whole text in memory (at most
 * 16 MiB, lines of 4 KiB), while metrics files are streamed, often from gzip, and large. */
#include "plan-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuslice/csv.h>

#define CSV_MAX_FIELDS (4 + GS_PLAN_MAX_LABELS)

struct csv_line {
  const char *path;
  size_t no;
  char *field[CSV_MAX_FIELDS];
  int n;
  struct gs_plan_data *d; /* where the lines go */
};

static int line_error(const struct csv_line *l, gs_error_t *err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static int line_error(const struct csv_line *l, gs_error_t *err, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  gs_make_errorv(err, 0, fmt, ap);
  va_end(ap);
  return gs_error_prepend(err, "%s:%zu", l->path, l->no);
}

/* ISO 8601 UTC with an optional fraction of a second and an optional 'Z'. */
static int parse_iso_time(const char *s, double *out)
{
  struct tm tm = { 0 };
  const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!p)
    return -1;
  double frac = 0;
  if (*p == '.') {
    char *end;
    frac = strtod(p, &end);
    p = end;
  }
  if (*p == 'Z')
    p++;
  if (*p)
    return -1;
  *out = (double) timegm(&tm) + frac;
  return 0;
}

static int split(char *line, struct csv_line *l, gs_error_t *err)
{
  l->n = gs_csv_split(line, GS_CSV_PLAIN, l->field, CSV_MAX_FIELDS, err);
  return l->n < 0 ? gs_error_prepend(err, "%s:%zu", l->path, l->no) : 0;
}

static int add_labels(const struct csv_line *l, struct gs_plan_workload *w, gs_error_t *err)
{
  for (int i = 4; i < l->n; i++) {
    char *eq = strchr(l->field[i], '=');
    if (!eq || eq == l->field[i])
      return line_error(l, err, "field %d '%.60s': want label=value", i + 1, l->field[i]);
    *eq = '\0';
    if (gs_plan_workload_set_label(w, l->field[i], eq + 1, err) < 0)
      return -1;
  }
  return 0;
}

static int parse_line(char *line, struct csv_line *l, struct gs_plan_data *d, gs_error_t *err)
{
  if (split(line, l, err) < 0)
    return -1;
  if (l->n < 4)
    return line_error(l, err,
                      "%d field%s, want timestamp,workload,gpu_util_pct,"
                      "fb_used_bytes[,label=value...]",
                      l->n, l->n == 1 ? "" : "s");
  double t, util, mem;
  if (gs__plan_parse_number(l->field[0], &t) < 0 && parse_iso_time(l->field[0], &t) < 0)
    return line_error(l, err, "timestamp '%.60s': want Unix seconds or ISO 8601 UTC", l->field[0]);
  if (!l->field[1][0])
    return line_error(l, err, "empty workload name");
  if (gs__plan_parse_number(l->field[2], &util) < 0 || util < 0 || util > 100)
    return line_error(l, err, "gpu_util_pct '%.60s': want a number 0..100", l->field[2]);
  if (gs__plan_parse_number(l->field[3], &mem) < 0 || mem < 0)
    return line_error(l, err, "fb_used_bytes '%.60s': want a number of bytes >= 0", l->field[3]);
  struct gs_plan_workload *w = gs_plan_data_workload(d, l->field[1], err);
  if (!w || gs_plan_workload_add(w, t, util, mem, err) < 0)
    return -1;
  return add_labels(l, w, err);
}

static int csv_line(void *ctx, char *line, size_t no, gs_error_t *err)
{
  struct csv_line *l = ctx;
  l->no = no;
  if (!line[0] || line[0] == '#' || (no == 1 && strncmp(line, "timestamp,", 10) == 0))
    return 0;
  return parse_line(line, l, l->d, err);
}

int gs__plan_read_csv(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err)
{
  struct csv_line l = { .path = path, .d = d };
  return gs__plan_each_line(f, path, csv_line, &l, err);
}
