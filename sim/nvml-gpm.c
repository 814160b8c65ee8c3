/* Simulated NVML: GPU performance monitoring (GPM), which NVIDIA's driver offers on Hopper
 * and later: H100 and H200 here. A sample records the time and the device's whole busy time
 * (sim-state.c); a metric is what happened between two samples. The simulated device only
 * runs kernels, so its graphics engine is active for exactly its busy share; DRAM activity is
 * half of that, as nvmlDeviceGetUtilizationRates' memory figure is; the simulated kernels do
 * no tensor work and move nothing over PCIe. */
#include "nvml-internal.h"

#include <stdlib.h>

#define GPM_SAMPLE_MAGIC 0x4753504du /* "GSPM" */

struct nvmlGpmSample_st {
  unsigned int magic;
  int dev; /* -1 until taken */
  uint64_t t_ns, busy_ns;
};

static bool sample_ok(const struct nvmlGpmSample_st *s)
{
  return s && s->magic == GPM_SAMPLE_MAGIC;
}

GPUSIM_API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, gpmSupport, &dev, &model));
  if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  gpmSupport->isSupportedDevice = gpusim_nvml_has_gpm(model);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
  GSN_TRY(gpusim_nvml_ready_arg(gpmSample));
  struct nvmlGpmSample_st *s = calloc(1, sizeof(*s));
  if (!s)
    return NVML_ERROR_MEMORY;
  s->magic = GPM_SAMPLE_MAGIC;
  s->dev = -1;
  *gpmSample = s;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!sample_ok(gpmSample))
    return NVML_ERROR_INVALID_ARGUMENT;
  gpmSample->magic = 0;
  free(gpmSample);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device(device, &dev, &model));
  if (!sample_ok(gpmSample))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpusim_nvml_has_gpm(model))
    return NVML_ERROR_NOT_SUPPORTED;
  gpmSample->dev = dev->index;
  gpmSample->t_ns = gpusim_now_ns();
  gpmSample->busy_ns = gpusim_busy_total_ns(dev->index, gpmSample->t_ns);
  return NVML_SUCCESS;
}

/* One metric over a window of dt ns with busy ns of work; percentages are 0..100. */
static nvmlReturn_t metric_value(unsigned int id, uint64_t dt, uint64_t busy, double *v)
{
  double active = dt ? 100.0 * (double) busy / (double) dt : 0;
  if (active > 100)
    active = 100;
  switch (id) {
  case NVML_GPM_METRIC_GRAPHICS_UTIL:
  case NVML_GPM_METRIC_SM_UTIL: *v = active; return NVML_SUCCESS;
  case NVML_GPM_METRIC_SM_OCCUPANCY:
  case NVML_GPM_METRIC_DRAM_BW_UTIL: *v = active / 2; return NVML_SUCCESS;
  case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
  case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
  case NVML_GPM_METRIC_PCIE_RX_PER_SEC: *v = 0; return NVML_SUCCESS;
  default: break;
  }
  return id > 0 && id < NVML_GPM_METRIC_MAX ? NVML_ERROR_NOT_SUPPORTED
                                            : NVML_ERROR_INVALID_ARGUMENT;
}

GPUSIM_API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet)
{
  GSN_TRY(gpusim_nvml_ready_arg(metricsGet));
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const struct nvmlGpmSample_st *a = metricsGet->sample1, *b = metricsGet->sample2;
  if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || !sample_ok(a) || !sample_ok(b) ||
      a->dev < 0 || a->dev != b->dev)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (a->t_ns > b->t_ns) {
    const struct nvmlGpmSample_st *t = a;
    a = b;
    b = t;
  }
  for (unsigned int i = 0; i < metricsGet->numMetrics; i++) {
    nvmlGpmMetric_t *m = &metricsGet->metrics[i];
    m->value = 0;
    m->metricInfo.shortName = m->metricInfo.longName = m->metricInfo.unit = NULL;
    m->nvmlReturn =
      metric_value(m->metricId, b->t_ns - a->t_ns, b->busy_ns - a->busy_ns, &m->value);
  }
  return NVML_SUCCESS;
}
