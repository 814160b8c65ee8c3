/* Aligned text tables and the cell formats the daemon verbs share (cli-table.h). Cells are kept
 * until the table is printed, so each column is as wide as its widest cell; control characters
 * in them are kept from the terminal. */
#include "cli-table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice.h>

struct table {
  int ncols, nrows, cap;
  char *align;
  char **cells; /* (nrows + 1) * ncols; row 0 is the header */
};

struct table *table_new(int ncols, const char *align, const char *const *headers)
{
  struct table *t = xcalloc(1, sizeof(*t));
  t->ncols = ncols;
  t->align = xstrdup(align);
  table_add(t, headers);
  return t;
}

void table_free(struct table *t)
{
  if (!t)
    return;
  for (int i = 0; i < (t->nrows) * t->ncols; i++)
    free(t->cells[i]);
  free(t->cells);
  free(t->align);
  free(t);
}

void table_add(struct table *t, const char *const *cells)
{
  if (t->nrows == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 16;
    t->cells = xrealloc(t->cells, (size_t) t->cap * (size_t) t->ncols * sizeof(char *));
  }
  /* Cells hold what tenants chose (names, labels): a terminal escape there must not reach the
   * terminal of whoever runs ps or top, so control characters are printed as '?'. */
  for (int c = 0; c < t->ncols; c++)
    t->cells[t->nrows * t->ncols + c] = gs_scrub_ctl(xstrdup(cells[c] ? cells[c] : "-"), '?');
  t->nrows++;
}

int table_rows(const struct table *t)
{
  return t->nrows - 1;
}

/* Display width: UTF-8 continuation bytes take no column. */
static int width(const char *s)
{
  int w = 0;
  for (; *s; s++)
    w += ((unsigned char) *s & 0xc0) != 0x80;
  return w;
}

void table_print(const struct table *t, FILE *f)
{
  int *w = xcalloc((size_t) t->ncols, sizeof(int));
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      int cw = width(t->cells[r * t->ncols + c]);
      w[c] = cw > w[c] ? cw : w[c];
    }
  for (int r = 0; r < t->nrows; r++) {
    for (int c = 0; c < t->ncols; c++) {
      const char *s = t->cells[r * t->ncols + c];
      int pad = w[c] - width(s);
      bool right = t->align[c] == 'r';
      bool last = c == t->ncols - 1;
      fprintf(f, "%s%*s%s", c ? "  " : "", right ? pad : 0, "", s);
      if (!right && !last)
        fprintf(f, "%*s", pad, "");
    }
    fputc('\n', f);
  }
  free(w);
}

const char *fmt_bytes(char *buf, double bytes)
{
  static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, TABLE_CELL, "%.0f B", bytes);
  else
    snprintf(buf, TABLE_CELL, "%.1f %s", bytes, units[u]);
  return buf;
}

const char *fmt_seconds(char *buf, double s)
{
  if (!(s >= 0))
    s = 0;
  uint64_t whole = (uint64_t) s;
  if (s < 60)
    snprintf(buf, TABLE_CELL, "%.1fs", s);
  else if (s < 3600)
    snprintf(buf, TABLE_CELL, "%um%02us", (unsigned) (whole / 60), (unsigned) (whole % 60));
  else if (s < 86400)
    snprintf(buf, TABLE_CELL, "%uh%02um", (unsigned) (whole / 3600),
             (unsigned) (whole % 3600 / 60));
  else
    snprintf(buf, TABLE_CELL, "%ud%02uh", (unsigned) (whole / 86400),
             (unsigned) (whole % 86400 / 3600));
  return buf;
}

const char *fmt_number(char *buf, double v, int decimals)
{
  snprintf(buf, TABLE_CELL, "%.*f", decimals, v);
  if (strchr(buf, '.')) {
    char *end = buf + strlen(buf) - 1;
    while (*end == '0')
      *end-- = '\0';
    if (*end == '.')
      *end = '\0';
  }
  return buf;
}

const char *fmt_share(char *buf, double share)
{
  fmt_number(buf, share * 100, 1);
  strcat(buf, "%");
  return buf;
}
