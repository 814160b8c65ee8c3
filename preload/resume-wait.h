/* Resume on demand (resume-wait.c): a call of a suspended tenant's process that needs the GPU
 * (a launch, a synchronize, an allocation) first asks the node daemon to bring the tenant back
 * and waits until it runs (docs/suspend.md).
 *
 * The check is inline and costs a pointer load and one atomic load of the limits file's run
 * state while the tenant runs; only a tenant that is not running takes the call. */
#ifndef GS_PRELOAD_RESUME_WAIT_H
#define GS_PRELOAD_RESUME_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs-cuda.h"
#include <gpuslice/limits.h>

/* The run state to look at: the daemon's limits file's, once known; a word that always says
 * running for a process with no limits file; NULL until the first call finds out. */
extern const _Atomic uint32_t *_Atomic gs__run_state;

/* The slow path: finds the run state on the first call; while the tenant is suspended (or
 * being suspended or resumed) asks the daemon to resume it through the ledger and waits, at
 * most the limits file's resume_wait_ms. CUDA_SUCCESS once it runs; CUDA_ERROR_OUT_OF_MEMORY
 * when the daemon could not make room for it in time (logged once). */
CUresult gs__resume_wait_slow(void);

/* True while the tenant runs (or the process is no tenant), once the first call found out. */
static inline bool gs__running(void)
{
  const _Atomic uint32_t *s = atomic_load_explicit(&gs__run_state, memory_order_acquire);
  return __builtin_expect(s != NULL, 1) &&
    atomic_load_explicit(s, memory_order_acquire) == GS_RUN_RUNNING;
}

static inline CUresult gs__resume_wait(void)
{
  return gs__running() ? CUDA_SUCCESS : gs__resume_wait_slow();
}

/* The one line a hook starts with: returns the failure when the tenant could not be resumed. */
#define GS_RESUMED_OR_RETURN()             \
  do {                                     \
    CUresult resumed_ = gs__resume_wait(); \
    if (resumed_ != CUDA_SUCCESS)          \
      return resumed_;                     \
  } while (0)

#endif
