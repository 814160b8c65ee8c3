/* MIG through NVML: the backend of gs_mig_apply (gpuslice/mig-apply.h) that reads a GPU's MIG
 * mode, instances and their processes, and makes the steps of a layout change. NVML is loaded
 * at run time from where the driver seam says (gpuslice/driver.h: the system's library, or
 * the simulator's with GPUSLICE_SIM), into a table of the functions this file calls, all of
 * them in abi/gs-nvml.h with NVIDIA's signatures.
 *
 * A GPU instance is found by its placement: profiles by NVML_GPU_INSTANCE_PROFILE_*, each
 * profile's instances (nvmlDeviceGetGpuInstances), each instance's start. Processes are
 * read per MIG device (its own handle) and given to the GPU instance of that MIG device. */
#include <gpuslice/driver.h>
#include <gpuslice/gpu-model.h>
#include <gpuslice/mig-apply.h>
#include <gpuslice/paths.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs-nvml.h"

#define MAX_GPUS 16
#define MAX_GI 8
#define MAX_CI 8
#define MAX_PROCS 256

struct fns {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*count)(unsigned int *);
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
  nvmlReturn_t (*get_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
  nvmlReturn_t (*set_mode)(nvmlDevice_t, unsigned int, nvmlReturn_t *);
  nvmlReturn_t (*gi_profile)(nvmlDevice_t, unsigned int, nvmlGpuInstanceProfileInfo_v2_t *);
  nvmlReturn_t (*placements)(nvmlDevice_t, unsigned int, nvmlGpuInstancePlacement_t *,
                             unsigned int *);
  nvmlReturn_t (*gi_create)(nvmlDevice_t, unsigned int, const nvmlGpuInstancePlacement_t *,
                            nvmlGpuInstance_t *);
  nvmlReturn_t (*gi_list)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *, unsigned int *);
  nvmlReturn_t (*gi_info)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *);
  nvmlReturn_t (*gi_destroy)(nvmlGpuInstance_t);
  nvmlReturn_t (*ci_profile)(nvmlGpuInstance_t, unsigned int, unsigned int,
                             nvmlComputeInstanceProfileInfo_v2_t *);
  nvmlReturn_t (*ci_create)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *);
  nvmlReturn_t (*ci_list)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *, unsigned int *);
  nvmlReturn_t (*ci_info)(nvmlComputeInstance_t, nvmlComputeInstanceInfo_t *);
  nvmlReturn_t (*ci_destroy)(nvmlComputeInstance_t);
  nvmlReturn_t (*mig_max)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*mig_gi_id)(nvmlDevice_t, unsigned int *);
};

static const struct gs_driver_sym syms[] = {
  { offsetof(struct fns, init), "nvmlInit_v2" },
  { offsetof(struct fns, shutdown), "nvmlShutdown" },
  { offsetof(struct fns, error_string), "nvmlErrorString" },
  { offsetof(struct fns, count), "nvmlDeviceGetCount_v2" },
  { offsetof(struct fns, handle), "nvmlDeviceGetHandleByIndex_v2" },
  { offsetof(struct fns, name), "nvmlDeviceGetName" },
  { offsetof(struct fns, uuid), "nvmlDeviceGetUUID" },
  { offsetof(struct fns, procs), "nvmlDeviceGetComputeRunningProcesses_v3" },
  { offsetof(struct fns, get_mode), "nvmlDeviceGetMigMode" },
  { offsetof(struct fns, set_mode), "nvmlDeviceSetMigMode" },
  { offsetof(struct fns, gi_profile), "nvmlDeviceGetGpuInstanceProfileInfoV" },
  { offsetof(struct fns, placements), "nvmlDeviceGetGpuInstancePossiblePlacements_v2" },
  { offsetof(struct fns, gi_create), "nvmlDeviceCreateGpuInstanceWithPlacement" },
  { offsetof(struct fns, gi_list), "nvmlDeviceGetGpuInstances" },
  { offsetof(struct fns, gi_info), "nvmlGpuInstanceGetInfo" },
  { offsetof(struct fns, gi_destroy), "nvmlGpuInstanceDestroy" },
  { offsetof(struct fns, ci_profile), "nvmlGpuInstanceGetComputeInstanceProfileInfoV" },
  { offsetof(struct fns, ci_create), "nvmlGpuInstanceCreateComputeInstance" },
  { offsetof(struct fns, ci_list), "nvmlGpuInstanceGetComputeInstances" },
  { offsetof(struct fns, ci_info), "nvmlComputeInstanceGetInfo_v2" },
  { offsetof(struct fns, ci_destroy), "nvmlComputeInstanceDestroy" },
  { offsetof(struct fns, mig_max), "nvmlDeviceGetMaxMigDeviceCount" },
  { offsetof(struct fns, mig_handle), "nvmlDeviceGetMigDeviceHandleByIndex" },
  { offsetof(struct fns, mig_gi_id), "nvmlDeviceGetGpuInstanceId" },
};
_Static_assert(sizeof(syms) / sizeof(syms[0]) == sizeof(struct fns) / sizeof(void (*)(void)),
               "one symbol per table entry");

struct gpu_ctx {
  struct gs_mig_nvml *n;
  int index;
};

struct gs_mig_nvml {
  void *lib;
  struct fns fn;
  unsigned count;
  nvmlDevice_t dev[MAX_GPUS];
  struct gpu_ctx ctx[MAX_GPUS];
};

static int nvml_error(const struct gs_mig_nvml *n, nvmlReturn_t r, gs_error_t *err,
                      const char *what)
{
  return gs_make_error(err, 0, "%s: %s", what,
                       n->fn.error_string ? n->fn.error_string(r) : "NVML error");
}

/* ---- loading ---- */

static int load(struct gs_mig_nvml *n, gs_error_t *err)
{
  char *path = NULL;
  const char *missing = NULL;
  n->lib = gs_driver_open(GS_DRIVER_LIB_NVML, &path, err);
  if (!n->lib && path) {
    gs_error_release(err);
    gs_make_error(err, 0,
                  "no NVIDIA driver: cannot load %s (set GPUSLICE_SIM to run on the simulated GPU)",
                  path);
  }
  free(path);
  if (!n->lib)
    return -1;
  size_t count = sizeof(syms) / sizeof(syms[0]);
  if (gs_driver_resolve(n->lib, syms, count, count, &n->fn, &missing) < 0)
    return gs_make_error(err, 0, "NVML has no %s (a driver without MIG management)", missing);
  return 0;
}

static int start(struct gs_mig_nvml *n, gs_error_t *err)
{
  nvmlReturn_t r = n->fn.init();
  if (r == NVML_ERROR_DRIVER_NOT_LOADED)
    return gs_make_error(err, 0,
                         "no NVIDIA driver loaded (set GPUSLICE_SIM to run on the simulated GPU)");
  if (r != NVML_SUCCESS)
    return nvml_error(n, r, err, "nvmlInit");
  if ((r = n->fn.count(&n->count)) != NVML_SUCCESS)
    return nvml_error(n, r, err, "nvmlDeviceGetCount");
  if (n->count > MAX_GPUS)
    n->count = MAX_GPUS;
  for (unsigned i = 0; i < n->count; i++) {
    if ((r = n->fn.handle(i, &n->dev[i])) != NVML_SUCCESS)
      return nvml_error(n, r, err, "nvmlDeviceGetHandleByIndex");
    n->ctx[i] = (struct gpu_ctx){ n, (int) i };
  }
  return 0;
}

int gs_mig_nvml_open(struct gs_mig_nvml **out, gs_error_t *err)
{
  struct gs_mig_nvml *n = calloc(1, sizeof(*n));
  if (!n)
    return gs_make_error(err, 0, "out of memory");
  if (load(n, err) < 0 || start(n, err) < 0) {
    if (n->lib)
      dlclose(n->lib);
    free(n);
    return -1;
  }
  *out = n;
  return 0;
}

void gs_mig_nvml_close(struct gs_mig_nvml *n)
{
  if (!n)
    return;
  n->fn.shutdown();
  dlclose(n->lib);
  free(n);
}

int gs_mig_nvml_count(const struct gs_mig_nvml *n)
{
  return (int) n->count;
}

/* ---- GPU instances by placement ---- */

/* A profile of the GPU (MIG mode on): its id, name without "MIG ", memory slices. */
struct profile {
  unsigned id;
  char name[24];
  unsigned mem_slices;
};

static int profiles(struct gs_mig_nvml *n, nvmlDevice_t d, struct profile *out)
{
  int k = 0;
  for (unsigned e = 0; e < NVML_GPU_INSTANCE_PROFILE_COUNT; e++) {
    nvmlGpuInstanceProfileInfo_v2_t info = { .version = nvmlGpuInstanceProfileInfo_v2 };
    nvmlGpuInstancePlacement_t pl[GS_MIG_POSITIONS];
    unsigned npl = GS_MIG_POSITIONS;
    if (n->fn.gi_profile(d, e, &info) != NVML_SUCCESS ||
        n->fn.placements(d, info.id, pl, &npl) != NVML_SUCCESS || npl == 0)
      continue;
    const char *name = strncmp(info.name, "MIG ", 4) == 0 ? info.name + 4 : info.name;
    out[k].id = info.id;
    out[k].mem_slices = pl[0].size;
    snprintf(out[k].name, sizeof(out[k].name), "%.*s", (int) sizeof(out[k].name) - 1, name);
    k++;
  }
  return k;
}

/* The GPU instance at memory slice start, and its profile's name; NULL gi when none. */
static void gi_at(struct gs_mig_nvml *n, nvmlDevice_t d, int start, nvmlGpuInstance_t *gi,
                  char *name, size_t len)
{
  struct profile p[NVML_GPU_INSTANCE_PROFILE_COUNT];
  int np = profiles(n, d, p);
  *gi = NULL;
  for (int k = 0; k < np && !*gi; k++) {
    nvmlGpuInstance_t list[MAX_GI];
    unsigned cnt = 0;
    if (n->fn.gi_list(d, p[k].id, list, &cnt) != NVML_SUCCESS)
      continue;
    for (unsigned i = 0; i < cnt; i++) {
      nvmlGpuInstanceInfo_t info;
      if (n->fn.gi_info(list[i], &info) == NVML_SUCCESS && (int) info.placement.start == start) {
        *gi = list[i];
        snprintf(name, len, "%s", p[k].name);
        return;
      }
    }
  }
}

/* The compute instances of gi, every profile. */
static unsigned cis_of(struct gs_mig_nvml *n, nvmlGpuInstance_t gi, nvmlComputeInstance_t *out)
{
  unsigned total = 0;
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT && total < MAX_CI; p++) {
    nvmlComputeInstance_t list[MAX_CI];
    unsigned cnt = 0;
    if (n->fn.ci_list(gi, p, list, &cnt) != NVML_SUCCESS)
      continue;
    for (unsigned i = 0; i < cnt && total < MAX_CI; i++)
      out[total++] = list[i];
  }
  return total;
}

/* ---- reading a GPU ---- */

static void live_fill(struct gs_mig_nvml *n, nvmlGpuInstance_t gi, const char *profile,
                      const nvmlGpuInstanceInfo_t *info, struct gs_mig_live *in)
{
  nvmlComputeInstance_t ci[MAX_CI];
  memset(in, 0, sizeof(*in));
  snprintf(in->profile, sizeof(in->profile), "%s", profile);
  in->start = (int) info->placement.start;
  in->size = (int) info->placement.size;
  in->id = info->id;
  unsigned nci = cis_of(n, gi, ci);
  for (unsigned c = 0; c < nci && in->nci < GS_MIG_COMPUTE_SLICES; c++) {
    nvmlComputeInstanceInfo_t cinfo;
    if (n->fn.ci_info(ci[c], &cinfo) == NVML_SUCCESS)
      in->ci_slices[in->nci++] = (int) cinfo.placement.size;
  }
}

static int cmp_start(const void *a, const void *b)
{
  return ((const struct gs_mig_live *) a)->start - ((const struct gs_mig_live *) b)->start;
}

static void read_instances(struct gs_mig_nvml *n, nvmlDevice_t d, struct gs_mig_gpu *g)
{
  struct profile p[NVML_GPU_INSTANCE_PROFILE_COUNT];
  int np = profiles(n, d, p);
  for (int k = 0; k < np; k++) {
    nvmlGpuInstance_t list[MAX_GI];
    unsigned cnt = 0;
    if (n->fn.gi_list(d, p[k].id, list, &cnt) != NVML_SUCCESS)
      continue;
    for (unsigned i = 0; i < cnt && g->n < GS_MIG_MAX_INSTANCES; i++) {
      nvmlGpuInstanceInfo_t info;
      if (n->fn.gi_info(list[i], &info) == NVML_SUCCESS)
        live_fill(n, list[i], p[k].name, &info, &g->inst[g->n++]);
    }
  }
  qsort(g->inst, (size_t) g->n, sizeof(g->inst[0]), cmp_start);
}

/* The compute processes of a GPU or MIG device handle into pids (room for cap); how many. */
static int procs_of(struct gs_mig_nvml *n, nvmlDevice_t d, pid_t *pids, int cap)
{
  nvmlProcessInfo_t info[MAX_PROCS];
  unsigned cnt = MAX_PROCS;
  int k = 0;
  if (n->fn.procs(d, &cnt, info) != NVML_SUCCESS)
    return 0;
  for (unsigned i = 0; i < cnt && k < cap; i++)
    pids[k++] = (pid_t) info[i].pid;
  return k;
}

/* Each MIG device's processes and UUID, given to its GPU instance. */
static void read_mig_devices(struct gs_mig_nvml *n, nvmlDevice_t d, struct gs_mig_gpu *g)
{
  unsigned max = 0;
  if (n->fn.mig_max(d, &max) != NVML_SUCCESS)
    return;
  for (unsigned i = 0; i < max; i++) {
    nvmlDevice_t m;
    unsigned id;
    if (n->fn.mig_handle(d, i, &m) != NVML_SUCCESS || n->fn.mig_gi_id(m, &id) != NVML_SUCCESS)
      continue;
    for (int k = 0; k < g->n; k++) {
      struct gs_mig_live *in = &g->inst[k];
      if (in->id != id)
        continue;
      if (!in->uuid[0])
        n->fn.uuid(m, in->uuid, sizeof(in->uuid));
      in->npids += procs_of(n, m, in->pids + in->npids, GS_MIG_MAX_PIDS - in->npids);
    }
  }
}

int gs_mig_nvml_read(struct gs_mig_nvml *n, int index, struct gs_mig_gpu *g, gs_error_t *err)
{
  nvmlDevice_t d = n->dev[index];
  unsigned cur = 0, pend = 0;
  gs_error_t e = NULL;
  memset(g, 0, sizeof(*g));
  n->fn.name(d, g->name, sizeof(g->name));
  n->fn.uuid(d, g->uuid, sizeof(g->uuid));
  if (gs_gpu_model_canon(g->name, g->model, sizeof(g->model), &e) < 0)
    g->model[0] = '\0';
  gs_error_release(&e);
  nvmlReturn_t r = n->fn.get_mode(d, &cur, &pend);
  if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED)
    return nvml_error(n, r, err, "nvmlDeviceGetMigMode");
  g->capable = r == NVML_SUCCESS;
  g->mode = g->capable && cur == NVML_DEVICE_MIG_ENABLE;
  g->pending = g->capable && pend == NVML_DEVICE_MIG_ENABLE;
  if (g->mode) {
    read_instances(n, d, g);
    read_mig_devices(n, d, g);
  } else {
    g->npids = procs_of(n, d, g->pids, GS_MIG_MAX_PIDS);
  }
  return 0;
}

/* ---- the steps ---- */

static int set_mode(struct gs_mig_nvml *n, nvmlDevice_t d, bool on, gs_error_t *err)
{
  nvmlReturn_t act = NVML_SUCCESS;
  nvmlReturn_t r = n->fn.set_mode(d, on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &act);
  if (r != NVML_SUCCESS)
    return nvml_error(n, r, err, "nvmlDeviceSetMigMode");
  if (act != NVML_SUCCESS)
    return gs_make_error(err, 0, "the mode change is pending until the GPU is reset (%s)",
                         n->fn.error_string(act));
  return 0;
}

static int create_gi(struct gs_mig_nvml *n, nvmlDevice_t d, const struct gs_mig_step *s,
                     gs_error_t *err)
{
  struct profile p[NVML_GPU_INSTANCE_PROFILE_COUNT];
  int np = profiles(n, d, p);
  for (int k = 0; k < np; k++) {
    if (strcmp(p[k].name, s->profile) != 0)
      continue;
    nvmlGpuInstancePlacement_t pl = { (unsigned) s->start, p[k].mem_slices };
    nvmlGpuInstance_t gi;
    nvmlReturn_t r = n->fn.gi_create(d, p[k].id, &pl, &gi);
    return r == NVML_SUCCESS ? 0
                             : nvml_error(n, r, err, "nvmlDeviceCreateGpuInstanceWithPlacement");
  }
  return gs_make_error(err, 0, "the GPU has no MIG profile '%s'", s->profile);
}

/* The compute instance profile of `slices` compute slices in gi. */
static int ci_profile_id(struct gs_mig_nvml *n, nvmlGpuInstance_t gi, int slices, unsigned *id)
{
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
    nvmlComputeInstanceProfileInfo_v2_t info = { .version = nvmlComputeInstanceProfileInfo_v2 };
    if (n->fn.ci_profile(gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) ==
          NVML_SUCCESS &&
        (int) info.sliceCount == slices) {
      *id = info.id;
      return 0;
    }
  }
  return -1;
}

static int create_ci(struct gs_mig_nvml *n, nvmlGpuInstance_t gi, const struct gs_mig_step *s,
                     gs_error_t *err)
{
  for (int c = 0; c < s->nci; c++) {
    unsigned id;
    nvmlComputeInstance_t ci;
    if (ci_profile_id(n, gi, s->ci_slices[c], &id) < 0)
      return gs_make_error(err, 0, "no compute instance profile of %d slices", s->ci_slices[c]);
    nvmlReturn_t r = n->fn.ci_create(gi, id, &ci);
    if (r != NVML_SUCCESS)
      return nvml_error(n, r, err, "nvmlGpuInstanceCreateComputeInstance");
  }
  return 0;
}

static int destroy_cis(struct gs_mig_nvml *n, nvmlGpuInstance_t gi, gs_error_t *err)
{
  nvmlComputeInstance_t ci[MAX_CI];
  unsigned nci = cis_of(n, gi, ci);
  for (unsigned c = 0; c < nci; c++) {
    nvmlReturn_t r = n->fn.ci_destroy(ci[c]);
    if (r != NVML_SUCCESS)
      return nvml_error(n, r, err, "nvmlComputeInstanceDestroy");
  }
  return 0;
}

static int instance_step(struct gs_mig_nvml *n, nvmlDevice_t d, const struct gs_mig_step *s,
                         gs_error_t *err)
{
  nvmlGpuInstance_t gi;
  char name[24];
  gi_at(n, d, s->start, &gi, name, sizeof(name));
  if (!gi)
    return gs_make_error(err, 0, "no GPU instance at memory slice %d", s->start);
  if (s->kind == GS_MIG_DESTROY_CI)
    return destroy_cis(n, gi, err);
  if (s->kind == GS_MIG_CREATE_CI)
    return create_ci(n, gi, s, err);
  nvmlReturn_t r = n->fn.gi_destroy(gi);
  return r == NVML_SUCCESS ? 0 : nvml_error(n, r, err, "nvmlGpuInstanceDestroy");
}

static int step(void *ctx, const struct gs_mig_step *s, gs_error_t *err)
{
  struct gpu_ctx *c = ctx;
  nvmlDevice_t d = c->n->dev[c->index];
  switch (s->kind) {
  case GS_MIG_MODE_ON: return set_mode(c->n, d, true, err);
  case GS_MIG_MODE_OFF: return set_mode(c->n, d, false, err);
  case GS_MIG_CREATE_GI: return create_gi(c->n, d, s, err);
  default: return instance_step(c->n, d, s, err);
  }
}

static int read_ctx(void *ctx, struct gs_mig_gpu *g, gs_error_t *err)
{
  struct gpu_ctx *c = ctx;
  return gs_mig_nvml_read(c->n, c->index, g, err);
}

void gs_mig_nvml_ops(struct gs_mig_nvml *n, int index, struct gs_mig_ops *ops)
{
  *ops = (struct gs_mig_ops){ .ctx = &n->ctx[index], .read = read_ctx, .step = step };
}
