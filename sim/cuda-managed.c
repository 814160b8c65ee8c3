/* Managed (unified) memory: cuMemAllocManaged, and the hints cuMemAdvise and
 * cuMemPrefetchAsync in both ABIs (8.0: a device ordinal; 12.2: a CUmemLocation). Managed
 * memory is charged to the current device at its full size. The hints are validated and
 * then have no effect: pages already live in the only memory there is. */
#include "cuda-internal.h"

GSC_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
    return CUDA_ERROR_INVALID_VALUE;
  return gsc_dev_alloc(c, bytesize, GSC_MEM_MANAGED, dptr);
}

static CUresult managed_range(CUdeviceptr p, size_t count)
{
  GSC_LOCKED;
  struct gsc_alloc *a = count ? gsc_alloc_find((uintptr_t) p, count) : NULL;
  return a && a->kind == GSC_MEM_MANAGED ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult location_check(CUmemLocation loc)
{
  switch (loc.type) {
  case CU_MEM_LOCATION_TYPE_DEVICE:
    return loc.id >= 0 && loc.id < gsc.ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
  case CU_MEM_LOCATION_TYPE_HOST:
  case CU_MEM_LOCATION_TYPE_HOST_NUMA:
  case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

/* The 8.0 ABI's device ordinal, with CU_DEVICE_CPU for the host, as a location. */
static CUmemLocation device_location(CUdevice dev)
{
  CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, dev };
  if (dev == CU_DEVICE_CPU)
    loc.type = CU_MEM_LOCATION_TYPE_HOST;
  return loc;
}

GSC_API CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                CUmemLocation location)
{
  GSC_CHECK_INIT();
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(managed_range(devPtr, count));
  /* Read-mostly hints ignore the location. */
  if (advice == CU_MEM_ADVISE_SET_READ_MOSTLY || advice == CU_MEM_ADVISE_UNSET_READ_MOSTLY)
    return CUDA_SUCCESS;
  return location_check(location);
}

GSC_API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
  return cuMemAdvise_v2(devPtr, count, advice, device_location(device));
}

static CUresult prefetch(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                         unsigned int flags, CUstream hStream, bool per_thread)
{
  GSC_CHECK_INIT();
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(managed_range(devPtr, count));
  GSC_TRY(location_check(location));
  struct CUstream_st *s;
  GSC_LOCKED;
  return gsc_stream_get(hStream, per_thread, &s);
}

GSC_API CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                       unsigned int flags, CUstream hStream)
{
  return prefetch(devPtr, count, location, flags, hStream, false);
}

GSC_API CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                            CUmemLocation location, unsigned int flags,
                                            CUstream hStream)
{
  return prefetch(devPtr, count, location, flags, hStream, true);
}

GSC_API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                    CUstream hStream)
{
  return prefetch(devPtr, count, device_location(dstDevice), 0, hStream, false);
}

GSC_API CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                         CUstream hStream)
{
  return prefetch(devPtr, count, device_location(dstDevice), 0, hStream, true);
}
