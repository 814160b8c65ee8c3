/* The CSV splitter and stream line reader (gs-csv.h). The table reader over them, for
 * the MIG and price tables held in memory, is csv-read.c. */
#include <gpuslice/csv.h>

#include <errno.h>
#include <string.h>
#include <sys/types.h>

/* Copies the quoted field at *r (on its opening quote) to *w, undoing "" and the quotes;
 * leaves *r on the ',' or NUL after the closing quote. n numbers the field in messages. */
static int quoted_field(char **r, char **w, int n, gs_error_t *err)
{
  char *p = *r + 1, *q = *w;
  for (;; p++) {
    if (!*p)
      return gs_make_error(err, 0, "unterminated quoted field %d", n);
    if (*p == '"' && p[1] != '"')
      break;
    *q++ = *p;
    p += *p == '"';
  }
  p++;
  if (*p && *p != ',')
    return gs_make_error(err, 0, "text after the closing quote in field %d", n);
  *r = p;
  *w = q;
  return 0;
}

/* Moves the unquoted field at *r to *w (where it already is, unless a quoted field before it
 * got shorter), up to the ',' or NUL that ends it; a quote inside it is an error. */
static int unquoted_field(char **r, char **w, int n, gs_error_t *err)
{
  size_t len = strcspn(*r, ",\"");
  if ((*r)[len] == '"')
    return gs_make_error(err, 0, "quote inside unquoted field %d", n);
  if (*w != *r)
    memmove(*w, *r, len);
  *r += len;
  *w += len;
  return 0;
}

/* Plain fields never move: each ',' becomes the NUL that ends a field. */
static int split_plain(char *p, char **field, int max, gs_error_t *err)
{
  for (int n = 0;;) {
    if (n == max)
      return gs_make_error(err, 0, "more than %d fields", max);
    field[n++] = p;
    if (!(p = strchr(p, ',')))
      return n;
    *p++ = '\0';
  }
}

int gs_csv_split(char *line, enum gs_csv_quoting q, char **field, int max, gs_error_t *err)
{
  if (q == GS_CSV_PLAIN)
    return split_plain(line, field, max, err);
  char *r = line, *w = line;
  int n = 0;
  for (;;) {
    if (n == max)
      return gs_make_error(err, 0, "more than %d fields", max);
    field[n++] = w;
    int ok = *r == '"' ? quoted_field(&r, &w, n, err) : unquoted_field(&r, &w, n, err);
    if (ok < 0)
      return -1;
    if (!*r) {
      *w = '\0';
      return n;
    }
    *w++ = '\0';
    r++;
  }
}

int gs_csv_getline(FILE *f, char **line, size_t *cap, gs_error_t *err)
{
  errno = 0;
  ssize_t len = getline(line, cap, f);
  if (len < 0) {
    if (ferror(f))
      return gs_make_error(err, errno ? errno : EIO, "read");
    return 0;
  }
  char *s = *line;
  if (len > 0 && s[len - 1] == '\n')
    s[--len] = '\0';
  if (len > 0 && s[len - 1] == '\r')
    s[--len] = '\0';
  if (strlen(s) != (size_t) len)
    return gs_make_error(err, 0, "NUL byte in line");
  return 1;
}
