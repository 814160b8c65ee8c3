/* Simulated NVML: MIG. The mode, the GPU instance profiles and their placements, GPU and
 * compute instances, MIG device handles, the compute mode, and two test controls (a GPU reset,
 * an injected creation failure). The rules are sim-mig.c's, over the shared state, so every
 * process sees the same instances.
 *
 * Handles are this process's: a GPU instance's names its slot and the creation it was handed
 * out for (gen), so a handle to an instance destroyed since is refused, not followed; a slot's
 * handle is reused for the instance made there next, as NVML says handles may be. */
#include "nvml-internal.h"
#include "sim-mig.h"

#include <stdio.h>
#include <string.h>

struct nvmlGpuInstance_st {
  unsigned int index;
  int slot;
  uint32_t gen;
};

struct nvmlComputeInstance_st {
  unsigned int index;
  int gi, ci;
  uint32_t gen;
};

static struct nvmlGpuInstance_st g_gi[GPUSIM_MAX_DEVICES][GPUSIM_MIG_GI];
static struct nvmlComputeInstance_st g_ci[GPUSIM_MAX_DEVICES][GPUSIM_MIG_GI][GPUSIM_MIG_CI];
static struct nvmlDevice_st g_mig[GPUSIM_MAX_DEVICES][GPUSIM_MIG_GI * GPUSIM_MIG_CI];

static struct gpusim_shared *S(void)
{
  return gpusim_state(NULL);
}

static bool within(const void *p, const void *base, size_t size, size_t elem)
{
  uintptr_t a = (uintptr_t) p, b = (uintptr_t) base;
  return a >= b && a < b + size && (a - b) % elem == 0;
}

/* ---- resolving handles ---- */

/* The device behind a GPU handle that supports MIG; NOT_SUPPORTED for one that does not. */
static nvmlReturn_t mig_gpu(nvmlDevice_t device, int *d)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device(device, &dev, NULL));
  *d = dev->index;
  return gpusim_mig_capable(dev->model) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t gi_of(nvmlGpuInstance_t h, int *d, int *slot, uint32_t *gen)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!within(h, g_gi, sizeof(g_gi), sizeof(g_gi[0][0])) || h->index >= gpusim_nvml_device_count())
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpusim_mig_live((int) h->index, h->slot, h->gen, -1))
    return NVML_ERROR_INVALID_ARGUMENT;
  *d = (int) h->index;
  *slot = h->slot;
  *gen = h->gen;
  return NVML_SUCCESS;
}

static nvmlReturn_t ci_of(nvmlComputeInstance_t h, int *d, int *gi, int *ci, uint32_t *gen)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!within(h, g_ci, sizeof(g_ci), sizeof(g_ci[0][0][0])) ||
      h->index >= gpusim_nvml_device_count())
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpusim_mig_live((int) h->index, h->gi, h->gen, h->ci))
    return NVML_ERROR_INVALID_ARGUMENT;
  *d = (int) h->index;
  *gi = h->gi;
  *ci = h->ci;
  *gen = h->gen;
  return NVML_SUCCESS;
}

static nvmlGpuInstance_t gi_handle(int d, int slot)
{
  struct nvmlGpuInstance_st *h = &g_gi[d][slot];
  *h = (struct nvmlGpuInstance_st){ (unsigned) d, slot, S()->mig[d].gi[slot].gen };
  return h;
}

static nvmlComputeInstance_t ci_handle(int d, int gi, int ci)
{
  struct nvmlComputeInstance_st *h = &g_ci[d][gi][ci];
  *h = (struct nvmlComputeInstance_st){ (unsigned) d, gi, ci, S()->mig[d].gi[gi].gen };
  return h;
}

nvmlDevice_t gpusim_nvml_mig_handle(int d, int gi, int ci)
{
  struct nvmlDevice_st *h = &g_mig[d][gi * GPUSIM_MIG_CI + ci];
  *h = (struct nvmlDevice_st){ (unsigned) d, gi, ci, S()->mig[d].gi[gi].gen };
  return h;
}

nvmlReturn_t gpusim_nvml_any_device(nvmlDevice_t device, struct gpusim_dev **dev, int *gi, int *ci)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!within(device, g_mig, sizeof(g_mig), sizeof(g_mig[0][0]))) {
    *gi = *ci = -1;
    return gpusim_nvml_device(device, dev, NULL);
  }
  if (device->index >= gpusim_nvml_device_count() ||
      !gpusim_mig_live((int) device->index, device->gi, device->gen, device->ci))
    return NVML_ERROR_INVALID_ARGUMENT;
  *dev = &S()->dev[device->index];
  *gi = device->gi;
  *ci = device->ci;
  return NVML_SUCCESS;
}

/* ---- MIG mode ---- */

GPUSIM_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                             unsigned int *pendingMode)
{
  int d;
  GSN_TRY(mig_gpu(device, &d));
  if (!currentMode || !pendingMode)
    return NVML_ERROR_INVALID_ARGUMENT;
  gpusim_mem_lock(d);
  *currentMode = S()->mig[d].mode;
  *pendingMode = S()->mig[d].pending;
  gpusim_mem_unlock(d);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                             nvmlReturn_t *activationStatus)
{
  int d;
  GSN_TRY(mig_gpu(device, &d));
  if (!activationStatus || (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE))
    return NVML_ERROR_INVALID_ARGUMENT;
  return gpusim_mig_set_mode(d, mode, activationStatus);
}

/* ---- GPU instance profiles ---- */

static void profile_fill(const struct gpusim_gi_profile *p, nvmlGpuInstanceProfileInfo_t *i)
{
  *i = (nvmlGpuInstanceProfileInfo_t){ .id = p->id,
                                       .isP2pSupported = 0,
                                       .sliceCount = p->compute,
                                       .instanceCount = p->max,
                                       .multiprocessorCount = p->sms,
                                       .copyEngineCount = p->compute,
                                       .decoderCount = p->dec,
                                       .encoderCount = 0,
                                       .jpegCount = p->jpeg,
                                       .ofaCount = p->ofa,
                                       .memorySizeMB = p->mem_mib };
}

static nvmlReturn_t profile_of(nvmlDevice_t device, unsigned profile,
                               const struct gpusim_gi_profile **p, int *d)
{
  GSN_TRY(mig_gpu(device, d));
  if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  *p = gpusim_mig_profile_by_enum(S()->dev[*d].model, profile);
  return *p ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device,
                                                            unsigned int profile,
                                                            nvmlGpuInstanceProfileInfo_t *info)
{
  const struct gpusim_gi_profile *p;
  int d;
  GSN_TRY(profile_of(device, profile, &p, &d));
  if (!info)
    return NVML_ERROR_INVALID_ARGUMENT;
  profile_fill(p, info);
  return NVML_SUCCESS;
}

/* The versioned call fills v2 or v3 by info->version, and wants MIG mode on. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device,
                                                             unsigned int profile,
                                                             nvmlGpuInstanceProfileInfo_v2_t *info)
{
  const struct gpusim_gi_profile *p;
  nvmlGpuInstanceProfileInfo_t f;
  int d;
  GSN_TRY(profile_of(device, profile, &p, &d));
  if (!info ||
      (info->version != nvmlGpuInstanceProfileInfo_v2 &&
       info->version != nvmlGpuInstanceProfileInfo_v3))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (S()->mig[d].mode != NVML_DEVICE_MIG_ENABLE)
    return NVML_ERROR_NOT_SUPPORTED;
  profile_fill(p, &f);
  if (info->version == nvmlGpuInstanceProfileInfo_v3) {
    nvmlGpuInstanceProfileInfo_v3_t *v3 = (nvmlGpuInstanceProfileInfo_v3_t *) info;
    *v3 = (nvmlGpuInstanceProfileInfo_v3_t){ nvmlGpuInstanceProfileInfo_v3,
                                             f.id,
                                             f.sliceCount,
                                             f.instanceCount,
                                             f.multiprocessorCount,
                                             f.copyEngineCount,
                                             f.decoderCount,
                                             f.encoderCount,
                                             f.jpegCount,
                                             f.ofaCount,
                                             f.memorySizeMB,
                                             "",
                                             0 };
    snprintf(v3->name, sizeof(v3->name), "MIG %s", p->name);
    return NVML_SUCCESS;
  }
  *info = (nvmlGpuInstanceProfileInfo_v2_t){ nvmlGpuInstanceProfileInfo_v2,
                                             f.id,
                                             f.isP2pSupported,
                                             f.sliceCount,
                                             f.instanceCount,
                                             f.multiprocessorCount,
                                             f.copyEngineCount,
                                             f.decoderCount,
                                             f.encoderCount,
                                             f.jpegCount,
                                             f.ofaCount,
                                             f.memorySizeMB,
                                             "" };
  snprintf(info->name, sizeof(info->name), "MIG %s", p->name);
  return NVML_SUCCESS;
}

static nvmlReturn_t profile_by_id(nvmlDevice_t device, unsigned id,
                                  const struct gpusim_gi_profile **p, int *d)
{
  GSN_TRY(mig_gpu(device, d));
  *p = gpusim_mig_profile_by_id(S()->dev[*d].model, id);
  return *p ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* Every start the profile allows, MIG mode on or off. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
  nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,
  unsigned int *count)
{
  const struct gpusim_gi_profile *p;
  int d;
  GSN_TRY(profile_by_id(device, profileId, &p, &d));
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  unsigned n = 0;
  for (unsigned s = 0; s + p->mem <= GPUSIM_MIG_SLICES; s++)
    if (p->starts & (1u << s)) {
      if (placements)
        placements[n] = (nvmlGpuInstancePlacement_t){ s, p->mem };
      n++;
    }
  *count = n;
  return NVML_SUCCESS;
}

/* ---- GPU instances ---- */

static nvmlReturn_t gi_create(nvmlDevice_t device, unsigned profileId, int start,
                              nvmlGpuInstance_t *gpuInstance)
{
  const struct gpusim_gi_profile *p;
  int d, slot;
  GSN_TRY(profile_by_id(device, profileId, &p, &d));
  if (!gpuInstance)
    return NVML_ERROR_INVALID_ARGUMENT;
  GSN_TRY(gpusim_mig_gi_create(d, p, start, &slot));
  *gpuInstance = gi_handle(d, slot);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                    nvmlGpuInstance_t *gpuInstance)
{
  return gi_create(device, profileId, -1, gpuInstance);
}

GPUSIM_API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
  nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
  nvmlGpuInstance_t *gpuInstance)
{
  const struct gpusim_gi_profile *p;
  int d;
  GSN_TRY(profile_by_id(device, profileId, &p, &d));
  if (!placement || placement->size != p->mem || placement->start >= GPUSIM_MIG_SLICES)
    return NVML_ERROR_INVALID_ARGUMENT;
  return gi_create(device, profileId, (int) placement->start, gpuInstance);
}

GPUSIM_API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
  int d, slot;
  uint32_t gen;
  GSN_TRY(gi_of(gpuInstance, &d, &slot, &gen));
  return gpusim_mig_gi_destroy(d, slot, gen);
}

static nvmlReturn_t mig_enabled(int d)
{
  return S()->mig[d].mode == NVML_DEVICE_MIG_ENABLE ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                  nvmlGpuInstance_t *gpuInstances,
                                                  unsigned int *count)
{
  const struct gpusim_gi_profile *p;
  int d;
  GSN_TRY(profile_by_id(device, profileId, &p, &d));
  if (!gpuInstances || !count)
    return NVML_ERROR_INVALID_ARGUMENT;
  GSN_TRY(mig_enabled(d));
  unsigned n = 0;
  gpusim_mem_lock(d);
  for (int g = 0; g < GPUSIM_MIG_GI; g++)
    if (S()->mig[d].gi[g].live && S()->mig[d].gi[g].profile == p->nvml)
      gpuInstances[n++] = gi_handle(d, g);
  gpusim_mem_unlock(d);
  *count = n;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                     nvmlGpuInstance_t *gpuInstance)
{
  int d;
  GSN_TRY(mig_gpu(device, &d));
  if (!gpuInstance)
    return NVML_ERROR_INVALID_ARGUMENT;
  GSN_TRY(mig_enabled(d));
  nvmlReturn_t r = NVML_ERROR_NOT_FOUND;
  gpusim_mem_lock(d);
  for (int g = 0; g < GPUSIM_MIG_GI; g++)
    if (S()->mig[d].gi[g].live && S()->mig[d].gi[g].id == id) {
      *gpuInstance = gi_handle(d, g);
      r = NVML_SUCCESS;
    }
  gpusim_mem_unlock(d);
  return r;
}

GPUSIM_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                               nvmlGpuInstanceInfo_t *info)
{
  int d, slot;
  uint32_t gen;
  GSN_TRY(gi_of(gpuInstance, &d, &slot, &gen));
  if (!info)
    return NVML_ERROR_INVALID_ARGUMENT;
  const struct gpusim_mig_gi *g = &S()->mig[d].gi[slot];
  const struct gpusim_gi_profile *p = gpusim_mig_gi_profile(d, slot);
  *info = (nvmlGpuInstanceInfo_t){
    gpusim_nvml_handle((unsigned) d), g->id, p ? p->id : 0, { g->start, g->size }
  };
  return NVML_SUCCESS;
}

/* ---- compute instances ---- */

static nvmlReturn_t ci_profile_of(nvmlGpuInstance_t gpuInstance, unsigned profile,
                                  unsigned engProfile, const struct gpusim_gi_profile **gp, int *d,
                                  int *slot, uint32_t *gen)
{
  GSN_TRY(gi_of(gpuInstance, d, slot, gen));
  if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
      engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  *gp = gpusim_mig_gi_profile(*d, *slot);
  return *gp && gpusim_ci_offered((*gp)->compute, profile) ? NVML_SUCCESS
                                                           : NVML_ERROR_NOT_SUPPORTED;
}

/* The compute instance profile's id is its NVML_COMPUTE_INSTANCE_PROFILE_* value, as
 * `nvidia-smi mig -lcip` lists them; the engines other than SMs are the GPU instance's, shared. */
static void ci_profile_fill(const struct gpusim_gi_profile *gp, unsigned profile,
                            nvmlComputeInstanceProfileInfo_t *i)
{
  unsigned s = gpusim_ci_slices(profile);
  *i = (nvmlComputeInstanceProfileInfo_t){ .id = profile,
                                           .sliceCount = s,
                                           .instanceCount = gp->compute / s,
                                           .multiprocessorCount = gp->sms * s / gp->compute,
                                           .sharedCopyEngineCount = gp->compute,
                                           .sharedDecoderCount = gp->dec,
                                           .sharedEncoderCount = 0,
                                           .sharedJpegCount = gp->jpeg,
                                           .sharedOfaCount = gp->ofa };
}

GPUSIM_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
  nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
  nvmlComputeInstanceProfileInfo_t *info)
{
  const struct gpusim_gi_profile *gp;
  int d, slot;
  uint32_t gen;
  GSN_TRY(ci_profile_of(gpuInstance, profile, engProfile, &gp, &d, &slot, &gen));
  if (!info)
    return NVML_ERROR_INVALID_ARGUMENT;
  ci_profile_fill(gp, profile, info);
  return NVML_SUCCESS;
}

static void ci_profile_name(const struct gpusim_gi_profile *gp, unsigned profile, char *buf,
                            size_t len)
{
  unsigned s = gpusim_ci_slices(profile);
  if (s == gp->compute)
    snprintf(buf, len, "MIG %s", gp->name);
  else
    snprintf(buf, len, "MIG %uc.%s", s, gp->name);
}

GPUSIM_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
  nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
  nvmlComputeInstanceProfileInfo_v2_t *info)
{
  const struct gpusim_gi_profile *gp;
  nvmlComputeInstanceProfileInfo_t f;
  int d, slot;
  uint32_t gen;
  GSN_TRY(ci_profile_of(gpuInstance, profile, engProfile, &gp, &d, &slot, &gen));
  if (!info ||
      (info->version != nvmlComputeInstanceProfileInfo_v2 &&
       info->version != nvmlComputeInstanceProfileInfo_v3))
    return NVML_ERROR_INVALID_ARGUMENT;
  ci_profile_fill(gp, profile, &f);
  unsigned version = info->version;
  nvmlComputeInstanceProfileInfo_v3_t v3 = { version,
                                             f.id,
                                             f.sliceCount,
                                             f.instanceCount,
                                             f.multiprocessorCount,
                                             f.sharedCopyEngineCount,
                                             f.sharedDecoderCount,
                                             f.sharedEncoderCount,
                                             f.sharedJpegCount,
                                             f.sharedOfaCount,
                                             "",
                                             0 };
  ci_profile_name(gp, profile, v3.name, sizeof(v3.name));
  /* v2 is v3 without the capabilities at its end. */
  memcpy(info, &v3,
         version == nvmlComputeInstanceProfileInfo_v3
           ? sizeof(v3)
           : sizeof(nvmlComputeInstanceProfileInfo_v2_t));
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                             unsigned int profileId,
                                                             nvmlComputeInstance_t *computeInstance)
{
  int d, slot, ci;
  uint32_t gen;
  GSN_TRY(gi_of(gpuInstance, &d, &slot, &gen));
  if (!computeInstance || profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  GSN_TRY(gpusim_mig_ci_create(d, slot, gen, profileId, &ci));
  *computeInstance = ci_handle(d, slot, ci);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
  int d, gi, ci;
  uint32_t gen;
  GSN_TRY(ci_of(computeInstance, &d, &gi, &ci, &gen));
  return gpusim_mig_ci_destroy(d, gi, gen, ci);
}

/* The compute instances of a GPU instance that match (profileId, or any id when id is -1). */
static unsigned cis_matching(int d, int slot, long profileId, long id, nvmlComputeInstance_t *out)
{
  unsigned n = 0;
  gpusim_mem_lock(d);
  const struct gpusim_mig_gi *g = &S()->mig[d].gi[slot];
  for (int c = 0; c < GPUSIM_MIG_CI; c++)
    if (g->ci[c].live && (profileId < 0 || g->ci[c].profile == (unsigned) profileId) &&
        (id < 0 || g->ci[c].id == (unsigned) id))
      out[n++] = ci_handle(d, slot, c);
  gpusim_mem_unlock(d);
  return n;
}

GPUSIM_API nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                           unsigned int profileId,
                                                           nvmlComputeInstance_t *computeInstances,
                                                           unsigned int *count)
{
  int d, slot;
  uint32_t gen;
  GSN_TRY(gi_of(gpuInstance, &d, &slot, &gen));
  if (!computeInstances || !count || profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  *count = cis_matching(d, slot, profileId, -1, computeInstances);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
  nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t *computeInstance)
{
  int d, slot;
  uint32_t gen;
  nvmlComputeInstance_t found[GPUSIM_MIG_CI];
  GSN_TRY(gi_of(gpuInstance, &d, &slot, &gen));
  if (!computeInstance)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (cis_matching(d, slot, -1, id, found) == 0)
    return NVML_ERROR_NOT_FOUND;
  *computeInstance = found[0];
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                      nvmlComputeInstanceInfo_t *info)
{
  int d, gi, ci;
  uint32_t gen;
  GSN_TRY(ci_of(computeInstance, &d, &gi, &ci, &gen));
  if (!info)
    return NVML_ERROR_INVALID_ARGUMENT;
  const struct gpusim_mig_ci *c = &S()->mig[d].gi[gi].ci[ci];
  *info = (nvmlComputeInstanceInfo_t){
    gpusim_nvml_handle((unsigned) d), gi_handle(d, gi), c->id, c->profile, { c->start, c->size }
  };
  return NVML_SUCCESS;
}

/* ---- MIG device handles ---- */

GPUSIM_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
  struct gpusim_dev *dev;
  int gi, ci;
  GSN_TRY(gpusim_nvml_any_device(device, &dev, &gi, &ci));
  if (!isMigDevice)
    return NVML_ERROR_INVALID_ARGUMENT;
  *isMigDevice = gi >= 0;
  return NVML_SUCCESS;
}

/* The id of a MIG device's GPU instance (which = 0) or compute instance (which = 1). */
static nvmlReturn_t mig_device_id(nvmlDevice_t device, unsigned int *id, int which)
{
  struct gpusim_dev *dev;
  int gi, ci;
  GSN_TRY(gpusim_nvml_any_device(device, &dev, &gi, &ci));
  if (!id)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (gi < 0)
    return NVML_ERROR_NOT_SUPPORTED;
  const struct gpusim_mig_gi *g = &S()->mig[dev->index].gi[gi];
  *id = which == 0 ? g->id : g->ci[ci].id;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
  return mig_device_id(device, id, 0);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
  return mig_device_id(device, id, 1);
}

/* Seven on the A100, H100 and H200 in MIG mode: one per compute slice. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, count, &dev, &model));
  bool on = gpusim_mig_capable(dev->model) && S()->mig[dev->index].mode == NVML_DEVICE_MIG_ENABLE;
  *count = on ? GPUSIM_MIG_COMPUTE : 0;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                            nvmlDevice_t *migDevice)
{
  struct gpusim_mig_dev devs[GPUSIM_MIG_GI * GPUSIM_MIG_CI];
  int d;
  GSN_TRY(mig_gpu(device, &d));
  if (!migDevice || index >= GPUSIM_MIG_COMPUTE)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (S()->mig[d].mode != NVML_DEVICE_MIG_ENABLE)
    return NVML_ERROR_NOT_SUPPORTED;
  int n = gpusim_mig_devices(d, devs);
  if ((int) index >= n)
    return NVML_ERROR_NOT_FOUND;
  *migDevice = gpusim_nvml_mig_handle(d, devs[index].gi, devs[index].ci);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                     nvmlDevice_t *device)
{
  struct gpusim_dev *dev;
  int gi, ci;
  GSN_TRY(gpusim_nvml_any_device(migDevice, &dev, &gi, &ci));
  if (!device || gi < 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  *device = gpusim_nvml_handle(dev->index);
  return NVML_SUCCESS;
}

/* ---- compute mode ---- */

GPUSIM_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, mode, &dev, NULL));
  *mode = (nvmlComputeMode_t) S()->mig[dev->index].compute_mode;
  return NVML_SUCCESS;
}

/* A GPU in MIG mode stays in the default mode, as NVML says. The simulated CUDA library does
 * not enforce the mode: it only counts. */
GPUSIM_API nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device(device, &dev, NULL));
  if ((unsigned) mode >= NVML_COMPUTEMODE_COUNT || mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD)
    return NVML_ERROR_INVALID_ARGUMENT;
  gpusim_mem_lock(dev->index);
  nvmlReturn_t r = NVML_SUCCESS;
  if (S()->mig[dev->index].mode == NVML_DEVICE_MIG_ENABLE)
    r = NVML_ERROR_NOT_SUPPORTED;
  else
    S()->mig[dev->index].compute_mode = (uint32_t) mode;
  gpusim_mem_unlock(dev->index);
  return r;
}

/* ---- test controls (the simulator's own exports; nothing in gpuslice calls them) ---- */

static struct gpusim_shared *control_state(unsigned index, char *err, size_t errlen)
{
  const char *why = NULL;
  struct gpusim_shared *s = gpusim_state(&why);
  if (!s)
    snprintf(err, errlen, "%s", why ? why : "no simulated state");
  else if (index >= s->ndev)
    snprintf(err, errlen, "no simulated device %u (there are %u)", index, s->ndev);
  else
    return s;
  return NULL;
}

GPUSIM_API int gpusim_gpu_reset(unsigned int index, char *err, size_t errlen);
GPUSIM_API int gpusim_mig_fail_inject(unsigned int index, unsigned int nth, char *err,
                                      size_t errlen);

/* Resets GPU index as `nvidia-smi --gpu-reset -i index` would: see gpusim_gpu_reset_dev. */
int gpusim_gpu_reset(unsigned int index, char *err, size_t errlen)
{
  if (!control_state(index, err, errlen))
    return -1;
  return gpusim_gpu_reset_dev((int) index, err, errlen);
}

/* The nth next GPU or compute instance creation on GPU index fails (NVML_ERROR_UNKNOWN);
 * 0 cancels. */
int gpusim_mig_fail_inject(unsigned int index, unsigned int nth, char *err, size_t errlen)
{
  if (!control_state(index, err, errlen))
    return -1;
  gpusim_mig_fail_in((int) index, nth);
  return 0;
}
