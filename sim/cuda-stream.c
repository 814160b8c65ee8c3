/* Streams in virtual time. A stream is a tail: the time its last queued operation ends on
 * the device timeline. Launching appends after the tail; synchronizing sleeps until it.
 *
 * The special handles: NULL is the context's legacy stream (or, through the _ptsz/_ptds
 * entry points, the calling thread's per-thread stream); CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD name those explicitly. As in the real driver, work on the legacy
 * stream waits for all blocking streams of its context, and work on a blocking stream waits
 * for the legacy stream; CU_STREAM_NON_BLOCKING streams wait for neither. */
#include "cuda-internal.h"

#include <stdlib.h>

struct per_thread_entry {
  struct CUctx_st *ctx;
  unsigned long long ctx_id;
  struct CUstream_st *s;
};

#define PER_THREAD_MAX 8
static __thread struct per_thread_entry tls_pt[PER_THREAD_MAX];
static __thread unsigned tls_pt_next;

struct CUstream_st *gsc_stream_new(struct CUctx_st *c, unsigned flags, int priority)
{
  struct CUstream_st *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->ctx = c;
  s->flags = flags;
  s->priority = priority;
  s->id = ++gsc.next_id;
  gsc_obj_add(&s->obj, GSC_STREAM);
  return s;
}

void gsc_stream_free(struct CUstream_st *s)
{
  gsc_obj_free(&s->obj);
}

static struct CUstream_st *per_thread_stream(struct CUctx_st *c)
{
  for (int i = 0; i < PER_THREAD_MAX; i++) {
    struct per_thread_entry *e = &tls_pt[i];
    if (e->ctx == c && e->ctx_id == c->id && gsc_obj_find(e->s, GSC_STREAM) && e->s->ctx == c &&
        e->s->per_thread)
      return e->s;
  }
  struct CUstream_st *s = gsc_stream_new(c, CU_STREAM_DEFAULT, 0);
  if (!s)
    return NULL;
  s->per_thread = true;
  tls_pt[tls_pt_next++ % PER_THREAD_MAX] = (struct per_thread_entry){ c, c->id, s };
  return s;
}

CUresult gsc_stream_get(CUstream h, bool per_thread, struct CUstream_st **out)
{
  struct CUctx_st *c;
  if (h && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD) {
    GSC_CHECK_INIT();
    struct CUstream_st *s = gsc_obj_find(h, GSC_STREAM);
    if (!s)
      return CUDA_ERROR_INVALID_HANDLE;
    *out = s;
    return CUDA_SUCCESS;
  }
  GSC_TRY(gsc_ctx_current(&c));
  if (h == CU_STREAM_PER_THREAD || (!h && per_thread))
    *out = per_thread_stream(c);
  else
    *out = c->legacy;
  return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static bool blocking(const struct CUstream_st *s)
{
  return !(s->flags & CU_STREAM_NON_BLOCKING);
}

uint64_t gsc_stream_ready_ns(const struct CUstream_st *s)
{
  uint64_t t = s->tail_ns;
  if (s->legacy) {
    GSC_FOREACH(o, GSC_STREAM)
    {
      const struct CUstream_st *other = (const struct CUstream_st *) o;
      if (other->ctx == s->ctx && blocking(other))
        t = gsc_max(t, other->tail_ns);
    }
  } else if (blocking(s) && s->ctx->legacy) {
    t = gsc_max(t, s->ctx->legacy->tail_ns);
  }
  return t;
}

uint64_t gsc_ctx_tail_ns(const struct CUctx_st *c)
{
  uint64_t t = 0;
  GSC_FOREACH(o, GSC_STREAM)
  if (((const struct CUstream_st *) o)->ctx == c)
    t = gsc_max(t, ((const struct CUstream_st *) o)->tail_ns);
  return t;
}

void gsc_wait_until(int dev, uint64_t t)
{
  if (t > gpusim_now_ns())
    gpusim_sleep_until(t);
  GSC_LOCKED;
  gsc_pools_settle(dev);
}

/* ---- synchronization ---- */

CUresult gsc_stream_sync(CUstream h, bool per_thread)
{
  struct CUstream_st *s;
  gsc_lock();
  CUresult r = gsc_stream_get(h, per_thread, &s);
  if (r == CUDA_SUCCESS && s->capture)
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  uint64_t t = r == CUDA_SUCCESS ? gsc_stream_ready_ns(s) : 0;
  int dev = r == CUDA_SUCCESS ? s->ctx->dev : 0;
  gsc_unlock();
  if (r == CUDA_SUCCESS)
    gsc_wait_until(dev, t);
  return r;
}

GSC_API CUresult cuStreamSynchronize(CUstream hStream)
{
  return gsc_stream_sync(hStream, false);
}

GSC_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
  return gsc_stream_sync(hStream, true);
}

static CUresult stream_query(CUstream h, bool per_thread)
{
  struct CUstream_st *s;
  GSC_LOCKED;
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  return gpusim_now_ns() < gsc_stream_ready_ns(s) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

GSC_API CUresult cuStreamQuery(CUstream hStream)
{
  return stream_query(hStream, false);
}

GSC_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
  return stream_query(hStream, true);
}

/* While a stream captures, a wait adds nothing: captured graphs replay in capture order. */
static CUresult stream_wait_event(CUstream h, CUevent hEvent, unsigned int flags, bool per_thread)
{
  struct CUstream_st *s;
  if (flags & ~(unsigned) CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  struct CUevent_st *e = gsc_obj_find(hEvent, GSC_EVENT);
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  if (e->recorded && !s->capture)
    s->tail_ns = gsc_max(s->tail_ns, e->time_ns);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
  return stream_wait_event(hStream, hEvent, Flags, false);
}

GSC_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
  return stream_wait_event(hStream, hEvent, Flags, true);
}

/* ---- creation and destruction ---- */

GSC_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!phStream || (flags & ~(unsigned) CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  /* Out-of-range priorities are clamped, as the real driver does. */
  priority = priority > 0 ? 0 : priority < -5 ? -5 : priority;
  GSC_LOCKED;
  struct CUstream_st *s = gsc_stream_new(c, flags, priority);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *phStream = s;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
  return cuStreamCreateWithPriority(phStream, Flags, 0);
}

/* Work already queued still runs: it is on the device timeline, not in the stream. */
GSC_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
  GSC_ENTER();
  struct CUstream_st *s = gsc_obj_find(hStream, GSC_STREAM);
  if (!s || s->legacy || s->per_thread)
    return CUDA_ERROR_INVALID_HANDLE;
  gsc_stream_free(s);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuStreamDestroy(CUstream hStream)
{
  return cuStreamDestroy_v2(hStream);
}

/* ---- queries ---- */

static CUresult stream_info(CUstream h, bool per_thread, int *priority, unsigned *flags,
                            CUcontext *ctx)
{
  struct CUstream_st *s;
  GSC_LOCKED;
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  if (priority)
    *priority = s->priority;
  if (flags)
    *flags = s->flags;
  if (ctx)
    *ctx = s->ctx;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
  return priority ? stream_info(hStream, false, priority, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
  return priority ? stream_info(hStream, true, priority, NULL, NULL) : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
  return flags ? stream_info(hStream, false, NULL, flags, NULL) : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
  return flags ? stream_info(hStream, true, NULL, flags, NULL) : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
  return pctx ? stream_info(hStream, false, NULL, NULL, pctx) : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
  return pctx ? stream_info(hStream, true, NULL, NULL, pctx) : CUDA_ERROR_INVALID_VALUE;
}

/* There are no green contexts here: the stream's context is always an ordinary one. */
GSC_API CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
  if (!pCtx || !pGreenCtx)
    return CUDA_ERROR_INVALID_VALUE;
  *pGreenCtx = NULL;
  return stream_info(hStream, false, NULL, NULL, pCtx);
}

GSC_API CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
  if (!pCtx || !pGreenCtx)
    return CUDA_ERROR_INVALID_VALUE;
  *pGreenCtx = NULL;
  return stream_info(hStream, true, NULL, NULL, pCtx);
}
