/* The compute options of `gpuslice run`: --compute, --compute-policy, --priority and
 * --slice-ms. Each setter returns -1 when the value is good, or the exit status of a usage
 * error, as the other tenant options do (run-tenant.c). */
#include "run-tenant.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --compute PCT: a number in (0, 100], kept in millionths of the GPU's time. */
int run_tenant_set_compute(struct run_tenant *t, const char *arg)
{
  char *end = NULL;
  errno = 0;
  double pct = strtod(arg, &end);
  if (!*arg || *end || errno || !isfinite(pct) || pct <= 0 || pct > 100)
    return cli_usage_error("run", "--compute: '%s' is not a percentage in (0, 100]", arg);
  t->compute_ppm = (uint32_t) (pct * 10000.0 + 0.5);
  if (t->compute_ppm == 0)
    return cli_usage_error("run", "--compute: '%s' is below the smallest share, 0.0001", arg);
  return -1;
}

int run_tenant_set_compute_policy(struct run_tenant *t, const char *arg)
{
  if (strcmp(arg, "share") == 0)
    t->compute_policy = GS_COMPUTE_SHARE;
  else if (strcmp(arg, "cap") == 0)
    t->compute_policy = GS_COMPUTE_CAP;
  else
    return cli_usage_error("run", "--compute-policy: '%s' is not cap or share", arg);
  return -1;
}

int run_tenant_set_priority(struct run_tenant *t, const char *arg)
{
  if (strcmp(arg, "high") == 0)
    t->priority = GS_PRIO_HIGH;
  else if (strcmp(arg, "normal") == 0)
    t->priority = GS_PRIO_NORMAL;
  else if (strcmp(arg, "low") == 0)
    t->priority = GS_PRIO_LOW;
  else
    return cli_usage_error("run", "--priority: '%s' is not high, normal or low", arg);
  return -1;
}

/* --slice-ms N: 1 ms to 10 s. Shorter turns cost more handovers than they give back. */
int run_tenant_set_slice(struct run_tenant *t, const char *arg)
{
  char *end = NULL;
  errno = 0;
  long ms = strtol(arg, &end, 10);
  if (!*arg || *end || errno || ms < 1 || ms > 10000)
    return cli_usage_error("run", "--slice-ms: '%s' is not a whole number of milliseconds in 1..10000", arg);
  t->slice_ms = (uint32_t) ms;
  return -1;
}
