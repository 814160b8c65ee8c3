/* Allocation by cuMemAllocManaged, attached globally as unified memory usually is. */
#include "wl.h"

static CUresult managed_alloc(uint64_t size, uint64_t *handle, uint64_t *charged)
{
  CUdeviceptr p = 0;
  CUresult rc = wl_cu.cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
  *handle = p;
  *charged = size;
  return rc;
}

static CUresult managed_free(uint64_t handle)
{
  return wl_cu.cuMemFree_v2(handle);
}

const struct wl_alloc_ops wl_alloc_managed = { "managed", managed_alloc, managed_free, NULL };
