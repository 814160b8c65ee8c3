/* How applications find the hooks, whichever way they look a driver function up:
 * - linked against libcuda: the dynamic linker finds the exported hook first (LD_PRELOAD);
 * - dlopen + dlsym: the exported dlsym below hands out the hook for a hooked name;
 * - cuGetProcAddress(_v2), as cudart, PyTorch, cuBLAS and NCCL do: the driver picks the entry
 *   for the requested version and flags, and the hook with exactly that entry's ABI replaces
 *   it. Entries gpuslice does not hook come back untouched, with no wrapper in between. */
#include <dlfcn.h>
#include <string.h>

#include "hooks.h"

struct hook {
  const char *name;
  void *hook;  /* the interposer's function of that name */
  void **real; /* where the driver's function of that name is resolved */
  bool nvml;
};

#define CUDA_HOOK(n) { #n, (void *) n, (void **) &gs__cuda.n, false },
#define NVML_HOOK(n) { #n, (void *) n, (void **) &gs__nvml.n, true },

/* Keep in step with libgpuslice.lds: a test compares the two with the library's exports. */
#define GS_CUDA_HOOKS(X)                                                                               \
  X(cuGetProcAddress) X(cuGetProcAddress_v2) X(cuMemAlloc) X(cuMemAlloc_v2) X(cuMemAllocPitch_v2)      \
  X(cuMemAllocManaged) X(cuMemFree) X(cuMemFree_v2) X(cuMemGetInfo) X(cuMemGetInfo_v2)                 \
  X(cuDeviceTotalMem_v2) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync)         \
  X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemCreate) X(cuMemRelease) \
  X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuArrayDestroy) X(cuMipmappedArrayCreate)                \
  X(cuMipmappedArrayDestroy) X(cuCtxCreate_v2) X(cuCtxCreate_v3) X(cuCtxCreate_v4) X(cuCtxDestroy_v2)  \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxReset_v2)          \
  X(cuIpcOpenMemHandle) X(cuIpcOpenMemHandle_v2) X(cuIpcCloseMemHandle) X(cuMemImportFromShareableHandle) \
  X(cuMemMap) X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)        \
  X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)   \
  X(cuCtxSynchronize) X(cuCtxSynchronize_v2) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz)          \
  X(cuEventSynchronize)

static const struct hook hooks[] = {
  GS_CUDA_HOOKS(CUDA_HOOK)
  NVML_HOOK(nvmlDeviceGetMemoryInfo)
  NVML_HOOK(nvmlDeviceGetMemoryInfo_v2)
};
#define NHOOKS (sizeof(hooks) / sizeof(hooks[0]))

/* Byte comparisons of our own: this may run before a sanitizer's strcmp works (see below). */
static bool same(const char *a, const char *b)
{
  while (*a && *a == *b)
    a++, b++;
  return *a == *b;
}

static bool starts(const char *s, const char *prefix)
{
  while (*prefix && *s == *prefix)
    s++, prefix++;
  return !*prefix;
}

static const struct hook *by_name(const char *name)
{
  for (size_t i = 0; i < NHOOKS; i++)
    if (same(hooks[i].name, name))
      return &hooks[i];
  return NULL;
}

void *gs__hook_for(void *real_fn)
{
  for (size_t i = 0; i < NHOOKS; i++)
    if (!hooks[i].nvml && *hooks[i].real == real_fn)
      return hooks[i].hook;
  return real_fn;
}

/* The hook for name, once the library it belongs to is resolved, or NULL when name is not
 * hooked or that library lacks it (then the caller must see what the library says). */
static void *hook_named(const char *name)
{
  if (!starts(name, "cu") && !starts(name, "nvml"))
    return NULL;
  const struct hook *h = by_name(name);
  if (!h)
    return NULL;
  if (h->nvml)
    gs__nvml_resolve();
  else
    gs__cuda_resolve();
  return *h->real ? h->hook : NULL;
}

/* glibc's dlsym, which the trampoline jumps to (dlsym-trampoline.S). */
void *(*gs__dlsym_real)(void *, const char *);

/* Called by the exported dlsym (a trampoline on x86-64) with its arguments: the hook for
 * name, or NULL to have the trampoline jump to glibc's dlsym with the caller's own return
 * address, which is how glibc resolves RTLD_NEXT and the caller's scope. It may run inside a
 * sanitizer's start-up, before the sanitizer's libc replacements work: it calls nothing from
 * libc on the RTLD_NEXT path, and hook_named compares names without libc. */
void *gs__dlsym_hook(void *handle, const char *name);
void *gs__dlsym_hook(void *handle, const char *name)
{
  if (!gs__dlsym_real)
    gs__dlsym_real = gs__glibc_dlsym();
  if (handle == RTLD_NEXT)
    return NULL;
  return hook_named(name);
}

#if !defined(__x86_64__)
/* Without the trampoline: a tail call, which an optimizing compiler turns into a jump. */
GS_HOOK void *dlsym(void *handle, const char *name)
{
  void *h = gs__dlsym_hook(handle, name);
  return h ? h : gs__dlsym_real(handle, name);
}
#endif

GS_HOOK CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *status)
{
  GS_REAL_OR_FAIL(cuGetProcAddress_v2);
  CUresult rc = gs__cuda.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, status);
  if (rc == CUDA_SUCCESS && pfn && *pfn)
    *pfn = gs__hook_for(*pfn);
  return rc;
}

GS_HOOK CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
  GS_REAL_OR_FAIL(cuGetProcAddress);
  CUresult rc = gs__cuda.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
  if (rc == CUDA_SUCCESS && pfn && *pfn)
    *pfn = gs__hook_for(*pfn);
  return rc;
}
