/* Stream-ordered allocation from the device's default pool: cuMemAllocAsync and
 * cuMemFreeAsync on the workload's stream. Each free is synchronized so that the memory has
 * gone back to the device (the default pool keeps nothing past a synchronization) before
 * anyone looks at the totals. */
#include "wl.h"

static CUresult async_alloc(uint64_t size, uint64_t *handle, uint64_t *charged)
{
  CUdeviceptr p = 0;
  CUresult rc = wl_cu.cuMemAllocAsync(&p, size, wl_gpu.stream);
  if (rc == CUDA_SUCCESS)
    rc = wl_cu.cuStreamSynchronize(wl_gpu.stream);
  *handle = p;
  *charged = size;
  return rc;
}

static CUresult async_free(uint64_t handle)
{
  CUresult rc = wl_cu.cuMemFreeAsync(handle, wl_gpu.stream);
  if (rc != CUDA_SUCCESS)
    return rc;
  return wl_cu.cuStreamSynchronize(wl_gpu.stream);
}

const struct wl_alloc_ops wl_alloc_async = { "async", async_alloc, async_free, NULL };
