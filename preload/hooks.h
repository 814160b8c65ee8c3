/* What every hook file shares: the export marker and the helpers that settle an allocation
 * once the driver has answered. Each hook-*.c holds the hooks of one API area. */
#ifndef GS_PRELOAD_HOOKS_H
#define GS_PRELOAD_HOOKS_H

#include <stdint.h>

#include "real.h"
#include "quota.h"

/* Marks a function the interposer exports. hooks.def must list it too. */
#define GS_HOOK __attribute__((visibility("default")))

/* The library (api: cuda or nvml) lacks the function: return the answer the real library
 * gives for an unknown entry. */
#define GS_REAL_OR(api, fn, missing) \
  do {                               \
    gs__##api##_resolve();           \
    if (!gs__##api.fn)               \
      return missing;                \
  } while (0)
#define GS_REAL_OR_FAIL(fn) GS_REAL_OR(cuda, fn, CUDA_ERROR_NOT_FOUND)
#define GS_NVML_REAL_OR_FAIL(fn) GS_REAL_OR(nvml, fn, NVML_ERROR_FUNCTION_NOT_FOUND)

/* Completes "charge, then allocate": on a driver failure the charge goes back; on success the
 * allocation is remembered so that its free can give the charge back. If even that fails (no
 * memory for the map), undo frees what the driver made and the caller sees OUT_OF_MEMORY. */
static inline CUresult gs__settle(CUresult rc, enum gs_map map, uint64_t key, uint64_t bytes,
                                  int gpu, void (*undo)(uint64_t key))
{
  if (rc != CUDA_SUCCESS) {
    gs__uncharge(gpu, bytes);
    return rc;
  }
  if (gs__remember(map, key, bytes, gpu))
    return CUDA_SUCCESS;
  undo(key);
  gs__uncharge(gpu, bytes);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Completes a free: the charge was given back before the driver was called (so that a
 * concurrent allocation reusing the address can never lose its own entry); if the driver
 * refuses the free, the memory is still held and the charge is put back. */
static inline CUresult gs__settle_free(CUresult rc, enum gs_map map, uint64_t key, bool ours,
                                       uint64_t charge)
{
  if (rc != CUDA_SUCCESS && ours) {
    gs__charge_force(GS_CHARGE_GPU(charge), GS_CHARGE_BYTES(charge));
    gs__remember(map, key, GS_CHARGE_BYTES(charge), GS_CHARGE_GPU(charge));
  }
  return rc;
}

/* VMM reference counting (hook-vmm.c): starts the count of a handle gpuslice charges (false
 * when it cannot be recorded), and completes a cuMemMap with the driver's answer rc. */
bool gs__vmm_track(CUmemGenericAllocationHandle handle);
CUresult gs__vmm_mapped(CUresult rc, CUdeviceptr ptr, size_t size,
                        CUmemGenericAllocationHandle handle);

/* A CUDA UUID as NVML writes it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
void gs__uuid_text(const CUuuid *u, char *buf, size_t len);

/* Maps a pointer the real driver handed out to the hook with the same ABI, or returns it
 * unchanged when gpuslice does not hook that function. */
void *gs__hook_for(void *real_fn);

#endif
