/* The daemon's NVML: the function table gpu-nvml.c resolves, and what gpu-nvml-fields.c
 * keeps across samples for the readings beyond the first seven fields (the XID event set, the
 * GPM samples). Private to daemon/. */
#ifndef GS_DAEMON_GPU_NVML_H
#define GS_DAEMON_GPU_NVML_H

#include <stdbool.h>

#include <gpuslice/snapshot.h>

#include "daemon.h"
#include "gs-nvml.h"

struct nvml_fns {
  /* required: the first NVML_REQUIRED entries of syms[] */
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*driver_version)(char *, unsigned int);
  nvmlReturn_t (*count)(unsigned int *);
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
  nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *);
  nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *);
  /* optional: the process lists, newest first */
  nvmlReturn_t (*procs_v3)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
  nvmlReturn_t (*procs_v2)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *);
  nvmlReturn_t (*procs_v1)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *);
  nvmlReturn_t (*proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                            unsigned long long);
  /* optional: the rest of dcgm-exporter's default fields (gpu-nvml-fields.c) */
  nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
  nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t *);
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*pcie_replay)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*enc_util)(nvmlDevice_t, unsigned int *, unsigned int *);
  nvmlReturn_t (*dec_util)(nvmlDevice_t, unsigned int *, unsigned int *);
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
                                unsigned int *);
  nvmlReturn_t (*virt_mode)(nvmlDevice_t, nvmlGpuVirtualizationMode_t *);
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t *);
  nvmlReturn_t (*event_types)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t);
  nvmlReturn_t (*gpm_support)(nvmlDevice_t, nvmlGpmSupport_t *);
  nvmlReturn_t (*gpm_alloc)(nvmlGpmSample_t *);
  nvmlReturn_t (*gpm_free)(nvmlGpmSample_t);
  nvmlReturn_t (*gpm_get)(nvmlDevice_t, nvmlGpmSample_t);
  nvmlReturn_t (*gpm_metrics)(nvmlGpmMetricsGet_t *);
  /* optional: what a GPU is, read once when the daemon starts */
  nvmlReturn_t (*cuda_cc)(nvmlDevice_t, int *, int *);
  /* optional: MIG mode, which a suspend refuses (suspend.c) */
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
};

/* The GPM metrics read each interval, in the order of struct gs_snap_gpu's prof_* fields. */
#define NVML_GPM_READ 5

struct nvml_extra {
  nvmlEventSet_t events; /* NULL when the driver delivers no XID events */
  bool xid_watched[GS_LEDGER_MAX_GPUS];
  uint64_t xid_last[GS_LEDGER_MAX_GPUS];
  /* GPM: two samples per GPU, the older one `prev`; a metric needs both. */
  bool gpm[GS_LEDGER_MAX_GPUS];
  nvmlGpmSample_t gpm_sample[GS_LEDGER_MAX_GPUS][2];
  int gpm_prev[GS_LEDGER_MAX_GPUS];       /* index of the older sample, -1 before the first */
  double gpm_prev_at[GS_LEDGER_MAX_GPUS]; /* when it was taken, daemon_now_mono() */
  /* The last interval's metrics, kept for samples that come too soon to measure anew. */
  double gpm_value[GS_LEDGER_MAX_GPUS][NVML_GPM_READ];
  uint32_t gpm_have[GS_LEDGER_MAX_GPUS]; /* GS_SNAP_HAVE_PROF_* */
  /* The readings to take (GS_SNAP_HAVE_*): those the counters file serves; all after open. */
  uint32_t want;
};

/* Registers for XID events and allocates GPM samples where the driver offers them; anything
 * it lacks only leaves those readings out. */
void nvml_extra_open(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t *dev,
                     unsigned count);
void nvml_extra_close(struct nvml_extra *x, const struct nvml_fns *fn, unsigned count);
/* Fills g's fields beyond the first seven for GPU `index`, setting their GS_SNAP_HAVE_* bits,
 * and replaces g's memory figures with memory info v2's where the driver has it. */
void nvml_extra_sample(struct nvml_extra *x, const struct nvml_fns *fn, nvmlDevice_t *dev,
                       unsigned count, int index, struct gs_snap_gpu *g);

/* The loaded library and a GPU's handle, for the daemon's other NVML users (mps.c). */
void *nvml_library(struct nvml *n);
nvmlDevice_t nvml_device(struct nvml *n, int index);

/* MIG (gpu-nvml-mig.c): the calls that read a GPU's MIG instances, all optional. */
struct nvml_mig {
  nvmlReturn_t (*mode)(nvmlDevice_t, unsigned int *, unsigned int *);
  nvmlReturn_t (*max)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*handle)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*gi_id)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
};

/* Resolves the MIG calls from the loaded library; a driver without them has no MIG readings. */
void nvml_mig_open(struct nvml_mig *m, void *lib);
/* Fills g->mig with the GPU's MIG GPU instances (profile, id, memory) when it is in MIG mode. */
void nvml_mig_sample(const struct nvml_mig *m, nvmlDevice_t dev, struct gs_snap_gpu *g);

#endif
