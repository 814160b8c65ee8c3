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

/* The one list of hooks (hooks.def), which the version script is generated from too. */
static const struct hook hooks[] = {
#define GS_CUDA_HOOK(n) { #n, (void *) n, (void **) &gs__cuda.n, false },
#define GS_NVML_HOOK(n) { #n, (void *) n, (void **) &gs__nvml.n, true },
#define GS_EXPORT(n) /* exported, but not handed out from this table */
#include "hooks.def"
#undef GS_CUDA_HOOK
#undef GS_NVML_HOOK
#undef GS_EXPORT
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

GS_HOOK CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *status)
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
