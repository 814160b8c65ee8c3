/* Laying MIG instances onto GPUs (see gs-mig.h): which instances share a GPU (first-fit
 * decreasing), and where each starts on it (an exact search, since one GPU holds at most
 * seven instances and eight positions). Also the validity check for one GPU's layout.
 * Reading tables and choosing profiles is in mig-table.c. */
#include <gpuslice/mig.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

/* The instances tried on one GPU: profiles, and the starts the search found. */
struct mig_gpu {
  const struct gs_mig_profile *p[GS_MIG_COMPUTE_SLICES];
  int demand[GS_MIG_COMPUTE_SLICES];
  int start[GS_MIG_COMPUTE_SLICES];
  int n;
};

/* The rules that do not depend on starts: compute, max_instances, one "+me". */
static bool counts_fit(const struct mig_gpu *g)
{
  int compute = 0, media = 0;
  for (int i = 0; i < g->n; i++) {
    int same = 0;
    for (int j = 0; j < g->n; j++)
      same += g->p[j] == g->p[i];
    if (same > g->p[i]->max_instances)
      return false;
    compute += g->p[i]->compute_slices;
    media += g->p[i]->media;
  }
  return compute <= GS_MIG_COMPUTE_SLICES && media <= 1;
}

static uint8_t interval(int start, int slices)
{
  return (uint8_t) (((1u << slices) - 1) << start);
}

/* Gives instance i onwards a start that fits around `used`. Instances are in decreasing
 * size. Half-GPU and larger instances try the highest start first and smaller ones the
 * lowest, so that the free space left stays in one piece: a 3g goes to 4, leaving 0..3
 * for four 1g (at 0 it would leave three, since a 1g may not start at 7). */
static bool place_from(struct mig_gpu *g, int i, uint8_t used)
{
  if (i == g->n)
    return true;
  const struct gs_mig_profile *p = g->p[i];
  bool high_first = p->mem_slices * 2 >= GS_MIG_POSITIONS;
  for (int k = 0; k < GS_MIG_POSITIONS; k++) {
    int s = high_first ? GS_MIG_POSITIONS - 1 - k : k;
    uint8_t iv = interval(s, p->mem_slices);
    if (!(p->start_mask & (1u << s)) || (used & iv) || s + p->mem_slices > GS_MIG_POSITIONS)
      continue;
    g->start[i] = s;
    if (place_from(g, i + 1, used | iv))
      return true;
  }
  return false;
}

/* Adds one instance to the GPU when the result can be laid out; else leaves it as it was. */
static bool try_add(struct mig_gpu *g, const struct gs_mig_profile *p, int demand)
{
  if (g->n == GS_MIG_COMPUTE_SLICES)
    return false;
  g->p[g->n] = p;
  g->demand[g->n] = demand;
  g->n++;
  if (counts_fit(g) && place_from(g, 0, 0))
    return true;
  g->n--;
  place_from(g, 0, 0); /* restore the starts of the instances already there */
  return false;
}

/* Larger first: more memory slices, then more compute, then the caller's order. */
static int cmp_larger(const void *a, const void *b, void *arg)
{
  const struct gs_mig_profile *const *profiles = arg;
  int i = *(const int *) a, j = *(const int *) b;
  const struct gs_mig_profile *x = profiles[i], *y = profiles[j];
  if (x->mem_slices != y->mem_slices)
    return y->mem_slices - x->mem_slices;
  if (x->compute_slices != y->compute_slices)
    return y->compute_slices - x->compute_slices;
  return i - j;
}

static int cmp_instance(const void *a, const void *b)
{
  const struct gs_mig_instance *x = a, *y = b;
  return x->gpu != y->gpu ? x->gpu - y->gpu : x->start - y->start;
}

static int fill_layout(const struct mig_gpu *gpus, int ngpus, int n, struct gs_mig_layout *out,
                       gs_error_t *err)
{
  out->inst = calloc((size_t) (n ? n : 1), sizeof(*out->inst));
  if (!out->inst)
    return gs_make_error(err, ENOMEM, "MIG layout");
  out->ngpus = ngpus;
  out->n = 0;
  for (int g = 0; g < ngpus; g++)
    for (int i = 0; i < gpus[g].n; i++)
      out->inst[out->n++] =
        (struct gs_mig_instance){ gpus[g].p[i], g, gpus[g].start[i], gpus[g].demand[i] };
  qsort(out->inst, (size_t) out->n, sizeof(*out->inst), cmp_instance);
  return 0;
}

/* First-fit decreasing over GPUs. order[] is the instances sorted larger first. */
static int assign(const struct gs_mig_profile *const *profiles, const int *order, int n,
                  struct mig_gpu *gpus, int *ngpus, gs_error_t *err)
{
  *ngpus = 0;
  for (int k = 0; k < n; k++) {
    int i = order[k], g = 0;
    while (g < *ngpus && !try_add(&gpus[g], profiles[i], i))
      g++;
    if (g < *ngpus)
      continue;
    memset(&gpus[g], 0, sizeof(gpus[g]));
    if (!try_add(&gpus[g], profiles[i], i))
      return gs_make_error(err, 0, "MIG profile %s fits no empty GPU (check its start positions)",
                           profiles[i]->name);
    (*ngpus)++;
  }
  return 0;
}

int gs_mig_plan_profiles(const struct gs_mig_profile *const *profiles, int n,
                         struct gs_mig_layout *out, gs_error_t *err)
{
  memset(out, 0, sizeof(*out));
  if (n < 0)
    return gs_make_error(err, EINVAL, "MIG plan: negative demand count");
  int *order = malloc((size_t) (n ? n : 1) * sizeof(*order));
  struct mig_gpu *gpus = calloc((size_t) (n ? n : 1), sizeof(*gpus));
  int ngpus = 0, r = -1;
  if (!order || !gpus) {
    gs_make_error(err, ENOMEM, "MIG plan");
    goto done;
  }
  for (int i = 0; i < n; i++)
    order[i] = i;
  qsort_r(order, (size_t) n, sizeof(*order), cmp_larger, (void *) (uintptr_t) profiles);
  if (assign(profiles, order, n, gpus, &ngpus, err) == 0)
    r = fill_layout(gpus, ngpus, n, out, err);
done:
  free(order);
  free(gpus);
  return r;
}

int gs_mig_plan(const struct gs_mig_table *t, const char *model, const uint64_t *demand_bytes,
                int n, struct gs_mig_layout *out, gs_error_t *err)
{
  memset(out, 0, sizeof(*out));
  const struct gs_mig_profile **p = calloc((size_t) (n > 0 ? n : 1), sizeof(*p));
  if (!p)
    return gs_make_error(err, ENOMEM, "MIG plan");
  for (int i = 0; i < n; i++) {
    p[i] = gs_mig_smallest_fit(t, model, demand_bytes[i], err);
    if (!p[i]) {
      free(p);
      return gs_error_prepend(err, "demand %d (%.2f GiB)", i + 1, (double) demand_bytes[i] / GIB);
    }
  }
  int r = gs_mig_plan_profiles((const struct gs_mig_profile *const *) p, n, out, err);
  free(p);
  return r;
}

int gs_mig_place_around(const struct gs_mig_instance *fixed, int nfixed,
                        const struct gs_mig_profile *const *p, int n, int *starts)
{
  struct mig_gpu all = { 0 }, g = { 0 };
  uint8_t used = 0;
  if (nfixed < 0 || n < 0 || nfixed + n > GS_MIG_COMPUTE_SLICES)
    return -1;
  for (int i = 0; i < nfixed; i++) {
    uint8_t iv = interval(fixed[i].start, fixed[i].p->mem_slices);
    if (used & iv)
      return -1;
    used |= iv;
    all.p[all.n++] = fixed[i].p;
  }
  for (int i = 0; i < n; i++)
    all.p[all.n++] = g.p[g.n++] = p[i];
  if (!counts_fit(&all) || !place_from(&g, 0, used))
    return -1;
  memcpy(starts, g.start, (size_t) n * sizeof(*starts));
  return 0;
}

static int check_instance(const struct gs_mig_instance *in, gs_error_t *err)
{
  const struct gs_mig_profile *p = in->p;
  if (in->start < 0 || in->start >= GS_MIG_POSITIONS || !(p->start_mask & (1u << in->start)))
    return gs_make_error(err, 0, "%s may not start at memory position %d", p->name, in->start);
  if (in->start + p->mem_slices > GS_MIG_POSITIONS)
    return gs_make_error(err, 0, "%s@%d runs past memory position %d", p->name, in->start,
                         GS_MIG_POSITIONS - 1);
  return 0;
}

int gs_mig_gpu_validate(const struct gs_mig_instance *inst, int n, gs_error_t *err)
{
  uint8_t used = 0;
  int compute = 0, media = 0;
  for (int i = 0; i < n; i++) {
    const struct gs_mig_profile *p = inst[i].p;
    if (check_instance(&inst[i], err) < 0)
      return -1;
    uint8_t iv = interval(inst[i].start, p->mem_slices);
    if (used & iv)
      return gs_make_error(err, 0, "%s@%d overlaps another instance", p->name, inst[i].start);
    used |= iv;
    int same = 0;
    for (int j = 0; j < n; j++)
      same += strcmp(inst[j].p->name, p->name) == 0;
    if (same > p->max_instances)
      return gs_make_error(err, 0, "%d instances of %s, at most %d allowed", same, p->name,
                           p->max_instances);
    compute += p->compute_slices;
    media += p->media;
  }
  if (compute > GS_MIG_COMPUTE_SLICES)
    return gs_make_error(err, 0, "%d compute slices, at most %d", compute, GS_MIG_COMPUTE_SLICES);
  if (media > 1)
    return gs_make_error(err, 0, "%d +me instances, at most one allowed", media);
  return 0;
}

void gs_mig_layout_free(struct gs_mig_layout *l)
{
  if (!l)
    return;
  free(l->inst);
  memset(l, 0, sizeof(*l));
}
