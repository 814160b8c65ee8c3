/* The install layout, derived from the running executable; see gs-paths.h. */
#include <gpuslice/paths.h>
#include <gpuslice/env.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The directory part of path, as a new string ("/" for "/x"), or NULL without memory. */
static char *dir_of(const char *path)
{
  const char *slash = strrchr(path, '/');
  if (!slash)
    return strdup(".");
  return strndup(path, slash == path ? 1 : (size_t) (slash - path));
}

static char *join(const char *dir, const char *name)
{
  char *s = NULL;
  return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}

int gs_paths_find(struct gs_paths *p, const char *exe_path, gs_error_t *err)
{
  char *prefix = NULL;
  const char *env = gs_getenv_nonempty("GPUSLICE_LIBDIR");

  char exe[PATH_MAX];

  memset(p, 0, sizeof(*p));
  if (!realpath(exe_path, exe))
    return gs_make_error(err, errno, "cannot resolve '%s'", exe_path);
  p->exe = strdup(exe);
  p->bindir = p->exe ? dir_of(p->exe) : NULL;
  prefix = p->bindir ? dir_of(p->bindir) : NULL;
  if (prefix)
    p->libdir = env ? strdup(env) : join(prefix, "lib");
  if (p->libdir) {
    p->preload = join(p->libdir, "libgpuslice.so");
    p->workload = join(p->bindir, "gpusim-workload");
  }
  free(prefix);
  if (!p->preload || !p->workload) {
    gs_paths_release(p);
    return gs_make_error(err, ENOMEM, "finding the install layout");
  }
  return 0;
}

void gs_paths_release(struct gs_paths *p)
{
  free(p->exe);
  free(p->bindir);
  free(p->libdir);
  free(p->preload);
  free(p->workload);
  memset(p, 0, sizeof(*p));
}
