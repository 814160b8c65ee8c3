/* The planner's data set (gs-plan.h): workloads found by name through an open-addressing
 * index, each with its samples and labels, and the join that turns a utilization series
 * and a memory series into samples holding both. Nothing here reads files: the readers in
 * plan/input-*.c fill the data set. */
#include <gpuslice/plan.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t name_hash(const char *s)
{
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 1099511628211ULL;
  return h;
}

void gs_plan_data_init(struct gs_plan_data *d)
{
  memset(d, 0, sizeof(*d));
}

static void workload_free(struct gs_plan_workload *w)
{
  if (!w)
    return;
  for (size_t i = 0; i < w->nlabels; i++) {
    free(w->labels[i].key);
    free(w->labels[i].value);
  }
  free(w->s);
  free(w->name);
  free(w);
}

void gs_plan_data_release(struct gs_plan_data *d)
{
  for (size_t i = 0; i < d->n; i++)
    workload_free(d->w[i]);
  free(d->w);
  free(d->slot);
  memset(d, 0, sizeof(*d));
}

/* The slot holding name, or the empty slot where it would go. */
static size_t find_slot(const struct gs_plan_data *d, const char *name)
{
  size_t mask = d->nslots - 1;
  for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask)
    if (d->slot[i] == 0 || strcmp(d->w[d->slot[i] - 1]->name, name) == 0)
      return i;
}

/* Keeps the index at most half full. */
static int grow_index(struct gs_plan_data *d, gs_error_t *err)
{
  if (d->nslots && (d->n + 1) * 2 <= d->nslots)
    return 0;
  size_t n = d->nslots ? d->nslots * 2 : 64;
  size_t *old = d->slot, oldn = d->nslots;
  d->slot = calloc(n, sizeof(*d->slot));
  if (!d->slot) {
    d->slot = old;
    return gs_make_error(err, ENOMEM, "plan: workload index");
  }
  d->nslots = n;
  for (size_t i = 0; i < oldn; i++)
    if (old[i])
      d->slot[find_slot(d, d->w[old[i] - 1]->name)] = old[i];
  free(old);
  return 0;
}

static struct gs_plan_workload *workload_new(const char *name)
{
  struct gs_plan_workload *w = calloc(1, sizeof(*w));
  if (w && !(w->name = strdup(name))) {
    free(w);
    w = NULL;
  }
  return w;
}

struct gs_plan_workload *gs_plan_data_workload(struct gs_plan_data *d, const char *name,
                                               gs_error_t *err)
{
  if (grow_index(d, err) < 0)
    return NULL;
  size_t i = find_slot(d, name);
  if (d->slot[i])
    return d->w[d->slot[i] - 1];
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 64;
    struct gs_plan_workload **w = realloc(d->w, cap * sizeof(*w));
    if (!w)
      return gs_make_error(err, ENOMEM, "plan: workloads"), NULL;
    d->w = w;
    d->cap = cap;
  }
  struct gs_plan_workload *w = workload_new(name);
  if (!w)
    return gs_make_error(err, ENOMEM, "plan: workload '%s'", name), NULL;
  d->w[d->n++] = w;
  d->slot[i] = d->n;
  return w;
}

int gs_plan_workload_add(struct gs_plan_workload *w, double t, double util_pct, double mem_bytes,
                         gs_error_t *err)
{
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 256;
    struct gs_plan_sample *s = realloc(w->s, cap * sizeof(*s));
    if (!s)
      return gs_make_error(err, ENOMEM, "plan: samples of '%s'", w->name);
    w->s = s;
    w->cap = cap;
  }
  w->s[w->n++] = (struct gs_plan_sample){ t, util_pct, mem_bytes };
  return 0;
}

const char *gs_plan_workload_label(const struct gs_plan_workload *w, const char *key)
{
  for (size_t i = 0; i < w->nlabels; i++)
    if (strcmp(w->labels[i].key, key) == 0)
      return w->labels[i].value;
  return NULL;
}

int gs_plan_workload_set_label(struct gs_plan_workload *w, const char *key, const char *value,
                               gs_error_t *err)
{
  if (w->nlabels == GS_PLAN_MAX_LABELS || gs_plan_workload_label(w, key))
    return 0;
  struct gs_plan_label *l = &w->labels[w->nlabels];
  l->key = strdup(key);
  l->value = strdup(value);
  if (!l->key || !l->value) {
    free(l->key);
    free(l->value);
    return gs_make_error(err, ENOMEM, "plan: label of '%s'", w->name);
  }
  w->nlabels++;
  return 0;
}

static int by_time(const void *a, const void *b)
{
  double x = ((const struct gs_plan_sample *) a)->t, y = ((const struct gs_plan_sample *) b)->t;
  return (x > y) - (x < y);
}

/* Folds v into *into: the larger known value wins, so repeats never hide a peak. */
static void fold(double *into, double v)
{
  if (!isnan(v) && (isnan(*into) || v > *into))
    *into = v;
}

/* Sorts and joins one workload's samples; returns how many instants lacked a value. */
static size_t join_samples(struct gs_plan_workload *w)
{
  qsort(w->s, w->n, sizeof(*w->s), by_time);
  size_t out = 0, unjoined = 0;
  for (size_t i = 0; i < w->n;) {
    struct gs_plan_sample m = { w->s[i].t, (double) NAN, (double) NAN };
    for (; i < w->n && w->s[i].t == m.t; i++) {
      fold(&m.util_pct, w->s[i].util_pct);
      fold(&m.mem_bytes, w->s[i].mem_bytes);
    }
    if (isnan(m.util_pct) || isnan(m.mem_bytes))
      unjoined++;
    else
      w->s[out++] = m;
  }
  w->n = out;
  return unjoined;
}

static void rebuild_index(struct gs_plan_data *d)
{
  memset(d->slot, 0, d->nslots * sizeof(*d->slot));
  for (size_t i = 0; i < d->n; i++)
    d->slot[find_slot(d, d->w[i]->name)] = i + 1;
}

void gs_plan_data_finish(struct gs_plan_data *d, struct gs_plan_finish *out)
{
  memset(out, 0, sizeof(*out));
  size_t keep = 0;
  for (size_t i = 0; i < d->n; i++) {
    struct gs_plan_workload *w = d->w[i];
    out->samples_unjoined += join_samples(w);
    if (w->n > 0) {
      d->w[keep++] = w;
      continue;
    }
    if (out->workloads_dropped++ == 0)
      snprintf(out->dropped_example, sizeof(out->dropped_example), "%s", w->name);
    workload_free(w);
  }
  d->n = keep;
  if (d->nslots)
    rebuild_index(d);
}
