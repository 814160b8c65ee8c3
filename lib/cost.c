/* The cost model (see gs-cost.h): stacked savings, monthly and per-request cost, the
 * rounding rule for shown figures, percentiles and the commitment baseline, and cost
 * attribution. Prices come from price-table.c; nothing here reads files. */
#include <gpuslice/cost.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool in01(double v)
{
  return isfinite(v) && v >= 0 && v <= 1;
}

int gs_cost_stack_check(const struct gs_stack_input *in, gs_error_t *err)
{
  if (!isfinite(in->monthly) || in->monthly < 0)
    return gs_make_error(err, 0, "monthly cost %g: want a number >= 0", in->monthly);
  const struct {
    const char *what;
    double v;
  } f[] = { { "sharing cut", in->sharing_cut },
            { "spot fraction", in->spot_fraction },
            { "spot discount", in->spot_discount },
            { "commit fraction", in->commit_fraction },
            { "commit discount", in->commit_discount } };
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
    if (!in01(f[i].v))
      return gs_make_error(err, 0, "%s %g: want 0..1 (0%%..100%%)", f[i].what, f[i].v);
  if (in->spot_fraction + in->commit_fraction > 1 + 1e-12)
    return gs_make_error(err, 0,
                         "spot fraction %g + commit fraction %g is more than 1: "
                         "spot and commitments cover separate parts of the work",
                         in->spot_fraction, in->commit_fraction);
  return 0;
}

static void step(struct gs_cost_step *s, double before, double after, const char *kind,
                 double fraction, double discount)
{
  snprintf(s->what, sizeof(s->what), "%s: %.4g%% of the work at %.4g%% off", kind, fraction * 100,
           discount * 100);
  s->monthly_before = before;
  s->monthly_after = after;
}

int gs_cost_stack(const struct gs_stack_input *in, struct gs_cost_step *steps, int max)
{
  gs_error_t err = NULL;
  if (gs_cost_stack_check(in, &err) < 0) {
    gs_error_release(&err);
    errno = EINVAL;
    return -1;
  }
  struct gs_cost_step all[GS_COST_STACK_STEPS];
  double shared = in->monthly * (1 - in->sharing_cut);
  double spot = shared * (1 - in->spot_fraction * in->spot_discount);
  double commit = spot - shared * in->commit_fraction * in->commit_discount;
  step(&all[0], in->monthly, shared, "sharing", 1, in->sharing_cut);
  snprintf(all[0].what, sizeof(all[0].what), "sharing: %.4g%% fewer GPU-hours",
           in->sharing_cut * 100);
  step(&all[1], shared, spot, "spot", in->spot_fraction, in->spot_discount);
  step(&all[2], spot, commit, "commitment", in->commit_fraction, in->commit_discount);
  int n = max < GS_COST_STACK_STEPS ? (max > 0 ? max : 0) : GS_COST_STACK_STEPS;
  if (n > 0)
    memcpy(steps, all, (size_t) n * sizeof(*steps));
  return n;
}

double gs_cost_per_1k(double gpu_seconds, double price_per_gpu_hour, double requests)
{
  if (!(requests > 0))
    return (double) NAN;
  return gpu_seconds / 3600.0 * price_per_gpu_hour / requests * 1000.0;
}

double gs_monthly_cost(double gpus, double price_per_gpu_hour)
{
  return gpus * price_per_gpu_hour * GS_HOURS_PER_MONTH;
}

double gs_cost_round(double x, int decimals)
{
  if (!isfinite(x) || x == 0)
    return x;
  /* Scale, then snap to 12 significant digits: 1.005 is 1.00499999999999989... in binary
   * and 1.005 x 100 is 100.49999999999999, but 100.5 is what was meant, and it rounds half
   * away from zero, to 1.01. */
  double scale = pow(10, decimals);
  char buf[40];
  snprintf(buf, sizeof(buf), "%.11e", x * scale);
  return round(strtod(buf, NULL)) / scale;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

double gs_cost_percentile(const double *v, int n, double p)
{
  if (n <= 0 || !v)
    return (double) NAN;
  double *s = malloc((size_t) n * sizeof(*s));
  if (!s)
    return (double) NAN;
  memcpy(s, v, (size_t) n * sizeof(*s));
  qsort(s, (size_t) n, sizeof(*s), cmp_double);
  p = p < 0 ? 0 : p > 100 ? 100 : p;
  double rank = p / 100.0 * (n - 1);
  int lo = (int) floor(rank), hi = lo + 1 < n ? lo + 1 : lo;
  double r = s[lo] + (s[hi] - s[lo]) * (rank - lo);
  free(s);
  return r;
}

double gs_cost_commit_baseline(const double *gpus_over_time, int n, double percentile, double share)
{
  if (percentile < 0)
    percentile = GS_COST_COMMIT_PERCENTILE;
  if (share < 0)
    share = GS_COST_COMMIT_SHARE;
  return gs_cost_percentile(gpus_over_time, n, percentile) * share;
}

double gs_cost_commit_fraction(const double *gpus_over_time, int n, double percentile, double share)
{
  double base = gs_cost_commit_baseline(gpus_over_time, n, percentile, share), sum = 0;
  if (isnan(base))
    return (double) NAN;
  for (int i = 0; i < n; i++)
    sum += gpus_over_time[i];
  if (!(sum > 0))
    return 0;
  double f = base / (sum / n);
  return f > 1 ? 1 : f < 0 ? 0 : f;
}

static bool nonneg(double v)
{
  return isfinite(v) && v >= 0;
}

int gs_cost_attribute(const struct gs_cost_usage *in, int n, double capacity_gpu_seconds,
                      double price_per_gpu_hour, struct gs_cost_share *out,
                      struct gs_cost_totals *totals, gs_error_t *err)
{
  if (!nonneg(capacity_gpu_seconds) || !nonneg(price_per_gpu_hour))
    return gs_make_error(err, 0, "cost attribution: capacity and price must be numbers >= 0");
  double per_s = price_per_gpu_hour / 3600.0, allocated = 0;
  struct gs_cost_totals t = { .capacity_cost = capacity_gpu_seconds * per_s };
  for (int i = 0; i < n; i++) {
    if (!nonneg(in[i].used_gpu_seconds) || !nonneg(in[i].allocated_gpu_seconds))
      return gs_make_error(err, 0, "cost attribution: row %d: GPU-seconds must be numbers >= 0",
                           i + 1);
    double alloc = fmax(in[i].allocated_gpu_seconds, in[i].used_gpu_seconds);
    out[i].used_cost = in[i].used_gpu_seconds * per_s;
    out[i].idle_cost = (alloc - in[i].used_gpu_seconds) * per_s;
    t.used_cost += out[i].used_cost;
    t.idle_cost += out[i].idle_cost;
    allocated += alloc;
  }
  t.unallocated_cost = fmax(capacity_gpu_seconds - allocated, 0) * per_s;
  if (totals)
    *totals = t;
  return 0;
}
