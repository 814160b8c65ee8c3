/* Hooks for virtual memory management, the path NCCL and PyTorch's expandable segments take:
 * physical memory is charged when cuMemCreate makes it and given back when the driver frees
 * it. Reserving address ranges costs no device memory; the cuMemMap hook (hook-ipc.c) charges
 * only for handles imported from another process, whose size is learned when mapped.
 *
 * The driver frees a handle's memory when its last reference goes, and a mapping is one: a
 * handle released while still mapped lives until its last cuMemUnmap. So gpuslice counts the
 * same references per handle (GS_MAP_HANDLE_REFS: the user's, from create, import and
 * cuMemRetainAllocationHandle, plus one per mapping) and gives the charge back when they reach
 * zero. Each mapping is recorded by its start (GS_MAP_VA_HANDLE, GS_MAP_VA_SIZE), so that an
 * unmap knows whose reference it drops. Every step is a lock-free map operation.
 *
 * References are dropped before the driver is called and put back if it refuses, for the same
 * reason frees give their charge back first: once the driver has freed a handle, another
 * thread may be handed the same value by cuMemCreate, and must not find this one's records. */
#include "hooks.h"
#include "resume-wait.h"

static void undo_release(uint64_t handle)
{
  gs__cuda.cuMemRelease((CUmemGenericAllocationHandle) handle);
}

/* Starts the reference count of a handle gpuslice charges (made or imported). False when it
 * cannot be recorded; the caller then undoes the handle. */
bool gs__vmm_track(CUmemGenericAllocationHandle handle)
{
  uint64_t v;
  return !gs__peek(GS_MAP_HANDLE, handle, &v) || gs__map_put(GS_MAP_HANDLE_REFS, handle, 1);
}

GS_HOOK CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemCreate);
  /* Only device memory counts; host and host-NUMA locations are host allocations. */
  if (!handle || !prop || size == 0 || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return gs__cuda.cuMemCreate(handle, size, prop, flags);
  int gpu = prop->location.id;
  CUresult rc = gs__charge(gpu, size, "cuMemCreate");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = gs__cuda.cuMemCreate(handle, size, prop, flags);
  rc = gs__settle(rc, GS_MAP_HANDLE, rc == CUDA_SUCCESS ? *handle : 0, size, gpu, undo_release);
  if (rc == CUDA_SUCCESS && !gs__vmm_track(*handle)) {
    gs__forget(GS_MAP_HANDLE, *handle, NULL);
    undo_release(*handle);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return rc;
}

/* Drops one reference of handle. When it was the last, the records go and *charge gets what
 * to give back (the caller gives it back); returns whether it was the last. */
static bool unref(CUmemGenericAllocationHandle handle, uint64_t *charge)
{
  uint64_t left;
  if (!gs__map_add(GS_MAP_HANDLE_REFS, handle, -1, &left) || left != 0)
    return false;
  gs__map_take(GS_MAP_HANDLE_REFS, handle, &left);
  return gs__forget(GS_MAP_HANDLE, handle, charge);
}

/* Puts back what unref dropped, when the driver refused the call after all. */
static void reref(CUmemGenericAllocationHandle handle, bool was_last, uint64_t charge)
{
  uint64_t after;
  if (!was_last) {
    gs__map_add(GS_MAP_HANDLE_REFS, handle, 1, &after);
    return;
  }
  gs__settle_free(CUDA_ERROR_UNKNOWN, GS_MAP_HANDLE, handle, true, charge);
  gs__map_put(GS_MAP_HANDLE_REFS, handle, 1);
}

GS_HOOK CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
  uint64_t refs, charge = 0;
  GS_REAL_OR_FAIL(cuMemRelease);
  if (!gs__map_get(GS_MAP_HANDLE_REFS, handle, &refs))
    return gs__cuda.cuMemRelease(handle); /* not a handle gpuslice charges */
  bool last = unref(handle, &charge);
  CUresult rc = gs__cuda.cuMemRelease(handle);
  if (rc != CUDA_SUCCESS)
    reref(handle, last, charge);
  return rc;
}

GS_HOOK CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
  uint64_t after;
  GS_REAL_OR_FAIL(cuMemRetainAllocationHandle);
  CUresult rc = gs__cuda.cuMemRetainAllocationHandle(handle, addr);
  if (rc == CUDA_SUCCESS && handle)
    gs__map_add(GS_MAP_HANDLE_REFS, *handle, 1, &after);
  return rc;
}

/* Completes a cuMemMap: a mapping of a handle gpuslice charges is one more reference to it,
 * recorded by its start. If it cannot be recorded the mapping is undone. */
CUresult gs__vmm_mapped(CUresult rc, CUdeviceptr ptr, size_t size,
                        CUmemGenericAllocationHandle handle)
{
  uint64_t after, v;
  if (rc != CUDA_SUCCESS || !gs__map_add(GS_MAP_HANDLE_REFS, handle, 1, &after))
    return rc;
  if (gs__map_put(GS_MAP_VA_HANDLE, ptr, handle)) {
    if (gs__map_put(GS_MAP_VA_SIZE, ptr, size))
      return CUDA_SUCCESS;
    gs__map_take(GS_MAP_VA_HANDLE, ptr, &v);
  }
  gs__map_add(GS_MAP_HANDLE_REFS, handle, -1, &after);
  gs__cuda.cuMemUnmap(ptr, size);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Unmaps the one recorded mapping at ptr, dropping its reference first. */
static CUresult unmap_one(CUdeviceptr ptr, size_t size)
{
  uint64_t handle, recorded, charge = 0;
  gs__map_take(GS_MAP_VA_SIZE, ptr, &recorded);
  if (!gs__map_take(GS_MAP_VA_HANDLE, ptr, &handle))
    return gs__cuda.cuMemUnmap(ptr, size);
  bool last = unref(handle, &charge);
  CUresult rc = gs__cuda.cuMemUnmap(ptr, size);
  if (rc == CUDA_SUCCESS)
    return rc;
  reref(handle, last, charge);
  gs__map_put(GS_MAP_VA_HANDLE, ptr, handle);
  gs__map_put(GS_MAP_VA_SIZE, ptr, size);
  return rc;
}

/* Forgets the recorded mapping at ptr, which the driver has unmapped, and its reference. */
static void forget_mapping(CUdeviceptr ptr)
{
  uint64_t handle, size, charge;
  gs__map_take(GS_MAP_VA_SIZE, ptr, &size);
  if (gs__map_take(GS_MAP_VA_HANDLE, ptr, &handle))
    unref(handle, &charge);
}

/* The range as one driver call; then the `count` mappings recorded from its start go. */
static CUresult unmap_whole(CUdeviceptr ptr, size_t size, unsigned count)
{
  CUresult rc = gs__cuda.cuMemUnmap(ptr, size);
  for (uint64_t p = ptr, n = 0;
       rc == CUDA_SUCCESS && count-- > 0 && gs__map_get(GS_MAP_VA_SIZE, p, &n); p += n)
    forget_mapping(p);
  return rc;
}

/* How far from ptr the recorded mappings run back to back, up to end. */
static uint64_t recorded_run(CUdeviceptr ptr, uint64_t end, unsigned *count)
{
  uint64_t p = ptr, size;
  *count = 0;
  while (p < end && gs__map_get(GS_MAP_VA_SIZE, p, &size) && size) {
    p += size;
    (*count)++;
  }
  return p;
}

/* A range made of recorded mappings is unmapped one mapping at a time, which is what one call
 * does; a range gpuslice cannot follow (it starts at no recorded mapping, or has gaps) goes
 * to the driver as it is, and the mappings recorded from its start are dropped afterwards. */
GS_HOOK CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
  unsigned count;
  GS_REAL_OR_FAIL(cuMemUnmap);
  uint64_t end = size > UINT64_MAX - ptr ? UINT64_MAX : (uint64_t) ptr + size;
  uint64_t reach = recorded_run(ptr, end, &count);
  if (count == 0)
    return gs__cuda.cuMemUnmap(ptr, size);
  if (reach != end)
    return unmap_whole(ptr, size, count);
  CUresult rc = CUDA_SUCCESS;
  /* Another thread unmapping the same range meanwhile (a race the program loses anyway) ends
   * the walk early rather than sending a stale size. */
  for (uint64_t p = ptr, n = 0; rc == CUDA_SUCCESS && p < end && gs__map_get(GS_MAP_VA_SIZE, p, &n);
       p += n)
    rc = unmap_one(p, n);
  return rc;
}
