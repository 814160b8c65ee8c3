/* Copies and sets. Device memory is host memory here, so the data moves with memmove/memset
 * once the device side has been checked to lie inside one allocation (a bad range is
 * CUDA_ERROR_INVALID_VALUE, never a fault).
 *
 * Timing: a synchronous copy first waits for the work its context's legacy stream would
 * wait for, as the real one does; the copy itself takes no device time. An asynchronous copy
 * moves the data at once: kernels here compute nothing, so no ordering with them is visible.
 * Async copies and sets on a capturing stream are not captured: they fail with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. The 32-bit pointer ABI fails with NOT_SUPPORTED. */
#include "cuda-internal.h"

#include <string.h>

enum dir { HTOD, DTOH, DTOD, ANY };

/* One side of a copy: device pointers must lie in a device allocation; with unified
 * addressing (ANY) a pointer the table does not know is taken as host memory. */
static CUresult side_check(uintptr_t p, size_t n, bool device, bool unified)
{
  struct gsc_alloc *a = gsc_alloc_find(p, n);
  if (device && !unified)
    return a && a->kind != GSC_MEM_HOST ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  if (unified && !a && gsc_alloc_find(p, 0))
    return CUDA_ERROR_INVALID_VALUE; /* starts inside an allocation but runs past its end */
  return CUDA_SUCCESS;
}

static CUresult copy_check(enum dir d, uintptr_t dst, uintptr_t src, size_t n)
{
  bool unified = d == ANY;
  GSC_TRY(side_check(dst, n, d == HTOD || d == DTOD, unified));
  return side_check(src, n, d == DTOH || d == DTOD, unified);
}

/* What a synchronous operation waits for before it runs. */
static CUresult sync_wait(void)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  gsc_lock();
  uint64_t t = gsc_stream_ready_ns(c->legacy);
  gsc_unlock();
  gsc_wait_until(c->dev, t);
  return CUDA_SUCCESS;
}

static CUresult async_stream(CUstream h, bool per_thread)
{
  struct CUstream_st *s;
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  return s->capture ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

struct op {
  bool async, per_thread;
  CUstream stream;
};

static const struct op SYNC = { false, false, NULL };
static const struct op SYNC_PT = { false, true, NULL };

static CUresult copy(enum dir d, uintptr_t dst, uintptr_t src, size_t n, struct op op)
{
  GSC_CHECK_INIT();
  if (!op.async)
    GSC_TRY(sync_wait());
  GSC_LOCKED;
  if (op.async)
    GSC_TRY(async_stream(op.stream, op.per_thread));
  if (n == 0)
    return CUDA_SUCCESS;
  GSC_TRY(copy_check(d, dst, src, n));
  memmove((void *) dst, (const void *) src, n);
  return CUDA_SUCCESS;
}

static struct op async_op(CUstream h, bool per_thread)
{
  return (struct op){ true, per_thread, h };
}

#define U(p) ((uintptr_t) (p))

GSC_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
  return copy(ANY, dst, src, n, SYNC);
}
GSC_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
  return copy(ANY, dst, src, n, SYNC_PT);
}
GSC_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
  return copy(ANY, dst, src, n, async_op(h, false));
}
GSC_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
  return copy(ANY, dst, src, n, async_op(h, true));
}

GSC_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
  return copy(HTOD, dst, U(src), n, SYNC);
}
GSC_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
  return copy(HTOD, dst, U(src), n, SYNC_PT);
}
GSC_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
  return copy(DTOH, U(dst), src, n, SYNC);
}
GSC_API CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
  return copy(DTOH, U(dst), src, n, SYNC_PT);
}
GSC_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
  return copy(DTOD, dst, src, n, SYNC);
}
GSC_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
  return copy(DTOD, dst, src, n, SYNC_PT);
}

GSC_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream h)
{
  return copy(HTOD, dst, U(src), n, async_op(h, false));
}
GSC_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream h)
{
  return copy(HTOD, dst, U(src), n, async_op(h, true));
}
GSC_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream h)
{
  return copy(DTOH, U(dst), src, n, async_op(h, false));
}
GSC_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream h)
{
  return copy(DTOH, U(dst), src, n, async_op(h, true));
}
GSC_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
  return copy(DTOD, dst, src, n, async_op(h, false));
}
GSC_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
  return copy(DTOD, dst, src, n, async_op(h, true));
}

/* ---- sets ---- */

static CUresult set(CUdeviceptr dst, unsigned value, size_t count, size_t elem, struct op op)
{
  GSC_CHECK_INIT();
  if (dst % elem != 0 || count > SIZE_MAX / elem)
    return CUDA_ERROR_INVALID_VALUE;
  if (!op.async)
    GSC_TRY(sync_wait());
  GSC_LOCKED;
  if (op.async)
    GSC_TRY(async_stream(op.stream, op.per_thread));
  if (count == 0)
    return CUDA_SUCCESS;
  GSC_TRY(side_check(dst, count * elem, true, false));
  if (elem == 1) {
    memset((void *) dst, (int) value, count);
  } else if (elem == 2) {
    uint16_t v = (uint16_t) value, *p = (uint16_t *) dst;
    for (size_t i = 0; i < count; i++)
      p[i] = v;
  } else {
    uint32_t *p = (uint32_t *) dst;
    for (size_t i = 0; i < count; i++)
      p[i] = value;
  }
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n)
{
  return set(d, v, n, 1, SYNC);
}
GSC_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n)
{
  return set(d, v, n, 1, SYNC_PT);
}
GSC_API CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n)
{
  return set(d, v, n, 2, SYNC);
}
GSC_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n)
{
  return set(d, v, n, 2, SYNC_PT);
}
GSC_API CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n)
{
  return set(d, v, n, 4, SYNC);
}
GSC_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n)
{
  return set(d, v, n, 4, SYNC_PT);
}

GSC_API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h)
{
  return set(d, v, n, 1, async_op(h, false));
}
GSC_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream h)
{
  return set(d, v, n, 1, async_op(h, true));
}
GSC_API CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream h)
{
  return set(d, v, n, 2, async_op(h, false));
}
GSC_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream h)
{
  return set(d, v, n, 2, async_op(h, true));
}
GSC_API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream h)
{
  return set(d, v, n, 4, async_op(h, false));
}
GSC_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream h)
{
  return set(d, v, n, 4, async_op(h, true));
}

/* ---- the 32-bit pointer ABI ---- */

#define V1_UNSUPPORTED               \
  do {                               \
    GSC_CHECK_INIT();                \
    return CUDA_ERROR_NOT_SUPPORTED; \
  } while (0)

GSC_API CUresult cuMemcpyHtoD(CUdeviceptr_v1 d, const void *s, unsigned int n)
{
  (void) d, (void) s, (void) n;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemcpyDtoH(void *d, CUdeviceptr_v1 s, unsigned int n)
{
  (void) d, (void) s, (void) n;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemcpyDtoD(CUdeviceptr_v1 d, CUdeviceptr_v1 s, unsigned int n)
{
  (void) d, (void) s, (void) n;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 d, const void *s, unsigned int n, CUstream h)
{
  (void) d, (void) s, (void) n, (void) h;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr_v1 s, unsigned int n, CUstream h)
{
  (void) d, (void) s, (void) n, (void) h;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 d, CUdeviceptr_v1 s, unsigned int n, CUstream h)
{
  (void) d, (void) s, (void) n, (void) h;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemsetD8(CUdeviceptr_v1 d, unsigned char v, unsigned int n)
{
  (void) d, (void) v, (void) n;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemsetD16(CUdeviceptr_v1 d, unsigned short v, unsigned int n)
{
  (void) d, (void) v, (void) n;
  V1_UNSUPPORTED;
}
GSC_API CUresult cuMemsetD32(CUdeviceptr_v1 d, unsigned int v, unsigned int n)
{
  (void) d, (void) v, (void) n;
  V1_UNSUPPORTED;
}
