/* What the plugin's two files share: the options a job gave (spank.c checks them) and the
 * step's tenant made from them in slurmstepd (spank-tenant.c). */
#ifndef GS_SPANK_INTERNAL_H
#define GS_SPANK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <slurm/spank.h>

#define GS_EXPORT __attribute__((visibility("default")))

struct spank_job_opts {
  bool given; /* any gpuslice option: the step becomes a tenant */
  bool vram_set;
  uint64_t vram_bytes, vram_ppm;
  uint32_t compute_ppm, policy, priority;
};

extern struct spank_job_opts spank_job_opts;

/* Remote context: whether the step becomes a tenant: it was given a gpuslice option, or shards
 * (--gres=shard:N) while plugstack.conf says how many each GPU has (shards_per_gpu=N). Where
 * the job gave no --gpu-vram or --gpu-compute, its shards' fraction of the GPU stands in.
 * Call once, before spank_tenant_create. */
int spank_tenant_wanted(spank_t sp, int ac, char **av);
/* Remote context: creates the step's tenant from what spank_tenant_wanted settled and points the tasks'
 * environment at it. argv is the plugin's arguments in plugstack.conf. 0, or -1 after one
 * slurm_error line. */
int spank_tenant_create(spank_t sp, int ac, char **av);
/* Remote context, as each task ends: keeps its exit status (a wait status) for the daemon and
 * reaps the slots of the tenant's dead processes. */
void spank_tenant_task_exit(int wait_status);
/* Remote context: tells the daemon the step's tenant ended and removes it, if it made one. */
void spank_tenant_end(void);

#endif
