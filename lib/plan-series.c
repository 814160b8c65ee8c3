/* Statistics of one workload's series for the planner (gs-plan.h): nearest-rank
 * percentiles of utilization and memory, the mean utilization and the idle fraction.
 * Nearest rank is chosen over interpolation so that every figure in a plan is a value
 * that was actually measured, and so that tests can state percentiles exactly. */
#include <gpuslice/plan.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>

double gs_plan_percentile(const double *sorted, size_t n, double p)
{
  if (n == 0)
    return (double) NAN;
  double rank = ceil(p / 100.0 * (double) n);
  size_t i = rank < 1 ? 0 : (size_t) rank - 1;
  return sorted[i < n ? i : n - 1];
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Sorts v and fills the three percentiles the plan shows. */
static void summarize(double *v, size_t n, double *p50, double *p95, double *max)
{
  qsort(v, n, sizeof(*v), by_value);
  *p50 = gs_plan_percentile(v, n, 50);
  *p95 = gs_plan_percentile(v, n, 95);
  *max = v[n - 1];
}

int gs_plan_series_stats(const struct gs_plan_workload *w, struct gs_plan_stats *out,
                         gs_error_t *err)
{
  if (w->n == 0)
    return gs_make_error(err, 0, "workload '%s': no samples", w->name);
  double *v = malloc(w->n * sizeof(*v));
  if (!v)
    return gs_make_error(err, ENOMEM, "workload '%s'", w->name);
  size_t idle = 0;
  double sum = 0;
  for (size_t i = 0; i < w->n; i++) {
    v[i] = w->s[i].util_pct;
    sum += v[i];
    idle += v[i] < GS_PLAN_IDLE_PCT;
  }
  out->samples = w->n;
  out->t_first = w->s[0].t;
  out->t_last = w->s[w->n - 1].t;
  out->util_mean = sum / (double) w->n;
  out->idle_fraction = (double) idle / (double) w->n;
  summarize(v, w->n, &out->util_p50, &out->util_p95, &out->util_max);
  for (size_t i = 0; i < w->n; i++)
    v[i] = w->s[i].mem_bytes;
  summarize(v, w->n, &out->mem_p50, &out->mem_p95, &out->mem_max);
  free(v);
  return 0;
}
