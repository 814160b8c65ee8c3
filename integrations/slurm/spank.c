/* gpuslice_spank.so: the SPANK plugin that gives Slurm jobs gpuslice's options, loaded
 * through plugstack.conf into srun, sbatch, salloc (local and allocator contexts) and
 * slurmstepd (remote context).
 *
 * What lives here: the four options (--gpu-vram, --gpu-compute, --gpu-compute-policy,
 * --gpu-priority), registered with spank_option_register in slurm_spank_init so that sbatch
 * and salloc have them too (the spank_options[] table reaches srun only), and their checks.
 * Each option's callback checks its value with the library's own parsers, the ones
 * `gpuslice run` uses, in every context, so that a bad value refuses the job at submission
 * with one line naming it, before anything starts.
 *
 * The remote side, where each step's tasks become one gpuslice tenant, is spank-tenant.c. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gpuslice/error.h>
#include <gpuslice/limits.h>
#include <gpuslice/quantity.h>

#include "spank-internal.h"

/* SPANK_PLUGIN's symbols, exported: slurm's plugin loader looks them up by name. */
GS_EXPORT const char plugin_name[] = "gpuslice";
GS_EXPORT const char plugin_type[] = "spank";
GS_EXPORT const unsigned int plugin_version = SLURM_VERSION_NUMBER;
GS_EXPORT const unsigned int spank_plugin_version = 1;

enum spank_opt { OPT_VRAM, OPT_COMPUTE, OPT_POLICY, OPT_PRIORITY };

struct spank_job_opts spank_job_opts;

/* Checks (and keeps) one option's value; 0, or -1 with err naming what is wrong. */
static int opt_parse(int val, const char *arg, gs_error_t *err)
{
  spank_job_opts.given = true;
  switch (val) {
  case OPT_VRAM:
    spank_job_opts.vram_set = true;
    return gs_parse_vram_limit(arg, &spank_job_opts.vram_bytes, &spank_job_opts.vram_ppm, err);
  case OPT_COMPUTE: return gs_parse_compute_pct(arg, &spank_job_opts.compute_ppm, err);
  case OPT_POLICY: return gs_compute_policy_from_name(arg, &spank_job_opts.policy, err);
  case OPT_PRIORITY: return gs_priority_from_name(arg, &spank_job_opts.priority, err);
  }
  return gs_make_error(err, 0, "unknown option %d", val);
}

static const char *const opt_names[] = { "gpu-vram", "gpu-compute", "gpu-compute-policy",
                                         "gpu-priority" };
_Static_assert(sizeof(opt_names) / sizeof(opt_names[0]) == OPT_PRIORITY + 1, "one name per option");

/* Every option's callback, in every context. A negative return makes srun, sbatch and salloc
 * refuse the job before it is submitted, and slurmstepd fail the step. */
static int opt_cb(int val, const char *optarg, int remote)
{
  (void) remote;
  gs_error_t err = NULL;
  if (val < 0 || val > OPT_PRIORITY)
    return -1;
  if (!optarg || opt_parse(val, optarg, &err) < 0) {
    if (!optarg)
      gs_make_error(&err, 0, "a value is required");
    slurm_error("gpuslice: --%s: %s", opt_names[val], gs_scrub_ctl(err->msg, '?'));
    gs_error_release(&err);
    return -1;
  }
  return 0;
}

/* struct spank_option's strings are char *, not const char *, though Slurm only reads them;
 * the literals are fine there, which -Wwrite-strings cannot know. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"
static struct spank_option opts[] = {
  { "gpu-vram", "SIZE",
    "gpuslice: hold each step's GPU memory to SIZE (bytes, 512Mi, 20GiB, 1.5G, or 25% of each "
    "GPU), as gpuslice run --vram",
    1, OPT_VRAM, opt_cb },
  { "gpu-compute", "PCT",
    "gpuslice: give each step PCT percent of each GPU's time, in (0, 100], as gpuslice run "
    "--compute",
    1, OPT_COMPUTE, opt_cb },
  { "gpu-compute-policy", "share|cap",
    "gpuslice: share: use spare GPU time beyond --gpu-compute; cap: never (default share)", 1,
    OPT_POLICY, opt_cb },
  { "gpu-priority", "high|normal|low",
    "gpuslice: the step's kernels' priority on a shared GPU (default normal)", 1, OPT_PRIORITY,
    opt_cb },
};
#pragma GCC diagnostic pop

GS_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
  (void) ac;
  (void) av;
  spank_context_t ctx = spank_context();
  /* Options exist where users give them and where the step runs; slurmd and the
   * prolog/epilog have none. */
  if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
    return 0;
  for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
    spank_err_t rc = spank_option_register(sp, &opts[i]);
    if (rc != ESPANK_SUCCESS) {
      slurm_error("gpuslice: cannot register --%s: %s", opts[i].name, spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}

/* Called in slurmstepd with the user's privileges, once per step, before the tasks start. */
GS_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
  if (!spank_remote(sp) || !spank_tenant_wanted(sp, ac, av))
    return 0;
  return spank_tenant_create(sp, ac, av);
}

/* Called in slurmstepd, as root, each time one of the step's tasks exits. */
GS_EXPORT int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
  (void) ac;
  (void) av;
  int status = 0;
  if (spank_remote(sp) && spank_get_item(sp, S_TASK_EXIT_STATUS, &status) == ESPANK_SUCCESS)
    spank_tenant_task_exit(status);
  return 0;
}

GS_EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
  (void) ac;
  (void) av;
  if (spank_remote(sp))
    spank_tenant_end();
  return 0;
}
