/* The compute options of `gpuslice run`: --compute, --compute-policy, --priority and
 * --slice-ms. Each setter is an option table's callback, as the other tenant options are
 * (run-tenant.c): 0, or -1 with err naming the option and the bad value. */
#include "run-tenant.h"

#include <gpuslice/limits.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --compute PCT: a number in (0, 100], kept in millionths of the GPU's time. The rules are
 * the library's (limits.h), shared with the Slurm plugin. */
int run_tenant_set_compute(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (gs_parse_compute_pct(arg, &t->compute_ppm, err) < 0)
    return gs_error_prepend(err, "--compute");
  return 0;
}

int run_tenant_set_compute_policy(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (gs_compute_policy_from_name(arg, &t->compute_policy, err) < 0)
    return gs_error_prepend(err, "--compute-policy");
  return 0;
}

int run_tenant_set_priority(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (gs_priority_from_name(arg, &t->priority, err) < 0)
    return gs_error_prepend(err, "--priority");
  return 0;
}

/* --slice-ms N: 1 ms to 10 s. Shorter turns cost more handovers than they give back. */
int run_tenant_set_slice(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  char *end = NULL;
  errno = 0;
  long ms = strtol(arg, &end, 10);
  if (!*arg || *end || errno || ms < 1 || ms > 10000)
    return gs_make_error(err, 0,
                         "--slice-ms: '%s' is not a whole number of milliseconds in 1..10000", arg);
  t->slice_ms = (uint32_t) ms;
  return 0;
}
