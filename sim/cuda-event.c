/* Events in virtual time. Recording an event stamps it with the time the work queued before
 * it completes (the stream's tail, or now if the stream is idle); querying compares that with
 * the clock, synchronizing sleeps until it, and elapsed time is the difference of two stamps.
 *
 * A record on a capturing stream succeeds and stamps nothing: captured graphs replay in
 * capture order, so the event would add no ordering. */
#include "cuda-internal.h"

#include <stdlib.h>

#define EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

GSC_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!phEvent || (Flags & ~(unsigned) EVENT_FLAGS))
    return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st *e = calloc(1, sizeof(*e));
  if (!e)
    return CUDA_ERROR_OUT_OF_MEMORY;
  e->ctx = c;
  e->flags = Flags;
  GSC_LOCKED;
  gsc_obj_add(&e->obj, GSC_EVENT);
  *phEvent = e;
  return CUDA_SUCCESS;
}

static void event_free(void *p)
{
  struct CUevent_st *e = p;
  gsc_obj_free(&e->obj);
}

void gsc_event_ctx_gone(struct CUctx_st *c)
{
  gsc_obj_free_owned(GSC_EVENT, offsetof(struct CUevent_st, ctx), c, event_free);
}

GSC_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
  return gsc_obj_destroy(hEvent, GSC_EVENT, event_free, CUDA_ERROR_INVALID_HANDLE);
}

GSC_API CUresult cuEventDestroy(CUevent hEvent)
{
  return cuEventDestroy_v2(hEvent);
}

static CUresult event_record(CUevent hEvent, CUstream hStream, unsigned int flags, bool per_thread)
{
  struct CUstream_st *s;
  GSC_CHECK_INIT();
  if (flags & ~(unsigned) CU_EVENT_RECORD_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  struct CUevent_st *e = gsc_obj_find(hEvent, GSC_EVENT);
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  GSC_TRY(gsc_stream_get(hStream, per_thread, &s));
  if (s->ctx != e->ctx)
    return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture)
    return CUDA_SUCCESS;
  e->time_ns = gsc_max(gpusim_now_ns(), gsc_stream_ready_ns(s));
  e->recorded = true;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
  return event_record(hEvent, hStream, 0, false);
}

GSC_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
  return event_record(hEvent, hStream, 0, true);
}

GSC_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
  return event_record(hEvent, hStream, flags, false);
}

GSC_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
  return event_record(hEvent, hStream, flags, true);
}

/* An event never recorded counts as complete, as in the real driver. */
GSC_API CUresult cuEventQuery(CUevent hEvent)
{
  GSC_ENTER();
  struct CUevent_st *e = gsc_obj_find(hEvent, GSC_EVENT);
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  return e->recorded && gpusim_now_ns() < e->time_ns ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

GSC_API CUresult cuEventSynchronize(CUevent hEvent)
{
  GSC_CHECK_INIT();
  gsc_lock();
  struct CUevent_st *e = gsc_obj_find(hEvent, GSC_EVENT);
  uint64_t t = e && e->recorded ? e->time_ns : 0;
  int dev = e ? e->ctx->dev : 0;
  gsc_unlock();
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  gsc_wait_until(dev, t);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
  GSC_ENTER_OUT(pMilliseconds);
  struct CUevent_st *a = gsc_obj_find(hStart, GSC_EVENT), *b = gsc_obj_find(hEnd, GSC_EVENT);
  if (!a || !b || !a->recorded || !b->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
    return CUDA_ERROR_INVALID_HANDLE;
  uint64_t now = gpusim_now_ns();
  if (now < a->time_ns || now < b->time_ns)
    return CUDA_ERROR_NOT_READY;
  double ms = ((double) b->time_ns - (double) a->time_ns) / 1e6;
  *pMilliseconds = (float) ms;
  return CUDA_SUCCESS;
}

/* The 2.0 ABI has the same shape; only its rounding of timestamps differed. */
GSC_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
