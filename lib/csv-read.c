/* The CSV reader behind the MIG and price tables (see csv-read.h): lines taken from text in
 * memory, split by gs_csv_split (gs-csv.h). */
#include "csv-read.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuslice/csv.h>

void gs__csv_init(struct gs__csv *c, const char *text, size_t len, const char *name)
{
  memset(c, 0, sizeof(*c));
  c->p = text;
  c->end = text + len;
  c->name = name;
}

int gs__csv_error(const struct gs__csv *c, gs_error_t *err, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  gs_make_errorv(err, 0, fmt, ap);
  va_end(ap);
  return gs_error_prepend(err, "%s: line %d", c->name, c->line);
}

/* Copies one physical line (without its end of line) into buf. */
static int take_line(struct gs__csv *c, gs_error_t *err)
{
  const char *nl = memchr(c->p, '\n', (size_t) (c->end - c->p));
  size_t len = (size_t) ((nl ? nl : c->end) - c->p);
  c->line++;
  if (len && c->p[len - 1] == '\r')
    len--;
  if (len >= sizeof(c->buf))
    return gs__csv_error(c, err, "line longer than %d bytes", GS__CSV_MAX_LINE - 1);
  if (memchr(c->p, '\0', len))
    return gs__csv_error(c, err, "NUL byte in line");
  memcpy(c->buf, c->p, len);
  c->buf[len] = '\0';
  c->p = nl ? nl + 1 : c->end;
  return 0;
}

/* Splits buf in place into fields, undoing quotes; errors name the table and line. */
static int split(struct gs__csv *c, gs_error_t *err)
{
  c->n = gs_csv_split(c->buf, GS_CSV_QUOTED, c->field, GS__CSV_MAX_FIELDS, err);
  return c->n < 0 ? gs_error_prepend(err, "%s: line %d", c->name, c->line) : 1;
}

int gs__csv_next(struct gs__csv *c, gs_error_t *err)
{
  while (c->p < c->end) {
    if (take_line(c, err) < 0)
      return -1;
    if (c->buf[0] == '#' || c->buf[strspn(c->buf, " \t")] == '\0')
      continue;
    return split(c, err);
  }
  return 0;
}

int gs__csv_column(const struct gs__csv *c, const char *name)
{
  for (int i = 0; i < c->n; i++)
    if (strcmp(c->field[i], name) == 0)
      return i;
  return -1;
}

const char *gs__csv_get(const struct gs__csv *c, int i)
{
  return i >= 0 && i < c->n ? c->field[i] : "";
}

int gs__csv_number(const struct gs__csv *c, int i, const char *what, double lo, double hi,
                   int allow_empty, double *out, gs_error_t *err)
{
  const char *s = gs__csv_get(c, i);
  if (!*s || strcmp(s, "?") == 0) {
    if (!allow_empty)
      return gs__csv_error(c, err, "%s is empty", what);
    *out = (double) NAN;
    return 0;
  }
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || s[0] == ' ')
    return gs__csv_error(c, err, "%s '%s' is not a number", what, s);
  if (v < lo || v > hi)
    return gs__csv_error(c, err, "%s '%s' is out of range (%g..%g)", what, s, lo, hi);
  *out = v;
  return 0;
}

int gs__csv_string(const struct gs__csv *c, int i, const char *what, char *out, size_t len,
                   gs_error_t *err)
{
  const char *s = gs__csv_get(c, i);
  if (strlen(s) >= len)
    return gs__csv_error(c, err, "%s is longer than %zu characters", what, len - 1);
  memcpy(out, s, strlen(s) + 1);
  return 0;
}

/* Reads f to the end into a buffer that grows as needed, up to GS__CSV_MAX_FILE bytes. */
static int read_all(FILE *f, const char *path, char **out, size_t *len, gs_error_t *err)
{
  size_t cap = 0, n = 0;
  char *buf = NULL;
  errno = 0;
  for (;;) {
    if (n == cap) {
      if (cap > GS__CSV_MAX_FILE) {
        free(buf);
        return gs_make_error(err, 0, "'%s': larger than %u bytes", path, GS__CSV_MAX_FILE);
      }
      cap = cap ? cap * 2 : 16384;
      char *nb = realloc(buf, cap + 1);
      if (!nb) {
        free(buf);
        return gs_make_error(err, ENOMEM, "read '%s'", path);
      }
      buf = nb;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0)
      break;
  }
  if (ferror(f)) {
    int saved = errno ? errno : EIO;
    free(buf);
    return gs_make_error(err, saved, "read '%s'", path);
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;
}

int gs__read_text_file(const char *path, char **out, size_t *len, gs_error_t *err)
{
  FILE *f = fopen(path, "re");
  if (!f)
    return gs_make_error(err, errno, "open '%s'", path);
  int r = read_all(f, path, out, len, err);
  fclose(f);
  return r;
}

int gs__parse_text_file(const char *path, gs__text_parse_fn *parse, void *out, gs_error_t *err)
{
  char *text;
  size_t len;
  if (gs__read_text_file(path, &text, &len, err) < 0)
    return -1;
  int r = parse(text, len, path, out, err);
  free(text);
  return r;
}
