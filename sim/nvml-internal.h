/* What the simulated NVML's files share: the export macro, the device handles, the
 * initialization check and the derived quantities (utilization) that several queries use.
 * The API itself is declared in abi/gs-nvml.h. */
#ifndef GPUSIM_NVML_INTERNAL_H
#define GPUSIM_NVML_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "gs-nvml.h"
#include "sim-state.h"

#define GPUSIM_API __attribute__((visibility("default")))

/* The driver version this simulator claims to be: the R580 release that shipped with CUDA 13.0. */
#define NVML_SIM_DRIVER_VERSION "580.65.06"
#define NVML_SIM_CUDA_VERSION 13000

/* A device handle points at one of these; the index is the GPU's place in GPUSLICE_SIM. A MIG
 * device's handle (nvml-mig.c) names its compute instance too. */
struct nvmlDevice_st {
  unsigned int index;
  int gi, ci;   /* a MIG device's instance slots; -1 for a GPU */
  uint32_t gen; /* the GPU instance it was handed out for */
};

/* NVML_SUCCESS once nvmlInit has succeeded more times than nvmlShutdown; else UNINITIALIZED. */
nvmlReturn_t gpusim_nvml_ready(void);
/* The same, and NVML_ERROR_INVALID_ARGUMENT for a NULL out pointer: the checks of every query
 * that takes no device, in that order. */
nvmlReturn_t gpusim_nvml_ready_arg(const void *out);
/* Returns from the calling function with expr's result unless that is NVML_SUCCESS. */
#define GSN_TRY(expr) GPUSIM_TRY(nvmlReturn_t, NVML_SUCCESS, expr)
/* The number of devices seen by the current initialization. */
unsigned int gpusim_nvml_device_count(void);
/* The handle of device i (i < gpusim_nvml_device_count()). */
nvmlDevice_t gpusim_nvml_handle(unsigned int i);

/* Resolves a handle: NVML_SUCCESS with *dev (and, if model is non-NULL, *model) set, or the
 * error the real library gives for an uninitialized library or a bad handle. */
nvmlReturn_t gpusim_nvml_device(nvmlDevice_t device, struct gpusim_dev **dev,
                                const struct gpusim_model **model);
/* The same, and NVML_ERROR_INVALID_ARGUMENT for a NULL out pointer: the check every query makes
 * after the device's, in that order, as NVML does. */
nvmlReturn_t gpusim_nvml_device_arg(nvmlDevice_t device, const void *out, struct gpusim_dev **dev,
                                    const struct gpusim_model **model);

/* Resolves a GPU's handle or a MIG device's: *gi and *ci are -1 for a GPU. A MIG device whose
 * instance is gone is NVML_ERROR_INVALID_ARGUMENT (nvml-mig.c). */
nvmlReturn_t gpusim_nvml_any_device(nvmlDevice_t device, struct gpusim_dev **dev, int *gi, int *ci);
/* The handle of MIG device (gi, ci) of GPU d. */
nvmlDevice_t gpusim_nvml_mig_handle(int d, int gi, int ci);

/* Copies s into buf of length len, or NVML_ERROR_INSUFFICIENT_SIZE when it does not fit. */
nvmlReturn_t gpusim_nvml_copy_str(char *buf, unsigned int len, const char *s);

/* The device's busy percentage over the last sample period, rounded to nearest. */
unsigned int gpusim_nvml_gpu_util(const struct gpusim_dev *dev);

/* The device's temperatures, C: the die's, and its memory's (HBM parts only; 0 elsewhere). */
unsigned int gpusim_nvml_gpu_temp(const struct gpusim_dev *dev);
unsigned int gpusim_nvml_mem_temp(const struct gpusim_dev *dev);
/* Energy used since the state was made, mJ: the power draw (nvml-sensors.c) integrated over
 * the device's idle and busy time. */
unsigned long long gpusim_nvml_energy_mj(const struct gpusim_dev *dev);

/* What a model has. HBM (memory temperature, row remapping) and NVLink: the A100, H100 and
 * H200 parts, all SXM boards; T4 and L4 are PCIe cards with GDDR memory. GPM: Hopper. */
bool gpusim_nvml_has_hbm(const struct gpusim_model *model);
unsigned int gpusim_nvml_nvlinks(const struct gpusim_model *model);
bool gpusim_nvml_has_gpm(const struct gpusim_model *model);

/* The PCI bus of device `index`; the simulated CUDA library reports the same. */
#define NVML_SIM_PCI_BUS(index) (0x10u + (unsigned) (index))

/* How stale NVML's view of dead processes may be: a monitor asks for memory and processes
 * on every device each second, and each reap reads /proc for every live process. */
#define GSN_REAP_PERIOD_NS 100000000ULL

#endif
