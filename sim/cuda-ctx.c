/* Contexts: primary contexts (retained and released per device), ordinary contexts, and each
 * thread's stack of current contexts.
 *
 * A context is never freed, only deactivated: threads may still hold it on their stacks, and
 * a stale handle must read as "destroyed", not as freed memory. Everything a context owns
 * (streams, events, modules, arrays, allocations) is freed when it is deactivated, as the
 * real driver does, and the device slot's context count (what NVML lists processes by)
 * follows activations. */
#include "cuda-internal.h"

#include <stdlib.h>
#include <string.h>

#define CTX_STACK_MAX 64

static __thread struct CUctx_st *tls_stack[CTX_STACK_MAX];
static __thread int tls_depth;

static const size_t default_limits[] = {
  [CU_LIMIT_STACK_SIZE] = 1024,
  [CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
  [CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
  [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
  [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
  [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
  [CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
  [CU_LIMIT_SHMEM_SIZE] = 0,
  [CU_LIMIT_CIG_ENABLED] = 0,
  [CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED] = 0,
};
#define LIMIT_COUNT (sizeof(default_limits) / sizeof(default_limits[0]))

static struct CUctx_st *ctx_new(int dev, unsigned flags, bool primary)
{
  struct CUctx_st *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->dev = dev;
  c->flags = flags;
  c->primary = primary;
  c->id = ++gsc.next_id;
  memcpy(c->limits, default_limits, sizeof(default_limits));
  gsc_obj_add(&c->obj, GSC_CTX);
  return c;
}

CUresult gsc_ctx_activate(struct CUctx_st *c)
{
  c->legacy = gsc_stream_new(c, CU_STREAM_DEFAULT, 0);
  if (!c->legacy)
    return CUDA_ERROR_OUT_OF_MEMORY;
  c->legacy->legacy = true;
  c->active = true;
  struct gpusim_proc *self = gpusim_self();
  if (self)
    atomic_fetch_add(&self->contexts[gsc_phys(c->dev)], 1);
  return CUDA_SUCCESS;
}

void gsc_ctx_teardown(struct CUctx_st *c)
{
  if (!c->active)
    return;
  GSC_FOREACH(o, GSC_STREAM)
  if (((struct CUstream_st *) o)->ctx == c)
    gsc_stream_free((struct CUstream_st *) o);
  gsc_event_ctx_gone(c);
  gsc_module_ctx_gone(c);
  gsc_array_ctx_gone(c);
  for (struct gsc_alloc *a = gsc_alloc_first(), *n; a; a = n) {
    n = a->next;
    if (a->ctx == c)
      gsc_alloc_free(a);
  }
  c->active = false;
  c->legacy = NULL;
  struct gpusim_proc *self = gsc.forking ? NULL : gpusim_self();
  if (self)
    atomic_fetch_sub(&self->contexts[gsc_phys(c->dev)], 1);
}

void gsc_ctx_reset_thread(void)
{
  tls_depth = 0;
}

CUresult gsc_ctx_check(CUcontext ctx)
{
  struct CUctx_st *c = gsc_obj_find(ctx, GSC_CTX);
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  return c->active ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult gsc_ctx_current(struct CUctx_st **out)
{
  GSC_CHECK_INIT();
  if (tls_depth == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  GSC_LOCKED;
  GSC_TRY(gsc_ctx_check(tls_stack[tls_depth - 1]));
  *out = tls_stack[tls_depth - 1];
  return CUDA_SUCCESS;
}

/* ---- primary contexts ---- */

GSC_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
  GSC_ENTER_DEV_OUT(dev, pctx);
  struct CUctx_st *c = gsc.primary[dev];
  if (!c && !(c = gsc.primary[dev] = ctx_new(dev, 0, true)))
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (!c->active)
    GSC_TRY(gsc_ctx_activate(c));
  c->refs++;
  *pctx = c;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  GSC_LOCKED;
  struct CUctx_st *c = gsc.primary[dev];
  if (!c || c->refs == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (--c->refs == 0)
    gsc_ctx_teardown(c);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
  return cuDevicePrimaryCtxRelease_v2(dev);
}

GSC_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  GSC_LOCKED;
  struct CUctx_st *c = gsc.primary[dev];
  if (c) {
    gsc_ctx_teardown(c);
    c->refs = 0;
    c->flags = 0;
  }
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
  return cuDevicePrimaryCtxReset_v2(dev);
}

GSC_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!flags || !active)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  struct CUctx_st *c = gsc.primary[dev];
  *flags = c ? c->flags : 0;
  *active = c && c->active;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
  GSC_TRY(gsc_dev_check(dev));
  if (flags & ~(unsigned) CU_CTX_FLAGS_MASK)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  if (!gsc.primary[dev] && !(gsc.primary[dev] = ctx_new(dev, 0, true)))
    return CUDA_ERROR_OUT_OF_MEMORY;
  gsc.primary[dev]->flags = flags;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

/* ---- ordinary contexts ---- */

static CUresult ctx_push(struct CUctx_st *c)
{
  if (tls_depth == CTX_STACK_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  tls_stack[tls_depth++] = c;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!pctx || (flags & ~(unsigned) CU_CTX_FLAGS_MASK))
    return CUDA_ERROR_INVALID_VALUE;
  /* Execution affinity is accepted and ignored; shared-data (CIG) contexts are not modelled. */
  if (ctxCreateParams && ctxCreateParams->cigParams)
    return CUDA_ERROR_NOT_SUPPORTED;
  GSC_LOCKED;
  struct CUctx_st *c = ctx_new(dev, flags, false);
  if (!c)
    return CUDA_ERROR_OUT_OF_MEMORY;
  GSC_TRY(gsc_ctx_activate(c));
  GSC_TRY(ctx_push(c));
  *pctx = c;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
  if (numParams < 0 || (numParams > 0 && !paramsArray))
    return CUDA_ERROR_INVALID_VALUE;
  CUctxCreateParams params = { paramsArray, numParams, NULL };
  return cuCtxCreate_v4(pctx, &params, flags, dev);
}

GSC_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
  return cuCtxCreate_v4(pctx, NULL, flags, dev);
}

GSC_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
  return cuCtxCreate_v4(pctx, NULL, flags, dev);
}

GSC_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
  GSC_ENTER();
  struct CUctx_st *c = gsc_obj_find(ctx, GSC_CTX);
  if (!c || !c->active || c->primary)
    return CUDA_ERROR_INVALID_CONTEXT;
  gsc_ctx_teardown(c);
  /* The calling thread stops seeing it; other threads find it destroyed. */
  int keep = 0;
  for (int i = 0; i < tls_depth; i++)
    if (tls_stack[i] != c)
      tls_stack[keep++] = tls_stack[i];
  tls_depth = keep;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxDestroy(CUcontext ctx)
{
  return cuCtxDestroy_v2(ctx);
}

/* ---- the current-context stack ---- */

GSC_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
  GSC_CHECK_INIT();
  if (!ctx) {
    if (tls_depth > 0)
      tls_depth--;
    return CUDA_SUCCESS;
  }
  GSC_LOCKED;
  GSC_TRY(gsc_ctx_check(ctx));
  if (tls_depth == 0)
    return ctx_push(ctx);
  tls_stack[tls_depth - 1] = ctx;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
  GSC_CHECK_INIT();
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  *pctx = tls_depth ? tls_stack[tls_depth - 1] : NULL;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
  GSC_ENTER();
  GSC_TRY(gsc_ctx_check(ctx));
  return ctx_push(ctx);
}

GSC_API CUresult cuCtxPushCurrent(CUcontext ctx)
{
  return cuCtxPushCurrent_v2(ctx);
}

GSC_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
  GSC_CHECK_INIT();
  if (tls_depth == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  struct CUctx_st *c = tls_stack[--tls_depth];
  if (pctx)
    *pctx = c;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
  return cuCtxPopCurrent_v2(pctx);
}

/* The context a call names, or the current one when it names none. */
static CUresult ctx_or_current(CUcontext ctx, struct CUctx_st **out)
{
  if (!ctx)
    return gsc_ctx_current(out);
  GSC_LOCKED;
  GSC_TRY(gsc_ctx_check(ctx));
  *out = ctx;
  return CUDA_SUCCESS;
}

/* The checks of a query about a context (NULL for the current one) that answers through
 * answer: the driver is initialized, answer is given, the context is live. */
static CUresult ctx_query(CUcontext ctx, const void *answer, struct CUctx_st **out)
{
  GSC_CHECK_INIT();
  if (!answer)
    return CUDA_ERROR_INVALID_VALUE;
  return ctx_or_current(ctx, out);
}

GSC_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
  struct CUctx_st *c;
  GSC_TRY(ctx_query(ctx, device, &c));
  *device = c->dev;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxGetDevice(CUdevice *device)
{
  return cuCtxGetDevice_v2(device, NULL);
}

GSC_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
  struct CUctx_st *c;
  GSC_CHECK_INIT();
  GSC_TRY(ctx_or_current(ctx, &c));
  gsc_lock();
  uint64_t t = gsc_ctx_tail_ns(c);
  gsc_unlock();
  gsc_wait_until(c->dev, t);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxSynchronize(void)
{
  return cuCtxSynchronize_v2(NULL);
}

GSC_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
  struct CUctx_st *c;
  GSC_TRY(ctx_query(ctx, version, &c));
  *version = GS_CUDA_VERSION;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
  struct CUctx_st *c;
  GSC_TRY(ctx_query(ctx, ctxId, &c));
  *ctxId = c->id;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxGetFlags(unsigned int *flags)
{
  struct CUctx_st *c;
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_ctx_current(&c));
  *flags = c->flags;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxSetFlags(unsigned int flags)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (flags & ~(unsigned) CU_CTX_FLAGS_MASK)
    return CUDA_ERROR_INVALID_VALUE;
  c->flags = flags;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
  GSC_CHECK_INIT();
  if (leastPriority)
    *leastPriority = 0;
  if (greatestPriority)
    *greatestPriority = -5;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
  struct CUctx_st *c;
  if (!pvalue)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_ctx_current(&c));
  if ((unsigned) limit >= LIMIT_COUNT)
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
  *pvalue = c->limits[limit];
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if ((unsigned) limit >= LIMIT_COUNT)
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
  c->limits[limit] = value;
  return CUDA_SUCCESS;
}
