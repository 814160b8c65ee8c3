/* The declarative options of gs-opt.h: setting typed values from text, defaults, and the
 * getopt_long loop built from a table. Config files and the environment are in
 * opt-config.c, --help and the docs in opt-render.c. */
#include <gpuslice/opt.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/xalloc.h>

/* getopt_long's value for table entry i, far from any short letter. */
#define LONG_VAL(i) (1000 + (i))

const char *gs_opt_default(const struct gs_opt *o)
{
  return o->def_now ? o->def_now() : o->def;
}

static bool in_bounds(const struct gs_opt *o, double v)
{
  if (!isfinite(v) || (o->min == 0 && o->max == 0))
    return isfinite(v);
  if ((o->flags & GS_OPT_ABOVE_MIN) ? v <= o->min : v < o->min)
    return false;
  return v <= o->max;
}

/* "a number from 0.5 to 3600", "table, json or html": what a good value is. */
static void describe_want(const struct gs_opt *o, char *buf, size_t size)
{
  if (o->want) {
    snprintf(buf, size, "%s", o->want);
  } else if (o->kind == GS_OPT_ENUM) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; o->choices[i]; i++) {
      const char *sep = i == 0 ? "" : o->choices[i + 1] ? ", " : " or ";
      n += (size_t) snprintf(buf + n, n < size ? size - n : 0, "%s%s", sep, o->choices[i]);
    }
  } else if (o->kind == GS_OPT_MODE) {
    snprintf(buf, size, "an octal mode");
  } else if (o->kind == GS_OPT_STRING) {
    snprintf(buf, size, "another value");
  } else {
    const char *what = o->kind == GS_OPT_INT ? "a whole number"
      : o->kind == GS_OPT_PERCENT            ? "a percentage"
                                             : "a number";
    snprintf(buf, size, "%s from %g to %g", what, o->min, o->max);
  }
}

static int bad_value(const struct gs_opt *o, const char *value, const char *from, gs_error_t *err)
{
  char want[256];
  describe_want(o, want, sizeof(want));
  /* A value of any length is quoted by its first 64 bytes, so the line stays readable. */
  const char *more = strlen(value) > 64 ? "..." : "";
  if (from) {
    char key[64];
    gs_opt_key(o, key, sizeof(key));
    return gs_make_error(err, 0, "%s: %s '%.64s%s': want %s", from, key, value, more, want);
  }
  return gs_make_error(err, 0, "--%s '%.64s%s': want %s", o->name, value, more, want);
}

/* Reads a number, with a '%' after it when pct; false when the text is not one. */
static bool read_number(const char *s, bool pct, double *out)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (pct && *end == '%')
    end++;
  if (!*s || errno || *end)
    return false;
  *out = v;
  return true;
}

static bool read_whole(const char *s, long long *out)
{
  char *end = NULL;
  errno = 0;
  *out = strtoll(s, &end, 10);
  return *s && !errno && !*end;
}

static int set_enum(const struct gs_opt *o, void *field, const char *value)
{
  for (int i = 0; o->choices[i]; i++)
    if (strcmp(o->choices[i], value) == 0) {
      *(int *) field = i;
      return 0;
    }
  return -1;
}

static int set_mode(void *field, const char *value)
{
  char *end = NULL;
  unsigned long m = strtoul(value, &end, 8);
  if (!*value || *end || m > 0777)
    return -1;
  *(unsigned *) field = (unsigned) m;
  return 0;
}

static void set_string(const struct gs_opt *o, void *field, const char *value)
{
  if (o->flags & GS_OPT_OWNED) {
    free(*(char **) field);
    *(char **) field = xstrdup(value);
  } else {
    *(const char **) field = value;
  }
}

/* INT, DOUBLE, PERCENT: 0, or -1 when the text is not a number in bounds. */
static int set_number(const struct gs_opt *o, void *field, const char *value)
{
  double v;
  long long w;
  if (o->kind == GS_OPT_INT) {
    if (!read_whole(value, &w) || !in_bounds(o, (double) w))
      return -1;
    *(long long *) field = w;
    return 0;
  }
  if (!read_number(value, o->kind == GS_OPT_PERCENT, &v) || !in_bounds(o, v))
    return -1;
  *(double *) field = o->kind == GS_OPT_PERCENT ? v / 100.0 : v;
  return 0;
}

int gs_opt_set(const struct gs_opt *o, void *dst, const char *value, const char *from,
               gs_error_t *err)
{
  void *field = (char *) dst + o->offset;
  int r = 0;
  switch (o->kind) {
  case GS_OPT_FLAG: *(bool *) field = true; return 0;
  case GS_OPT_HELP: return 0;
  case GS_OPT_STRING:
    if (o->valid && !o->valid(value))
      return bad_value(o, value, from, err);
    set_string(o, field, value);
    return 0;
  case GS_OPT_CALL: return o->parse(dst, value, err) < 0 ? -1 : 0;
  case GS_OPT_ENUM: r = set_enum(o, field, value); break;
  case GS_OPT_MODE: r = set_mode(field, value); break;
  default: r = set_number(o, field, value);
  }
  return r < 0 ? bad_value(o, value, from, err) : 0;
}

int gs_opt_defaults(const struct gs_opt_table *t, void *dst, gs_error_t *err)
{
  for (int i = 0; i < t->nopts; i++) {
    const char *d = gs_opt_default(&t->opts[i]);
    if (d && t->opts[i].kind != GS_OPT_FLAG && gs_opt_set(&t->opts[i], dst, d, "default", err) < 0)
      return -1;
  }
  return 0;
}

const struct gs_opt *gs_opt_find(const struct gs_opt_table *t, const char *name)
{
  char key[64], want[64];
  snprintf(want, sizeof(want), "%s", name);
  for (char *p = want; *p; p++)
    *p = *p == '-' ? '_' : *p;
  for (int i = 0; i < t->nopts; i++) {
    gs_opt_key(&t->opts[i], key, sizeof(key));
    if (strcmp(key, want) == 0)
      return &t->opts[i];
  }
  return NULL;
}

void gs_opt_key(const struct gs_opt *o, char *buf, size_t size)
{
  snprintf(buf, size, "%s", o->name);
  for (char *p = buf; *p; p++)
    *p = *p == '-' ? '_' : *p;
}

void gs_opt_release(const struct gs_opt_table *t, void *dst)
{
  for (int i = 0; i < t->nopts; i++)
    if (t->opts[i].kind == GS_OPT_STRING && (t->opts[i].flags & GS_OPT_OWNED)) {
      char **field = (char **) ((char *) dst + t->opts[i].offset);
      free(*field);
      *field = NULL;
    }
}

/* ---- getopt_long ---- */

/* getopt's tables: the long options (val LONG_VAL(i)) and "+:h s:" for the short ones. */
static struct option *make_longopts(const struct gs_opt_table *t, char *shortopts)
{
  struct option *lo = xcalloc((size_t) t->nopts + 1, sizeof(*lo));
  char *s = shortopts;
  if (!(t->flags & GS_OPTS_PERMUTE))
    *s++ = '+';
  *s++ = ':';
  for (int i = 0; i < t->nopts; i++) {
    const struct gs_opt *o = &t->opts[i];
    lo[i] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, LONG_VAL(i) };
    if (o->letter) {
      *s++ = o->letter;
      if (o->arg)
        *s++ = ':';
    }
  }
  *s = '\0';
  return lo;
}

static int entry_of(const struct gs_opt_table *t, int c)
{
  if (c >= LONG_VAL(0) && c < LONG_VAL(t->nopts))
    return c - LONG_VAL(0);
  for (int i = 0; i < t->nopts; i++)
    if (t->opts[i].letter && t->opts[i].letter == c)
      return i;
  return -1;
}

/* What getopt returned '?' or ':' for: it names a short option in optopt; for a long one
 * only argv tells which. */
static int bad_option(const struct gs_opt_table *t, char **argv, int c, gs_error_t *err)
{
  char shortopt[3] = { '-', (char) optopt, '\0' };
  const char *last = optind > 0 ? argv[optind - 1] : "";
  const char *opt = strncmp(last, "--", 2) == 0 || !optopt ? last : shortopt;
  const char *why = c == ':' ? "missing value" : "unknown option";
  return gs_make_error(err, 0, "%s: %s (see gpuslice %s%s--help)", opt, why, t->verb ? t->verb : "",
                       t->verb ? " " : "");
}

/* Applies entry i with getopt's optarg; seen counts for GS_OPTS_ONCE. */
static int apply(const struct gs_opt_table *t, int i, unsigned char *seen, void *dst,
                 gs_error_t *err)
{
  const struct gs_opt *o = &t->opts[i];
  /* getopt takes whatever follows an option as its value, even the "--" before operands. */
  if (o->arg && strcmp(optarg, "--") == 0)
    return gs_make_error(err, 0, "--%s: missing value", o->name);
  if ((t->flags & GS_OPTS_ONCE) && !(o->flags & GS_OPT_REPEAT) && seen[i]++)
    return gs_make_error(err, 0, "--%s: given more than once", o->name);
  return gs_opt_set(o, dst, o->arg ? optarg : NULL, NULL, err);
}

int gs_opt_parse(const struct gs_opt_table *t, void *dst, int argc, char **argv, int *next,
                 gs_error_t *err)
{
  _cleanup_free_ char *shortopts = xmalloc(3 + 2 * (size_t) t->nopts + 1);
  _cleanup_free_ struct option *lo = make_longopts(t, shortopts);
  _cleanup_free_ unsigned char *seen = xcalloc((size_t) t->nopts + 1, 1);
  int c;
  opterr = 0;
  optind = 0; /* glibc: start afresh, from argv[1] */
  while ((c = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
    int i = entry_of(t, c);
    if (i < 0)
      return bad_option(t, argv, c, err);
    if (t->opts[i].kind == GS_OPT_HELP)
      return GS_OPT_HELP_ASKED;
    if (apply(t, i, seen, dst, err) < 0)
      return -1;
    if (t->opts[i].flags & GS_OPT_STOP)
      break;
  }
  *next = optind;
  return GS_OPT_GO_ON;
}
