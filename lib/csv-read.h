/* Internal: a small reader for the header-addressed CSV tables gpuslice ships and lets
 * users replace (MIG profiles, prices). It reads text held in memory, RFC 4180 style:
 * fields may be quoted, with "" for a quote inside. Lines starting with '#' and blank
 * lines are skipped. Every error names the table and the line: "<name>: line N: <why>".
 * The splitting is gs_csv_split (gs-csv.h), shared with the planner's and the openb
 * trace readers, which read streams instead (and the openb traces refuse quotes). */
#ifndef GS_CSV_READ_H
#define GS_CSV_READ_H

#include <stddef.h>

#include <gpuslice/error.h>

#define GS__CSV_MAX_FIELDS 32
#define GS__CSV_MAX_LINE 4096
#define GS__CSV_MAX_FILE (16u << 20)

struct gs__csv {
  const char *p, *end; /* what is left to read */
  const char *name;    /* for messages */
  int line;            /* number of the line in buf */
  char buf[GS__CSV_MAX_LINE];
  char *field[GS__CSV_MAX_FIELDS];
  int n;
};

void gs__csv_init(struct gs__csv *c, const char *text, size_t len, const char *name);
/* Reads the next record into c->field. Returns 1, 0 at the end, or -1 with err. */
int gs__csv_next(struct gs__csv *c, gs_error_t *err);
/* "<name>: line N: <fmt...>"; returns -1. */
int gs__csv_error(const struct gs__csv *c, gs_error_t *err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Index of the header column called name in c->field (the current record), or -1. */
int gs__csv_column(const struct gs__csv *c, const char *name);
/* Field i, or "" when the record is shorter (or i < 0). */
const char *gs__csv_get(const struct gs__csv *c, int i);
/* Parses field i as a finite number in [lo, hi]; an empty field (or "?") gives *out = NAN
 * when allow_empty, else an error naming what. */
int gs__csv_number(const struct gs__csv *c, int i, const char *what, double lo, double hi,
                   int allow_empty, double *out, gs_error_t *err);
/* Copies field i into out (len bytes), failing when it does not fit. */
int gs__csv_string(const struct gs__csv *c, int i, const char *what, char *out, size_t len,
                   gs_error_t *err);

/* Reads a whole file (at most GS__CSV_MAX_FILE bytes) into a malloc'ed, NUL-terminated
 * buffer. */
int gs__read_text_file(const char *path, char **out, size_t *len, gs_error_t *err);
/* A table's parse from text, named for its messages; out is the table's own out pointer. */
typedef int gs__text_parse_fn(const char *text, size_t len, const char *name, void *out,
                              gs_error_t *err);
/* The load of every table read from a CSV file: reads path, hands its text to parse under the
 * path's name, and frees the text. */
int gs__parse_text_file(const char *path, gs__text_parse_fn *parse, void *out, gs_error_t *err);

/* The built-in tables, embedded at build time from data/ (see embed-data.cmake). */
extern const char gs__builtin_mig_csv[];
extern const size_t gs__builtin_mig_csv_len;
extern const char gs__builtin_prices_csv[];
extern const size_t gs__builtin_prices_csv_len;

#endif
