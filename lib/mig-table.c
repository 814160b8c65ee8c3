/* MIG profile tables (see gs-mig.h): reading the CSV, filling in unknown memory sizes,
 * and looking profiles up. Laying instances onto GPUs is in mig-plan.c. */
#include <gpuslice/mig.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csv-read.h"
#include <gpuslice/price.h>

#define GIB 1073741824.0

struct gs_mig_table {
  char name[128];
  struct gs_mig_profile *p;
  size_t n;
};

struct mig_cols {
  int gpu, profile, compute, mem, max, starts, mem_gib;
};

static int find_columns(const struct gs__csv *c, struct mig_cols *k, gs_error_t *err)
{
  static const char *const names[] = { "gpu",        "profile",       "compute_slices",
                                       "mem_slices", "max_instances", "placements_start",
                                       "mem_gib" };
  int *idx[] = { &k->gpu, &k->profile, &k->compute, &k->mem, &k->max, &k->starts, &k->mem_gib };
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if ((*idx[i] = gs__csv_column(c, names[i])) < 0)
      return gs__csv_error(c, err, "header has no '%s' column", names[i]);
  return 0;
}

/* "0|2|4" -> bits 0, 2 and 4; each start must leave room for mem_slices. */
static int parse_starts(const struct gs__csv *c, const char *s, int mem_slices, uint8_t *mask,
                        gs_error_t *err)
{
  *mask = 0;
  for (const char *p = s;; p += 2) {
    if (p[0] < '0' || p[0] > '7' || (p[1] && p[1] != '|'))
      return gs__csv_error(c, err, "placements_start '%s' is not a list like 0|2|4", s);
    int start = p[0] - '0';
    if (start + mem_slices > GS_MIG_POSITIONS)
      return gs__csv_error(c, err, "placements_start %d leaves no room for %d memory slices", start,
                           mem_slices);
    *mask |= (uint8_t) (1u << start);
    if (!p[1])
      return 0;
  }
}

/* The size a profile's name promises ("3g.40gb" -> 40 GB), in GiB; NAN if none. */
static double nominal_gib(const char *name)
{
  const char *dot = strchr(name, '.');
  if (!dot)
    return (double) NAN;
  char *end;
  double gb = strtod(dot + 1, &end);
  if (end == dot + 1 || strncmp(end, "gb", 2) != 0 || !(gb > 0))
    return (double) NAN;
  return gb * 1e9 / GIB;
}

/* mem_gib may be "?" (unknown) or "16.00?" (uncertain): both count as estimated. */
static int read_mem(const struct gs__csv *c, int col, struct gs_mig_profile *p, gs_error_t *err)
{
  char s[32];
  if (gs__csv_string(c, col, "mem_gib", s, sizeof(s), err) < 0)
    return -1;
  size_t len = strlen(s);
  if (len > 1 && s[len - 1] == '?') {
    s[len - 1] = '\0';
    p->mem_estimated = true;
  }
  struct gs__csv one = *c;
  one.field[0] = s;
  one.n = 1;
  if (gs__csv_number(&one, 0, "mem_gib", 0.1, 4096, 1, &p->mem_gib, err) < 0)
    return -1;
  if (isnan(p->mem_gib)) {
    p->mem_estimated = true;
    p->mem_gib = nominal_gib(p->name);
    if (isnan(p->mem_gib))
      return gs__csv_error(c, err, "mem_gib is unknown and profile '%s' names no size", p->name);
  }
  return 0;
}

static int read_ints(const struct gs__csv *c, const struct mig_cols *k, struct gs_mig_profile *p,
                     gs_error_t *err)
{
  double cs, ms, mx;
  if (gs__csv_number(c, k->compute, "compute_slices", 1, GS_MIG_COMPUTE_SLICES, 0, &cs, err) < 0 ||
      gs__csv_number(c, k->mem, "mem_slices", 1, GS_MIG_POSITIONS, 0, &ms, err) < 0 ||
      gs__csv_number(c, k->max, "max_instances", 1, GS_MIG_COMPUTE_SLICES, 0, &mx, err) < 0)
    return -1;
  if (cs != floor(cs) || ms != floor(ms) || mx != floor(mx))
    return gs__csv_error(c, err, "slice counts must be whole numbers");
  p->compute_slices = (int) cs;
  p->mem_slices = (int) ms;
  p->max_instances = (int) mx;
  return 0;
}

static int read_profile(const struct gs__csv *c, const struct mig_cols *k, struct gs_mig_profile *p,
                        gs_error_t *err)
{
  memset(p, 0, sizeof(*p));
  const char *gpu = gs__csv_get(c, k->gpu);
  if (!*gpu)
    return gs__csv_error(c, err, "gpu is empty");
  if (gs_gpu_model_canon(gpu, p->model, sizeof(p->model), err) < 0)
    return gs_error_prepend(err, "%s: line %d", c->name, c->line);
  if (gs__csv_string(c, k->profile, "profile", p->name, sizeof(p->name), err) < 0)
    return -1;
  if (!p->name[0] || strspn(p->name, "0123456789gbme.+") != strlen(p->name))
    return gs__csv_error(c, err, "profile '%s' is not a name like 3g.40gb", p->name);
  size_t nl = strlen(p->name);
  p->media = nl > 3 && strcmp(p->name + nl - 3, "+me") == 0;
  if (read_ints(c, k, p, err) < 0 ||
      parse_starts(c, gs__csv_get(c, k->starts), p->mem_slices, &p->start_mask, err) < 0)
    return -1;
  return read_mem(c, k->mem_gib, p, err);
}

static int add_profile(struct gs_mig_table *t, size_t *cap, const struct gs__csv *c,
                       const struct gs_mig_profile *p, gs_error_t *err)
{
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->p[i].model, p->model) == 0 && strcmp(t->p[i].name, p->name) == 0)
      return gs__csv_error(c, err, "profile %s of %s appears twice", p->name, p->model);
  if (t->n == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    void *np = realloc(t->p, *cap * sizeof(*t->p));
    if (!np)
      return gs_make_error(err, ENOMEM, "%s", c->name);
    t->p = np;
  }
  t->p[t->n++] = *p;
  return 0;
}

static int read_profiles(struct gs__csv *c, struct gs_mig_table *t, gs_error_t *err)
{
  struct mig_cols k;
  struct gs_mig_profile p;
  size_t cap = 0;
  int r = gs__csv_next(c, err);
  if (r <= 0)
    return r < 0 ? -1 : gs_make_error(err, 0, "%s: empty table, expected a header", c->name);
  if (find_columns(c, &k, err) < 0)
    return -1;
  while ((r = gs__csv_next(c, err)) > 0)
    if (read_profile(c, &k, &p, err) < 0 || add_profile(t, &cap, c, &p, err) < 0)
      return -1;
  if (r == 0 && t->n == 0)
    return gs_make_error(err, 0, "%s: no profiles after the header", c->name);
  return r;
}

/* Replaces a guessed size by mem_slices x the measured 1-slice size of the same model,
 * which is a little below every measured multi-slice size, so it never overpromises. */
static void estimate_sizes(struct gs_mig_table *t)
{
  for (size_t i = 0; i < t->n; i++) {
    struct gs_mig_profile *p = &t->p[i];
    if (!p->mem_estimated)
      continue;
    for (size_t j = 0; j < t->n; j++)
      if (strcmp(t->p[j].model, p->model) == 0 && t->p[j].mem_slices == 1 &&
          !t->p[j].mem_estimated) {
        p->mem_gib = p->mem_slices * t->p[j].mem_gib;
        break;
      }
  }
}

/* Puts each model's profiles next to each other, keeping the file's order otherwise. */
static int group_by_model(struct gs_mig_table *t, gs_error_t *err)
{
  struct gs_mig_profile *g = malloc(t->n * sizeof(*g));
  bool *done = calloc(t->n, sizeof(*done));
  size_t o = 0;
  if (!g || !done) {
    free(g);
    free(done);
    return gs_make_error(err, ENOMEM, "%s", t->name);
  }
  for (size_t i = 0; i < t->n; i++) {
    if (done[i])
      continue;
    for (size_t j = i; j < t->n; j++)
      if (!done[j] && strcmp(t->p[j].model, t->p[i].model) == 0) {
        g[o++] = t->p[j];
        done[j] = true;
      }
  }
  free(done);
  free(t->p);
  t->p = g;
  return 0;
}

/* ---- the public interface ---- */

int gs_mig_table_parse(const char *text, size_t len, const char *name, struct gs_mig_table **out,
                       gs_error_t *err)
{
  struct gs_mig_table *t = calloc(1, sizeof(*t));
  struct gs__csv *c = malloc(sizeof(*c));
  if (!t || !c) {
    free(t);
    free(c);
    return gs_make_error(err, ENOMEM, "%s", name);
  }
  snprintf(t->name, sizeof(t->name), "%s", name);
  gs__csv_init(c, text, len, name);
  int r = read_profiles(c, t, err);
  free(c);
  if (r < 0 || group_by_model(t, err) < 0) {
    gs_mig_table_free(t);
    return -1;
  }
  estimate_sizes(t);
  *out = t;
  return 0;
}

int gs_mig_table_default(struct gs_mig_table **out, gs_error_t *err)
{
  return gs_mig_table_parse(gs__builtin_mig_csv, gs__builtin_mig_csv_len,
                            "built-in (data/mig/mig_gi_profiles.csv)", out, err);
}

static int parse_into(const char *text, size_t len, const char *name, void *out, gs_error_t *err)
{
  return gs_mig_table_parse(text, len, name, out, err);
}

int gs_mig_table_load(const char *csv_path, struct gs_mig_table **out, gs_error_t *err)
{
  return gs__parse_text_file(csv_path, parse_into, out, err);
}

void gs_mig_table_free(struct gs_mig_table *t)
{
  if (!t)
    return;
  free(t->p);
  free(t);
}

const struct gs_mig_profile *gs_mig_profiles(const struct gs_mig_table *t, const char *model,
                                             size_t *n, gs_error_t *err)
{
  char canon[24];
  *n = 0;
  if (gs_gpu_model_canon(model, canon, sizeof(canon), err) < 0)
    return NULL;
  size_t first = 0;
  while (first < t->n && strcmp(t->p[first].model, canon) != 0)
    first++;
  while (first + *n < t->n && strcmp(t->p[first + *n].model, canon) == 0)
    (*n)++;
  if (!*n) {
    gs_make_error(err, 0, "GPU model '%s' has no MIG profiles in %s", canon, t->name);
    return NULL;
  }
  return &t->p[first];
}

const struct gs_mig_profile *gs_mig_profile_find(const struct gs_mig_table *t, const char *model,
                                                 const char *name, gs_error_t *err)
{
  size_t n;
  const struct gs_mig_profile *p = gs_mig_profiles(t, model, &n, err);
  for (size_t i = 0; i < n; i++)
    if (strcasecmp(p[i].name, name) == 0)
      return &p[i];
  if (p)
    gs_make_error(err, 0, "GPU model '%s' has no MIG profile '%s'", p->model, name);
  return NULL;
}

/* Fewer memory slices first, then fewer compute slices, then less memory. */
static bool smaller(const struct gs_mig_profile *a, const struct gs_mig_profile *b)
{
  if (a->mem_slices != b->mem_slices)
    return a->mem_slices < b->mem_slices;
  if (a->compute_slices != b->compute_slices)
    return a->compute_slices < b->compute_slices;
  return a->mem_gib < b->mem_gib;
}

const struct gs_mig_profile *gs_mig_smallest_fit(const struct gs_mig_table *t, const char *model,
                                                 uint64_t bytes, gs_error_t *err)
{
  size_t n;
  const struct gs_mig_profile *p = gs_mig_profiles(t, model, &n, err), *best = NULL, *big = NULL;
  for (size_t i = 0; i < n; i++) {
    if (p[i].media)
      continue;
    if (!big || p[i].mem_gib > big->mem_gib)
      big = &p[i];
    if (p[i].mem_gib * GIB >= (double) bytes && (!best || smaller(&p[i], best)))
      best = &p[i];
  }
  if (!best && big)
    gs_make_error(err, 0,
                  "%.2f GiB is more than the largest MIG profile of %s holds (%s, %.2f GiB)",
                  (double) bytes / GIB, big->model, big->name, big->mem_gib);
  return best;
}
