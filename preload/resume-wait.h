/* Resume on demand (resume-wait.c): a call of a suspended tenant's process that needs the GPU
 * (a launch, a synchronize, an allocation) first asks the node daemon to bring the tenant back
 * and waits until it runs (docs/suspend.md).
 *
 * The check is inline and costs a pointer load and one compare with the limits file's run
 * state while the tenant runs; only a tenant that is not running takes the call. */
#ifndef GS_PRELOAD_RESUME_WAIT_H
#define GS_PRELOAD_RESUME_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs-cuda.h"
#include <gpuslice/limits.h>

/* The run state to look at: the daemon's limits file's, once known; a word that always says
 * running for a process with no limits file; one that says not running until the first call
 * finds out (never NULL). */
extern const _Atomic uint32_t *_Atomic gs__run_state;

/* The slow path: finds the run state on the first call; while the tenant is suspended (or
 * being suspended or resumed) asks the daemon to resume it through the ledger and waits, at
 * most the limits file's resume_wait_ms. CUDA_SUCCESS once it runs; CUDA_ERROR_OUT_OF_MEMORY
 * when the daemon could not make room for it in time (logged once). */
CUresult gs__resume_wait_slow(void);

_Static_assert(GS_RUN_RUNNING == 0, "gs__running compares the run state with 0");

/* True when *w is 0: one compare with memory on x86-64, where a load is an acquire load
 * already (an atomic load there costs a load and a test). */
static inline bool gs__word_is_zero(const _Atomic uint32_t *w)
{
#if defined(__x86_64__)
  bool zero;
  __asm__ volatile("cmpl $0, %1" : "=@ccz"(zero) : "m"(*w));
  return zero;
#else
  return atomic_load_explicit(w, memory_order_acquire) == 0;
#endif
}

/* True while the tenant runs (or the process is no tenant), once the first call found out. */
static inline bool gs__running(void)
{
  return gs__word_is_zero(atomic_load_explicit(&gs__run_state, memory_order_acquire));
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
