/* Where the NVIDIA driver comes from, the system's or the simulator's; see gs-driver.h.
 *
 * This is the only code outside sim/ that knows the simulator exists, and it knows it only
 * as two files in <libdir>/sim and one exported function, all found at run time. */
#include <gpuslice/driver.h>
#include <gpuslice/env.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CUDA_SONAME "libcuda.so.1"
#define NVML_SONAME "libnvidia-ml.so.1"
#define SIM_SUBDIR "sim"

/* Whether the system's CUDA driver loads. Loading it is the only honest test: a file
 * that exists may still be for another architecture or miss its kernel module. */
static bool system_driver_loads(void)
{
  void *lib = dlopen(CUDA_SONAME, RTLD_LAZY | RTLD_LOCAL);
  if (!lib)
    return false;
  dlclose(lib);
  return true;
}

static int find_system(struct gs_driver *d)
{
  d->source = GS_DRIVER_SYSTEM;
  d->cuda = strdup(CUDA_SONAME);
  d->nvml = strdup(NVML_SONAME);
  return d->cuda && d->nvml ? 0 : -1;
}

static int find_sim(struct gs_driver *d, const struct gs_paths *paths, const char *spec,
                    enum gs_driver_source source)
{
  d->source = source;
  d->spec = strdup(spec);
  if (asprintf(&d->libdir, "%s/%s", paths->libdir, SIM_SUBDIR) < 0)
    d->libdir = NULL;
  if (!d->spec || !d->libdir)
    return -1;
  if (asprintf(&d->cuda, "%s/%s", d->libdir, CUDA_SONAME) < 0)
    d->cuda = NULL;
  if (asprintf(&d->nvml, "%s/%s", d->libdir, NVML_SONAME) < 0)
    d->nvml = NULL;
  return d->cuda && d->nvml ? 0 : -1;
}

int gs_driver_find(struct gs_driver *d, const struct gs_paths *paths, const char *fallback_spec,
                   gs_error_t *err)
{
  const char *spec = gs_getenv_nonempty("GPUSLICE_SIM");
  int r;

  memset(d, 0, sizeof(*d));
  if (spec)
    r = find_sim(d, paths, spec, GS_DRIVER_SIM);
  else if (fallback_spec && !system_driver_loads())
    r = find_sim(d, paths, fallback_spec, GS_DRIVER_SIM_FALLBACK);
  else
    r = find_system(d);
  if (r < 0) {
    gs_driver_release(d);
    return gs_make_error(err, ENOMEM, "choosing the NVIDIA driver");
  }
  return 0;
}

/* Asks the simulated NVML whether it accepts the device list. The library is closed again:
 * nothing in it runs until nvmlInit, so loading it has no effect to undo. */
static int check_spec(const struct gs_driver *d, gs_error_t *err)
{
  char msg[256];
  void *lib = dlopen(d->nvml, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return gs_make_error(err, 0, "simulated driver: %s", dlerror());
  dlerror();
  gs_driver_spec_check_fn *check = (gs_driver_spec_check_fn *) dlsym(lib, GS_DRIVER_SPEC_CHECK);
  if (!check) {
    gs_make_error(err, 0, "simulated driver '%s' has no %s", d->nvml, GS_DRIVER_SPEC_CHECK);
    dlclose(lib);
    return -1;
  }
  int n = check(d->spec, msg, sizeof(msg));
  dlclose(lib);
  if (n < 0) {
    gs_make_error(err, 0, "%s", msg);
    return GS_DRIVER_BAD_SPEC;
  }
  return 0;
}

int gs_driver_check(const struct gs_driver *d, gs_error_t *err)
{
  if (d->source == GS_DRIVER_SYSTEM)
    return 0;
  if (access(d->cuda, R_OK) < 0)
    return gs_make_error(err, errno, "simulated driver '%s'", d->cuda);
  return check_spec(d, err);
}

void gs_driver_release(struct gs_driver *d)
{
  free(d->spec);
  free(d->libdir);
  free(d->cuda);
  free(d->nvml);
  memset(d, 0, sizeof(*d));
}

void *gs_driver_open(enum gs_driver_lib which, char **path, gs_error_t *err)
{
  struct gs_paths paths;
  struct gs_driver drv;
  void *lib = NULL;
  if (path)
    *path = NULL;
  if (gs_paths_find(&paths, "/proc/self/exe", err) < 0)
    return NULL;
  if (gs_driver_find(&drv, &paths, NULL, err) == 0 && gs_driver_check(&drv, err) == 0) {
    const char *name = which == GS_DRIVER_LIB_CUDA ? drv.cuda : drv.nvml;
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      gs_make_error(err, 0, "cannot load %s: %s", name, dlerror());
    if (path)
      *path = strdup(name);
  }
  gs_driver_release(&drv);
  gs_paths_release(&paths);
  return lib;
}

int gs_driver_resolve(void *lib, const struct gs_driver_sym *syms, size_t n, size_t required,
                      void *table, const char **missing)
{
  for (size_t i = 0; i < n; i++) {
    void *f = dlsym(lib, syms[i].name);
    if (!f && i < required) {
      *missing = syms[i].name;
      return -1;
    }
    memcpy((char *) table + syms[i].offset, &f, sizeof(f));
  }
  return 0;
}
