/* The catalogue of simulated GPU models and the parser for GPUSLICE_SIM.
 * Nothing here touches shared state; sim-state.c builds devices from what this returns. */
#ifndef GPUSIM_MODELS_H
#define GPUSIM_MODELS_H

#include <stddef.h>
#include <stdint.h>

#define GPUSIM_MAX_DEVICES 16

struct gpusim_model {
  const char *key;    /* the token used in GPUSLICE_SIM, e.g. "h100-80gb" */
  const char *name;   /* the marketing name the driver reports */
  uint64_t mem_bytes; /* framebuffer size as NVML reports it */
  int sm_count;
  int cc_major, cc_minor; /* compute capability */
  uint16_t pci_device_id; /* PCI device id; the vendor is always 0x10de */
  unsigned power_limit_mw;
  unsigned sm_clock_max_mhz;
  unsigned mem_clock_mhz;
};

extern const struct gpusim_model gpusim_models[];
extern const size_t gpusim_model_count;

/* Parses a comma list of MODEL[:COUNT] into model indexes, one per device, in order.
 * Returns the device count, or -1 with a one-line message in err naming the bad token. */
int gpusim_spec_parse(const char *spec, int out[GPUSIM_MAX_DEVICES], char *err, size_t errlen);

/* Writes the stable UUID string ("GPU-xxxxxxxx-...") of device `index` of model `model`. */
void gpusim_uuid(int model, int index, char *buf, size_t len);

#endif
