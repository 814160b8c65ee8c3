/* The daemon's MIG readings: for a GPU in MIG mode, each GPU instance's profile and id (the
 * GPU_I_PROFILE and GPU_I_ID labels of dcgm-exporter's per-instance series) and its memory,
 * read through its MIG devices' handles. Every call is optional: a driver without them, or a
 * GPU without MIG, gives no instances. */
#include "daemon.h"

#include <gpuslice/driver.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-nvml.h"

void nvml_mig_open(struct nvml_mig *m, void *lib)
{
  static const struct gs_driver_sym syms[] = {
    { offsetof(struct nvml_mig, mode), "nvmlDeviceGetMigMode" },
    { offsetof(struct nvml_mig, max), "nvmlDeviceGetMaxMigDeviceCount" },
    { offsetof(struct nvml_mig, handle), "nvmlDeviceGetMigDeviceHandleByIndex" },
    { offsetof(struct nvml_mig, gi_id), "nvmlDeviceGetGpuInstanceId" },
    { offsetof(struct nvml_mig, name), "nvmlDeviceGetName" },
    { offsetof(struct nvml_mig, uuid), "nvmlDeviceGetUUID" },
    { offsetof(struct nvml_mig, memory), "nvmlDeviceGetMemoryInfo" },
  };
  _Static_assert(sizeof(syms) / sizeof(syms[0]) == sizeof(struct nvml_mig) / sizeof(void (*)(void)),
                 "one symbol per table entry");
  const char *missing = NULL;
  size_t n = sizeof(syms) / sizeof(syms[0]);
  memset(m, 0, sizeof(*m));
  if (gs_driver_resolve(lib, syms, n, n, m, &missing) < 0)
    memset(m, 0, sizeof(*m)); /* all of them or none */
}

/* "NVIDIA H100 80GB HBM3 MIG 1g.10gb" -> "1g.10gb"; "... MIG 1c.3g.40gb" -> "3g.40gb": the
 * GPU instance's profile, whatever its compute instance. */
static void profile_of(const char *name, char *out, size_t len)
{
  const char *p = strstr(name, " MIG ");
  p = p ? p + 5 : name;
  const char *dot = strchr(p, '.');
  if (dot && dot[-1] == 'c' && strchr(dot + 1, '.'))
    p = dot + 1;
  snprintf(out, len, "%.*s", (int) len - 1, p);
}

static struct gs_snap_mig *instance(struct gs_snap_gpu *g, unsigned id)
{
  for (int k = 0; k < g->nmig; k++)
    if (g->mig[k].gi_id == id)
      return &g->mig[k];
  return g->nmig < GS_SNAP_MIG_MAX ? &g->mig[g->nmig] : NULL;
}

static int cmp_id(const void *a, const void *b)
{
  const struct gs_snap_mig *x = a, *y = b;
  return (x->gi_id > y->gi_id) - (x->gi_id < y->gi_id);
}

void nvml_mig_sample(const struct nvml_mig *m, nvmlDevice_t dev, struct gs_snap_gpu *g)
{
  unsigned cur = 0, pend = 0, max = 0;
  g->nmig = 0;
  if (!m->mode || m->mode(dev, &cur, &pend) != NVML_SUCCESS || cur != NVML_DEVICE_MIG_ENABLE ||
      m->max(dev, &max) != NVML_SUCCESS)
    return;
  for (unsigned i = 0; i < max; i++) {
    nvmlDevice_t md;
    unsigned id;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    nvmlMemory_t mem;
    if (m->handle(dev, i, &md) != NVML_SUCCESS || m->gi_id(md, &id) != NVML_SUCCESS)
      continue;
    struct gs_snap_mig *in = instance(g, id);
    if (!in || (in - g->mig < g->nmig)) /* full, or a second compute instance of one seen */
      continue;
    if (m->name(md, name, sizeof(name)) != NVML_SUCCESS || m->memory(md, &mem) != NVML_SUCCESS)
      continue;
    memset(in, 0, sizeof(*in));
    in->gi_id = id;
    profile_of(name, in->profile, sizeof(in->profile));
    m->uuid(md, in->uuid, sizeof(in->uuid));
    in->fb_total_bytes = mem.total;
    in->fb_used_bytes = mem.used;
    in->fb_free_bytes = mem.free;
    g->nmig++;
  }
  qsort(g->mig, (size_t) g->nmig, sizeof(g->mig[0]), cmp_id);
}
