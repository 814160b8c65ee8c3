/* GPU model names: one canonical spelling for each model, whatever wrote the name (the
 * simulator, the MIG and price tables, NVML). lib/gpu-model.c. Only names: what a model can
 * do lives in the MIG table (gpuslice/mig.h) and the simulator's catalogue. */
#ifndef GS_GPU_MODEL_H
#define GS_GPU_MODEL_H

#include <stddef.h>

#include <gpuslice/error.h>

/* Normalizes a model name to gpuslice's canonical spelling: "h100-80gb", "t4", ...
 * Accepts the simulator's names, the data files' spellings ("H100-80GB(SXM5 HBM3)",
 * "T4-16GB") and NVML names ("NVIDIA H100 80GB HBM3", "Tesla T4", "NVIDIA A100-SXM4-40GB"),
 * case-insensitively. Unknown or ambiguous names fail with a message listing the known
 * models. Returns 0, or -1 with *err. */
int gs_gpu_model_canon(const char *in, char *out, size_t len, gs_error_t *err);

/* The canonical names known, NULL-terminated. */
const char *const *gs_gpu_models(void);

#endif
