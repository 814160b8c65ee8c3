/* The cost model: stacked savings, monthly cost, cost per served request, the commitment
 * baseline, and attributing a fleet's cost to used, idle and unallocated GPU time.
 * Pure arithmetic, libc + libm only. Prices are $ per GPU-hour; a month is 730 hours
 * (8760 / 12, the convention AWS and GCP price pages use). See docs/cost.md. */
#ifndef GS_COST_H
#define GS_COST_H

#include <gpuslice/error.h>

#define GS_HOURS_PER_MONTH 730.0

/* One step of a stacked-savings waterfall. */
struct gs_cost_step {
  char what[96];
  double monthly_before, monthly_after;
};

/* All fractions and discounts are 0..1. spot_fraction + commit_fraction <= 1: both are
 * shares of the work left after sharing. */
struct gs_stack_input {
  double monthly;
  double sharing_cut; /* fraction of the bill removed by sharing GPUs */
  double spot_fraction, spot_discount;
  double commit_fraction, commit_discount;
};

#define GS_COST_STACK_STEPS 3

/* Multiplicative stacking: sharing first, then spot on spot_fraction of what is left, then
 * a commitment on commit_fraction of what is left after sharing. Always fills the three
 * steps (sharing, spot, commitment; a step with no cut shows before == after), up to max.
 * Returns the count, or -1 (errno EINVAL) on input that gs_cost_stack_check refuses.
 * Seed: 10000 -> 6000 -> 3900 -> 2400 (76% saved). */
int gs_cost_stack(const struct gs_stack_input *in, struct gs_cost_step *steps, int max);
/* Says what is wrong with an input (a negative bill, a fraction outside 0..1, or
 * spot_fraction + commit_fraction > 1). Returns 0 or -1 with err. */
int gs_cost_stack_check(const struct gs_stack_input *in, gs_error_t *err);

/* Cost per 1,000 requests: gpu_seconds / 3600 x price / requests x 1000.
 * NAN when requests <= 0. Seed: a T4 at $0.526/h for an hour serving 10,000 requests:
 * 0.0526; a quarter of it (four services sharing): 0.01315, shown as 0.0132. */
double gs_cost_per_1k(double gpu_seconds, double price_per_gpu_hour, double requests);

/* gpus x price x 730. */
double gs_monthly_cost(double gpus, double price_per_gpu_hour);

/* Rounds half away from zero at `decimals` places, after snapping away binary noise
 * (the value is first rounded to 12 significant digits, so 1.005, stored as
 * 1.00499999..., rounds to 1.01 at 2 places; 0.01315 to 0.0132 at 4). The rule for every figure gpuslice shows. */
double gs_cost_round(double x, int decimals);

/* The p-th percentile (0..100) of v, linear interpolation between closest ranks (as
 * numpy's default). NAN when n <= 0. v is not modified. */
double gs_cost_percentile(const double *v, int n, double p);

/* Commitments cover the steady baseline. Given a fleet's GPU count over time, returns the
 * GPUs worth committing: the `percentile`-th percentile (default 10) x `share` (default
 * 0.7, within the 60-80% the issue recommends). Pass percentile < 0 or share < 0 for the
 * defaults. NAN when n <= 0. */
#define GS_COST_COMMIT_PERCENTILE 10.0
#define GS_COST_COMMIT_SHARE 0.7
double gs_cost_commit_baseline(const double *gpus_over_time, int n, double percentile,
                               double share);
/* The baseline as a fraction (0..1) of the mean GPU count: what gs_stack_input's
 * commit_fraction should be. 0 when the mean is 0; NAN when n <= 0. */
double gs_cost_commit_fraction(const double *gpus_over_time, int n, double percentile,
                               double share);

/* Cost attribution over a period. Per key: GPU-seconds used and GPU-seconds allocated
 * (a tenant holding a whole GPU for an hour allocates 3600). used above allocated counts
 * as allocated (a tenant without a limit allocates what it uses). */
struct gs_cost_usage {
  double used_gpu_seconds, allocated_gpu_seconds;
};
struct gs_cost_share {
  double used_cost; /* used x price */
  double idle_cost; /* (allocated - used) x price: allocated but unused */
};
struct gs_cost_totals {
  double capacity_cost; /* capacity x price */
  double used_cost, idle_cost;
  double unallocated_cost; /* (capacity - sum allocated) x price, never below 0 */
};
/* out has n entries; totals may be NULL. Fails on negative or non-finite input. */
int gs_cost_attribute(const struct gs_cost_usage *in, int n, double capacity_gpu_seconds,
                      double price_per_gpu_hour, struct gs_cost_share *out,
                      struct gs_cost_totals *totals, gs_error_t *err);

#endif
