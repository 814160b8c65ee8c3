/* Hooks that charge each CUDA context a reserve: the device memory a context takes for
 * itself (code, stacks, printf buffers) that no allocation call shows. The reserve comes
 * from the tenant's ledger (`gpuslice run --context-reserve`); when it is 0 these hooks only
 * pass through.
 *
 * The primary context is charged once per device per process however often it is retained,
 * as the driver keeps one primary context per device. */
#include <stdatomic.h>

#include "hooks.h"

static _Atomic int primary_refs[GS_LEDGER_MAX_GPUS];

void gs__ctx_after_fork(void)
{
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++)
    atomic_store(&primary_refs[i], 0);
}

static void undo_destroy(uint64_t ctx)
{
  gs__cuda.cuCtxDestroy_v2((CUcontext) (uintptr_t) ctx);
}

/* Charges a new context on dev, calls create, and remembers the context. */
static CUresult create(CUcontext *pctx, CUdevice dev, CUresult (*call)(void *), void *args)
{
  uint64_t bytes = gs__context_reserve();
  if (!bytes || !pctx) {
    CUresult rc = call(args);
    gs__ctx_changed(); /* a new context is made current */
    return rc;
  }
  CUresult rc = gs__charge(dev, bytes, "a context reserve");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = call(args);
  gs__ctx_changed();
  return gs__settle(rc, GS_MAP_CTX, rc == CUDA_SUCCESS ? (uintptr_t) *pctx : 0, bytes, dev,
                    undo_destroy);
}

struct create_args {
  CUcontext *pctx;
  unsigned int flags;
  CUdevice dev;
  CUexecAffinityParam *params;
  int nparams;
  CUctxCreateParams *cparams;
};

static CUresult call_v2(void *a)
{
  struct create_args *c = a;
  return gs__cuda.cuCtxCreate_v2(c->pctx, c->flags, c->dev);
}

static CUresult call_v3(void *a)
{
  struct create_args *c = a;
  return gs__cuda.cuCtxCreate_v3(c->pctx, c->params, c->nparams, c->flags, c->dev);
}

static CUresult call_v4(void *a)
{
  struct create_args *c = a;
  return gs__cuda.cuCtxCreate_v4(c->pctx, c->cparams, c->flags, c->dev);
}

GS_HOOK CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
  GS_REAL_OR_FAIL(cuCtxCreate_v2);
  struct create_args a = { .pctx = pctx, .flags = flags, .dev = dev };
  return create(pctx, dev, call_v2, &a);
}

GS_HOOK CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int nparams,
                                unsigned int flags, CUdevice dev)
{
  GS_REAL_OR_FAIL(cuCtxCreate_v3);
  struct create_args a = {
    .pctx = pctx, .flags = flags, .dev = dev, .params = params, .nparams = nparams
  };
  return create(pctx, dev, call_v3, &a);
}

GS_HOOK CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *cparams, unsigned int flags,
                                CUdevice dev)
{
  GS_REAL_OR_FAIL(cuCtxCreate_v4);
  struct create_args a = { .pctx = pctx, .flags = flags, .dev = dev, .cparams = cparams };
  return create(pctx, dev, call_v4, &a);
}

GS_HOOK CUresult cuCtxDestroy_v2(CUcontext ctx)
{
  uint64_t charge = 0;
  GS_REAL_OR_FAIL(cuCtxDestroy_v2);
  bool ours = gs__forget(GS_MAP_CTX, (uintptr_t) ctx, &charge);
  CUresult rc = gs__cuda.cuCtxDestroy_v2(ctx);
  gs__ctx_changed(); /* it may have been current */
  return gs__settle_free(rc, GS_MAP_CTX, (uintptr_t) ctx, ours, charge);
}

GS_HOOK CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
  GS_REAL_OR_FAIL(cuDevicePrimaryCtxRetain);
  uint64_t bytes = gs__context_reserve();
  if (!bytes || dev < 0 || dev >= GS_LEDGER_MAX_GPUS)
    return gs__cuda.cuDevicePrimaryCtxRetain(pctx, dev);
  if (atomic_fetch_add(&primary_refs[dev], 1) == 0) {
    CUresult rc = gs__charge(dev, bytes, "a context reserve");
    if (rc != CUDA_SUCCESS) {
      atomic_fetch_sub(&primary_refs[dev], 1);
      return rc;
    }
  }
  CUresult rc = gs__cuda.cuDevicePrimaryCtxRetain(pctx, dev);
  if (rc != CUDA_SUCCESS && atomic_fetch_sub(&primary_refs[dev], 1) == 1)
    gs__uncharge(dev, bytes);
  return rc;
}

/* After a successful release (one reference) or reset (all of them): the charge goes back
 * with the last reference. */
static CUresult primary_dropped(CUresult rc, CUdevice dev, bool all)
{
  uint64_t bytes = gs__context_reserve();
  if (rc != CUDA_SUCCESS || !bytes || dev < 0 || dev >= GS_LEDGER_MAX_GPUS)
    return rc;
  int before =
    all ? atomic_exchange(&primary_refs[dev], 0) : atomic_fetch_sub(&primary_refs[dev], 1);
  if (all ? before > 0 : before == 1)
    gs__uncharge(dev, bytes);
  return rc;
}

GS_HOOK CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
  GS_REAL_OR_FAIL(cuDevicePrimaryCtxRelease_v2);
  return primary_dropped(gs__cuda.cuDevicePrimaryCtxRelease_v2(dev), dev, false);
}

GS_HOOK CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
  GS_REAL_OR_FAIL(cuDevicePrimaryCtxReset_v2);
  return primary_dropped(gs__cuda.cuDevicePrimaryCtxReset_v2(dev), dev, true);
}
