/* Hooks for stream-ordered allocation: cuMemAllocAsync, cuMemAllocFromPoolAsync and
 * cuMemFreeAsync, with their per-thread-stream (_ptsz) twins.
 *
 * The charge is taken when memory is allocated. A free puts the memory back into its pool,
 * not on the device, so its charge stays, as the pool's reserve (pool-reserve.c), until the
 * pool gives the memory back; with GPUSLICE_CHARGE_POOL_RESERVE=0 it goes back at the free.
 * An allocation is charged in full even when its pool serves it from the reserve, which the
 * interposer cannot tell without asking the driver; only at the limit does it ask, moving the
 * reserve's charge to the new allocation (alloc_from_reserve). */
#include "hooks.h"
#include "pool-reserve.h"
#include "resume-wait.h"

typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

struct async_call {
  CUdeviceptr *dptr;
  size_t bytes;
  CUmemoryPool pool;
  CUstream stream;
  __typeof__(cuMemAllocFromPoolAsync) *from_pool;
  __typeof__(cuMemAllocAsync) *plain;
  const char *what;
};

static void undo_free(uint64_t p)
{
  gs__cuda.cuMemFreeAsync((CUdeviceptr) p, NULL);
}

static CUresult call_alloc(const struct async_call *c)
{
  return c->from_pool ? c->from_pool(c->dptr, c->bytes, c->pool, c->stream)
                      : c->plain(c->dptr, c->bytes, c->stream);
}

/* The pool the allocation comes from: the one named, or the device's current pool. */
static bool pool_of(const struct async_call *c, int gpu, CUmemoryPool *pool)
{
  CUdevice dev;
  *pool = c->pool;
  return c->pool ||
    (gs__cuda.cuDeviceGetMemPool && gs__cuda.cuDeviceGet(&dev, gpu) == CUDA_SUCCESS &&
     gs__cuda.cuDeviceGetMemPool(pool, dev) == CUDA_SUCCESS);
}

/* Pool memory may return to the pool instead of the device: what a refused reuse leaves. */
static CUresult reuse_refused(const struct async_call *c, int gpu, uint64_t shortfall)
{
  gs__charge_force(gpu, shortfall);
  gs__pool_keep(gpu, shortfall + c->bytes);
  gs__cuda.cuMemFreeAsync(*c->dptr, c->stream);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

/* At the limit, with reserve charged on gpu: the pool may serve the allocation from memory
 * already charged, as much as it holds unused. Whether it did shows in its unused memory
 * after: what it did not serve so (stream order may forbid the reuse) is charged too; when
 * that is refused, the allocation goes back into the pool, still charged, and the caller is
 * refused. */
static CUresult alloc_from_reserve(const struct async_call *c, int gpu)
{
  CUmemoryPool pool;
  uint64_t before = 0, after = 0;
  if (!pool_of(c, gpu, &pool) || !gs__pool_spare_of(pool, &before))
    return gs__refuse(gpu, c->bytes, c->what);
  uint64_t take = gs__pool_take(gpu, before < c->bytes ? before : c->bytes);
  CUresult rc = take < c->bytes ? gs__charge(gpu, c->bytes - take, c->what) : CUDA_SUCCESS;
  if (rc == CUDA_SUCCESS && (rc = call_alloc(c)) != CUDA_SUCCESS)
    gs__uncharge(gpu, c->bytes - take);
  if (rc != CUDA_SUCCESS) {
    gs__pool_keep(gpu, take);
    return rc;
  }
  uint64_t served = gs__pool_spare_of(pool, &after) && before > after ? before - after : 0;
  uint64_t shortfall = take > served ? take - served : 0;
  if (shortfall && gs__charge(gpu, shortfall, c->what) != CUDA_SUCCESS)
    return reuse_refused(c, gpu, shortfall);
  gs__pool_keep(gpu, shortfall);
  return gs__settle(CUDA_SUCCESS, GS_MAP_PTR, *c->dptr, c->bytes, gpu, undo_free);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream,
                            __typeof__(cuMemAllocFromPoolAsync) *from_pool,
                            __typeof__(cuMemAllocAsync) *plain)
{
  const struct async_call c = { dptr,
                                bytes,
                                pool,
                                stream,
                                from_pool,
                                plain,
                                from_pool ? "cuMemAllocFromPoolAsync" : "cuMemAllocAsync" };
  int gpu = gs__current_gpu();
  CUresult rc = gs__charge_quiet(gpu, bytes);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY)
    return gs__pool_kept(gpu) ? alloc_from_reserve(&c, gpu) : gs__refuse(gpu, bytes, c.what);
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = call_alloc(&c);
  return gs__settle(rc, GS_MAP_PTR, rc == CUDA_SUCCESS ? *dptr : 0, bytes, gpu, undo_free);
}

/* With the reserve charged, the pointer's charge moves to its GPU's reserve before the driver
 * is called (so that an allocation reusing the address cannot lose its entry), and moves back
 * if the driver refuses the free. */
static CUresult free_async(CUdeviceptr dptr, CUstream stream, free_async_fn call)
{
  uint64_t charge = 0;
  if (!gs__pool_reserve_on()) {
    bool ours = gs__forget(GS_MAP_PTR, dptr, &charge);
    return gs__settle_free(call(dptr, stream), GS_MAP_PTR, dptr, ours, charge);
  }
  bool ours = gs__map_take(GS_MAP_PTR, dptr, &charge);
  if (ours)
    gs__pool_keep(GS_CHARGE_GPU(charge), GS_CHARGE_BYTES(charge));
  CUresult rc = call(dptr, stream);
  if (rc != CUDA_SUCCESS && ours) {
    gs__pool_unkeep(GS_CHARGE_GPU(charge), GS_CHARGE_BYTES(charge));
    gs__remember(GS_MAP_PTR, dptr, GS_CHARGE_BYTES(charge), GS_CHARGE_GPU(charge));
  }
  return rc;
}

GS_HOOK CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemAllocAsync);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocAsync(dptr, bytesize, hStream);
  return alloc_async(dptr, bytesize, NULL, hStream, NULL, gs__cuda.cuMemAllocAsync);
}

GS_HOOK CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemAllocAsync_ptsz);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocAsync_ptsz(dptr, bytesize, hStream);
  return alloc_async(dptr, bytesize, NULL, hStream, NULL, gs__cuda.cuMemAllocAsync_ptsz);
}

GS_HOOK CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemAllocFromPoolAsync);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
  return alloc_async(dptr, bytesize, pool, hStream, gs__cuda.cuMemAllocFromPoolAsync, NULL);
}

GS_HOOK CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
  GS_RESUMED_OR_RETURN();
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
