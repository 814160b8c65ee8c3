/* Loading the real libcuda.so.1 and libnvidia-ml.so.1 behind the interposer, lazily: a
 * process that never calls the driver never loads it. RTLD_NOLOAD comes first, so that a
 * program that already loaded a driver (possibly from a path of its own) gets that same copy.
 *
 * What does not live here: the hooks (hook-*.c) and anything that decides policy (quota.c). */
#include "real.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include <gpuslice.h>

struct gs_cuda_real gs__cuda;
struct gs_nvml_real gs__nvml;

static void *cuda_handle;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

struct sym {
  void **fn;
  const char *name;
};

#define GS_REAL_ROW(table, name) { (void **) &table.name, #name },
#define CUDA_ROW(name) GS_REAL_ROW(gs__cuda, name)
#define NVML_ROW(name) GS_REAL_ROW(gs__nvml, name)
static const struct sym cuda_syms[] = { GS_CUDA_REAL_FUNCS(CUDA_ROW) };
static const struct sym nvml_syms[] = { GS_NVML_REAL_FUNCS(NVML_ROW) };
/* The tables and the structs come from one X-macro (real.h), so they cannot disagree: no
 * static_assert on their lengths. What can go wrong is a hook whose driver function is not
 * here, and that is a compile error in hook-dlsym.c's table (&gs__cuda.name). */

void *(*gs__glibc_dlsym(void))(void *, const char *)
{
  typedef void *(*dlsym_fn)(void *, const char *);
  static dlsym_fn real;
  if (!real) {
    /* glibc 2.34 moved dlsym into libc under a new version; older ones have only 2.2.5. */
    real = (dlsym_fn) dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real)
      real = (dlsym_fn) dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }
  return real;
}

void *gs__real_dlsym(void *handle, const char *name)
{
  void *(*real)(void *, const char *) = gs__glibc_dlsym();
  return real ? real(handle, name) : NULL;
}

static void *load(const char *soname)
{
  void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h)
    h = dlopen(soname, RTLD_LAZY);
  if (!h) {
    const char *why = dlerror();
    GS_LOG(GS_LOG_INFO, "cannot load %s: %s", soname, why ? why : "not found");
  }
  return h;
}

/* A symbol the driver lacks stays NULL: its hook is then never handed out. */
static void fill(void *h, const struct sym *syms, size_t n)
{
  for (size_t i = 0; h && i < n; i++)
    *syms[i].fn = gs__real_dlsym(h, syms[i].name);
}

_Atomic bool gs__cuda_ready;

static void cuda_load(void)
{
  cuda_handle = load("libcuda.so.1");
  fill(cuda_handle, cuda_syms, sizeof(cuda_syms) / sizeof(cuda_syms[0]));
  atomic_store_explicit(&gs__cuda_ready, true, memory_order_release);
}

static void nvml_load(void)
{
  fill(load("libnvidia-ml.so.1"), nvml_syms, sizeof(nvml_syms) / sizeof(nvml_syms[0]));
}

void gs__cuda_resolve_slow(void)
{
  pthread_once(&cuda_once, cuda_load);
}

void gs__nvml_resolve(void)
{
  pthread_once(&nvml_once, nvml_load);
}

void *gs__cuda_handle(void)
{
  gs__cuda_resolve();
  return cuda_handle;
}
