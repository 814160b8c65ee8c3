/* Simulated NVML: initialization and shutdown (reference-counted, as in the real library),
 * error strings, and the system-wide queries (driver, NVML and CUDA versions). Also the one
 * export of the simulator's own, gpusim_spec_check, which gpuslice's driver seam
 * (include/gpuslice/driver.h) looks up at run time to check GPUSLICE_SIM without linking the simulator.
 * Device queries live in nvml-device.c, nvml-util.c and nvml-sensors.c. */
#include "nvml-internal.h"

#include <gpuslice/driver.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint g_refs;
static unsigned int g_ndev;
static struct nvmlDevice_st g_handles[GPUSIM_MAX_DEVICES];

nvmlReturn_t gpusim_nvml_ready(void)
{
  return atomic_load(&g_refs) > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t gpusim_nvml_ready_arg(const void *out)
{
  nvmlReturn_t r = gpusim_nvml_ready();
  if (r == NVML_SUCCESS && !out)
    r = NVML_ERROR_INVALID_ARGUMENT;
  return r;
}

unsigned int gpusim_nvml_device_count(void)
{
  return g_ndev;
}

nvmlDevice_t gpusim_nvml_handle(unsigned int i)
{
  return &g_handles[i];
}

nvmlReturn_t gpusim_nvml_device(nvmlDevice_t device, struct gpusim_dev **dev,
                                const struct gpusim_model **model)
{
  nvmlReturn_t r = gpusim_nvml_ready();
  if (r != NVML_SUCCESS)
    return r;
  /* A handle is only ever one of ours; anything else is a caller's bug, reported, not followed. */
  uintptr_t p = (uintptr_t) device, base = (uintptr_t) g_handles;
  if (p < base || p >= base + g_ndev * sizeof(g_handles[0]) || (p - base) % sizeof(g_handles[0]))
    return NVML_ERROR_INVALID_ARGUMENT;
  struct gpusim_shared *s = gpusim_state(NULL);
  *dev = &s->dev[device->index];
  if (model)
    *model = &gpusim_models[(*dev)->model];
  return NVML_SUCCESS;
}

nvmlReturn_t gpusim_nvml_device_arg(nvmlDevice_t device, const void *out, struct gpusim_dev **dev,
                                    const struct gpusim_model **model)
{
  nvmlReturn_t r = gpusim_nvml_device(device, dev, model);
  if (r == NVML_SUCCESS && !out)
    r = NVML_ERROR_INVALID_ARGUMENT;
  return r;
}

nvmlReturn_t gpusim_nvml_copy_str(char *buf, unsigned int len, const char *s)
{
  int n = snprintf(buf, len, "%s", s);
  return n >= 0 && (unsigned) n < len ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

/* The type is the seam's, so that a change on either side fails to compile here. */
GPUSIM_API gs_driver_spec_check_fn gpusim_spec_check;

int gpusim_spec_check(const char *spec, char *err, size_t errlen)
{
  int dev[GPUSIM_MAX_DEVICES];
  return gpusim_spec_parse(spec, dev, err, errlen);
}

/* Maps the shared state. A missing GPUSLICE_SIM is the simulator's "no driver"; anything
 * else wrong (a bad device list, a bad state file) is an internal error. The reason goes to
 * stderr once, since callers only see the code. */
static nvmlReturn_t attach(unsigned int flags)
{
  static bool warned;
  const char *err = NULL;
  struct gpusim_shared *s = gpusim_state(&err);
  bool missing = secure_getenv("GPUSLICE_SIM") == NULL;

  if (s) {
    g_ndev = s->ndev;
    for (unsigned int i = 0; i < g_ndev; i++)
      g_handles[i] = (struct nvmlDevice_st){ .index = i, .gi = -1, .ci = -1 };
    return NVML_SUCCESS;
  }
  if (missing && (flags & NVML_INIT_FLAG_NO_GPUS)) {
    g_ndev = 0;
    return NVML_SUCCESS;
  }
  if (!warned) {
    warned = true;
    gpusim_warn("%s", err ? err : "cannot map the simulator state");
  }
  return missing ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_ERROR_UNKNOWN;
}

GPUSIM_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
  nvmlReturn_t r = NVML_SUCCESS;
  pthread_mutex_lock(&g_lock);
  if (atomic_load(&g_refs) == 0)
    r = attach(flags);
  if (r == NVML_SUCCESS)
    atomic_fetch_add(&g_refs, 1);
  pthread_mutex_unlock(&g_lock);
  return r;
}

GPUSIM_API nvmlReturn_t nvmlInit_v2(void)
{
  return nvmlInitWithFlags(0);
}

GPUSIM_API nvmlReturn_t nvmlInit(void)
{
  return nvmlInitWithFlags(0);
}

GPUSIM_API nvmlReturn_t nvmlShutdown(void)
{
  nvmlReturn_t r = NVML_SUCCESS;
  pthread_mutex_lock(&g_lock);
  if (atomic_load(&g_refs) == 0)
    r = NVML_ERROR_UNINITIALIZED;
  else
    atomic_fetch_sub(&g_refs, 1);
  pthread_mutex_unlock(&g_lock);
  return r;
}

GPUSIM_API const char *nvmlErrorString(nvmlReturn_t result)
{
  switch (result) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
  case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
  case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  case NVML_ERROR_TIMEOUT: return "Timeout";
  case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
  case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
  case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
  case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
  case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
  case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
  case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
  case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
  case NVML_ERROR_IN_USE: return "In use by another client";
  case NVML_ERROR_MEMORY: return "Insufficient Memory";
  case NVML_ERROR_NO_DATA: return "No data";
  case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "vGPU ECC Not Supported";
  case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
  case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency Not Supported";
  case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
  case NVML_ERROR_DEPRECATED: return "Deprecated";
  case NVML_ERROR_NOT_READY: return "Not Ready";
  case NVML_ERROR_GPU_NOT_FOUND: return "GPU Not Found";
  case NVML_ERROR_INVALID_STATE: return "Invalid State";
  case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED: return "Reset Type Not Supported";
  case NVML_ERROR_UNKNOWN: return "Unknown Error";
  }
  return "Unknown Error";
}

GPUSIM_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
  GSN_TRY(gpusim_nvml_ready_arg(version));
  return gpusim_nvml_copy_str(version, length, NVML_SIM_DRIVER_VERSION);
}

GPUSIM_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
  GSN_TRY(gpusim_nvml_ready_arg(version));
  /* The real library reports its API major version before the driver version. */
  return gpusim_nvml_copy_str(version, length, "13." NVML_SIM_DRIVER_VERSION);
}

GPUSIM_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
  GSN_TRY(gpusim_nvml_ready_arg(cudaDriverVersion));
  *cudaDriverVersion = NVML_SIM_CUDA_VERSION;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}
