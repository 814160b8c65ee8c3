/* The MIG part of the simulator's shared state (struct gpusim_shared, sim-state.h): per device
 * its MIG mode, its compute mode, and its GPU instances with their compute instances; per
 * process, which compute instance it runs on, on each device.
 *
 * Everything here is written under the device's mem_lock, the lock that also guards the
 * memory counts, so that an instance's memory and its existence change together. The rules
 * (placements, ids, what is refused) are sim-mig.c's; the profiles sim-mig-profiles.c's. */
#ifndef GPUSIM_MIG_STATE_H
#define GPUSIM_MIG_STATE_H

#include <stddef.h>
#include <stdint.h>

#define GPUSIM_MIG_GI 8 /* GPU instance slots per device: a GPU holds at most 7 */
#define GPUSIM_MIG_CI 8 /* compute instance slots per GPU instance: at most 7 */

struct gpusim_mig_ci {
  uint32_t live;
  uint32_t id;          /* unique within its GPU instance while it lives */
  uint32_t profile;     /* NVML_COMPUTE_INSTANCE_PROFILE_* */
  uint32_t start, size; /* compute slices within the GPU instance */
  uint32_t pad;
};

struct gpusim_mig_gi {
  uint32_t live;
  uint32_t id;          /* the node of the memory-slice tree it covers (sim-mig.c) */
  uint32_t profile;     /* NVML_GPU_INSTANCE_PROFILE_* */
  uint32_t start, size; /* memory slices */
  uint32_t gen;         /* which creation on this device: MIG UUIDs differ across re-creations */
  uint64_t total_bytes;
  uint64_t used_bytes; /* what processes bound to it hold */
  struct gpusim_mig_ci ci[GPUSIM_MIG_CI];
};

struct gpusim_mig {
  uint32_t mode, pending; /* NVML_DEVICE_MIG_DISABLE or _ENABLE */
  uint32_t compute_mode;  /* nvmlComputeMode_t */
  uint32_t fail_in;       /* test control: the fail_in-th next instance creation fails; 0: none */
  uint32_t generation;    /* GPU instances ever created */
  uint32_t pad;
  struct gpusim_mig_gi gi[GPUSIM_MIG_GI];
};

/* A process's binding on one device (gpusim_shared.proc_mig): 0 for the whole GPU, else
 * GPUSIM_MIG_BIND(gi slot, ci slot). */
#define GPUSIM_MIG_BIND(gi, ci) ((uint8_t) (1 + (gi) *GPUSIM_MIG_CI + (ci)))
#define GPUSIM_MIG_BIND_GI(b) (((b) -1) / GPUSIM_MIG_CI)
#define GPUSIM_MIG_BIND_CI(b) (((b) -1) % GPUSIM_MIG_CI)

_Static_assert(sizeof(struct gpusim_mig_ci) == 24, "gpusim_mig_ci changed: bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_mig_gi, total_bytes) == 24, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_mig_gi, ci) == 40, "bump GPUSIM_VERSION");
_Static_assert(sizeof(struct gpusim_mig_gi) == 40 + 8 * 24,
               "gpusim_mig_gi changed: bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_mig, gi) == 24, "bump GPUSIM_VERSION");
_Static_assert(sizeof(struct gpusim_mig) == 24 + 8 * (40 + 8 * 24),
               "gpusim_mig changed: bump GPUSIM_VERSION");

#endif
