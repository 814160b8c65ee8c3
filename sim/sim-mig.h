/* MIG on the simulated GPU: the GPU instance profiles of the A100, H100 and H200 (the figures
 * of data/mig/mig_gi_profiles.csv, sim-mig-profiles.c), and the rules a real driver applies
 * to MIG mode and to creating and destroying GPU and compute instances (sim-mig.c). The NVML
 * entry points over them are nvml-mig.c's; the CUDA library sees a compute instance as a
 * device (cuda-visible.c).
 *
 * Every call that changes or reads a device's MIG state takes the device's mem_lock itself;
 * callers hold nothing. Results are NVML return codes, what the NVML calls return. */
#ifndef GPUSIM_MIG_H
#define GPUSIM_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs-nvml.h"
#include "sim-state.h"

/* One GPU instance profile of one model, as nvidia-smi mig -lgip shows it. */
struct gpusim_gi_profile {
  const char *model;       /* the model's key, "h100-80gb" */
  unsigned nvml;           /* NVML_GPU_INSTANCE_PROFILE_* */
  unsigned id;             /* the profile id (nvidia-smi's "Profile ID") */
  const char *name;        /* "1g.10gb" */
  unsigned compute;        /* compute slices, of 7 */
  unsigned mem;            /* memory slices, of 8 */
  unsigned max;            /* instances a GPU may hold */
  uint8_t starts;          /* bit s: may start at memory slice s */
  unsigned mem_mib;        /* usable memory */
  unsigned sms;            /* streaming multiprocessors */
  unsigned dec, jpeg, ofa; /* media engines */
};

#define GPUSIM_MIG_SLICES 8  /* memory slices */
#define GPUSIM_MIG_COMPUTE 7 /* compute slices */

/* The profiles of model (an index into gpusim_models) in table order; NULL and *n = 0 for a
 * model without MIG. */
const struct gpusim_gi_profile *gpusim_mig_profiles(int model, size_t *n);
bool gpusim_mig_capable(int model);
/* By NVML_GPU_INSTANCE_PROFILE_* or by profile id; NULL when the model has no such profile. */
const struct gpusim_gi_profile *gpusim_mig_profile_by_enum(int model, unsigned nvml);
const struct gpusim_gi_profile *gpusim_mig_profile_by_id(int model, unsigned id);

/* Compute instance profiles: the slices an NVML_COMPUTE_INSTANCE_PROFILE_* takes (0 when
 * unknown), and whether a GPU instance of `compute` slices offers it. */
unsigned gpusim_ci_slices(unsigned ci_profile);
bool gpusim_ci_offered(unsigned gi_compute, unsigned ci_profile);

/* MIG mode. A GPU that processes use keeps its mode pending (*activation NVML_ERROR_IN_USE)
 * until a reset; disabling MIG while GPU instances exist is NVML_ERROR_IN_USE. */
nvmlReturn_t gpusim_mig_set_mode(int d, unsigned mode, nvmlReturn_t *activation);
/* A reset of device d, as `nvidia-smi --gpu-reset`: refused (-1, why in err) while a process
 * uses the GPU; else the pending MIG mode takes effect and every instance is gone. */
int gpusim_gpu_reset_dev(int d, char *err, size_t errlen);

/* A GPU instance of profile p at memory slice start (-1: the first free placement); its slot
 * in *slot. NOT_SUPPORTED outside MIG mode, INVALID_ARGUMENT for a placement the profile does
 * not allow, INSUFFICIENT_RESOURCES when it overlaps an instance or the GPU has no room for
 * another of its profile or its compute slices. */
nvmlReturn_t gpusim_mig_gi_create(int d, const struct gpusim_gi_profile *p, int start, int *slot);
/* IN_USE while it has compute instances or processes. gen: the instance the caller means. */
nvmlReturn_t gpusim_mig_gi_destroy(int d, int slot, uint32_t gen);
/* A compute instance of ci_profile in GPU instance gi (first free compute slices). */
nvmlReturn_t gpusim_mig_ci_create(int d, int gi, uint32_t gen, unsigned ci_profile, int *ci);
/* IN_USE while processes run on it. */
nvmlReturn_t gpusim_mig_ci_destroy(int d, int gi, uint32_t gen, int ci);
/* Whether (d, gi, gen) is a live GPU instance, and (with ci >= 0) ci a live one of it. */
bool gpusim_mig_live(int d, int gi, uint32_t gen, int ci);

/* Test control: the n-th next GPU or compute instance creation on device d fails with
 * NVML_ERROR_UNKNOWN (0: none). */
void gpusim_mig_fail_in(int d, unsigned n);

/* Whether a process uses device d (gi < 0), its GPU instance gi (ci < 0) or compute instance
 * (gi, ci): it has a context there or holds memory. */
bool gpusim_dev_in_use(int d, int gi, int ci);

/* A MIG device: a live compute instance. */
struct gpusim_mig_dev {
  int gi, ci; /* slots */
};
/* The MIG devices of device d, ordered by GPU instance id then compute instance id. */
int gpusim_mig_devices(int d, struct gpusim_mig_dev out[GPUSIM_MIG_GI * GPUSIM_MIG_CI]);
/* Its UUID, "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": stable while it lives, new for an
 * instance made again. Its name, "<GPU name> MIG 1g.10gb" ("MIG 1c.3g.40gb" for a compute
 * instance smaller than its GPU instance). */
void gpusim_mig_uuid(int d, int gi, int ci, char *buf, size_t len);
void gpusim_mig_name(int d, int gi, int ci, char *buf, size_t len);
/* The profile of GPU instance gi of device d. */
const struct gpusim_gi_profile *gpusim_mig_gi_profile(int d, int gi);

/* Binds the calling process to compute instance (gi, ci) of device d, the MIG device it runs
 * on there: its memory there is charged to the instance. -1 when it is not live. */
int gpusim_mig_bind(int d, int gi, int ci);
/* The calling process's binding on device d: 0, or GPUSIM_MIG_BIND. */
uint8_t gpusim_mig_binding(int d);

#endif
