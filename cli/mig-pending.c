/* `gpuslice mig plan --gpu N --pending FILE`: not written yet. */
#include "cli.h"

#include "mig-cli.h"

int mig_plan_pending(const struct mig_opts *o, const struct gs_mig_table *t)
{
  (void) t;
  return cli_usage_error("mig", "plan --pending: GPU %d: not built yet", o->gpu);
}
