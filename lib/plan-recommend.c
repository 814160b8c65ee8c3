/* The planner's rules (gs-plan.h): from one workload's statistics to a sharing mechanism
 * and a one-line reason that names the numbers. The rules are tried in this order, the
 * first that holds wins (docs/planner.md has the table):
 *   1. dedicated: memory with headroom exceeds one GPU, or p50 utilization >= 70%, or
 *      large training (p95 memory above half the GPU and p50 utilization >= 50%);
 *   2. time-slice: idle (utilization < 1%) in at least half of the samples, i.e. bursty;
 *   3. MPS: p95 utilization <= 30%, memory with headroom <= a quarter of the GPU, steady,
 *      not labelled latency=critical, and at least 3 such workloads of one user (label
 *      "user", else "namespace"): the many small inference-like services MPS suits;
 *   4. MIG: steady (p95 - p50 <= 30 points, idle in under 25% of samples) and a profile whose memory holds p95 memory
 *      with headroom and whose compute share (slices / 7) covers p95 utilization;
 *   5. a fraction: --vram p95 memory with headroom, --compute p95 utilization rounded up. */
#include <gpuslice/plan.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

void gs_plan_rules_default(struct gs_plan_rules *r)
{
  *r = (struct gs_plan_rules){
    .headroom = GS_PLAN_HEADROOM_PCT / 100.0,
    .dedicated_p50 = 70,
    .training_mem_frac = 0.5,
    .training_p50 = 50,
    .timeslice_idle = 0.5,
    .steady_spread = 30,
    .steady_idle = 0.25,
    .mps_util_p95 = 30,
    .mps_mem_frac = 0.25,
    .mps_min_group = 3,
    .idle_flag = 0.9,
  };
}

const char *gs_plan_mechanism_name(enum gs_plan_mechanism m)
{
  static const char *const names[] = { "dedicated", "mig", "mps", "time-slice", "fraction" };
  return (unsigned) m < sizeof(names) / sizeof(names[0]) ? names[m] : "?";
}

/* Nominal memory of the models whose canonical name does not end in "-<N>gb". */
static const struct {
  const char *model;
  int gib;
} plain_models[] = { { "t4", 16 }, { "l4", 24 }, { "a10g", 24 }, { "l40s", 48 } };

static int model_gib(const char *model)
{
  for (size_t i = 0; i < sizeof(plain_models) / sizeof(plain_models[0]); i++)
    if (strcmp(plain_models[i].model, model) == 0)
      return plain_models[i].gib;
  const char *dash = strrchr(model, '-');
  char *end;
  long v = dash ? strtol(dash + 1, &end, 10) : 0;
  return dash && v > 0 && v < 100000 && strcmp(end, "gb") == 0 ? (int) v : 0;
}

int gs_plan_gpu_init(struct gs_plan_gpu *g, const char *model, const struct gs_mig_table *mig,
                     gs_error_t *err)
{
  memset(g, 0, sizeof(*g));
  if (gs_gpu_model_canon(model, g->model, sizeof(g->model), err) < 0)
    return -1;
  int gib = model_gib(g->model);
  if (gib <= 0)
    return gs_make_error(err, 0, "GPU model '%s': its memory is not known", g->model);
  g->mem_bytes = (uint64_t) gib << 30;
  g->mig = mig;
  return 0;
}

/* What any mechanism needs: memory with headroom, compute rounded up, and the share. */
static void fill_needs(const struct gs_plan_stats *st, const struct gs_plan_gpu *gpu,
                       const struct gs_plan_rules *r, struct gs_plan_rec *rec)
{
  rec->vram_bytes = (uint64_t) ceil(st->mem_p95 * (1.0 + r->headroom));
  int c = (int) ceil(st->util_p95 / 5.0 - 1e-9) * 5;
  rec->compute_pct = c < 5 ? 5 : c > 100 ? 100 : c;
  double mem_share = ceil((double) rec->vram_bytes * 1000.0 / (double) gpu->mem_bytes);
  int share = (int) fmax(mem_share, rec->compute_pct * 10.0);
  rec->share_milli = share < 1 ? 1 : share > 1000 ? 1000 : share;
  rec->mps_group = -1;
}

static void say(struct gs_plan_rec *rec, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
static void say(struct gs_plan_rec *rec, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rec->reason, sizeof(rec->reason), fmt, ap);
  va_end(ap);
}

static bool try_dedicated(const struct gs_plan_stats *st, const struct gs_plan_gpu *gpu,
                          const struct gs_plan_rules *r, struct gs_plan_rec *rec)
{
  double gpu_gib = (double) gpu->mem_bytes / GIB;
  if (rec->vram_bytes > gpu->mem_bytes)
    say(rec, "p95 memory %.1f GiB + %.0f%% headroom = %.1f GiB exceeds one %s (%.0f GiB)",
        st->mem_p95 / GIB, r->headroom * 100, (double) rec->vram_bytes / GIB, gpu->model, gpu_gib);
  else if (st->util_p50 >= r->dedicated_p50)
    say(rec, "p50 utilization %.1f%% >= %.0f%%: keeps a GPU busy on its own", st->util_p50,
        r->dedicated_p50);
  else if (st->mem_p95 > r->training_mem_frac * (double) gpu->mem_bytes &&
           st->util_p50 >= r->training_p50)
    say(rec,
        "large training: p95 memory %.1f GiB > %.0f%% of %.0f GiB and p50 utilization "
        "%.1f%% >= %.0f%%",
        st->mem_p95 / GIB, r->training_mem_frac * 100, gpu_gib, st->util_p50, r->training_p50);
  else
    return false;
  rec->mech = GS_PLAN_DEDICATED;
  rec->share_milli = 1000;
  return true;
}

static bool try_time_slice(const struct gs_plan_stats *st, const struct gs_plan_rules *r,
                           struct gs_plan_rec *rec)
{
  if (st->idle_fraction < r->timeslice_idle)
    return false;
  rec->mech = GS_PLAN_TIME_SLICE;
  say(rec,
      "idle in %.0f%% of samples (>= %.0f%%), bursts to p95 %.1f%% / max %.1f%%: "
      "time-slice, holding %.1f GiB",
      st->idle_fraction * 100, r->timeslice_idle * 100, st->util_p95, st->util_max,
      (double) rec->vram_bytes / GIB);
  return true;
}

/* Steady: busy most of the time, within a narrow band. */
static bool steady(const struct gs_plan_stats *st, const struct gs_plan_rules *r)
{
  return st->util_p95 - st->util_p50 <= r->steady_spread && st->idle_fraction < r->steady_idle;
}

static bool covers(const struct gs_mig_profile *p, uint64_t bytes, double util_p95)
{
  return !p->media && p->mem_gib * GIB >= (double) bytes &&
    p->compute_slices * 100.0 / GS_MIG_COMPUTE_SLICES >= util_p95;
}

/* The smallest profile (gs_mig_smallest_fit) holding the memory; when its compute share
 * (slices / 7) falls short of p95 utilization, the smallest (fewest memory slices, then
 * compute slices) of the model's profiles that holds both. */
static const struct gs_mig_profile *mig_fit(const struct gs_plan_stats *st,
                                            const struct gs_plan_gpu *gpu, uint64_t bytes)
{
  gs_error_t err = NULL;
  const struct gs_mig_profile *p = gs_mig_smallest_fit(gpu->mig, gpu->model, bytes, &err);
  size_t n = 0;
  const struct gs_mig_profile *all = p ? gs_mig_profiles(gpu->mig, gpu->model, &n, &err) : NULL;
  gs_error_release(&err);
  if (!p || covers(p, bytes, st->util_p95))
    return p;
  const struct gs_mig_profile *best = NULL;
  for (size_t i = 0; i < n; i++)
    if (covers(&all[i], bytes, st->util_p95) &&
        (!best || all[i].mem_slices < best->mem_slices ||
         (all[i].mem_slices == best->mem_slices && all[i].compute_slices < best->compute_slices)))
      best = &all[i];
  return best;
}

static bool try_mig(const struct gs_plan_stats *st, const struct gs_plan_gpu *gpu,
                    const struct gs_plan_rules *r, struct gs_plan_rec *rec)
{
  if (!gpu->mig || !steady(st, r))
    return false;
  const struct gs_mig_profile *p = mig_fit(st, gpu, rec->vram_bytes);
  if (!p)
    return false;
  rec->mech = GS_PLAN_MIG;
  rec->profile = p;
  say(rec,
      "steady (p50 %.1f%%, p95 %.1f%%); p95 memory %.1f GiB + %.0f%% = %.1f GiB fits "
      "%s (%.1f GiB, %d/7 compute)",
      st->util_p50, st->util_p95, st->mem_p95 / GIB, r->headroom * 100,
      (double) rec->vram_bytes / GIB, p->name, p->mem_gib, p->compute_slices);
  return true;
}

static void fraction(const struct gs_plan_stats *st, const struct gs_plan_rules *r,
                     struct gs_plan_rec *rec)
{
  rec->mech = GS_PLAN_FRACTION;
  say(rec,
      "p95 memory %.1f GiB + %.0f%% = %.1f GiB, p95 utilization %.1f%% (p50 %.1f%%): "
      "--vram %.1fG --compute %d%%",
      st->mem_p95 / GIB, r->headroom * 100, (double) rec->vram_bytes / GIB, st->util_p95,
      st->util_p50, (double) rec->vram_bytes / GIB, rec->compute_pct);
}

/* The user an MPS group is formed by, when the workload is a candidate at all. */
static const char *mps_user(const struct gs_plan_workload *w, const struct gs_plan_stats *st,
                            const struct gs_plan_gpu *gpu, const struct gs_plan_rules *r,
                            const struct gs_plan_rec *rec)
{
  const char *user = gs_plan_workload_label(w, "user");
  if (!user)
    user = gs_plan_workload_label(w, "namespace");
  const char *lat = gs_plan_workload_label(w, "latency");
  if (!user || (lat && strcmp(lat, "critical") == 0) || !steady(st, r))
    return NULL;
  if (st->util_p95 > r->mps_util_p95 ||
      (double) rec->vram_bytes > r->mps_mem_frac * (double) gpu->mem_bytes)
    return NULL;
  return user;
}

/* Turns every candidate of a user with enough candidates into MPS. users[i] is workload
 * i's user when it is a candidate, else NULL. */
static void form_mps_groups(const struct gs_plan_data *d, const char **users,
                            const struct gs_plan_rules *r, struct gs_plan_rec *out)
{
  int groups = 0;
  for (size_t i = 0; i < d->n; i++) {
    if (!users[i] || out[i].mps_group >= 0)
      continue;
    int members = 0;
    for (size_t j = i; j < d->n; j++)
      members += users[j] && strcmp(users[j], users[i]) == 0;
    if (members < r->mps_min_group)
      continue;
    for (size_t j = i; j < d->n; j++) {
      if (!users[j] || strcmp(users[j], users[i]) != 0)
        continue;
      out[j].mech = GS_PLAN_MPS;
      out[j].profile = NULL;
      out[j].mps_group = groups;
      say(&out[j],
          "one of %d small steady workloads of user '%.40s' (p95 utilization "
          "%d%% <= %.0f%%, %.1f GiB <= %.0f%% of the GPU): MPS group %d",
          members, users[i], out[j].compute_pct, r->mps_util_p95, (double) out[j].vram_bytes / GIB,
          r->mps_mem_frac * 100, groups);
    }
    groups++;
  }
}

int gs_plan_recommend(const struct gs_plan_data *d, const struct gs_plan_stats *st,
                      const struct gs_plan_gpu *gpu, const struct gs_plan_rules *rules,
                      struct gs_plan_rec *out, gs_error_t *err)
{
  const char **users = calloc(d->n ? d->n : 1, sizeof(*users));
  if (!users)
    return gs_make_error(err, ENOMEM, "plan: recommendations");
  for (size_t i = 0; i < d->n; i++) {
    struct gs_plan_rec *rec = &out[i];
    memset(rec, 0, sizeof(*rec));
    fill_needs(&st[i], gpu, rules, rec);
    rec->idle = st[i].idle_fraction >= rules->idle_flag;
    if (try_dedicated(&st[i], gpu, rules, rec) || try_time_slice(&st[i], rules, rec))
      continue;
    users[i] = mps_user(d->w[i], &st[i], gpu, rules, rec);
    if (!try_mig(&st[i], gpu, rules, rec))
      fraction(&st[i], rules, rec);
  }
  form_mps_groups(d, users, rules, out);
  free(users);
  return 0;
}
