/* Hooks for memory pools, which hold device memory of their own between allocations: the
 * pools gpuslice must ask about (cuMemPoolCreate, cuMemPoolDestroy), and the calls after which
 * a pool may hold less (cuMemPoolTrimTo, cuMemPoolDestroy), where the reserve charge is
 * settled. The reserve and its charge are in pool-reserve.c; allocation and free are in
 * hook-async.c. */
#include "hooks.h"
#include "pool-reserve.h"

GS_HOOK CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
  GS_REAL_OR_FAIL(cuMemPoolCreate);
  CUresult rc = gs__cuda.cuMemPoolCreate(pool, props);
  if (rc == CUDA_SUCCESS && pool && props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
    gs__pool_created(*pool, props->location.id);
  return rc;
}

GS_HOOK CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
  GS_REAL_OR_FAIL(cuMemPoolDestroy);
  CUresult rc = gs__cuda.cuMemPoolDestroy(pool);
  if (rc == CUDA_SUCCESS) {
    gs__pool_destroyed(pool);
    gs__pool_settle();
  }
  return rc;
}

GS_HOOK CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
  GS_REAL_OR_FAIL(cuMemPoolTrimTo);
  CUresult rc = gs__cuda.cuMemPoolTrimTo(pool, minBytesToKeep);
  if (rc == CUDA_SUCCESS)
    gs__pool_settle();
  return rc;
}
