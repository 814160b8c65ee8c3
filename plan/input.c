/* The plan library's input (gs-plan-io.h): opens a metrics file, plain or gzip-compressed
 * (through zlib, wrapped as a stdio stream so every reader just reads lines), tells its
 * format from its first bytes and hands it to the reader for that format. The extension
 * plays no part: a ".csv" holding dcgm-exporter output is read as such. The helpers every
 * reader uses (lines, numbers) are here too; the readers are input-*.c. */
#include "plan-internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <gpuslice/csv.h>

#define SNIFF_BYTES 4096

const char *gs_plan_input_format_name(enum gs_plan_input_format f)
{
  static const char *const names[] = { "csv", "prometheus", "prometheus-json", "genai-util",
                                       "genai-memory" };
  return (unsigned) f < sizeof(names) / sizeof(names[0]) ? names[f] : "?";
}

int gs__plan_parse_number(const char *s, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

int gs__plan_each_line(FILE *f, const char *path, gs__plan_line_fn fn, void *ctx, gs_error_t *err)
{
  char *line = NULL;
  size_t cap = 0, no = 0;
  int r;
  for (;;) {
    if ((r = gs_csv_getline(f, &line, &cap, err)) < 0)
      gs_error_prepend(err, "%s:%zu", path, no + 1);
    if (r <= 0 || (r = fn(ctx, line, ++no, err)) < 0)
      break;
  }
  free(line);
  return r < 0 ? -1 : 0;
}

static ssize_t gz_read(void *cookie, char *buf, size_t size)
{
  int n = gzread((gzFile) cookie, buf, size > INT32_MAX ? INT32_MAX : (unsigned) size);
  return n < 0 ? -1 : n;
}

static int gz_close(void *cookie)
{
  return gzclose_r((gzFile) cookie) == Z_OK ? 0 : -1;
}

/* A stdio stream over gzread, which reads plain files unchanged. */
static FILE *open_maybe_gz(const char *path, gs_error_t *err)
{
  errno = 0;
  gzFile gz = gzopen(path, "rb");
  if (!gz)
    return gs_make_error(err, errno ? errno : ENOMEM, "%s", path), NULL;
  cookie_io_functions_t io = { .read = gz_read, .close = gz_close };
  FILE *f = fopencookie(gz, "r", io);
  if (!f) {
    gzclose_r(gz);
    return gs_make_error(err, ENOMEM, "%s", path), NULL;
  }
  return f;
}

static bool starts_with(const char *s, const char *prefix)
{
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The format, from the first bytes; -1 when nothing matches. */
static int sniff(const char *head)
{
  const char *p = head + strspn(head, " \t\r\n");
  if (starts_with(p, "\xef\xbb\xbf"))
    p += 3;
  if (*p == '{')
    return GS_PLAN_IN_PROMJSON;
  if (starts_with(p, "value,timestamp_anon,container_ip"))
    return GS_PLAN_IN_GENAI_UTIL;
  if (starts_with(p, "timestamp_anon,value,container_ip"))
    return GS_PLAN_IN_GENAI_MEM;
  if (*p == '#' || starts_with(p, "DCGM_FI_"))
    return GS_PLAN_IN_PROM;
  size_t line = strcspn(p, "\n");
  if (memchr(p, ',', line))
    return GS_PLAN_IN_CSV;
  return -1;
}

/* The first bytes of the file, decompressed; -1 on error. */
static ssize_t read_head(const char *path, char *head, size_t cap, gs_error_t *err)
{
  FILE *f = open_maybe_gz(path, err);
  if (!f)
    return -1;
  size_t n = fread(head, 1, cap - 1, f);
  head[n] = '\0';
  bool bad = ferror(f);
  fclose(f);
  if (bad)
    return gs_make_error(err, EIO, "%s: read (a damaged gzip file?)", path);
  return (ssize_t) n;
}

int gs_plan_read(FILE *f, const char *path, enum gs_plan_input_format fmt, struct gs_plan_data *d,
                 gs_error_t *err)
{
  switch (fmt) {
  case GS_PLAN_IN_CSV: return gs__plan_read_csv(f, path, d, err);
  case GS_PLAN_IN_PROM: return gs__plan_read_prom(f, path, d, err);
  case GS_PLAN_IN_PROMJSON: return gs__plan_read_promjson(f, path, d, err);
  case GS_PLAN_IN_GENAI_UTIL: return gs__plan_read_genai(f, path, false, d, err);
  case GS_PLAN_IN_GENAI_MEM: return gs__plan_read_genai(f, path, true, d, err);
  }
  return gs_make_error(err, 0, "%s: unknown format", path);
}

int gs_plan_input_read(const char *path, struct gs_plan_data *d, enum gs_plan_input_format *fmt,
                       gs_error_t *err)
{
  char head[SNIFF_BYTES + 1];
  ssize_t n = read_head(path, head, sizeof(head), err);
  if (n < 0)
    return -1;
  if (n == 0)
    return gs_make_error(err, 0, "%s: empty file", path);
  int kind = sniff(head);
  if (kind < 0)
    return gs_make_error(err, 0,
                         "%s:1: not a format gpuslice plan reads (CSV, dcgm-exporter "
                         "or Prometheus text, Prometheus range-query JSON, Alibaba GenAI CSV)",
                         path);
  *fmt = (enum gs_plan_input_format) kind;
  FILE *f = open_maybe_gz(path, err);
  if (!f)
    return -1;
  int r = gs_plan_read(f, path, *fmt, d, err);
  fclose(f);
  return r;
}
