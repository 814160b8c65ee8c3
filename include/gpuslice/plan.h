/* The sharing planner: from measured per-workload series of GPU utilization and memory to
 * a plan (which workloads stay dedicated, which fit a MIG profile, which share by MPS,
 * time-slicing or a software fraction), the GPUs the fleet then needs, and what that costs.
 *
 * Three parts, one file each:
 * - plan-data.c: the data set, workloads with their samples and labels, as input readers
 *   fill it (one utilization and one memory series per workload, joined on the timestamp);
 * - plan-series.c: the statistics of one workload's series (percentiles, idle fraction);
 * - plan-recommend.c: the rules that turn statistics into a mechanism and a reason;
 * - plan-fleet.c: packing the shared workloads onto GPUs (gs-place.h), laying MIG
 *   instances (gs-mig.h), and the monthly cost before and after (gs-price.h, gs-cost.h).
 *
 * libc and libm only, no I/O: the readers and the report are the plan library (plan/,
 * gs-plan-io.h), which needs jansson and zlib.
 * docs/planner.md describes the rules and their thresholds. */
#ifndef GS_PLAN_H
#define GS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/cost.h>
#include <gpuslice/error.h>
#include <gpuslice/mig.h>
#include <gpuslice/price.h>

/* A sample whose utilization is below this (in %) is idle. */
#define GS_PLAN_IDLE_PCT 1.0
/* At most this many labels are kept per workload; later ones are ignored. */
#define GS_PLAN_MAX_LABELS 32

/* ---- the data set (plan-data.c) ---- */

struct gs_plan_sample {
  double t;         /* seconds since the epoch (or any monotone clock of the input) */
  double util_pct;  /* 0..100; NAN while only memory is known for this instant */
  double mem_bytes; /* NAN while only utilization is known */
};

struct gs_plan_label {
  char *key, *value;
};

struct gs_plan_workload {
  char *name;
  struct gs_plan_sample *s;
  size_t n, cap;
  struct gs_plan_label labels[GS_PLAN_MAX_LABELS];
  size_t nlabels;
};

struct gs_plan_data {
  struct gs_plan_workload **w; /* stable pointers: the array grows, the workloads don't move */
  size_t n, cap;
  size_t *slot; /* open-addressing index by name: workload index + 1, 0 when empty */
  size_t nslots;
};

/* What gs_plan_data_finish left out. */
struct gs_plan_finish {
  size_t samples_unjoined;   /* an instant with only utilization or only memory */
  size_t workloads_dropped;  /* workloads left with no complete sample */
  char dropped_example[128]; /* the first dropped workload's name, for messages */
};

void gs_plan_data_init(struct gs_plan_data *d);
void gs_plan_data_release(struct gs_plan_data *d);
/* The workload of this name, created empty when new. NULL and *err when out of memory. */
struct gs_plan_workload *gs_plan_data_workload(struct gs_plan_data *d, const char *name,
                                               gs_error_t *err);
/* Appends one sample; either value may be NAN (it is joined with the other series' sample
 * of the same t by gs_plan_data_finish). */
int gs_plan_workload_add(struct gs_plan_workload *w, double t, double util_pct, double mem_bytes,
                         gs_error_t *err);
/* Sets a label unless the workload already has one of this key (the first one stays). */
int gs_plan_workload_set_label(struct gs_plan_workload *w, const char *key, const char *value,
                               gs_error_t *err);
/* The label's value, or NULL. */
const char *gs_plan_workload_label(const struct gs_plan_workload *w, const char *key);
/* Sorts each workload's samples by time, merges the samples of one instant (a
 * utilization-only and a memory-only sample become one; for repeats the last wins), drops
 * instants that still lack a value, then drops workloads left empty. Keeps the workloads
 * in the order they were first seen. */
void gs_plan_data_finish(struct gs_plan_data *d, struct gs_plan_finish *out);

/* ---- the statistics of one series (plan-series.c) ---- */

/* Percentiles are nearest-rank: the p-th percentile of n sorted values is the value at
 * rank ceil(p/100 × n) (1-based; rank 1 for p = 0), so it is always an observed value. */
struct gs_plan_stats {
  size_t samples;
  double t_first, t_last;
  double util_p50, util_p95, util_max, util_mean; /* % */
  double mem_p50, mem_p95, mem_max;               /* bytes */
  double idle_fraction; /* share of samples with utilization < GS_PLAN_IDLE_PCT */
};

/* The nearest-rank percentile p (0..100) of sorted[0..n-1]; NAN when n is 0. */
double gs_plan_percentile(const double *sorted, size_t n, double p);
/* The statistics of w's samples (after gs_plan_data_finish). -1 and *err when w has no
 * sample or memory runs out. */
int gs_plan_series_stats(const struct gs_plan_workload *w, struct gs_plan_stats *out,
                         gs_error_t *err);

/* ---- the rules (plan-recommend.c) ---- */

enum gs_plan_mechanism {
  GS_PLAN_DEDICATED,
  GS_PLAN_MIG,
  GS_PLAN_MPS,
  GS_PLAN_TIME_SLICE,
  GS_PLAN_FRACTION,
};

/* The default memory headroom over p95, in percent: the one source of `gpuslice plan
 * --headroom`'s default, its --help and docs/cli.md (GS_PLAN_HEADROOM_TEXT). */
#define GS_PLAN_HEADROOM_PCT 12
#define GS__PLAN_STR(x) #x
#define GS__PLAN_XSTR(x) GS__PLAN_STR(x)
#define GS_PLAN_HEADROOM_TEXT GS__PLAN_XSTR(GS_PLAN_HEADROOM_PCT) "%"

/* Every threshold of the rules, so that docs, flags and tests name the same numbers. */
struct gs_plan_rules {
  double headroom;          /* memory headroom over p95, 0.12 = 12% */
  double dedicated_p50;     /* p50 utilization (%) at or above which a workload stays whole */
  double training_mem_frac; /* large training: p95 memory above this share of the GPU ... */
  double training_p50;      /* ... and p50 utilization at or above this (%) */
  double timeslice_idle;    /* idle fraction at or above which a workload time-slices */
  double steady_spread;     /* steady: p95 - p50 utilization at most this many points ... */
  double steady_idle;       /* ... and idle fraction below this */
  double mps_util_p95;      /* MPS candidate: p95 utilization at most this (%) ... */
  double mps_mem_frac;      /* ... and memory with headroom at most this share of the GPU */
  int mps_min_group;        /* ... in a group of at least this many of one user */
  double idle_flag;         /* flagged idle: idle fraction at or above this */
};

void gs_plan_rules_default(struct gs_plan_rules *r);

/* The GPU model the plan is for. */
struct gs_plan_gpu {
  char model[24];                 /* canonical, as gs_gpu_model_canon gives it */
  uint64_t mem_bytes;             /* memory of one GPU */
  const struct gs_mig_table *mig; /* may be NULL: no MIG recommendations */
};

/* Canonicalizes model and finds its memory. -1 and *err for an unknown model. */
int gs_plan_gpu_init(struct gs_plan_gpu *g, const char *model, const struct gs_mig_table *mig,
                     gs_error_t *err);

struct gs_plan_rec {
  enum gs_plan_mechanism mech;
  bool idle;           /* idle fraction >= rules.idle_flag */
  uint64_t vram_bytes; /* p95 memory plus headroom */
  int compute_pct;     /* p95 utilization rounded up to a multiple of 5, at least 5 */
  int share_milli;     /* what packing counts: 1000 for dedicated, else the larger of the
                            memory and compute shares, in GPU-milli */
  const struct gs_mig_profile *profile; /* GS_PLAN_MIG only */
  int mps_group;                        /* GS_PLAN_MPS: the group's number (0-based), else -1 */
  char reason[256];                     /* one line naming the numbers that decided */
};

const char *gs_plan_mechanism_name(enum gs_plan_mechanism m);
/* One recommendation per workload of d (st[i] being workload i's statistics). The MPS
 * rule looks at all workloads at once: a user's small steady workloads share by MPS when
 * there are enough of them. The user is the label "user", else "namespace". */
int gs_plan_recommend(const struct gs_plan_data *d, const struct gs_plan_stats *st,
                      const struct gs_plan_gpu *gpu, const struct gs_plan_rules *rules,
                      struct gs_plan_rec *out, gs_error_t *err);

/* ---- the fleet (plan-fleet.c) ---- */

/* The GPUs that hold shares of share_milli[0..n-1] (1..1000 each) once packed with the
 * placement library's gpu-packing policy, largest first. -1 and *err on failure. */
int gs_plan_pack_gpus(const int *share_milli, size_t n, int *gpus, gs_error_t *err);

#define GS_PLAN_MAX_STEPS 8
#define GS_PLAN_HOURS_PER_MONTH 730.0

struct gs_plan_fleet {
  int gpus_today;           /* Σ label "gpus" (default 1) over workloads; one GPU named by label
                         "gpu" (a UUID) counts once however many workloads name it */
  int gpus_after;           /* gpus_dedicated + gpus_mig + gpus_shared */
  int gpus_dedicated;       /* whole GPUs of dedicated workloads */
  int gpus_mig;             /* GPUs of the MIG layout */
  int gpus_shared;          /* GPUs the MPS, time-slice and fraction workloads pack onto */
  struct gs_mig_layout mig; /* instances' demand index = index into mig_workload */
  int *mig_workload;        /* workload index of each MIG demand */
  double spot_fraction;     /* share of the packed demand that may run on spot */
  double commit_fraction;   /* share covered by a commitment */
  double monthly_before;    /* gpus_today at the on-demand rate */
  double monthly_after;     /* after every step of the stack */
  struct gs_cost_step steps[GS_PLAN_MAX_STEPS];
  int nsteps;
};

struct gs_plan_fleet_opts {
  const struct gs_price *price; /* on_demand must be known; spot and commit_1y may be NAN */
  double commit_cover;          /* share of the steady demand a commitment covers (0.7) */
};

int gs_plan_fleet(const struct gs_plan_data *d, const struct gs_plan_rec *rec,
                  const struct gs_plan_gpu *gpu, const struct gs_plan_fleet_opts *o,
                  struct gs_plan_fleet *out, gs_error_t *err);
void gs_plan_fleet_release(struct gs_plan_fleet *f);

#endif
