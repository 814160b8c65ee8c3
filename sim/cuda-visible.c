/* Which devices this process sees, and what each is: CUDA_VISIBLE_DEVICES and MIG.
 *
 * A CUDA device ordinal names either a whole GPU or a MIG device (a compute instance of a GPU
 * in MIG mode), made at cuInit:
 *   - CUDA_VISIBLE_DEVICES unset: every GPU in order; a GPU in MIG mode is its first MIG device.
 *   - set: its entries in order, each a GPU's index, its UUID ("GPU-...", or a prefix that
 *     names one GPU) or a MIG device's UUID ("MIG-..."); a GPU in MIG mode again stands for its
 *     first MIG device. As in the real driver, enumeration stops at the first entry that names
 *     nothing, and a device listed twice is seen once.
 * As the MIG user guide says of CUDA 11 and 12, a process enumerates one MIG device at most;
 * MIG devices after the first are left out. A GPU in MIG mode with no MIG device is left out.
 *
 * The process is bound to the MIG device it sees (gpusim_mig_bind): its memory there is
 * charged to that GPU instance, whose size is then its device's total. */
#include "cuda-internal.h"
#include "sim-mig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIG_DEVS (GPUSIM_MIG_GI * GPUSIM_MIG_CI)

static bool mig_on(int d)
{
  return gsc.sh->mig[d].mode == NVML_DEVICE_MIG_ENABLE;
}

/* Adds a device unless it is there already or a second MIG device. */
static void add(int phys, int gi, int ci)
{
  for (int i = 0; i < gsc.ndev; i++) {
    if (gi >= 0 && gsc.vis[i].gi >= 0)
      return;
    if (gsc.vis[i].phys == phys && gsc.vis[i].gi == gi && gsc.vis[i].ci == ci)
      return;
  }
  if (gsc.ndev < GPUSIM_MAX_DEVICES)
    gsc.vis[gsc.ndev++] = (struct gsc_visible){ phys, gi, ci };
}

/* A whole GPU, or its first MIG device when it is in MIG mode. */
static void add_gpu(int d)
{
  struct gpusim_mig_dev devs[MIG_DEVS];
  if (!mig_on(d))
    add(d, -1, -1);
  else if (gpusim_mig_devices(d, devs) > 0)
    add(d, devs[0].gi, devs[0].ci);
}

/* The GPU whose UUID starts with what (at least "GPU-" and one digit more), or -1. */
static int gpu_by_uuid(const char *what, size_t len)
{
  int found = -1;
  for (uint32_t d = 0; d < gsc.sh->ndev; d++) {
    char uuid[96];
    gpusim_uuid(gsc.sh->dev[d].model, (int) d, uuid, sizeof(uuid));
    if (len > 4 && len <= strlen(uuid) && strncasecmp(uuid, what, len) == 0) {
      if (found >= 0)
        return -1; /* a prefix of two GPUs' UUIDs names neither */
      found = (int) d;
    }
  }
  return found;
}

static bool add_mig_by_uuid(const char *what, size_t len)
{
  for (uint32_t d = 0; d < gsc.sh->ndev; d++) {
    struct gpusim_mig_dev devs[MIG_DEVS];
    int n = mig_on((int) d) ? gpusim_mig_devices((int) d, devs) : 0;
    for (int k = 0; k < n; k++) {
      char uuid[96];
      gpusim_mig_uuid((int) d, devs[k].gi, devs[k].ci, uuid, sizeof(uuid));
      if (strlen(uuid) == len && strncasecmp(uuid, what, len) == 0) {
        add((int) d, devs[k].gi, devs[k].ci);
        return true;
      }
    }
  }
  return false;
}

/* One entry of CUDA_VISIBLE_DEVICES: false when it names nothing. */
static bool add_entry(const char *e, size_t len)
{
  char num[16];
  while (len && (*e == ' ' || *e == '\t'))
    e++, len--;
  if (len >= 4 && strncasecmp(e, "MIG-", 4) == 0)
    return add_mig_by_uuid(e, len);
  if (len >= 4 && strncasecmp(e, "GPU-", 4) == 0) {
    int d = gpu_by_uuid(e, len);
    if (d >= 0)
      add_gpu(d);
    return d >= 0;
  }
  if (len == 0 || len >= sizeof(num) || strspn(e, "0123456789") < len)
    return false;
  memcpy(num, e, len);
  num[len] = '\0';
  long d = strtol(num, NULL, 10);
  if (d >= (long) gsc.sh->ndev)
    return false;
  add_gpu((int) d);
  return true;
}

static void enumerate(const char *list)
{
  gsc.ndev = 0;
  if (!list) {
    for (uint32_t d = 0; d < gsc.sh->ndev; d++)
      add_gpu((int) d);
    return;
  }
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (!add_entry(p, len))
      return;
    p += len + (p[len] == ',');
  }
}

CUresult gsc_visible_init(void)
{
  enumerate(secure_getenv("CUDA_VISIBLE_DEVICES"));
  /* A MIG device that went away between listing and binding is not seen. */
  for (int i = 0; i < gsc.ndev; i++)
    if (gsc.vis[i].gi >= 0 && gpusim_mig_bind(gsc.vis[i].phys, gsc.vis[i].gi, gsc.vis[i].ci) < 0) {
      memmove(&gsc.vis[i], &gsc.vis[i + 1], (size_t) (gsc.ndev - i - 1) * sizeof(gsc.vis[0]));
      gsc.ndev--;
      i--;
    }
  return CUDA_SUCCESS;
}

int gsc_phys(CUdevice dev)
{
  return gsc.vis[dev].phys;
}

const struct gpusim_model *gsc_model(CUdevice dev)
{
  return &gpusim_models[gsc.sh->dev[gsc_phys(dev)].model];
}

static const struct gpusim_mig_gi *gi_of(CUdevice dev)
{
  return gsc.vis[dev].gi >= 0 ? &gsc.sh->mig[gsc_phys(dev)].gi[gsc.vis[dev].gi] : NULL;
}

uint64_t gsc_dev_total(CUdevice dev)
{
  const struct gpusim_mig_gi *g = gi_of(dev);
  return g ? g->total_bytes : gsc.sh->dev[gsc_phys(dev)].total_bytes;
}

uint64_t gsc_dev_used(CUdevice dev)
{
  const struct gpusim_mig_gi *g = gi_of(dev);
  if (!g)
    return atomic_load(&gsc.sh->dev[gsc_phys(dev)].used_bytes);
  gpusim_mem_lock(gsc_phys(dev));
  uint64_t used = g->used_bytes;
  gpusim_mem_unlock(gsc_phys(dev));
  return used;
}

void gsc_dev_name(CUdevice dev, char *buf, size_t len)
{
  if (gsc.vis[dev].gi < 0)
    snprintf(buf, len, "%s", gsc_model(dev)->name);
  else
    gpusim_mig_name(gsc_phys(dev), gsc.vis[dev].gi, gsc.vis[dev].ci, buf, len);
}

void gsc_dev_uuid(CUdevice dev, char *buf, size_t len)
{
  if (gsc.vis[dev].gi < 0)
    gpusim_uuid(gsc.sh->dev[gsc_phys(dev)].model, gsc_phys(dev), buf, len);
  else
    gpusim_mig_uuid(gsc_phys(dev), gsc.vis[dev].gi, gsc.vis[dev].ci, buf, len);
}

/* A MIG device has its compute instance's share of its GPU instance's SMs. */
int gsc_dev_sms(CUdevice dev)
{
  const struct gpusim_mig_gi *g = gi_of(dev);
  if (!g)
    return gsc_model(dev)->sm_count;
  const struct gpusim_gi_profile *p = gpusim_mig_gi_profile(gsc_phys(dev), gsc.vis[dev].gi);
  if (!p)
    return 0;
  return (int) (p->sms * g->ci[gsc.vis[dev].ci].size / p->compute);
}
