/* gpusim-workload: a CUDA driver API program for testing the simulated driver (and, being
 * linked only against libcuda.so.1, the real one). main() parses the options, resolves the
 * driver table by the chosen path, checks what the mode needs, and runs the mode.
 * Exit status: 0 ok, 1 CUDA (or other runtime) failure, 2 usage error. */
#include "wl.h"

#include <string.h>

struct wl_mode {
  const char *name;
  int (*run)(const struct wl_opts *o);
};

static const struct wl_mode wl_modes[] = {
  { "info", wl_mode_info },
  { "alloc-until-oom", wl_mode_alloc_until_oom },
  { "hold", wl_mode_hold },
  { "busy", wl_mode_busy },
  { "kernel-time", wl_mode_kernel_time },
  { "churn", wl_mode_churn },
  { "procaddr-check", wl_mode_procaddr_check },
};

static const struct wl_mode *mode_find(const char *name)
{
  for (size_t i = 0; i < sizeof(wl_modes) / sizeof(wl_modes[0]); i++)
    if (strcmp(wl_modes[i].name, name) == 0)
      return &wl_modes[i];
  return NULL;
}

/* The options each mode cannot do without, and the bounds the modes rely on. */
static int opts_check(const struct wl_opts *o)
{
  const char *m = o->mode;

  if (strcmp(m, "alloc-until-oom") == 0 && o->chunk == 0)
    return wl_fail("alloc-until-oom needs --chunk SIZE > 0");
  if (o->rounds == 0 || o->rounds > WL_ROUNDS_MAX)
    return wl_fail("--rounds must be in 1..%d", WL_ROUNDS_MAX);
  if (o->have_procaddr_version && o->path != WL_PATH_PROCADDR && o->path != WL_PATH_PROCADDR_V1)
    return wl_fail("--procaddr-version needs --path procaddr or procaddr-v1");
  if (o->procaddr_version < WL_PROCADDR_VERSION_MIN || o->procaddr_version > WL_PROCADDR_VERSION)
    return wl_fail("--procaddr-version must be in %d..%d", WL_PROCADDR_VERSION_MIN,
                   WL_PROCADDR_VERSION);
  if (strcmp(m, "hold") == 0 && o->bytes == 0)
    return wl_fail("hold needs --bytes SIZE > 0");
  if (strcmp(m, "busy") == 0 && (!o->have_seconds || !(o->seconds > 0)))
    return wl_fail("busy needs --seconds T > 0");
  if (!(o->duty > 0 && o->duty <= 1))
    return wl_fail("--duty must be in (0, 1]");
  if (o->have_every && (!(o->every > 0) || o->duty != 1))
    return wl_fail("--every must be > 0, and cannot go with --duty");
  if (strcmp(m, "kernel-time") == 0 && (!o->have_us || o->count == 0))
    return wl_fail("kernel-time needs --us U and --count N > 0");
  if (strcmp(m, "churn") == 0 && (o->ops == 0 || o->max_bytes == 0))
    return wl_fail("churn needs --ops N > 0 and --max-bytes SIZE > 0");
  return 0;
}

int main(int argc, char **argv)
{
  struct wl_opts o;
  int rc = wl_options_parse(argc, argv, &o);
  if (rc != 0)
    return rc > 0 ? 0 : 2;
  const struct wl_mode *mode = mode_find(o.mode);
  if (!mode) {
    wl_fail("unknown mode '%s' (see --help)", o.mode);
    return 2;
  }
  if (opts_check(&o) < 0)
    return 2;
  if (wl_driver_load(o.path, (int) o.procaddr_version) < 0)
    return 1;
  return mode->run(&o) < 0 ? 1 : 0;
}
