/* The readings behind dcgm-exporter's default fields beyond the first seven, from the NVML
 * calls DCGM itself makes: memory info v2 (the driver's reserve apart), the memory
 * temperature and NVLink counters as field values, total energy, PCIe replays, encoder and
 * decoder utilization, remapped rows, the virtualization mode (for the vGPU licence), XID
 * errors as NVML events, and the profiling ratios from GPM where the GPU has it (Hopper and
 * later). Every call is optional: a driver or GPU without one leaves its reading out of the
 * snapshot (its GS_SNAP_HAVE_* bit unset), and /metrics then has no sample for it, as
 * dcgm-exporter has none for a blank DCGM value. */
#include "gpu-nvml.h"

#include <limits.h>
#include <string.h>

/* NVIDIA advises at least 100 ms between the two samples of a GPM metric. */
#define GPM_MIN_INTERVAL_S 0.1

static void events_open(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t *dev,
                        unsigned count)
{
  if (!fn->event_set_create || !fn->register_events || !fn->event_wait || !fn->event_set_free ||
      fn->event_set_create(&x->events) != NVML_SUCCESS) {
    x->events = NULL;
    return;
  }
  for (unsigned i = 0; i < count; i++) {
    unsigned long long types = nvmlEventTypeXidCriticalError;
    if (fn->event_types && fn->event_types(dev[i], &types) != NVML_SUCCESS)
      types = 0;
    x->xid_watched[i] = (types & nvmlEventTypeXidCriticalError) &&
      fn->register_events(dev[i], nvmlEventTypeXidCriticalError, x->events) == NVML_SUCCESS;
  }
}

static void gpm_open(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t *dev,
                     unsigned count)
{
  if (!fn->gpm_support || !fn->gpm_alloc || !fn->gpm_free || !fn->gpm_get || !fn->gpm_metrics)
    return;
  for (unsigned i = 0; i < count; i++) {
    nvmlGpmSupport_t sup = { .version = NVML_GPM_SUPPORT_VERSION };
    x->gpm_prev[i] = -1;
    if (fn->gpm_support(dev[i], &sup) != NVML_SUCCESS || !sup.isSupportedDevice)
      continue;
    if (fn->gpm_alloc(&x->gpm_sample[i][0]) != NVML_SUCCESS)
      continue;
    if (fn->gpm_alloc(&x->gpm_sample[i][1]) != NVML_SUCCESS) {
      fn->gpm_free(x->gpm_sample[i][0]);
      continue;
    }
    x->gpm[i] = true;
  }
}

void nvml_extra_open(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t *dev,
                     unsigned count)
{
  memset(x, 0, sizeof(*x));
  x->want = UINT32_MAX;
  events_open(x, fn, dev, count);
  gpm_open(x, fn, dev, count);
}

void nvml_extra_close(struct nvml_extra *x, const struct nvml_fns *fn, unsigned count)
{
  if (x->events)
    fn->event_set_free(x->events);
  for (unsigned i = 0; i < count; i++)
    if (x->gpm[i]) {
      fn->gpm_free(x->gpm_sample[i][0]);
      fn->gpm_free(x->gpm_sample[i][1]);
    }
  memset(x, 0, sizeof(*x));
}

/* Takes every XID NVML has queued, without waiting: the last one per GPU is what
 * DCGM_FI_DEV_XID_ERRORS shows. */
static void events_drain(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t *dev,
                         unsigned count)
{
  nvmlEventData_t e;
  while (x->events && fn->event_wait(x->events, &e, 0) == NVML_SUCCESS) {
    if (e.eventType != nvmlEventTypeXidCriticalError)
      continue;
    for (unsigned i = 0; i < count; i++)
      if (dev[i] == e.device)
        x->xid_last[i] = e.eventData;
  }
}

/* A field value as an unsigned integer, whatever type NVML gave it. */
static bool field_u64(const nvmlFieldValue_t *v, uint64_t *out)
{
  if (v->nvmlReturn != NVML_SUCCESS)
    return false;
  switch (v->valueType) {
  case NVML_VALUE_TYPE_DOUBLE: *out = v->value.dVal > 0 ? (uint64_t) v->value.dVal : 0; break;
  case NVML_VALUE_TYPE_UNSIGNED_INT: *out = v->value.uiVal; break;
  case NVML_VALUE_TYPE_UNSIGNED_LONG: *out = v->value.ulVal; break;
  case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: *out = v->value.ullVal; break;
  case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
    *out = v->value.sllVal > 0 ? (uint64_t) v->value.sllVal : 0;
    break;
  case NVML_VALUE_TYPE_SIGNED_INT: *out = v->value.siVal > 0 ? (uint64_t) v->value.siVal : 0; break;
  case NVML_VALUE_TYPE_UNSIGNED_SHORT: *out = v->value.usVal; break;
  default: return false;
  }
  return true;
}

/* The memory temperature and the NVLink data counters, in one call as DCGM reads them. */
static void sample_fields(const struct nvml_fns *fn, nvmlDevice_t dev, struct gs_snap_gpu *g)
{
  nvmlFieldValue_t v[3] = {
    { .fieldId = NVML_FI_DEV_MEMORY_TEMP },
    { .fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = UINT_MAX },
    { .fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = UINT_MAX },
  };
  uint64_t temp, tx, rx;
  if (!fn->field_values || fn->field_values(dev, 3, v) != NVML_SUCCESS)
    return;
  if (field_u64(&v[0], &temp)) {
    g->mem_temp_c = (unsigned) temp;
    g->have |= GS_SNAP_HAVE_MEM_TEMP;
  }
  if (field_u64(&v[1], &tx) && field_u64(&v[2], &rx)) {
    g->nvlink_kib = tx + rx;
    g->have |= GS_SNAP_HAVE_NVLINK;
  }
}

/* Memory info v2 where the driver has it: used without the driver's reserve, the reserve
 * apart. v1 (already in g) counts the reserve as used. */
static void sample_memory_v2(const struct nvml_fns *fn, nvmlDevice_t dev, struct gs_snap_gpu *g)
{
  nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
  if (!fn->memory_v2 || fn->memory_v2(dev, &m) != NVML_SUCCESS)
    return;
  g->fb_total_bytes = m.total;
  g->fb_used_bytes = m.used;
  g->fb_free_bytes = m.free;
  g->fb_reserved_bytes = m.reserved;
  g->have |= GS_SNAP_HAVE_FB_RESERVED;
}

/* Each reading only when a served field needs it (want), as DCGM watches only the fields asked for. */
static void sample_counters(const struct nvml_fns *fn, nvmlDevice_t dev, uint32_t want,
                            struct gs_snap_gpu *g)
{
  unsigned long long energy;
  unsigned period, pending;
  nvmlGpuVirtualizationMode_t mode;
  if ((want & GS_SNAP_HAVE_ENERGY) && fn->energy && fn->energy(dev, &energy) == NVML_SUCCESS) {
    g->energy_mj = energy;
    g->have |= GS_SNAP_HAVE_ENERGY;
  }
  if ((want & GS_SNAP_HAVE_PCIE_REPLAY) && fn->pcie_replay &&
      fn->pcie_replay(dev, &g->pcie_replays) == NVML_SUCCESS)
    g->have |= GS_SNAP_HAVE_PCIE_REPLAY;
  if ((want & GS_SNAP_HAVE_ENC) && fn->enc_util &&
      fn->enc_util(dev, &g->enc_util_pct, &period) == NVML_SUCCESS)
    g->have |= GS_SNAP_HAVE_ENC;
  if ((want & GS_SNAP_HAVE_DEC) && fn->dec_util &&
      fn->dec_util(dev, &g->dec_util_pct, &period) == NVML_SUCCESS)
    g->have |= GS_SNAP_HAVE_DEC;
  if ((want & GS_SNAP_HAVE_REMAP) && fn->remapped_rows &&
      fn->remapped_rows(dev, &g->remapped_corr, &g->remapped_unc, &pending, &g->remap_failure) ==
        NVML_SUCCESS)
    g->have |= GS_SNAP_HAVE_REMAP;
  /* Outside a vGPU guest there is no licence to hold: DCGM reports 0. Inside one the licence
   * state needs NVML's GRID licensing calls, which gpuslice does not read yet. */
  if ((want & GS_SNAP_HAVE_VGPU_LICENSE) && fn->virt_mode &&
      fn->virt_mode(dev, &mode) == NVML_SUCCESS && mode != NVML_GPU_VIRTUALIZATION_MODE_VGPU) {
    g->vgpu_license = 0;
    g->have |= GS_SNAP_HAVE_VGPU_LICENSE;
  }
}

#define GS_SNAP_HAVE_PROF                                                     \
  (GS_SNAP_HAVE_PROF_GR | GS_SNAP_HAVE_PROF_TENSOR | GS_SNAP_HAVE_PROF_DRAM | \
   GS_SNAP_HAVE_PROF_PCIE_TX | GS_SNAP_HAVE_PROF_PCIE_RX)

static const uint32_t gpm_bit[NVML_GPM_READ] = { GS_SNAP_HAVE_PROF_GR, GS_SNAP_HAVE_PROF_TENSOR,
                                                 GS_SNAP_HAVE_PROF_DRAM, GS_SNAP_HAVE_PROF_PCIE_TX,
                                                 GS_SNAP_HAVE_PROF_PCIE_RX };

/* The profiling ratios over the interval since the previous GPM sample. DCGM reports
 * activities as ratios (GPM's percent / 100) and PCIe rates in bytes/s (GPM's MiB/s). */
static void gpm_store(struct nvml_extra *x, int i, const nvmlGpmMetricsGet_t *m)
{
  x->gpm_have[i] = 0;
  for (int k = 0; k < NVML_GPM_READ; k++) {
    if (m->metrics[k].nvmlReturn != NVML_SUCCESS)
      continue;
    double v = m->metrics[k].value;
    x->gpm_value[i][k] = k < 3 ? v / 100.0 : v * 1048576.0;
    x->gpm_have[i] |= gpm_bit[k];
  }
}

static void gpm_fill(const struct nvml_extra *x, int i, struct gs_snap_gpu *g)
{
  double *dst[NVML_GPM_READ] = { &g->prof_gr_active, &g->prof_tensor_active, &g->prof_dram_active,
                                 &g->prof_pcie_tx_bps, &g->prof_pcie_rx_bps };
  for (int k = 0; k < NVML_GPM_READ; k++)
    if (x->gpm_have[i] & gpm_bit[k])
      *dst[k] = x->gpm_value[i][k];
  g->have |= x->gpm_have[i];
}

static void sample_gpm(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t dev, int i)
{
  static const unsigned ids[NVML_GPM_READ] = {
    NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC, NVML_GPM_METRIC_PCIE_RX_PER_SEC
  };
  if (!x->gpm[i])
    return;
  double now = daemon_now_mono();
  int prev = x->gpm_prev[i];
  if (prev >= 0 && now - x->gpm_prev_at[i] < GPM_MIN_INTERVAL_S)
    return; /* too soon for a fair measurement: wait for the next interval */
  int cur = prev == 0 ? 1 : 0;
  if (fn->gpm_get(dev, x->gpm_sample[i][cur]) != NVML_SUCCESS)
    return;
  if (prev >= 0) {
    /* About 13 kB with NVML's whole metric array: static, as the daemon samples from one thread. */
    static nvmlGpmMetricsGet_t m;
    memset(&m, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + NVML_GPM_READ * sizeof(m.metrics[0]));
    m.version = NVML_GPM_METRICS_GET_VERSION;
    m.numMetrics = NVML_GPM_READ;
    m.sample1 = x->gpm_sample[i][prev];
    m.sample2 = x->gpm_sample[i][cur];
    for (int k = 0; k < NVML_GPM_READ; k++)
      m.metrics[k].metricId = ids[k];
    if (fn->gpm_metrics(&m) == NVML_SUCCESS)
      gpm_store(x, i, &m);
  }
  x->gpm_prev[i] = cur;
  x->gpm_prev_at[i] = now;
}

void nvml_extra_sample(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t *dev,
                       unsigned count, int index, struct gs_snap_gpu *g)
{
  events_drain(x, fn, dev, count);
  if (x->xid_watched[index]) {
    g->xid_last = x->xid_last[index];
    g->have |= GS_SNAP_HAVE_XID;
  }
  /* Memory info v2 always: FB_USED and FB_FREE come from it too. */
  sample_memory_v2(fn, dev[index], g);
  if (x->want & (GS_SNAP_HAVE_MEM_TEMP | GS_SNAP_HAVE_NVLINK))
    sample_fields(fn, dev[index], g);
  sample_counters(fn, dev[index], x->want, g);
  if (x->want & GS_SNAP_HAVE_PROF) {
    sample_gpm(x, fn, dev[index], index);
    gpm_fill(x, index, g);
  }
}
