/* Host memory from the driver: cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost. It is ordinary
 * process memory (an anonymous mapping), recorded in the allocation table so that it can be
 * freed, queried and mapped into the device address space, and never charged to a device. */
#include "cuda-internal.h"

#include <stdlib.h>
#include <sys/mman.h>

#define HOST_FLAGS \
  (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)

GSC_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!pp || bytesize == 0 || (Flags & ~(unsigned) HOST_FLAGS))
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  struct gsc_alloc *a = calloc(1, sizeof(*a));
  void *p = a ? gsc_map(bytesize) : NULL;
  if (!p || (a->base = (uintptr_t) p, a->size = a->map_len = bytesize, gsc_alloc_insert(a) < 0)) {
    if (p)
      munmap(p, bytesize);
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->dev = -1;
  a->kind = GSC_MEM_HOST;
  a->ctx = c;
  a->flags = Flags;
  *pp = p;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
  return cuMemHostAlloc(pp, bytesize, 0);
}

GSC_API CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
  return cuMemHostAlloc(pp, bytesize, 0);
}

static struct gsc_alloc *host_find(const void *p)
{
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) p, 0);
  return a && a->kind == GSC_MEM_HOST ? a : NULL;
}

GSC_API CUresult cuMemFreeHost(void *p)
{
  GSC_ENTER();
  struct gsc_alloc *a = host_find(p);
  if (!a || a->base != (uintptr_t) p)
    return CUDA_ERROR_INVALID_VALUE;
  gsc_alloc_free(a);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
  GSC_ENTER_OUT(pFlags);
  struct gsc_alloc *a = host_find(p);
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  *pFlags = a->flags;
  return CUDA_SUCCESS;
}

/* With unified addressing the device sees host memory at its host address. */
GSC_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
  GSC_CHECK_INIT();
  if (!pdptr || Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  if (!host_find(p))
    return CUDA_ERROR_INVALID_VALUE;
  *pdptr = (CUdeviceptr) (uintptr_t) p;
  return CUDA_SUCCESS;
}
