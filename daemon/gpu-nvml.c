/* GPU discovery and readings through NVML, loaded at run time with dlopen: the daemon has
 * no link-time dependency on the driver, and says in one line when there is none. With
 * GPUSLICE_SIM set it loads the simulated libnvidia-ml.so.1 instead, the library `gpuslice
 * run` puts on its commands' LD_LIBRARY_PATH; include/gpuslice/driver.h decides both (the loader's path
 * is fixed at start, so the daemon names the file rather than changing the variable).
 *
 * Functions are resolved once into a table (abi/gs-nvml.h declares them). The process list
 * comes from the newest nvmlDeviceGetComputeRunningProcesses the library exports, each
 * version with its own struct layout: v1 fills 16-byte entries, v2 and v3 24-byte ones. The
 * verifier (verifier.c) reads the list itself, each process's usedGpuMemory, and the
 * per-process utilization since the last sample. */
#include "daemon.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu-nvml.h"
#include "verify.h"

struct nvml {
  void *lib;
  struct nvml_fns fn;
  unsigned count;
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  nvmlDevice_t dev[GS_LEDGER_MAX_GPUS];
  unsigned long long util_seen[GS_LEDGER_MAX_GPUS]; /* the last process-utilization sample's time */
  struct nvml_extra extra;                          /* events and GPM state (gpu-nvml-fields.c) */
  struct nvml_mig mig;                              /* MIG instances (gpu-nvml-mig.c) */
  char cc[GS_LEDGER_MAX_GPUS][16];                  /* compute capability, "9.0", or "" */
};

#define NVML_REQUIRED 15
static const struct gs_driver_sym syms[] = {
  { offsetof(struct nvml_fns, init), "nvmlInit_v2" },
  { offsetof(struct nvml_fns, shutdown), "nvmlShutdown" },
  { offsetof(struct nvml_fns, error_string), "nvmlErrorString" },
  { offsetof(struct nvml_fns, driver_version), "nvmlSystemGetDriverVersion" },
  { offsetof(struct nvml_fns, count), "nvmlDeviceGetCount_v2" },
  { offsetof(struct nvml_fns, handle), "nvmlDeviceGetHandleByIndex_v2" },
  { offsetof(struct nvml_fns, name), "nvmlDeviceGetName" },
  { offsetof(struct nvml_fns, uuid), "nvmlDeviceGetUUID" },
  { offsetof(struct nvml_fns, pci), "nvmlDeviceGetPciInfo_v3" },
  { offsetof(struct nvml_fns, minor), "nvmlDeviceGetMinorNumber" },
  { offsetof(struct nvml_fns, memory), "nvmlDeviceGetMemoryInfo" },
  { offsetof(struct nvml_fns, utilization), "nvmlDeviceGetUtilizationRates" },
  { offsetof(struct nvml_fns, power), "nvmlDeviceGetPowerUsage" },
  { offsetof(struct nvml_fns, temperature), "nvmlDeviceGetTemperature" },
  { offsetof(struct nvml_fns, clock), "nvmlDeviceGetClockInfo" },
  { offsetof(struct nvml_fns, procs_v3), "nvmlDeviceGetComputeRunningProcesses_v3" },
  { offsetof(struct nvml_fns, procs_v2), "nvmlDeviceGetComputeRunningProcesses_v2" },
  { offsetof(struct nvml_fns, procs_v1), "nvmlDeviceGetComputeRunningProcesses" },
  { offsetof(struct nvml_fns, proc_util), "nvmlDeviceGetProcessUtilization" },
  { offsetof(struct nvml_fns, memory_v2), "nvmlDeviceGetMemoryInfo_v2" },
  { offsetof(struct nvml_fns, field_values), "nvmlDeviceGetFieldValues" },
  { offsetof(struct nvml_fns, energy), "nvmlDeviceGetTotalEnergyConsumption" },
  { offsetof(struct nvml_fns, pcie_replay), "nvmlDeviceGetPcieReplayCounter" },
  { offsetof(struct nvml_fns, enc_util), "nvmlDeviceGetEncoderUtilization" },
  { offsetof(struct nvml_fns, dec_util), "nvmlDeviceGetDecoderUtilization" },
  { offsetof(struct nvml_fns, remapped_rows), "nvmlDeviceGetRemappedRows" },
  { offsetof(struct nvml_fns, virt_mode), "nvmlDeviceGetVirtualizationMode" },
  { offsetof(struct nvml_fns, event_set_create), "nvmlEventSetCreate" },
  { offsetof(struct nvml_fns, event_types), "nvmlDeviceGetSupportedEventTypes" },
  { offsetof(struct nvml_fns, register_events), "nvmlDeviceRegisterEvents" },
  { offsetof(struct nvml_fns, event_wait), "nvmlEventSetWait_v2" },
  { offsetof(struct nvml_fns, event_set_free), "nvmlEventSetFree" },
  { offsetof(struct nvml_fns, gpm_support), "nvmlGpmQueryDeviceSupport" },
  { offsetof(struct nvml_fns, gpm_alloc), "nvmlGpmSampleAlloc" },
  { offsetof(struct nvml_fns, gpm_free), "nvmlGpmSampleFree" },
  { offsetof(struct nvml_fns, gpm_get), "nvmlGpmSampleGet" },
  { offsetof(struct nvml_fns, gpm_metrics), "nvmlGpmMetricsGet" },
  { offsetof(struct nvml_fns, cuda_cc), "nvmlDeviceGetCudaComputeCapability" },
  { offsetof(struct nvml_fns, mig_mode), "nvmlDeviceGetMigMode" },
};
_Static_assert(sizeof(syms) / sizeof(syms[0]) == sizeof(struct nvml_fns) / sizeof(void (*)(void)),
               "one symbol per table entry");

static int resolve(struct nvml *n, gs_error_t *err)
{
  const char *missing = NULL;
  if (gs_driver_resolve(n->lib, syms, sizeof(syms) / sizeof(syms[0]), NVML_REQUIRED, &n->fn,
                        &missing) < 0)
    return gs_make_error(err, 0, "NVML has no %s", missing);
  return 0;
}

static int nvml_fail(struct nvml *n, nvmlReturn_t r, const char *what, gs_error_t *err)
{
  return gs_make_error(err, 0, "%s: %s", what,
                       n->fn.error_string ? n->fn.error_string(r) : "NVML error");
}

static int discover(struct nvml *n, gs_error_t *err)
{
  nvmlReturn_t r = n->fn.init();
  if (r == NVML_ERROR_DRIVER_NOT_LOADED)
    return gs_make_error(err, 0,
                         "no NVIDIA driver loaded (set GPUSLICE_SIM to run on the simulated GPU)");
  if (r != NVML_SUCCESS)
    return nvml_fail(n, r, "nvmlInit", err);
  if ((r = n->fn.count(&n->count)) != NVML_SUCCESS)
    return nvml_fail(n, r, "nvmlDeviceGetCount", err);
  if (n->count > GS_LEDGER_MAX_GPUS)
    n->count = GS_LEDGER_MAX_GPUS;
  for (unsigned i = 0; i < n->count; i++) {
    int major = 0, minor = 0;
    if ((r = n->fn.handle(i, &n->dev[i])) != NVML_SUCCESS)
      return nvml_fail(n, r, "nvmlDeviceGetHandleByIndex", err);
    if (n->fn.cuda_cc && n->fn.cuda_cc(n->dev[i], &major, &minor) == NVML_SUCCESS)
      snprintf(n->cc[i], sizeof(n->cc[i]), "%d.%d", major, minor);
  }
  if (n->fn.driver_version(n->driver, sizeof(n->driver)) != NVML_SUCCESS)
    snprintf(n->driver, sizeof(n->driver), "unknown");
  return 0;
}

int nvml_open(struct nvml **out, gs_error_t *err)
{
  _cleanup_free_ char *path = NULL;
  struct nvml *n = xcalloc(1, sizeof(*n));
  n->lib = gs_driver_open(GS_DRIVER_LIB_NVML, &path, err);
  if (!n->lib) {
    if (path) { /* it was found and would not load: say so as the user can act on it */
      gs_error_release(err);
      gs_make_error(
        err, 0, "no NVIDIA driver: cannot load %s (set GPUSLICE_SIM to run on the simulated GPU)",
        path);
    }
    free(n);
    return -1;
  }
  if (resolve(n, err) < 0 || discover(n, err) < 0) {
    nvml_close(n);
    return -1;
  }
  nvml_extra_open(&n->extra, &n->fn, n->dev, n->count);
  nvml_mig_open(&n->mig, n->lib);
  *out = n;
  return 0;
}

void nvml_close(struct nvml *n)
{
  if (!n)
    return;
  nvml_extra_close(&n->extra, &n->fn, n->count);
  if (n->fn.shutdown && n->count)
    n->fn.shutdown();
  dlclose(n->lib);
  free(n);
}

void *nvml_library(struct nvml *n)
{
  return n->lib;
}

nvmlDevice_t nvml_device(struct nvml *n, int index)
{
  return n->dev[index];
}

int nvml_gpu_count(const struct nvml *n)
{
  return (int) n->count;
}

const char *nvml_driver_version(const struct nvml *n)
{
  return n->driver;
}

/* Readings a device may not support are left 0: a metric of 0 beats a missing GPU. */
static void sample_sensors(struct nvml *n, nvmlDevice_t dev, struct gs_snap_gpu *g)
{
  nvmlUtilization_t u;
  if (n->fn.utilization(dev, &u) == NVML_SUCCESS) {
    g->util_pct = u.gpu;
    g->mem_util_pct = u.memory;
  }
  if (n->fn.power(dev, &g->power_mw) != NVML_SUCCESS)
    g->power_mw = 0;
  if (n->fn.temperature(dev, NVML_TEMPERATURE_GPU, &g->temp_c) != NVML_SUCCESS)
    g->temp_c = 0;
  if (n->fn.clock(dev, NVML_CLOCK_SM, &g->sm_clock_mhz) != NVML_SUCCESS)
    g->sm_clock_mhz = 0;
  if (n->fn.clock(dev, NVML_CLOCK_MEM, &g->mem_clock_mhz) != NVML_SUCCESS)
    g->mem_clock_mhz = 0;
}

void nvml_want(struct nvml *n, uint32_t readings)
{
  n->extra.want = readings;
}

int nvml_sample(struct nvml *n, int index, struct gs_snap_gpu *g, gs_error_t *err)
{
  nvmlDevice_t dev = n->dev[index];
  nvmlPciInfo_t pci;
  nvmlMemory_t mem;
  unsigned minor = (unsigned) index;
  nvmlReturn_t r;

  memset(g, 0, sizeof(*g));
  g->index = index;
  if ((r = n->fn.uuid(dev, g->uuid, sizeof(g->uuid))) != NVML_SUCCESS ||
      (r = n->fn.name(dev, g->model, sizeof(g->model))) != NVML_SUCCESS ||
      (r = n->fn.memory(dev, &mem)) != NVML_SUCCESS)
    return nvml_fail(n, r, "GPU reading", err);
  if (n->fn.pci(dev, &pci) == NVML_SUCCESS)
    snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", pci.busId);
  n->fn.minor(dev, &minor);
  snprintf(g->device, sizeof(g->device), "nvidia%u", minor);
  g->fb_total_bytes = mem.total;
  g->fb_used_bytes = mem.used;
  g->fb_free_bytes = mem.free;
  sample_sensors(n, dev, g);
  nvml_extra_sample(&n->extra, &n->fn, n->dev, n->count, index, g);
  nvml_mig_sample(&n->mig, dev, g);
  return 0;
}

const char *nvml_compute_capability(const struct nvml *n, int index)
{
  return index >= 0 && (unsigned) index < n->count ? n->cc[index] : "";
}

int nvml_process_count(struct nvml *n, int index)
{
  unsigned count = 0;
  nvmlReturn_t r;
  nvmlDevice_t dev = n->dev[index];
  /* A NULL buffer with count 0 asks for the count: INSUFFICIENT_SIZE with the count, or
   * SUCCESS when there are none. Whichever version is there, its layout is never touched. */
  if (n->fn.procs_v3)
    r = n->fn.procs_v3(dev, &count, NULL);
  else if (n->fn.procs_v2)
    r = n->fn.procs_v2(dev, &count, NULL);
  else if (n->fn.procs_v1)
    r = n->fn.procs_v1(dev, &count, NULL);
  else
    return -1;
  return r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE ? (int) count : -1;
}

/* One call of the newest process-list entry point into infos (room for *count). The v2 and
 * v3 entries share a layout; v1's are narrower and copied over. */
static nvmlReturn_t procs_call(struct nvml *n, nvmlDevice_t dev, unsigned *count,
                               nvmlProcessInfo_v2_t *infos)
{
  if (n->fn.procs_v3)
    return n->fn.procs_v3(dev, count, infos);
  if (n->fn.procs_v2)
    return n->fn.procs_v2(dev, count, infos);
  _cleanup_free_ nvmlProcessInfo_v1_t *v1 = xcalloc(*count ? *count : 1, sizeof(*v1));
  nvmlReturn_t r = n->fn.procs_v1(dev, count, v1);
  for (unsigned i = 0; r == NVML_SUCCESS && i < *count; i++)
    infos[i] = (nvmlProcessInfo_v2_t){ .pid = v1[i].pid, .usedGpuMemory = v1[i].usedGpuMemory };
  return r;
}

int nvml_memory_free(struct nvml *n, int index, uint64_t *free_)
{
  nvmlMemory_v2_t m2 = { .version = nvmlMemory_v2 };
  nvmlMemory_t m;
  if (index < 0 || (unsigned) index >= n->count)
    return -1;
  if (n->fn.memory_v2 && n->fn.memory_v2(n->dev[index], &m2) == NVML_SUCCESS) {
    *free_ = m2.free;
    return 0;
  }
  if (n->fn.memory(n->dev[index], &m) != NVML_SUCCESS)
    return -1;
  *free_ = m.free;
  return 0;
}

bool nvml_mig_enabled(struct nvml *n, int index)
{
  unsigned current = NVML_DEVICE_MIG_DISABLE, pending = NVML_DEVICE_MIG_DISABLE;
  return index >= 0 && (unsigned) index < n->count && n->fn.mig_mode &&
    n->fn.mig_mode(n->dev[index], &current, &pending) == NVML_SUCCESS &&
    current == NVML_DEVICE_MIG_ENABLE;
}

int nvml_processes(struct nvml *n, int index, struct verify_proc *out, int cap)
{
  if (!n->fn.procs_v3 && !n->fn.procs_v2 && !n->fn.procs_v1)
    return -1;
  _cleanup_free_ nvmlProcessInfo_v2_t *infos = xcalloc((size_t) cap, sizeof(*infos));
  unsigned count = (unsigned) cap;
  if (procs_call(n, n->dev[index], &count, infos) != NVML_SUCCESS)
    return -1;
  for (unsigned i = 0; i < count; i++)
    /* NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot say: counted as nothing. */
    out[i] = (struct verify_proc){ .pid = (pid_t) infos[i].pid,
                                   .tenant = -1,
                                   .vram_bytes =
                                     infos[i].usedGpuMemory == ~0ULL ? 0 : infos[i].usedGpuMemory };
  return (int) count;
}

/* The process's entry in p[], or NULL. */
static struct verify_proc *proc_find(struct verify_proc *p, int n, pid_t pid)
{
  for (int i = 0; i < n; i++)
    if (p[i].pid == pid)
      return &p[i];
  return NULL;
}

/* The samples NVML holds since the last call: asked for the count first, as NVML wants.
 * Returns how many are in *out (free it), 0 when none or on error. */
static unsigned util_samples(struct nvml *n, int index, nvmlProcessUtilizationSample_t **out)
{
  unsigned count = 0;
  *out = NULL;
  if (n->fn.proc_util(n->dev[index], NULL, &count, n->util_seen[index]) !=
        NVML_ERROR_INSUFFICIENT_SIZE ||
      !count)
    return 0;
  count += 16; /* room for processes that start between the two calls */
  *out = xcalloc(count, sizeof(**out));
  if (n->fn.proc_util(n->dev[index], *out, &count, n->util_seen[index]) != NVML_SUCCESS)
    return 0;
  return count;
}

int nvml_process_util(struct nvml *n, int index, struct verify_proc *p, int np, int cap)
{
  int nall = np;
  if (!n->fn.proc_util)
    return np;
  _cleanup_free_ nvmlProcessUtilizationSample_t *s = NULL;
  unsigned count = util_samples(n, index, &s);
  _cleanup_free_ unsigned *samples = xcalloc((size_t) cap, sizeof(*samples));
  _cleanup_free_ unsigned *sum = xcalloc((size_t) cap, sizeof(*sum));
  /* A process with several samples in the window gets their mean. */
  for (unsigned i = 0; i < count; i++) {
    struct verify_proc *v = proc_find(p, nall, (pid_t) s[i].pid);
    if (!v && nall < cap) {
      v = &p[nall++];
      *v = (struct verify_proc){ .pid = (pid_t) s[i].pid, .tenant = -1, .gone = true };
    }
    if (v) {
      sum[v - p] += s[i].smUtil > 100 ? 100 : s[i].smUtil;
      samples[v - p]++;
    }
    if (s[i].timeStamp > n->util_seen[index])
      n->util_seen[index] = s[i].timeStamp;
  }
  for (int i = 0; i < nall; i++)
    p[i].sm_pct = samples[i] ? sum[i] / samples[i] : 0;
  /* The next call asks for what came after this one, samples or not, so that each reading is
   * about the interval since the last (what the sampler counts device time over). */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long now_us = (unsigned long long) ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
  if (now_us > n->util_seen[index])
    n->util_seen[index] = now_us;
  return nall;
}
