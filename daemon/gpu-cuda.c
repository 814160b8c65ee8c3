/* The CUDA driver in the daemon, for suspending tenants (suspend.c): the checkpoint API of
 * CUDA 12.8 (driver r570) on other processes, and memory the daemon holds for a suspended
 * tenant when suspended memory is not lent out.
 *
 * Loaded at run time, and only at the first suspend: cuInit makes driver state the daemon
 * does not otherwise need. The library is the one include/gpuslice/driver.h picks, the
 * simulator's when GPUSLICE_SIM is set, as for NVML (gpu-nvml.c); its functions are resolved
 * once into a table (abi/gs-cuda.h declares them). A driver older than r570 lacks the
 * checkpoint entry points: then suspending is refused, with that reason, and nothing else
 * changes. */
#include "daemon.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-cuda.h"

struct cuda_fns {
  CUresult (*init)(unsigned int);
  CUresult (*error_name)(CUresult, const char **);
  CUresult (*get_state)(int, CUprocessState *);
  CUresult (*lock)(int, CUcheckpointLockArgs *);
  CUresult (*checkpoint)(int, CUcheckpointCheckpointArgs *);
  CUresult (*restore)(int, CUcheckpointRestoreArgs *);
  CUresult (*unlock)(int, CUcheckpointUnlockArgs *);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*ctx_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_push)(CUcontext);
  CUresult (*ctx_pop)(CUcontext *);
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
};

struct cuda {
  void *lib;
  struct cuda_fns fn;
  CUcontext ctx[GS_LEDGER_MAX_GPUS]; /* primary contexts, retained at the first hold */
};

static const struct gs_driver_sym syms[] = {
  { offsetof(struct cuda_fns, init), "cuInit" },
  { offsetof(struct cuda_fns, error_name), "cuGetErrorName" },
  { offsetof(struct cuda_fns, get_state), "cuCheckpointProcessGetState" },
  { offsetof(struct cuda_fns, lock), "cuCheckpointProcessLock" },
  { offsetof(struct cuda_fns, checkpoint), "cuCheckpointProcessCheckpoint" },
  { offsetof(struct cuda_fns, restore), "cuCheckpointProcessRestore" },
  { offsetof(struct cuda_fns, unlock), "cuCheckpointProcessUnlock" },
  { offsetof(struct cuda_fns, device_get), "cuDeviceGet" },
  { offsetof(struct cuda_fns, ctx_retain), "cuDevicePrimaryCtxRetain" },
  { offsetof(struct cuda_fns, ctx_push), "cuCtxPushCurrent_v2" },
  { offsetof(struct cuda_fns, ctx_pop), "cuCtxPopCurrent_v2" },
  { offsetof(struct cuda_fns, mem_alloc), "cuMemAlloc_v2" },
  { offsetof(struct cuda_fns, mem_free), "cuMemFree_v2" },
};
_Static_assert(sizeof(syms) / sizeof(syms[0]) == sizeof(struct cuda_fns) / sizeof(void (*)(void)),
               "one symbol per table entry");

int cuda_open(struct cuda **out, gs_error_t *err)
{
  _cleanup_free_ char *path = NULL;
  const char *missing = NULL;
  struct cuda *c = xcalloc(1, sizeof(*c));
  c->lib = gs_driver_open(GS_DRIVER_LIB_CUDA, &path, err);
  if (!c->lib) {
    gs_error_prepend(err, "the CUDA driver");
    free(c);
    return -1;
  }
  CUresult r = CUDA_SUCCESS;
  size_t n = sizeof(syms) / sizeof(syms[0]);
  if (gs_driver_resolve(c->lib, syms, n, n, &c->fn, &missing) < 0)
    gs_make_error(err, 0, "%s has no %s: suspending needs driver r570 (CUDA 12.8) or later", path,
                  missing);
  else if ((r = c->fn.init(0)) != CUDA_SUCCESS)
    gs_make_error(err, 0, "cuInit: %s", cuda_error_name(c, r));
  if (*err) {
    dlclose(c->lib);
    free(c);
    return -1;
  }
  *out = c;
  return 0;
}

void cuda_close(struct cuda *c)
{
  if (!c)
    return;
  dlclose(c->lib);
  free(c);
}

const char *cuda_error_name(const struct cuda *c, CUresult r)
{
  const char *name = NULL;
  if (c && c->fn.error_name && c->fn.error_name(r, &name) == CUDA_SUCCESS && name)
    return name;
  return "CUDA_ERROR_UNKNOWN";
}

CUresult cuda_proc_state(struct cuda *c, pid_t pid, CUprocessState *state)
{
  return c->fn.get_state((int) pid, state);
}

CUresult cuda_proc_lock(struct cuda *c, pid_t pid, unsigned timeout_ms)
{
  CUcheckpointLockArgs a;
  memset(&a, 0, sizeof(a));
  a.timeoutMs = timeout_ms;
  return c->fn.lock((int) pid, &a);
}

CUresult cuda_proc_checkpoint(struct cuda *c, pid_t pid)
{
  return c->fn.checkpoint((int) pid, NULL);
}

CUresult cuda_proc_restore(struct cuda *c, pid_t pid)
{
  return c->fn.restore((int) pid, NULL);
}

CUresult cuda_proc_unlock(struct cuda *c, pid_t pid)
{
  return c->fn.unlock((int) pid, NULL);
}

/* Runs on gpu's primary context, retained once and kept. */
static CUresult push_gpu(struct cuda *c, int gpu)
{
  CUdevice dev;
  CUresult r;
  if (!c->ctx[gpu] &&
      ((r = c->fn.device_get(&dev, gpu)) != CUDA_SUCCESS ||
       (r = c->fn.ctx_retain(&c->ctx[gpu], dev)) != CUDA_SUCCESS))
    return r;
  return c->fn.ctx_push(c->ctx[gpu]);
}

CUresult cuda_hold(struct cuda *c, int gpu, uint64_t bytes, uint64_t *handle)
{
  CUcontext popped;
  CUdeviceptr p = 0;
  CUresult r = push_gpu(c, gpu);
  if (r != CUDA_SUCCESS)
    return r;
  r = c->fn.mem_alloc(&p, (size_t) bytes);
  c->fn.ctx_pop(&popped);
  *handle = r == CUDA_SUCCESS ? (uint64_t) p : 0;
  return r;
}

void cuda_release(struct cuda *c, int gpu, uint64_t handle)
{
  CUcontext popped;
  if (!handle || push_gpu(c, gpu) != CUDA_SUCCESS)
    return;
  c->fn.mem_free((CUdeviceptr) handle);
  c->fn.ctx_pop(&popped);
}
