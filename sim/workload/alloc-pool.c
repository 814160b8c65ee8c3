/* Stream-ordered allocation from an explicit pool made with cuMemPoolCreate. The pool is
 * made on first use and trimmed to nothing after each free, so that freed memory goes back
 * to the device rather than staying cached in the pool. */
#include "wl.h"

static CUmemoryPool pool;

static CUresult pool_get(CUmemoryPool *out)
{
  if (!pool) {
    CUmemPoolProps props = {
      .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
      .handleTypes = CU_MEM_HANDLE_TYPE_NONE,
      .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = wl_gpu.dev },
    };
    CUresult rc = wl_cu.cuMemPoolCreate(&pool, &props);
    if (rc != CUDA_SUCCESS) {
      pool = NULL;
      return rc;
    }
  }
  *out = pool;
  return CUDA_SUCCESS;
}

static CUresult pool_alloc(uint64_t size, uint64_t *handle, uint64_t *charged)
{
  CUmemoryPool p = NULL;
  CUdeviceptr ptr = 0;
  CUresult rc = pool_get(&p);

  *handle = 0;
  *charged = size;
  if (rc == CUDA_SUCCESS)
    rc = wl_cu.cuMemAllocFromPoolAsync(&ptr, size, p, wl_gpu.stream);
  if (rc == CUDA_SUCCESS)
    rc = wl_cu.cuStreamSynchronize(wl_gpu.stream);
  *handle = ptr;
  return rc;
}

static CUresult pool_free(uint64_t handle)
{
  CUresult rc = wl_cu.cuMemFreeAsync(handle, wl_gpu.stream);
  if (rc == CUDA_SUCCESS)
    rc = wl_cu.cuStreamSynchronize(wl_gpu.stream);
  if (rc == CUDA_SUCCESS)
    rc = wl_cu.cuMemPoolTrimTo(pool, 0);
  return rc;
}

static void pool_fini(void)
{
  if (pool)
    wl_cu.cuMemPoolDestroy(pool);
  pool = NULL;
}

const struct wl_alloc_ops wl_alloc_pool = { "pool", pool_alloc, pool_free, pool_fini };
