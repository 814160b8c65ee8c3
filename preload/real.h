/* The real NVIDIA libraries behind the interposer: one table of function pointers per
 * library, resolved once, on first need. Hooks call through these tables; nothing on a hot
 * path calls dlsym.
 *
 * The interposer exports its own dlsym (see hook-dlsym.c), so every lookup made here goes
 * through glibc's dlsym, fetched with dlvsym, never through the exported name. */
#ifndef GS_PRELOAD_REAL_H
#define GS_PRELOAD_REAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "gs-cuda.h"
#include "gs-nvml.h"

/* The driver functions gpuslice calls: every hook's target plus the queries hooks need.
 * A driver that lacks one (an older driver) leaves it NULL, and the hook for it is never
 * handed out. */
/* The lists stay as written: a formatter cannot lay out X-macros. */
// clang-format off
#define GS_CUDA_REAL_FUNCS(X)                                                                   \
  X(cuInit) X(cuGetProcAddress) X(cuGetProcAddress_v2) X(cuCtxGetDevice) X(cuDeviceGetCount)    \
  X(cuDeviceGet) X(cuDeviceGetUuid) X(cuDeviceTotalMem_v2)                  \
  X(cuMemGetInfo) X(cuMemGetInfo_v2) X(cuMemAlloc) X(cuMemAlloc_v2)          \
  X(cuMemAllocPitch_v2) X(cuMemAllocManaged) X(cuMemFree) X(cuMemFree_v2)                       \
  X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync)                         \
  X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)     \
  X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolTrimTo) X(cuMemPoolGetAttribute) X(cuDeviceGetDefaultMemPool) X(cuDeviceGetMemPool) \
  X(cuMemCreate) X(cuMemRelease) X(cuArrayCreate) X(cuArrayCreate_v2)      \
  X(cuArray3DCreate) X(cuArray3DCreate_v2) X(cuArrayDestroy) X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy)  \
  X(cuCtxCreate_v2) X(cuCtxCreate_v3) X(cuCtxCreate_v4) X(cuCtxDestroy_v2)                      \
  X(cuCtxSetCurrent) X(cuCtxPushCurrent) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent) X(cuCtxPopCurrent_v2) \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxReset_v2)      \
  X(cuMemGetAddressRange_v2) X(cuIpcOpenMemHandle) X(cuIpcOpenMemHandle_v2) X(cuIpcCloseMemHandle)  \
  X(cuMemImportFromShareableHandle) X(cuMemGetAllocationPropertiesFromHandle) X(cuMemMap) X(cuMemUnmap) X(cuMemRetainAllocationHandle)    \
  X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)                  \
  X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)   \
  X(cuCtxSynchronize) X(cuCtxSynchronize_v2) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz)          \
  X(cuEventSynchronize) X(cuEventCreate) X(cuEventRecord) X(cuEventRecord_ptsz) X(cuEventQuery)          \
  X(cuEventElapsedTime) X(cuEventDestroy_v2)

#define GS_NVML_REAL_FUNCS(X) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2) X(nvmlDeviceGetUUID)
// clang-format on

#define GS_REAL_FIELD(name) __typeof__(name) *name;
struct gs_cuda_real {
  GS_CUDA_REAL_FUNCS(GS_REAL_FIELD)
};
struct gs_nvml_real {
  GS_NVML_REAL_FUNCS(GS_REAL_FIELD)
};
#undef GS_REAL_FIELD

/* Resolved on first call; thread-safe. A missing library leaves every entry NULL. Once
 * gs__cuda is filled, gs__cuda_resolve is a load and a branch. */
extern struct gs_cuda_real gs__cuda;
extern struct gs_nvml_real gs__nvml;
extern _Atomic bool gs__cuda_ready;
void gs__cuda_resolve_slow(void);
static inline void gs__cuda_resolve(void)
{
  if (__builtin_expect(!atomic_load_explicit(&gs__cuda_ready, memory_order_acquire), 0))
    gs__cuda_resolve_slow();
}
void gs__nvml_resolve(void);

/* glibc's own dlsym, for lookups that must not meet the interposer's. */
void *gs__real_dlsym(void *handle, const char *name);
/* That function itself (found with dlvsym), or NULL. */
void *(*gs__glibc_dlsym(void))(void *, const char *);

/* The handle of the loaded driver, or NULL. */
void *gs__cuda_handle(void);

#endif
