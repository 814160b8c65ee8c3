/* Repartitioning from demand (gpuslice/mig-apply.h): the layout of one GPU that serves the most
 * pending requests without destroying an instance in use.
 *
 * A GPU holds at most seven instances, so the search is exact: every count of each requested
 * profile that could fit beside the busy instances is tried, each laid out around them
 * (gs_mig_place_around, the planner's own search), first reusing the idle instances of the
 * same profile where they are, then, when that does not fit, making them anew. The best serves
 * the most requests; among those, the one that keeps the most instances of the layout now. */
#include <gpuslice/mig-apply.h>

#include <stdlib.h>
#include <string.h>

struct search {
  struct gs_mig_instance busy[GS_MIG_MAX_INSTANCES], idle[GS_MIG_MAX_INSTANCES];
  int nbusy, nidle;
  const struct gs_mig_profile *prof[GS_MIG_MAX_INSTANCES * 2]; /* the requested profiles */
  int want[GS_MIG_MAX_INSTANCES * 2];                          /* requests of each */
  int nprof;
  int count[GS_MIG_MAX_INSTANCES * 2]; /* the counts being tried */
  /* the best so far */
  int best_total, best_kept;
  struct gs_mig_instance best[GS_MIG_MAX_INSTANCES];
  int nbest, best_count[GS_MIG_MAX_INSTANCES * 2];
};

static int cmp_start(const void *a, const void *b)
{
  return ((const struct gs_mig_instance *) a)->start - ((const struct gs_mig_instance *) b)->start;
}

/* Builds a layout of the counts tried: busy instances, then (reuse) idle ones of a counted
 * profile where they are, then new ones placed around them. Its size, or -1. */
static int build(const struct search *s, bool reuse, struct gs_mig_instance *out)
{
  const struct gs_mig_profile *fresh[GS_MIG_MAX_INSTANCES] = { NULL };
  bool used[GS_MIG_MAX_INSTANCES] = { false };
  int n = 0, nfresh = 0, starts[GS_MIG_MAX_INSTANCES] = { 0 };
  memcpy(out, s->busy, (size_t) s->nbusy * sizeof(*out));
  n = s->nbusy;
  for (int k = 0; k < s->nprof; k++)
    for (int c = 0; c < s->count[k]; c++) {
      int j = 0;
      while (reuse && j < s->nidle && (used[j] || s->idle[j].p != s->prof[k]))
        j++;
      if (reuse && j < s->nidle) {
        used[j] = true;
        out[n++] = s->idle[j];
      } else if (nfresh < GS_MIG_MAX_INSTANCES) {
        fresh[nfresh++] = s->prof[k];
      } else {
        return -1;
      }
    }
  if (gs_mig_place_around(out, n, fresh, nfresh, starts) < 0)
    return -1;
  for (int i = 0; i < nfresh; i++)
    out[n++] = (struct gs_mig_instance){ fresh[i], 0, starts[i], -1 };
  return n;
}

static bool same_instance(const struct gs_mig_instance *a, const struct gs_mig_instance *b)
{
  return a->p == b->p && a->start == b->start;
}

/* Adds back the idle instances that still fit; the number of instances now that it keeps. */
static int keep_idle(const struct search *s, struct gs_mig_instance *l, int *n)
{
  gs_error_t err = NULL;
  for (int j = 0; j < s->nidle && *n < GS_MIG_MAX_INSTANCES; j++) {
    bool there = false;
    for (int i = 0; i < *n; i++)
      there |= same_instance(&l[i], &s->idle[j]);
    if (there)
      continue;
    l[(*n)++] = s->idle[j];
    if (gs_mig_gpu_validate(l, *n, &err) < 0)
      (*n)--;
    gs_error_release(&err);
  }
  int kept = 0;
  for (int i = 0; i < *n; i++)
    for (int j = 0; j < s->nidle; j++)
      kept += same_instance(&l[i], &s->idle[j]);
  return kept + s->nbusy;
}

static void try_counts(struct search *s)
{
  struct gs_mig_instance l[GS_MIG_MAX_INSTANCES];
  int total = 0;
  for (int k = 0; k < s->nprof; k++)
    total += s->count[k];
  if (total < s->best_total)
    return;
  int n = build(s, true, l);
  if (n < 0)
    n = build(s, false, l);
  if (n < 0)
    return;
  int kept = keep_idle(s, l, &n);
  if (total == s->best_total && kept <= s->best_kept)
    return;
  s->best_total = total;
  s->best_kept = kept;
  s->nbest = n;
  memcpy(s->best, l, (size_t) n * sizeof(*l));
  memcpy(s->best_count, s->count, sizeof(s->count));
}

/* Every count vector with room for it beside the busy instances. */
static void search_from(struct search *s, int k, int room)
{
  if (k == s->nprof) {
    try_counts(s);
    return;
  }
  int most = s->want[k] < room ? s->want[k] : room;
  if (most > s->prof[k]->max_instances)
    most = s->prof[k]->max_instances;
  for (int c = most; c >= 0; c--) {
    s->count[k] = c;
    search_from(s, k + 1, room - c);
  }
  s->count[k] = 0;
}

static int split(const struct gs_mig_table *t, const char *model, const struct gs_mig_gpu *g,
                 struct search *s, gs_error_t *err)
{
  for (int i = 0; i < g->n; i++) {
    const struct gs_mig_live *in = &g->inst[i];
    gs_error_t e = NULL;
    const struct gs_mig_profile *p = gs_mig_profile_find(t, model, in->profile, &e);
    if (!p && in->npids) {
      gs_make_error(err, 0, "%s@%d is in use: %s", in->profile, in->start, e->msg);
      gs_error_release(&e);
      return -1;
    }
    gs_error_release(&e);
    if (!p)
      continue; /* an idle instance of a profile the table does not know is given up */
    struct gs_mig_instance x = { p, 0, in->start, -1 };
    if (in->npids)
      s->busy[s->nbusy++] = x;
    else
      s->idle[s->nidle++] = x;
  }
  return 0;
}

static void count_requests(struct search *s, const struct gs_mig_profile *const *req, int n)
{
  for (int i = 0; i < n; i++) {
    int k = 0;
    while (k < s->nprof && s->prof[k] != req[i])
      k++;
    if (k == s->nprof && s->nprof == GS_MIG_MAX_INSTANCES * 2)
      continue; /* more distinct profiles than a GPU has: cannot happen with one model */
    if (k == s->nprof)
      s->prof[s->nprof++] = req[i];
    s->want[k]++;
  }
}

static int placed_now(const struct search *s)
{
  int placed = 0;
  for (int k = 0; k < s->nprof; k++) {
    int have = 0;
    for (int j = 0; j < s->nidle; j++)
      have += s->idle[j].p == s->prof[k];
    placed += have < s->want[k] ? have : s->want[k];
  }
  return placed;
}

static void result(const struct search *s, const struct gs_mig_gpu *g,
                   const struct gs_mig_profile *const *req, int n, struct gs_mig_pending *out)
{
  int left[GS_MIG_MAX_INSTANCES * 2];
  memcpy(left, s->best_count, sizeof(left));
  for (int i = 0; i < n && i < GS_MIG_MAX_REQUESTS; i++)
    for (int k = 0; k < s->nprof; k++)
      if (s->prof[k] == req[i] && left[k] > 0) {
        left[k]--;
        out->served[i] = true;
      }
  out->placed = s->best_total;
  out->nkept = s->best_kept;
  out->target.n = s->nbest;
  memcpy(out->target.inst, s->best, (size_t) s->nbest * sizeof(s->best[0]));
  qsort(out->target.inst, (size_t) s->nbest, sizeof(s->best[0]), cmp_start);
  /* A GPU out of MIG mode that nothing is for stays so. */
  out->target.off = !g->mode && s->nbest == 0;
}

int gs_mig_plan_pending(const struct gs_mig_table *t, const char *model, const struct gs_mig_gpu *g,
                        const struct gs_mig_profile *const *req, int n, struct gs_mig_pending *out,
                        gs_error_t *err)
{
  struct search *s = calloc(1, sizeof(*s));
  if (!s)
    return gs_make_error(err, 0, "out of memory");
  memset(out, 0, sizeof(*out));
  out->nrequests = n;
  int r = split(t, model, g, s, err);
  if (r == 0) {
    count_requests(s, req, n);
    out->placed_now = placed_now(s);
    s->best_total = -1;
    if (!g->mode && g->npids > 0)
      s->nprof = 0; /* a GPU in use outside MIG mode cannot change: nothing but what it is */
    search_from(s, 0, GS_MIG_MAX_INSTANCES - s->nbusy);
    result(s, g, req, n, out);
  }
  free(s);
  return r;
}
