/* Allocation through the virtual memory management API: physical memory from cuMemCreate,
 * mapped into an address range from cuMemAddressReserve and made accessible with
 * cuMemSetAccess. Sizes are rounded up to the device's minimum granularity, as the driver
 * requires. The handle is a heap record of the three things a free must undo. */
#include "wl.h"

#include <stdint.h>
#include <stdlib.h>

struct vmm_block {
  CUdeviceptr ptr;
  size_t size;
  CUmemGenericAllocationHandle mem;
};

static CUmemAllocationProp vmm_prop(void)
{
  CUmemAllocationProp prop = {
    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
    .requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE,
    .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = wl_gpu.dev },
  };
  return prop;
}

/* Maps b->mem at a fresh range; on failure undoes its own steps and leaves b->mem alone. */
static CUresult vmm_map(struct vmm_block *b)
{
  CUmemAccessDesc access = {
    .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = wl_gpu.dev },
    .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
  };
  CUresult rc = wl_cu.cuMemAddressReserve(&b->ptr, b->size, 0, 0, 0);
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = wl_cu.cuMemMap(b->ptr, b->size, 0, b->mem, 0);
  if (rc == CUDA_SUCCESS) {
    rc = wl_cu.cuMemSetAccess(b->ptr, b->size, &access, 1);
    if (rc != CUDA_SUCCESS)
      wl_cu.cuMemUnmap(b->ptr, b->size);
  }
  if (rc != CUDA_SUCCESS)
    wl_cu.cuMemAddressFree(b->ptr, b->size);
  return rc;
}

static CUresult vmm_alloc(uint64_t size, uint64_t *handle, uint64_t *charged)
{
  CUmemAllocationProp prop = vmm_prop();
  size_t gran = 0;
  struct vmm_block *b = calloc(1, sizeof(*b));

  *handle = *charged = 0;
  if (!b)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = wl_cu.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (rc == CUDA_SUCCESS && gran == 0)
    rc = CUDA_ERROR_UNKNOWN;
  if (rc == CUDA_SUCCESS) {
    b->size = (size_t) ((size + gran - 1) / gran * gran);
    rc = wl_cu.cuMemCreate(&b->mem, b->size, &prop, 0);
  }
  if (rc == CUDA_SUCCESS && (rc = vmm_map(b)) != CUDA_SUCCESS)
    wl_cu.cuMemRelease(b->mem);
  if (rc != CUDA_SUCCESS) {
    free(b);
    return rc;
  }
  *handle = (uint64_t) (uintptr_t) b;
  *charged = b->size;
  return CUDA_SUCCESS;
}

static CUresult vmm_free(uint64_t handle)
{
  struct vmm_block *b = (struct vmm_block *) (uintptr_t) handle;
  CUresult rc = wl_cu.cuMemUnmap(b->ptr, b->size);
  CUresult rc2 = wl_cu.cuMemRelease(b->mem);
  CUresult rc3 = wl_cu.cuMemAddressFree(b->ptr, b->size);

  free(b);
  return rc != CUDA_SUCCESS ? rc : rc2 != CUDA_SUCCESS ? rc2 : rc3;
}

const struct wl_alloc_ops wl_alloc_vmm = { "vmm", vmm_alloc, vmm_free, NULL };
