/* Hooks for stream-ordered allocation: cuMemAllocAsync, cuMemAllocFromPoolAsync and
 * cuMemFreeAsync, with their per-thread-stream (_ptsz) twins.
 *
 * The charge follows the allocation: taken when it is allocated, given back when it is freed
 * on its stream. Memory a pool keeps cached between a free and a trim is therefore not
 * charged; see docs/limits.md. */
#include "hooks.h"

typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

static void undo_free(uint64_t p)
{
  gs__cuda.cuMemFreeAsync((CUdeviceptr) p, NULL);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream,
                            __typeof__(cuMemAllocFromPoolAsync) *from_pool, __typeof__(cuMemAllocAsync) *plain)
{
  int gpu = gs__current_gpu();
  CUresult rc = gs__charge(gpu, bytes, from_pool ? "cuMemAllocFromPoolAsync" : "cuMemAllocAsync");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = from_pool ? from_pool(dptr, bytes, pool, stream) : plain(dptr, bytes, stream);
  return gs__settle(rc, GS_MAP_PTR, rc == CUDA_SUCCESS ? *dptr : 0, bytes, gpu, undo_free);
}

static CUresult free_async(CUdeviceptr dptr, CUstream stream, free_async_fn call)
{
  uint64_t charge = 0;
  bool ours = gs__forget(GS_MAP_PTR, dptr, &charge);
  return gs__settle_free(call(dptr, stream), GS_MAP_PTR, dptr, ours, charge);
}

GS_HOOK CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  GS_REAL_OR_FAIL(cuMemAllocAsync);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocAsync(dptr, bytesize, hStream);
  return alloc_async(dptr, bytesize, NULL, hStream, NULL, gs__cuda.cuMemAllocAsync);
}

GS_HOOK CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  GS_REAL_OR_FAIL(cuMemAllocAsync_ptsz);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocAsync_ptsz(dptr, bytesize, hStream);
  return alloc_async(dptr, bytesize, NULL, hStream, NULL, gs__cuda.cuMemAllocAsync_ptsz);
}

GS_HOOK CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
  GS_REAL_OR_FAIL(cuMemAllocFromPoolAsync);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
  return alloc_async(dptr, bytesize, pool, hStream, gs__cuda.cuMemAllocFromPoolAsync, NULL);
}

GS_HOOK CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
  GS_REAL_OR_FAIL(cuMemAllocFromPoolAsync_ptsz);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream);
  return alloc_async(dptr, bytesize, pool, hStream, gs__cuda.cuMemAllocFromPoolAsync_ptsz, NULL);
}

GS_HOOK CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
  GS_REAL_OR_FAIL(cuMemFreeAsync);
  return free_async(dptr, hStream, gs__cuda.cuMemFreeAsync);
}

GS_HOOK CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
  GS_REAL_OR_FAIL(cuMemFreeAsync_ptsz);
  return free_async(dptr, hStream, gs__cuda.cuMemFreeAsync_ptsz);
}
