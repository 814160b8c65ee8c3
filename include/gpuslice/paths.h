/* Where gpuslice's pieces are installed, found from the running executable so that a build
 * tree and an installed tree both work without configuration:
 *
 *   <prefix>/bin/gpuslice              the CLI (found through /proc/self/exe)
 *   <prefix>/bin/gpusim-workload       the workload program of the demo and the tests
 *   <libdir>/libgpuslice.so            the interposer; libdir is <prefix>/lib
 *
 * GPUSLICE_LIBDIR, when set, replaces <prefix>/lib. Where the NVIDIA driver comes from (the
 * system's, or the simulated one under libdir) is not the layout's business: gs-driver.h. */
#ifndef GS_PATHS_H
#define GS_PATHS_H

#include <gpuslice/error.h>

struct gs_paths {
  char *exe;      /* the running executable, resolved */
  char *bindir;   /* <prefix>/bin: the executable's directory */
  char *libdir;   /* GPUSLICE_LIBDIR or <prefix>/lib */
  char *preload;  /* <libdir>/libgpuslice.so */
  char *workload; /* <bindir>/gpusim-workload */
};

/* Fills p from the executable at exe_path (normally "/proc/self/exe", which is resolved).
 * Returns 0, or -1 with err. Nothing is checked for existence: callers do that when they
 * need a file, so that the message can name it. */
int gs_paths_find(struct gs_paths *p, const char *exe_path, gs_error_t *err);
void gs_paths_release(struct gs_paths *p);

#endif
