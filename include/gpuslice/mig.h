/* MIG (Multi-Instance GPU) profile tables and laying GPU instances onto GPUs.
 *
 * The model: a MIG GPU has 8 memory positions (0..7) and 7 compute slices. A GPU instance
 * of a profile occupies memory positions [start, start + mem_slices) and may only start at
 * the positions its profile allows. A set of instances on one GPU is valid when their
 * intervals are disjoint, their compute slices add up to at most 7, each profile's
 * max_instances holds, and at most one "+me" (media extensions) profile is present.
 * Placement matters, not just counts: a 3g at start 0 leaves three 1g slots, at start 4 four.
 *
 * Tables are CSV files in the format of data/mig/mig_gi_profiles.csv (columns found by
 * name: gpu, profile, compute_slices, mem_slices, max_instances, placements_start
 * ("0|2|4"), mem_gib; '#' lines are comments). A "?" in mem_gib is estimated as
 * mem_slices x the 1-slice profile's mem_gib of the same model (which errs low, so a fit
 * is never promised that the hardware cannot give), and flagged mem_estimated.
 * Model names go through gs_gpu_model_canon (gpuslice/gpu-model.h). */
#ifndef GS_MIG_H
#define GS_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/error.h>

#define GS_MIG_POSITIONS 8
#define GS_MIG_COMPUTE_SLICES 7

struct gs_mig_profile {
  char model[24]; /* canonical, e.g. "h100-80gb" */
  char name[24];  /* e.g. "3g.40gb", "1g.10gb+me" */
  int compute_slices, mem_slices, max_instances;
  uint8_t start_mask; /* bit p: may start at memory position p */
  double mem_gib;     /* usable memory in GiB */
  bool media;         /* a "+me" profile */
  bool mem_estimated; /* mem_gib was "?" in the table and is estimated (see above) */
};

struct gs_mig_table; /* opaque */

int gs_mig_table_default(struct gs_mig_table **out, gs_error_t *err); /* built-in, data/mig */
int gs_mig_table_load(const char *csv_path, struct gs_mig_table **out, gs_error_t *err);
/* Parses CSV text held in memory; name is used in error messages. */
int gs_mig_table_parse(const char *text, size_t len, const char *name, struct gs_mig_table **out,
                       gs_error_t *err);
void gs_mig_table_free(struct gs_mig_table *t);

/* The profiles of one model in table order; *n = 0 and NULL (with err) if it has none. */
const struct gs_mig_profile *gs_mig_profiles(const struct gs_mig_table *t, const char *model,
                                             size_t *n, gs_error_t *err);
/* By name ("3g.40gb") within a model; NULL with err if absent. */
const struct gs_mig_profile *gs_mig_profile_find(const struct gs_mig_table *t, const char *model,
                                                 const char *name, gs_error_t *err);

/* The smallest profile (fewest memory slices, then compute slices; "+me" profiles are
 * never chosen) whose memory holds `bytes`; NULL with err when none fits or the model has
 * no MIG. Headroom is the caller's business: pass p95 x 1.1 or so. */
const struct gs_mig_profile *gs_mig_smallest_fit(const struct gs_mig_table *t, const char *model,
                                                 uint64_t bytes, gs_error_t *err);

struct gs_mig_instance {
  const struct gs_mig_profile *p; /* points into the table: keep the table alive */
  int gpu;                        /* 0-based GPU in the layout */
  int start;                      /* memory position */
  int demand;                     /* index into the caller's demand list */
};

/* inst is sorted by (gpu, start). */
struct gs_mig_layout {
  int ngpus;
  int n;
  struct gs_mig_instance *inst;
};

/* Picks the smallest fitting profile for each demand (bytes) and lays the instances onto
 * as few GPUs as it can find (first-fit decreasing over GPUs; an exact search over start
 * positions within each GPU). Every GPU in the result is valid. Fails (with err naming the
 * demand) when a demand exceeds the largest profile. n = 0 gives an empty layout. */
int gs_mig_plan(const struct gs_mig_table *t, const char *model, const uint64_t *demand_bytes,
                int n, struct gs_mig_layout *out, gs_error_t *err);

/* Same, from profiles chosen by the caller (e.g. "2x 3g.40gb"). */
int gs_mig_plan_profiles(const struct gs_mig_profile *const *profiles, int n,
                         struct gs_mig_layout *out, gs_error_t *err);

/* Lays profiles p[0..n) onto one GPU beside the instances `fixed` (kept at their starts): 0
 * with each new instance's start in starts[] when the whole is a valid layout, -1 when it is
 * not possible. The same exact search as gs_mig_plan's. */
int gs_mig_place_around(const struct gs_mig_instance *fixed, int nfixed,
                        const struct gs_mig_profile *const *p, int n, int *starts);

/* Checks that one GPU's instances form a valid layout (see the top of this file).
 * Returns 0, or -1 with err saying which rule broke. */
int gs_mig_gpu_validate(const struct gs_mig_instance *inst, int n, gs_error_t *err);

void gs_mig_layout_free(struct gs_mig_layout *l);

#endif
