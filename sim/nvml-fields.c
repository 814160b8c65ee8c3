/* Simulated NVML: the readings behind dcgm-exporter's default fields that the other files do
 * not have: field values (nvmlDeviceGetFieldValues), total energy, the PCIe replay counter,
 * encoder and decoder utilization, row remapping and the virtualization mode.
 *
 * The simulated device is healthy and does nothing but compute: its PCIe link never replays,
 * no row was ever remapped, its encoders and decoders and its NVLinks carry nothing. Energy
 * and memory temperature follow the timeline (nvml-sensors.c). Which model has what is in
 * gpusim_nvml_has_hbm and friends, below. XID errors are events (nvml-events.c). */
#include "nvml-internal.h"

#include <limits.h>
#include <string.h>
#include <time.h>

bool gpusim_nvml_has_hbm(const struct gpusim_model *model)
{
  return model->cc_minor == 0 && (model->cc_major == 8 || model->cc_major == 9);
}

/* NVLink 3 on A100 has 12 links, NVLink 4 on H100 and H200 18. */
unsigned int gpusim_nvml_nvlinks(const struct gpusim_model *model)
{
  if (!gpusim_nvml_has_hbm(model))
    return 0;
  return model->cc_major == 8 ? 12u : 18u;
}

bool gpusim_nvml_has_gpm(const struct gpusim_model *model)
{
  return model->cc_major >= 9;
}

/* ---- the dedicated calls ---- */

GPUSIM_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                            unsigned long long *energy)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, energy, &dev, NULL));
  *energy = gpusim_nvml_energy_mj(dev);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, value, &dev, NULL));
  *value = 0;
  return NVML_SUCCESS;
}

/* No video engine ever runs: 0% over NVML's sample period. */
static nvmlReturn_t codec_util(nvmlDevice_t device, unsigned int *utilization,
                               unsigned int *samplingPeriodUs)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device(device, &dev, NULL));
  if (!utilization || !samplingPeriodUs)
    return NVML_ERROR_INVALID_ARGUMENT;
  *utilization = 0;
  *samplingPeriodUs = (unsigned) (gpusim_util_period_ns() / 1000u);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device,
                                                        unsigned int *utilization,
                                                        unsigned int *samplingPeriodUs)
{
  return codec_util(device, utilization, samplingPeriodUs);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device,
                                                        unsigned int *utilization,
                                                        unsigned int *samplingPeriodUs)
{
  return codec_util(device, utilization, samplingPeriodUs);
}

/* Row remapping exists on HBM parts only; elsewhere NVML_ERROR_NOT_SUPPORTED, as on real T4s. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
                                                  unsigned int *uncRows, unsigned int *isPending,
                                                  unsigned int *failureOccurred)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device(device, &dev, &model));
  if (!corrRows || !uncRows || !isPending || !failureOccurred)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpusim_nvml_has_hbm(model))
    return NVML_ERROR_NOT_SUPPORTED;
  *corrRows = *uncRows = *isPending = *failureOccurred = 0;
  return NVML_SUCCESS;
}

/* The simulated machine is bare metal. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device,
                                                        nvmlGpuVirtualizationMode_t *pVirtualMode)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, pVirtualMode, &dev, NULL));
  *pVirtualMode = NVML_GPU_VIRTUALIZATION_MODE_NONE;
  return NVML_SUCCESS;
}

/* ---- field values ---- */

static void field_uint(nvmlFieldValue_t *v, unsigned int x)
{
  v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
  v->value.uiVal = x;
}

static void field_ull(nvmlFieldValue_t *v, unsigned long long x)
{
  v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  v->value.ullVal = x;
}

/* The NVLink data counters: one link's (scopeId) or, with scopeId UINT_MAX, all links' sum. */
static nvmlReturn_t field_nvlink(const struct gpusim_model *model, nvmlFieldValue_t *v)
{
  unsigned int links = gpusim_nvml_nvlinks(model);
  if (links == 0)
    return NVML_ERROR_NOT_SUPPORTED;
  if (v->scopeId != UINT_MAX && v->scopeId >= links)
    return NVML_ERROR_INVALID_ARGUMENT;
  field_ull(v, 0);
  return NVML_SUCCESS;
}

static nvmlReturn_t field_read(struct gpusim_dev *dev, const struct gpusim_model *model,
                               nvmlFieldValue_t *v)
{
  bool hbm = gpusim_nvml_has_hbm(model);
  switch (v->fieldId) {
  case NVML_FI_DEV_MEMORY_TEMP:
    if (!hbm)
      return NVML_ERROR_NOT_SUPPORTED;
    field_uint(v, gpusim_nvml_mem_temp(dev));
    return NVML_SUCCESS;
  case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
    field_ull(v, gpusim_nvml_energy_mj(dev));
    return NVML_SUCCESS;
  case NVML_FI_DEV_PCIE_REPLAY_COUNTER: field_uint(v, 0); return NVML_SUCCESS;
  case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
  case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: return field_nvlink(model, v);
  case NVML_FI_DEV_REMAPPED_COR:
  case NVML_FI_DEV_REMAPPED_UNC:
  case NVML_FI_DEV_REMAPPED_PENDING:
  case NVML_FI_DEV_REMAPPED_FAILURE:
    if (!hbm)
      return NVML_ERROR_NOT_SUPPORTED;
    field_uint(v, 0);
    return NVML_SUCCESS;
  default: break;
  }
  /* A field NVML knows but this device does not simulate is unsupported; one past NVML's
   * range is a bad argument, in that entry only. */
  return v->fieldId > 0 && v->fieldId < NVML_FI_MAX ? NVML_ERROR_NOT_SUPPORTED
                                                    : NVML_ERROR_INVALID_ARGUMENT;
}

static long long realtime_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long) ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* As in NVML, the call succeeds when its arguments do; each entry carries its own result. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                 nvmlFieldValue_t *values)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device(device, &dev, &model));
  if (valuesCount <= 0 || !values)
    return NVML_ERROR_INVALID_ARGUMENT;
  long long now = realtime_us();
  for (int i = 0; i < valuesCount; i++) {
    nvmlFieldValue_t *v = &values[i];
    memset(&v->value, 0, sizeof(v->value));
    v->timestamp = now;
    v->latencyUsec = 0;
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v->nvmlReturn = field_read(dev, model, v);
  }
  return NVML_SUCCESS;
}
