/* The compute options of `gpuslice run`: --compute, --compute-policy, --priority and
 * --slice-ms. Each setter is an option table's callback, as the other tenant options are
 * (run-tenant.c): 0, or -1 with err naming the option and the bad value. */
#include "run-tenant.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --compute PCT: a number in (0, 100], kept in millionths of the GPU's time. */
int run_tenant_set_compute(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  char *end = NULL;
  errno = 0;
  double pct = strtod(arg, &end);
  if (!*arg || *end || errno || !isfinite(pct) || pct <= 0 || pct > 100)
    return gs_make_error(err, 0, "--compute: '%s' is not a percentage in (0, 100]", arg);
  if (pct < GS_PCT_MIN)
    return gs_make_error(err, 0, "--compute: '%s' is below the smallest share, %g", arg,
                         GS_PCT_MIN);
  t->compute_ppm = (uint32_t) (pct * 10000.0 + 0.5);
  return 0;
}

int run_tenant_set_compute_policy(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (strcmp(arg, "share") == 0)
    t->compute_policy = GS_COMPUTE_SHARE;
  else if (strcmp(arg, "cap") == 0)
    t->compute_policy = GS_COMPUTE_CAP;
  else
    return gs_make_error(err, 0, "--compute-policy: '%s' is not cap or share", arg);
  return 0;
}

int run_tenant_set_priority(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (strcmp(arg, "high") == 0)
    t->priority = GS_PRIO_HIGH;
  else if (strcmp(arg, "normal") == 0)
    t->priority = GS_PRIO_NORMAL;
  else if (strcmp(arg, "low") == 0)
    t->priority = GS_PRIO_LOW;
  else
    return gs_make_error(err, 0, "--priority: '%s' is not high, normal or low", arg);
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
