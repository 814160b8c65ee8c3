/* The planner's fleet view (gs-plan.h): how many GPUs the plan needs against how many are
 * used today, and the monthly cost before and after with the savings stacked (sharing,
 * spot, commitment; gs-cost.h).
 *
 * Dedicated workloads keep whole GPUs; MIG workloads are laid onto partitioned GPUs by
 * gs_mig_plan_profiles (placement matters, not just counts); MPS, time-slice and fraction
 * workloads are packed by their share (the larger of memory and compute) with the
 * placement library's gpu-packing policy, largest first. */
#include <gpuslice/plan.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/place.h>

#define PACK_NODE_GPUS 8

static int by_share_desc(const void *a, const void *b)
{
  int x = *(const int *) a, y = *(const int *) b;
  return (y > x) - (y < x);
}

static int count_used_gpus(const gs_place_cluster_t *c, size_t nodes)
{
  int used = 0;
  for (size_t n = 0; n < nodes; n++)
    for (int g = 0; g < PACK_NODE_GPUS; g++)
      used += gs_place_gpu_left(c, (int) n, g) < GS_PLACE_MILLI;
  return used;
}

/* Places the sorted shares one by one; fails only if the cluster is too small. */
static int pack_sorted(gs_place_cluster_t *c, const int *share, size_t n, gs_error_t *err)
{
  for (size_t i = 0; i < n; i++) {
    struct gs_place_request r = {
      .name = "workload", .num_gpu = 1, .gpu_milli = share[i], .model_mask = GS_PLACE_ANY_MODEL
    };
    struct gs_place_choice ch;
    if (!gs_place_decide(c, GS_PLACE_GPU_PACKING, &r, &ch))
      return gs_make_error(err, 0, "plan: a share of %d GPU-milli fits no GPU", share[i]);
    gs_place_commit(c, &r, &ch);
  }
  return 0;
}

int gs_plan_pack_gpus(const int *share_milli, size_t n, int *gpus, gs_error_t *err)
{
  *gpus = 0;
  if (n == 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (share_milli[i] < 1 || share_milli[i] > GS_PLACE_MILLI)
      return gs_make_error(err, 0, "plan: share %d GPU-milli is outside 1..1000", share_milli[i]);
  size_t nodes = (n + PACK_NODE_GPUS - 1) / PACK_NODE_GPUS;
  struct gs_place_node_spec *spec = calloc(nodes, sizeof(*spec));
  int *sorted = malloc(n * sizeof(*sorted));
  int r = -1;
  if (!spec || !sorted) {
    gs_make_error(err, ENOMEM, "plan: packing");
    goto out;
  }
  for (size_t i = 0; i < nodes; i++)
    spec[i] =
      (struct gs_place_node_spec){ "gpu-node", INT64_MAX / 4, INT64_MAX / 4, PACK_NODE_GPUS, "" };
  memcpy(sorted, share_milli, n * sizeof(*sorted));
  qsort(sorted, n, sizeof(*sorted), by_share_desc);
  gs_place_cluster_t *c = gs_place_cluster_new(spec, nodes, err);
  if (!c)
    goto out;
  r = pack_sorted(c, sorted, n, err);
  if (r == 0)
    *gpus = count_used_gpus(c, nodes);
  gs_place_cluster_free(c);
out:
  free(spec);
  free(sorted);
  return r;
}

/* Today's GPUs: label "gpus" (default 1) per workload, except that workloads naming the
 * same physical GPU (label "gpu", e.g. a UUID) count it once between them. */
static int gpus_today(const struct gs_plan_data *d)
{
  int total = 0;
  for (size_t i = 0; i < d->n; i++) {
    const char *uuid = gs_plan_workload_label(d->w[i], "gpu");
    bool seen = false;
    for (size_t j = 0; uuid && j < i && !seen; j++) {
      const char *o = gs_plan_workload_label(d->w[j], "gpu");
      seen = o && strcmp(o, uuid) == 0;
    }
    if (seen)
      continue;
    const char *g = gs_plan_workload_label(d->w[i], "gpus");
    long v = g ? strtol(g, NULL, 10) : 1;
    total += v >= 1 && v <= 1024 ? (int) v : 1;
  }
  return total;
}

static int dedicated_gpus(const struct gs_plan_workload *w, const struct gs_plan_rec *rec,
                          const struct gs_plan_gpu *gpu)
{
  const char *g = gs_plan_workload_label(w, "gpus");
  long today = g ? strtol(g, NULL, 10) : 1;
  long need = (long) ((rec->vram_bytes + gpu->mem_bytes - 1) / gpu->mem_bytes);
  long v = today > need ? today : need;
  return v < 1 ? 1 : v > 1024 ? 1024 : (int) v;
}

/* Lays the MIG workloads' chosen profiles onto GPUs. */
static int lay_mig(const struct gs_plan_data *d, const struct gs_plan_rec *rec,
                   struct gs_plan_fleet *f, gs_error_t *err)
{
  const struct gs_mig_profile **p = calloc(d->n ? d->n : 1, sizeof(*p));
  f->mig_workload = calloc(d->n ? d->n : 1, sizeof(*f->mig_workload));
  if (!p || !f->mig_workload) {
    free(p);
    return gs_make_error(err, ENOMEM, "plan: MIG layout");
  }
  int n = 0;
  for (size_t i = 0; i < d->n; i++)
    if (rec[i].mech == GS_PLAN_MIG) {
      f->mig_workload[n] = (int) i;
      p[n++] = rec[i].profile;
    }
  int r = gs_mig_plan_profiles(p, n, &f->mig, err);
  free(p);
  if (r < 0)
    return gs_error_prepend(err, "plan: MIG layout");
  f->gpus_mig = f->mig.ngpus;
  return 0;
}

/* Dedicated GPUs, the packed shared GPUs, and the spot share (interruptible work). */
static int count_gpus(const struct gs_plan_data *d, const struct gs_plan_rec *rec,
                      const struct gs_plan_gpu *gpu, struct gs_plan_fleet *f, gs_error_t *err)
{
  int *shares = malloc((d->n ? d->n : 1) * sizeof(*shares));
  if (!shares)
    return gs_make_error(err, ENOMEM, "plan: packing");
  size_t ns = 0;
  double all = 0, spot = 0;
  for (size_t i = 0; i < d->n; i++) {
    const char *intr = gs_plan_workload_label(d->w[i], "interruptible");
    double share = rec[i].share_milli;
    if (rec[i].mech == GS_PLAN_DEDICATED) {
      int g = dedicated_gpus(d->w[i], &rec[i], gpu);
      f->gpus_dedicated += g;
      share = 1000.0 * g;
    } else if (rec[i].mech == GS_PLAN_MIG) {
      share = 1000.0 * rec[i].profile->compute_slices / GS_MIG_COMPUTE_SLICES;
    } else {
      shares[ns++] = rec[i].share_milli;
    }
    all += share;
    if (intr && (strcmp(intr, "true") == 0 || strcmp(intr, "yes") == 0 || strcmp(intr, "1") == 0))
      spot += share;
  }
  f->spot_fraction = all > 0 ? spot / all : 0;
  int r = gs_plan_pack_gpus(shares, ns, &f->gpus_shared, err);
  free(shares);
  return r;
}

static int by_time(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The fleet's demand over time: at each instant any workload was sampled, the sum of the
 * utilizations (in GPUs) of the workloads sampled then. Pairs (t, util) sorted by t. */
static double *demand_series(const struct gs_plan_data *d, int *n, gs_error_t *err)
{
  size_t total = 0;
  for (size_t i = 0; i < d->n; i++)
    total += d->w[i]->n;
  double *tu = malloc((total ? total : 1) * 2 * sizeof(*tu));
  double *out = malloc((total ? total : 1) * sizeof(*out));
  if (!tu || !out) {
    free(tu);
    free(out);
    return gs_make_error(err, ENOMEM, "plan: demand series"), NULL;
  }
  size_t k = 0;
  for (size_t i = 0; i < d->n; i++)
    for (size_t j = 0; j < d->w[i]->n; j++, k++) {
      tu[2 * k] = d->w[i]->s[j].t;
      tu[2 * k + 1] = d->w[i]->s[j].util_pct / 100.0;
    }
  qsort(tu, total, 2 * sizeof(*tu), by_time);
  *n = 0;
  for (size_t i = 0; i < total; (*n)++) {
    double t = tu[2 * i], sum = 0;
    for (; i < total && tu[2 * i] == t; i++)
      sum += tu[2 * i + 1];
    out[*n] = sum;
  }
  free(tu);
  return out;
}

static double discount(double rate, double on_demand)
{
  return isfinite(rate) && rate < on_demand ? 1.0 - rate / on_demand : 0.0;
}

/* The monthly bill today and after, with each step of the stack. */
static int cost(const struct gs_plan_data *d, const struct gs_plan_gpu *gpu,
                const struct gs_plan_fleet_opts *o, struct gs_plan_fleet *f, gs_error_t *err)
{
  double od = o->price->on_demand;
  if (!isfinite(od) || od <= 0)
    return gs_make_error(err, 0, "no on-demand price for GPU model '%s'", gpu->model);
  int n = 0;
  double *demand = demand_series(d, &n, err);
  if (!demand)
    return -1;
  double commit = n > 0 ? gs_cost_commit_fraction(demand, n, -1, o->commit_cover) : 0;
  free(demand);
  f->spot_fraction = discount(o->price->spot, od) > 0 ? f->spot_fraction : 0;
  f->commit_fraction = discount(o->price->commit_1y, od) > 0 && isfinite(commit)
    ? fmin(fmax(commit, 0), 1.0 - f->spot_fraction)
    : 0;
  f->monthly_before = gs_monthly_cost(f->gpus_today, od);
  /* A plan may need more GPUs than today (workloads too big for the model planned for):
   * then the stack starts from the bigger fleet, with no sharing cut. */
  double cut = f->gpus_today > 0 ? 1.0 - (double) f->gpus_after / f->gpus_today : 0;
  double base = cut < 0 ? gs_monthly_cost(f->gpus_after, od) : f->monthly_before;
  struct gs_stack_input in = {
    .monthly = base,
    .sharing_cut = fmax(cut, 0),
    .spot_fraction = f->spot_fraction,
    .spot_discount = discount(o->price->spot, od),
    .commit_fraction = f->commit_fraction,
    .commit_discount = discount(o->price->commit_1y, od),
  };
  if (gs_cost_stack_check(&in, err) < 0)
    return gs_error_prepend(err, "plan: savings");
  f->nsteps = gs_cost_stack(&in, f->steps, GS_PLAN_MAX_STEPS);
  f->monthly_after = f->nsteps > 0 ? f->steps[f->nsteps - 1].monthly_after : f->monthly_before;
  return 0;
}

int gs_plan_fleet(const struct gs_plan_data *d, const struct gs_plan_rec *rec,
                  const struct gs_plan_gpu *gpu, const struct gs_plan_fleet_opts *o,
                  struct gs_plan_fleet *out, gs_error_t *err)
{
  memset(out, 0, sizeof(*out));
  out->gpus_today = gpus_today(d);
  if (lay_mig(d, rec, out, err) < 0 || count_gpus(d, rec, gpu, out, err) < 0)
    goto fail;
  out->gpus_after = out->gpus_dedicated + out->gpus_mig + out->gpus_shared;
  if (cost(d, gpu, o, out, err) < 0)
    goto fail;
  return 0;
fail:
  gs_plan_fleet_release(out);
  return -1;
}

void gs_plan_fleet_release(struct gs_plan_fleet *f)
{
  gs_mig_layout_free(&f->mig);
  free(f->mig_workload);
  f->mig_workload = NULL;
}
