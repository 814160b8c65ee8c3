/* Trace variants: the sharing-heavy, GPU-spec-heavy and multi-GPU-heavy pod lists that the
 * FGD paper's artifact derives from the default openb trace (docs/placement.md, "Trace
 * variants"), generated here from any pod list with a seed, so that placement can be
 * developed on workloads the shipped traces do not cover.
 *
 * - gpushareNN: the CPU-only pods stay; the GPU pods are redrawn, as many as before, so
 *   that sharing pods (one GPU, part of it) ask for NN% of the GPU request.
 * - gpuspecNN: NN% of the GPU pods are constrained to GPU models, drawn from the
 *   constraint mix of the production cluster (a model that has a node that can hold the pod).
 * - multigpuNN: pods drawn from the multi-GPU pods are appended until multi-GPU pods ask
 *   for NN% of the GPU request.
 * The same pod list, variant and seed always give the same pods. */
#ifndef GS_TRACE_VARIANT_H
#define GS_TRACE_VARIANT_H

#include <stdint.h>

#include <gpuslice/error.h>
#include <gpuslice/trace-openb.h>

enum gs_variant_kind {
  GS_VARIANT_GPUSHARE,
  GS_VARIANT_GPUSPEC,
  GS_VARIANT_MULTIGPU,
};

struct gs_trace_variant {
  enum gs_variant_kind kind;
  int percent; /* 0..100 for gpushare and gpuspec, 0..99 for multigpu */
};

/* Parses "gpushare60", "gpuspec33" or "multigpu50". -1 and *err naming it otherwise. */
int gs_trace_variant_parse(const char *name, struct gs_trace_variant *out, gs_error_t *err);

/* Makes the variant of base in *out (free it with gs_openb_pods_release). nodes is the
 * cluster the gpuspec constraints must fit. -1 and *err when base lacks the pods the
 * variant draws from (no sharing pods for gpushare, no multi-GPU pods for multigpu). */
int gs_trace_variant_make(const struct gs_openb_pods *base, const struct gs_openb_nodes *nodes,
                          const struct gs_trace_variant *v, uint64_t seed,
                          struct gs_openb_pods *out, gs_error_t *err);

#endif
