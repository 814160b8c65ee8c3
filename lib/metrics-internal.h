/* The GPU fields gpuslice serves: dcgm-exporter's default set, its catalogue shared by the
 * renderer (metrics-render.c) and the counters-file reader (metrics-fields.c). Private to lib/. */
#ifndef GS_METRICS_INTERNAL_H
#define GS_METRICS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

enum gs__gpu_field {
  GF_SM_CLOCK,
  GF_MEM_CLOCK,
  GF_MEM_TEMP,
  GF_TEMP,
  GF_POWER,
  GF_ENERGY,
  GF_PCIE_REPLAY,
  GF_UTIL,
  GF_MEM_COPY_UTIL,
  GF_ENC_UTIL,
  GF_DEC_UTIL,
  GF_XID,
  GF_FB_FREE,
  GF_FB_USED,
  GF_FB_RESERVED,
  GF_NVLINK,
  GF_VGPU_LICENSE,
  GF_REMAP_UNC,
  GF_REMAP_CORR,
  GF_REMAP_FAILURE,
  GF_PROF_GR,
  GF_PROF_TENSOR,
  GF_PROF_DRAM,
  GF_PROF_PCIE_TX,
  GF_PROF_PCIE_RX,
};

/* One field: its DCGM name, dcgm-exporter's default TYPE and HELP, and the snapshot bit a GPU
 * needs for a sample (0 for the readings every GPU has). */
struct gs__dcgm_field {
  enum gs__gpu_field field;
  const char *name, *type, *help;
  uint32_t have;
};

/* In dcgm-exporter's default-counters.csv order; gs__dcgm_fields[i].field == i. */
extern const struct gs__dcgm_field gs__dcgm_fields[];
extern const size_t gs__dcgm_nfields;

#endif
