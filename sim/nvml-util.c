/* Simulated NVML: device utilization, the running-process lists and per-process utilization.
 * All of them are read from the shared state: the device timeline for busy time, the process
 * slots for who holds contexts and memory. */
#include "nvml-internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

unsigned int gpusim_nvml_gpu_util(const struct gpusim_dev *dev)
{
  uint64_t period = gpusim_util_period_ns();
  uint64_t now = gpusim_now_ns();
  uint64_t from = now > period ? now - period : 0;
  if (now == from)
    return 0;
  struct gpusim_shared *s = gpusim_state(NULL);
  uint64_t busy = gpusim_busy_ns((int) (dev - s->dev), from, now, 0);
  uint64_t pct = (busy * 100 + (now - from) / 2) / (now - from);
  return pct > 100 ? 100 : (unsigned) pct;
}

/* The simulator has no memory traffic; half the SM activity keeps the value plausible and
 * a pure function of the timeline. */
static unsigned int mem_util_of(unsigned int sm_util)
{
  return sm_util / 2;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                      nvmlUtilization_t *utilization)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, utilization, &dev, NULL));
  utilization->gpu = gpusim_nvml_gpu_util(dev);
  utilization->memory = mem_util_of(utilization->gpu);
  return NVML_SUCCESS;
}

/* ---- running processes ---- */

struct proc_entry {
  unsigned int pid;
  unsigned long long used;
  unsigned int gi_id, ci_id; /* 0xFFFFFFFF outside MIG */
};

/* The ids of the MIG device a process is bound to, or 0xFFFFFFFF for the whole GPU. */
static void mig_ids(const struct gpusim_shared *s, int d, uint8_t b, struct proc_entry *e)
{
  e->gi_id = e->ci_id = 0xFFFFFFFFu;
  if (!b)
    return;
  const struct gpusim_mig_gi *g = &s->mig[d].gi[GPUSIM_MIG_BIND_GI(b)];
  e->gi_id = g->id;
  e->ci_id = g->ci[GPUSIM_MIG_BIND_CI(b)].id;
}

/* Lists the live processes with a context or memory on device d into out (room for
 * GPUSIM_MAX_PROCS); with only (a MIG device's binding, else 0) those of that MIG device.
 * Dead ones are reaped first (at most GSN_REAP_PERIOD_NS late) so they neither show nor hold
 * memory. */
static unsigned int procs_collect(int d, uint8_t only, struct proc_entry *out)
{
  struct gpusim_shared *s = gpusim_state(NULL);
  unsigned int n = 0;
  gpusim_reap_dead_every(GSN_REAP_PERIOD_NS);
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++) {
    struct gpusim_proc *p = &s->proc[i];
    if (atomic_load(&p->state) != GPUSIM_SLOT_LIVE)
      continue;
    uint64_t used = __atomic_load_n(&p->used[d], __ATOMIC_RELAXED);
    if (atomic_load(&p->contexts[d]) == 0 && used == 0)
      continue;
    uint8_t b = s->proc_mig[i][d];
    if (only && b != only)
      continue;
    out[n].pid = (unsigned) p->pid;
    out[n].used = used;
    mig_ids(s, d, b, &out[n]);
    n++;
  }
  return n;
}

/* The count protocol all three layouts share: *infoCount holds the caller's room on entry and
 * the number of processes on return; too little room is NVML_ERROR_INSUFFICIENT_SIZE, so a
 * caller can ask with 0 (and infos NULL) to learn the size. Returns the number to write,
 * or -1 with *r set when nothing is to be written. */
static int procs_begin(nvmlDevice_t device, unsigned int *infoCount, const void *infos,
                       struct proc_entry *list, nvmlReturn_t *r)
{
  struct gpusim_dev *dev;
  int gi, ci;
  *r = gpusim_nvml_any_device(device, &dev, &gi, &ci);
  if (*r != NVML_SUCCESS)
    return -1;
  if (!infoCount || (!infos && *infoCount > 0)) {
    *r = NVML_ERROR_INVALID_ARGUMENT;
    return -1;
  }
  unsigned int n = procs_collect(dev->index, gi < 0 ? 0 : GPUSIM_MIG_BIND(gi, ci), list);
  unsigned int room = *infoCount;
  *infoCount = n;
  if (room < n) {
    *r = NVML_ERROR_INSUFFICIENT_SIZE;
    return -1;
  }
  return (int) n;
}

/* procs_begin with the list it fills: *list (free it) holds the returned number of
 * processes, or the answer is -1 with *r set. */
static int procs_list(nvmlDevice_t device, unsigned int *infoCount, const void *infos,
                      struct proc_entry **list, nvmlReturn_t *r)
{
  *list = calloc(GPUSIM_MAX_PROCS, sizeof(**list));
  *r = NVML_ERROR_MEMORY;
  return *list ? procs_begin(device, infoCount, infos, *list, r) : -1;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                             unsigned int *infoCount,
                                                             nvmlProcessInfo_v1_t *infos)
{
  struct proc_entry *list;
  nvmlReturn_t r;
  int n = procs_list(device, infoCount, infos, &list, &r);
  for (int i = 0; i < n; i++)
    infos[i] = (nvmlProcessInfo_v1_t){ .pid = list[i].pid, .usedGpuMemory = list[i].used };
  free(list);
  return r;
}

/* The v2 and v3 layouts are the same struct; only the symbol differs. */
static nvmlReturn_t compute_procs_v2(nvmlDevice_t device, unsigned int *infoCount,
                                     nvmlProcessInfo_v2_t *infos)
{
  struct proc_entry *list;
  nvmlReturn_t r;
  int n = procs_list(device, infoCount, infos, &list, &r);
  for (int i = 0; i < n; i++)
    infos[i] = (nvmlProcessInfo_v2_t){ .pid = list[i].pid,
                                       .usedGpuMemory = list[i].used,
                                       .gpuInstanceId = list[i].gi_id,
                                       .computeInstanceId = list[i].ci_id };
  free(list);
  return r;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                unsigned int *infoCount,
                                                                nvmlProcessInfo_v2_t *infos)
{
  return compute_procs_v2(device, infoCount, infos);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                unsigned int *infoCount,
                                                                nvmlProcessInfo_t *infos)
{
  return compute_procs_v2(device, infoCount, infos);
}

/* The simulator runs no graphics work: the list is always empty. */
static nvmlReturn_t graphics_procs(nvmlDevice_t device, unsigned int *infoCount)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, infoCount, &dev, NULL));
  *infoCount = 0;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos)
{
  (void) infos;
  return graphics_procs(device, infoCount);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v2_t *infos)
{
  (void) infos;
  return graphics_procs(device, infoCount);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
  (void) infos;
  return graphics_procs(device, infoCount);
}

/* ---- per-process utilization ---- */

static uint64_t realtime_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* The window a sample covers, in CLOCK_MONOTONIC: the last sample period, cut short at the
 * caller's last-seen timestamp (microseconds of CLOCK_REALTIME, as NVML's timestamps are). */
static uint64_t sample_window_start(uint64_t now_mono, uint64_t now_real,
                                    unsigned long long last_seen_us)
{
  uint64_t period = gpusim_util_period_ns();
  uint64_t from = now_mono > period ? now_mono - period : 0;
  uint64_t seen_real = (uint64_t) last_seen_us * 1000ULL;
  if (seen_real == 0 || seen_real >= now_real)
    return seen_real ? now_mono : from;
  uint64_t age = now_real - seen_real;
  uint64_t seen_mono = now_mono > age ? now_mono - age : 0;
  return seen_mono > from ? seen_mono : from;
}

/* Fills out with one sample per process that kept the device busy in the window, as NVIDIA's
 * driver keeps its samples: a process that has exited since still has its last ones. */
static unsigned int samples_collect(int d, unsigned long long last_seen_us,
                                    nvmlProcessUtilizationSample_t *out)
{
  uint64_t now = gpusim_now_ns(), now_real = realtime_ns();
  uint64_t from = sample_window_start(now, now_real, last_seen_us);
  pid_t pids[GPUSIM_MAX_PROCS];
  uint64_t busy[GPUSIM_MAX_PROCS];
  if (from >= now)
    return 0;
  int n = gpusim_busy_by_pid(d, from, now, pids, busy, GPUSIM_MAX_PROCS);
  for (int i = 0; i < n; i++) {
    uint64_t pct = (busy[i] * 100 + (now - from) / 2) / (now - from);
    memset(&out[i], 0, sizeof(out[i]));
    out[i].pid = (unsigned) pids[i];
    out[i].timeStamp = now_real / 1000ULL;
    out[i].smUtil = pct > 100 ? 100 : (unsigned) pct;
    out[i].memUtil = mem_util_of(out[i].smUtil);
  }
  return (unsigned int) n;
}

/* As in NVML: with utilization NULL the call reports the number of samples it has and
 * NVML_ERROR_INSUFFICIENT_SIZE; no sample in the window is NVML_ERROR_NOT_FOUND. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                        nvmlProcessUtilizationSample_t *utilization,
                                                        unsigned int *processSamplesCount,
                                                        unsigned long long lastSeenTimeStamp)
{
  struct gpusim_dev *dev;
  nvmlReturn_t r = gpusim_nvml_device_arg(device, processSamplesCount, &dev, NULL);
  if (r != NVML_SUCCESS)
    return r;
  nvmlProcessUtilizationSample_t *samples = calloc(GPUSIM_MAX_PROCS, sizeof(*samples));
  if (!samples)
    return NVML_ERROR_MEMORY;
  unsigned int n = samples_collect(dev->index, lastSeenTimeStamp, samples);
  unsigned int room = *processSamplesCount;
  *processSamplesCount = n;
  if (n == 0)
    r = NVML_ERROR_NOT_FOUND;
  else if (!utilization || room < n)
    r = NVML_ERROR_INSUFFICIENT_SIZE;
  else
    memcpy(utilization, samples, n * sizeof(samples[0]));
  free(samples);
  return r;
}
