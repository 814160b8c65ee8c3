/* Simulated NVML: temperature, power, energy and clocks. None of these is measured: each is a
 * fixed function of the model and of the device's utilization (nvml-util.c), so the same
 * timeline always reads the same, and a busy device looks hotter, hungrier and faster. The
 * energy counter integrates the power law over the device's whole timeline. */
#include "nvml-internal.h"

/* Idle and full-load points of the simulated sensors. */
#define TEMP_IDLE_C 30u
#define TEMP_SPAN_C 50u          /* added at 100% utilization */
#define POWER_IDLE_PERCENT 15u   /* of the board power limit */
#define SM_CLOCK_IDLE_DIVISOR 5u /* an idle SM clock is a fifth of its maximum */
#define MEM_TEMP_ABOVE_C 4u      /* HBM stacks read a few degrees above the die */

GPUSIM_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                 nvmlTemperatureSensors_t sensorType,
                                                 unsigned int *temp)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device(device, &dev, NULL));
  if (!temp || sensorType != NVML_TEMPERATURE_GPU)
    return NVML_ERROR_INVALID_ARGUMENT;
  *temp = gpusim_nvml_gpu_temp(dev);
  return NVML_SUCCESS;
}

unsigned int gpusim_nvml_gpu_temp(const struct gpusim_dev *dev)
{
  return TEMP_IDLE_C + (TEMP_SPAN_C * gpusim_nvml_gpu_util(dev) + 50u) / 100u;
}

unsigned int gpusim_nvml_mem_temp(const struct gpusim_dev *dev)
{
  if (!gpusim_nvml_has_hbm(&gpusim_models[dev->model]))
    return 0;
  return gpusim_nvml_gpu_temp(dev) + MEM_TEMP_ABOVE_C;
}

/* The draw at idle and its rise at full load, mW. */
static void power_points(const struct gpusim_model *model, unsigned long long *idle,
                         unsigned long long *span)
{
  unsigned long long limit = model->power_limit_mw;
  *idle = limit * POWER_IDLE_PERCENT / 100u;
  *span = limit - *idle;
}

/* The same law as the power draw, integrated: idle power over all the time since the state
 * was made, plus the rise to full power over the time the device was busy. */
unsigned long long gpusim_nvml_energy_mj(const struct gpusim_dev *dev)
{
  struct gpusim_shared *s = gpusim_state(NULL);
  uint64_t now = gpusim_now_ns();
  uint64_t since = s->health[dev->index].created_ns;
  uint64_t elapsed = now > since ? now - since : 0;
  uint64_t busy = gpusim_busy_total_ns(dev->index, now);
  unsigned long long idle, span;
  power_points(&gpusim_models[dev->model], &idle, &span);
  /* mW x ns is 1e-9 mJ; 128 bits keep years of it exact. */
  unsigned __int128 pj = (unsigned __int128) idle * elapsed + (unsigned __int128) span * busy;
  return (unsigned long long) (pj / 1000000000u);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, power, &dev, &model));
  unsigned long long idle, span;
  power_points(model, &idle, &span);
  *power = (unsigned) (idle + span * gpusim_nvml_gpu_util(dev) / 100u);
  return NVML_SUCCESS;
}

/* The simulator has no power management: every limit is the board's default limit. */
static nvmlReturn_t power_limit(nvmlDevice_t device, unsigned int *limit)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, limit, &dev, &model));
  *limit = model->power_limit_mw;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
  return power_limit(device, limit);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
  return power_limit(device, limit);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                 unsigned int *defaultLimit)
{
  return power_limit(device, defaultLimit);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                     unsigned int *minLimit,
                                                                     unsigned int *maxLimit)
{
  nvmlReturn_t r = power_limit(device, maxLimit);
  if (r != NVML_SUCCESS)
    return r;
  if (!minLimit)
    return NVML_ERROR_INVALID_ARGUMENT;
  *minLimit = *maxLimit / 2u;
  return NVML_SUCCESS;
}

/* The highest clock of a domain. The video clock is not part of the model; three quarters
 * of the SM clock is where data-centre parts put it. */
static unsigned int clock_max(const struct gpusim_model *model, nvmlClockType_t type)
{
  switch (type) {
  case NVML_CLOCK_GRAPHICS:
  case NVML_CLOCK_SM: return model->sm_clock_max_mhz;
  case NVML_CLOCK_MEM: return model->mem_clock_mhz;
  case NVML_CLOCK_VIDEO: return model->sm_clock_max_mhz * 3u / 4u;
  case NVML_CLOCK_COUNT: break;
  }
  return 0;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                  unsigned int *clock)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device(device, &dev, &model));
  if (!clock || clock_max(model, type) == 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  *clock = clock_max(model, type);
  return NVML_SUCCESS;
}

/* The memory clock is fixed; the SM and graphics clocks boost to their maximum whenever the
 * device ran anything in the last sample period and drop to an idle clock otherwise. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                               unsigned int *clock)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device(device, &dev, &model));
  unsigned int max = clock_max(model, type);
  if (!clock || max == 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (type == NVML_CLOCK_MEM || gpusim_nvml_gpu_util(dev) > 0)
    *clock = max;
  else
    *clock = max / SM_CLOCK_IDLE_DIVISOR;
  return NVML_SUCCESS;
}
