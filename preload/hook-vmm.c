/* Hooks for virtual memory management, the path NCCL and PyTorch's expandable segments take:
 * physical memory is charged when cuMemCreate makes it and given back by cuMemRelease.
 * Reserving address ranges and mapping cost no device memory; the cuMemMap hook charges only
 * for handles imported from another process (hook-ipc.c), whose size is learned when mapped. */
#include "hooks.h"

static void undo_release(uint64_t handle)
{
  gs__cuda.cuMemRelease((CUmemGenericAllocationHandle) handle);
}

GS_HOOK CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags)
{
  GS_REAL_OR_FAIL(cuMemCreate);
  /* Only device memory counts; host and host-NUMA locations are host allocations. */
  if (!handle || !prop || size == 0 || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return gs__cuda.cuMemCreate(handle, size, prop, flags);
  int gpu = prop->location.id;
  CUresult rc = gs__charge(gpu, size, "cuMemCreate");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = gs__cuda.cuMemCreate(handle, size, prop, flags);
  return gs__settle(rc, GS_MAP_HANDLE, rc == CUDA_SUCCESS ? *handle : 0, size, gpu, undo_release);
}

GS_HOOK CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
  uint64_t charge = 0;
  GS_REAL_OR_FAIL(cuMemRelease);
  bool ours = gs__forget(GS_MAP_HANDLE, handle, &charge);
  return gs__settle_free(gs__cuda.cuMemRelease(handle), GS_MAP_HANDLE, handle, ours, charge);
}
