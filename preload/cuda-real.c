/* Loading the real libcuda.so.1 behind the interposer, lazily: a process that never calls
 * the driver never loads it. RTLD_NOLOAD first, so that when the program has already loaded
 * a driver (possibly from a path of its own) we use that same copy rather than a second one.
 *
 * What does not live here: the wrappers themselves (one file per API area, added by later
 * issues) and anything that decides policy. */
#include "cuda-real.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "gpuslice.h"

#define CUDA_SONAME "libcuda.so.1"

static struct gs_cuda_real real;
static const struct gs_cuda_real *real_ok;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

/* Every entry of struct gs_cuda_real, by name. The static assertion below fails to compile
 * when a field is added to the struct without a line here. */
static const struct {
  void **fn;
  const char *name;
} real_syms[] = {
  { (void **) &real.cuInit, "cuInit" },
  { (void **) &real.cuDriverGetVersion, "cuDriverGetVersion" },
};
_Static_assert(sizeof(real_syms) / sizeof(real_syms[0]) == sizeof(struct gs_cuda_real) / sizeof(void *),
               "real_syms must list every field of struct gs_cuda_real");

static void *open_driver(void)
{
  void *h = dlopen(CUDA_SONAME, RTLD_LAZY | RTLD_NOLOAD);
  return h ? h : dlopen(CUDA_SONAME, RTLD_LAZY);
}

static void resolve(void)
{
  void *h = open_driver();
  if (!h) {
    const char *why = dlerror();
    GS_LOG(GS_LOG_WARN, "cannot load the CUDA driver: %s", why ? why : CUDA_SONAME);
    return;
  }
  for (size_t i = 0; i < sizeof(real_syms) / sizeof(real_syms[0]); i++) {
    dlerror(); /* a NULL symbol is only an error when dlerror says so afterwards */
    *real_syms[i].fn = dlsym(h, real_syms[i].name);
    const char *why = dlerror();
    if (why || !*real_syms[i].fn) {
      GS_LOG(GS_LOG_WARN, "the CUDA driver lacks %s: %s", real_syms[i].name, why ? why : "NULL");
      return;
    }
  }
  real_ok = &real;
}

const struct gs_cuda_real *gs__cuda_real(void)
{
  pthread_once(&real_once, resolve);
  return real_ok;
}
