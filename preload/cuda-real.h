/* The real CUDA driver, as the interposer reaches it: one table of function pointers,
 * resolved once, on first need. Wrappers call through this table and never call dlsym. */
#ifndef GS_PRELOAD_CUDA_REAL_H
#define GS_PRELOAD_CUDA_REAL_H

#include "gs-cuda.h"

struct gs_cuda_real {
  CUresult (*cuInit)(unsigned int flags);
  CUresult (*cuDriverGetVersion)(int *version);
};

/* The resolved table, or NULL when libcuda.so.1 cannot be loaded or lacks a symbol the
 * table needs (logged once). Thread-safe; the work happens on the first call only. */
const struct gs_cuda_real *gs__cuda_real(void);

#endif
