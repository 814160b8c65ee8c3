/* The one seam to the NVIDIA driver: where libcuda.so.1 and libnvidia-ml.so.1 come from.
 *
 * Either the system's, which the dynamic loader finds by name, or the simulated ones in
 * <libdir>/sim (see gs-paths.h) when GPUSLICE_SIM is set. `gpuslice run` and `demo` use the
 * answer for their children's LD_LIBRARY_PATH, the daemon for the NVML it dlopens. Nothing
 * here links the simulator: its device list is checked by a function that the simulated
 * libnvidia-ml.so.1 exports (GS_DRIVER_SPEC_CHECK), looked up at run time.
 *
 * What lives elsewhere: the install layout is gs-paths.h; the interposer reaches whichever
 * driver the loader gave its process (preload/cuda-real.c) and never asks this module. */
#ifndef GS_DRIVER_H
#define GS_DRIVER_H

#include <stddef.h>

#include <gpuslice/error.h>
#include <gpuslice/paths.h>

enum gs_driver_source {
  GS_DRIVER_SYSTEM,       /* the system's driver, found by the loader */
  GS_DRIVER_SIM,          /* the simulator, because GPUSLICE_SIM is set */
  GS_DRIVER_SIM_FALLBACK, /* the simulator, because no driver loads and a fallback was given */
};

struct gs_driver {
  enum gs_driver_source source;
  char *spec;   /* the simulator's device list; NULL for the system's driver */
  char *libdir; /* the directory to put first on LD_LIBRARY_PATH; NULL for the system's */
  char *cuda;   /* what to dlopen: "libcuda.so.1", or <libdir>/sim/libcuda.so.1 */
  char *nvml;   /* what to dlopen: "libnvidia-ml.so.1", or <libdir>/sim/libnvidia-ml.so.1 */
};

/* The simulator's side of the seam. Its libnvidia-ml.so.1 exports a function of this type
 * under this name, which parses a device list as the simulator will: it returns the device
 * count, or -1 with a one-line message in err naming the bad token. */
#define GS_DRIVER_SPEC_CHECK "gpusim_spec_check"
typedef int gs_driver_spec_check_fn(const char *spec, char *err, size_t errlen);

/* What gs_driver_check returns for a bad device list: the user's mistake, not a failure. */
#define GS_DRIVER_BAD_SPEC (-2)

/* Decides where the driver comes from: the simulator in paths->libdir's sim/ when
 * GPUSLICE_SIM is set (empty counts as unset), else the system's. With a fallback spec, a
 * system without a loadable libcuda.so.1 gets the simulator with that device list instead
 * (GS_DRIVER_SIM_FALLBACK); nothing is exported, the caller sets GPUSLICE_SIM if it wants
 * its children to follow. Returns 0, or -1 with err. Release d with gs_driver_release. */
int gs_driver_find(struct gs_driver *d, const struct gs_paths *paths, const char *fallback_spec,
                   gs_error_t *err);

/* For the simulator: checks that both its libraries are there and that its device list is
 * one it accepts. Returns 0; GS_DRIVER_BAD_SPEC with err saying what is wrong with the list;
 * or -1 with err when the simulator is missing or cannot be loaded. The system's driver is
 * not loaded here: 0. */
int gs_driver_check(const struct gs_driver *d, gs_error_t *err);

void gs_driver_release(struct gs_driver *d);

/* The two libraries of the driver. */
enum gs_driver_lib { GS_DRIVER_LIB_CUDA, GS_DRIVER_LIB_NVML };

/* Loads library `which` of the driver this program should use (gs_driver_find from the running
 * program's install layout, checked with gs_driver_check), RTLD_NOW | RTLD_LOCAL. Returns the
 * handle, or NULL with err; *path, when not NULL, gets what was loaded (free it), also on a
 * failure to load. */
void *gs_driver_open(enum gs_driver_lib which, char **path, gs_error_t *err);

/* One entry of a table of a library's functions: where in the table, and the symbol. */
struct gs_driver_sym {
  size_t offset;
  const char *name;
};

/* Fills a table of function pointers from lib: the first `required` symbols of syms must be
 * there (the first missing one's name in *missing, -1), the others are NULL when missing. */
int gs_driver_resolve(void *lib, const struct gs_driver_sym *syms, size_t n, size_t required,
                      void *table, const char **missing);

#endif
