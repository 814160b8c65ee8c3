/* Hooks for memory that another process shares with this one: legacy IPC handles
 * (cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2, cuIpcCloseMemHandle) and VMM handles imported
 * with cuMemImportFromShareableHandle, which become memory when cuMemMap maps them.
 *
 * The device spends no new memory on an import: both processes see one physical allocation.
 * But the importing tenant holds that memory and uses it, so gpuslice charges the importer as
 * it would any allocation.
 *
 * These are the paths where gpuslice cannot always reserve before the driver is asked, because
 * only the driver knows the size:
 * - An IPC handle is 64 opaque bytes. The size is known once the open has succeeded, from
 *   cuMemGetAddressRange_v2 on the returned pointer. So the order is: open, learn the size,
 *   charge; if the charge is refused, close again and answer CUDA_ERROR_OUT_OF_MEMORY.
 *   Opening a handle that the context already holds returns the same pointer with the driver's
 *   reference count raised; each open is charged, and each close gives one charge back, so a
 *   handle opened twice is counted twice until one close (conservative, never short).
 * - An imported VMM handle has no size query in the driver API: cuMemGetAllocationProperties-
 *   FromHandle reports no size, and a shareable handle is opaque. Its memory is only usable once
 *   mapped, and cuMemMap names the offset and size. So an import is recorded with no charge,
 *   and any cuMemMap that reaches further into a handle than what is charged for it is charged
 *   the difference *before* the driver maps it. The charge goes back when the handle's last
 *   reference does (its release or its last unmap; hook-vmm.c), as for handles made with
 *   cuMemCreate; every mapping is recorded there too (gs__vmm_mapped). A valid mapping never reaches past the end of a
 *   handle, and cuMemCreate handles are charged at their full size, so the same rule never
 *   charges those again: cuMemMap needs no notion of where a handle came from. */
#include <pthread.h>

#include "hooks.h"

/* ---- legacy IPC handles ---- */

static void undo_close(uint64_t p)
{
  gs__cuda.cuIpcCloseMemHandle((CUdeviceptr) p);
}

typedef CUresult (*ipc_open_fn)(CUdeviceptr *, CUipcMemHandle, unsigned int);

/* Opens are rare, so even a process that is no tenant takes the whole path: that way a tenant
 * whose ledger cannot be read is refused here as everywhere (gs__charge says so). */
static CUresult open_charged(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags,
                             ipc_open_fn call)
{
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult rc = call(pdptr, handle, flags);
  if (rc != CUDA_SUCCESS || !pdptr)
    return rc;
  /* Charging after the fact is the only order possible here: see the top of the file. */
  int gpu = gs__current_gpu();
  rc = gs__cuda.cuMemGetAddressRange_v2 ? gs__cuda.cuMemGetAddressRange_v2(&base, &size, *pdptr)
                                        : CUDA_ERROR_NOT_FOUND;
  if (rc == CUDA_SUCCESS)
    rc = gs__charge(gpu, size, "cuIpcOpenMemHandle");
  if (rc != CUDA_SUCCESS) {
    undo_close(*pdptr);
    return rc;
  }
  return gs__settle(CUDA_SUCCESS, GS_MAP_PTR, *pdptr, size, gpu, undo_close);
}

GS_HOOK CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
  GS_REAL_OR_FAIL(cuIpcOpenMemHandle);
  return open_charged(pdptr, handle, Flags, gs__cuda.cuIpcOpenMemHandle);
}

GS_HOOK CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                       unsigned int Flags)
{
  GS_REAL_OR_FAIL(cuIpcOpenMemHandle_v2);
  return open_charged(pdptr, handle, Flags, gs__cuda.cuIpcOpenMemHandle_v2);
}

GS_HOOK CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
  uint64_t charge = 0;
  GS_REAL_OR_FAIL(cuIpcCloseMemHandle);
  bool ours = gs__forget(GS_MAP_PTR, dptr, &charge);
  return gs__settle_free(gs__cuda.cuIpcCloseMemHandle(dptr), GS_MAP_PTR, dptr, ours, charge);
}

/* ---- imported VMM handles ---- */

GS_HOOK CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                void *osHandle,
                                                CUmemAllocationHandleType shHandleType)
{
  CUmemAllocationProp prop;
  GS_REAL_OR_FAIL(cuMemImportFromShareableHandle);
  CUresult rc = gs__cuda.cuMemImportFromShareableHandle(handle, osHandle, shHandleType);
  if (rc != CUDA_SUCCESS || !handle)
    return rc;
  rc = gs__cuda.cuMemGetAllocationPropertiesFromHandle
    ? gs__cuda.cuMemGetAllocationPropertiesFromHandle(&prop, *handle)
    : CUDA_ERROR_NOT_FOUND;
  /* Only device memory counts; a host-located allocation is a host allocation. */
  if (rc == CUDA_SUCCESS && prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_SUCCESS;
  /* Nothing is charged yet, but a tenant whose ledger cannot be read is refused here, as
   * every allocation is (a charge of nothing says so); and without the location gpuslice
   * cannot tell where the memory would count, so it refuses too. */
  if (rc == CUDA_SUCCESS)
    rc = gs__charge(prop.location.id, 0, "cuMemImportFromShareableHandle");
  if (rc == CUDA_SUCCESS && !gs__remember(GS_MAP_HANDLE, *handle, 0, prop.location.id))
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS && !gs__vmm_track(*handle)) {
    gs__forget(GS_MAP_HANDLE, *handle, NULL);
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (rc != CUDA_SUCCESS)
    gs__cuda.cuMemRelease(*handle);
  return rc;
}

/* Serializes the rare growth of one handle's charge, so two threads mapping new parts of the
 * same imported handle cannot both charge the same bytes. Lookups stay lock-free. */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t grow_once = PTHREAD_ONCE_INIT;

/* A child forked while another thread held the lock would never see it released. */
static void grow_lock_reset(void)
{
  pthread_mutex_init(&grow_lock, NULL);
}

static void grow_init(void)
{
  pthread_atfork(NULL, NULL, grow_lock_reset);
}

/* Moves the record of handle from `had` to `end` bytes without the tenant's usage ever dipping
 * below what it holds (a dip would let another process slip past the limit): the old charge is
 * added again before forgetting gives it back. False when the new record could not be made;
 * the handle is then left with no record and no charge. */
static bool rerecord(CUmemGenericAllocationHandle handle, int gpu, uint64_t had, uint64_t end)
{
  gs__charge_force(gpu, had);
  gs__forget(GS_MAP_HANDLE, handle, NULL);
  if (gs__remember(GS_MAP_HANDLE, handle, end, gpu))
    return true;
  gs__uncharge(gpu, end);
  return false;
}

static CUresult map_further(CUdeviceptr ptr, size_t size, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags)
{
  uint64_t v, end = (uint64_t) offset + size;
  /* Looked up again under the lock: another thread may have charged this far meanwhile. */
  if (!gs__peek(GS_MAP_HANDLE, handle, &v) || end <= GS_CHARGE_BYTES(v))
    return gs__cuda.cuMemMap(ptr, size, offset, handle, flags);
  int gpu = GS_CHARGE_GPU(v);
  uint64_t had = GS_CHARGE_BYTES(v);
  CUresult rc = gs__charge(gpu, end - had, "cuMemMap of an imported handle");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = gs__cuda.cuMemMap(ptr, size, offset, handle, flags);
  if (rc != CUDA_SUCCESS) {
    gs__uncharge(gpu, end - had);
    return rc;
  }
  if (rerecord(handle, gpu, had, end))
    return CUDA_SUCCESS;
  gs__cuda.cuMemUnmap(ptr, size);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

GS_HOOK CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags)
{
  uint64_t v;
  GS_REAL_OR_FAIL(cuMemMap);
  if (size > UINT64_MAX - offset || !gs__peek(GS_MAP_HANDLE, handle, &v) ||
      (uint64_t) offset + size <= GS_CHARGE_BYTES(v))
    return gs__vmm_mapped(gs__cuda.cuMemMap(ptr, size, offset, handle, flags), ptr, size, handle);
  pthread_once(&grow_once, grow_init);
  pthread_mutex_lock(&grow_lock);
  CUresult rc = map_further(ptr, size, offset, handle, flags);
  pthread_mutex_unlock(&grow_lock);
  return gs__vmm_mapped(rc, ptr, size, handle);
}
