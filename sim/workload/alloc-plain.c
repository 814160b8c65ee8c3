/* Allocation by cuMemAlloc_v2, the path most programs take. */
#include "wl.h"

static CUresult plain_alloc(uint64_t size, uint64_t *handle, uint64_t *charged)
{
  CUdeviceptr p = 0;
  CUresult rc = wl_cu.cuMemAlloc_v2(&p, size);
  *handle = p;
  *charged = size;
  return rc;
}

static CUresult plain_free(uint64_t handle)
{
  return wl_cu.cuMemFree_v2(handle);
}

const struct wl_alloc_ops wl_alloc_plain = { "plain", plain_alloc, plain_free, NULL };
