/* A point-in-time view of a node: its GPUs and the tenants sharing them. The daemon fills
 * one at each sample; the metrics renderer, the JSON API and the usage ledger read it.
 * Plain data with fixed-size strings, so that a snapshot can be copied and compared.
 *
 * Units are those of the source (bytes, ns, milliwatts, MHz), never dcgm's: converting to
 * MiB or W is the renderer's job. */
#ifndef GS_SNAPSHOT_H
#define GS_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define GS_SNAP_STR 96
#define GS_SNAP_LABELS_MAX 16

struct gs_snap_gpu {
  int index;                    /* NVML index, as dcgm-exporter's `gpu` label */
  char uuid[GS_SNAP_STR];       /* "GPU-..." */
  char pci_bus_id[GS_SNAP_STR]; /* "00000000:3B:00.0" */
  char device[16];              /* "nvidia0" */
  char model[GS_SNAP_STR];      /* nvmlDeviceGetName */
  uint64_t fb_total_bytes, fb_used_bytes, fb_free_bytes;
  unsigned util_pct; /* nvmlDeviceGetUtilizationRates().gpu */
  unsigned power_mw;
  unsigned temp_c;
  unsigned sm_clock_mhz, mem_clock_mhz;
};

struct gs_snap_label {
  char key[64]; /* as the user gave it; the renderer sanitizes */
  char value[GS_SNAP_STR];
};

struct gs_snap_tenant {
  char name[64];
  uid_t uid; /* owner; the API's access checks use it */
  pid_t owner_pid;
  uint64_t start_unix_ns;
  int nlabels;
  struct gs_snap_label labels[GS_SNAP_LABELS_MAX];
  int gpu; /* the GPU this row is about */
  uint64_t vram_used_bytes;
  uint64_t vram_limit_bytes; /* UINT64_MAX when unlimited */
  double compute_share;      /* 0..1: share of the GPU's time over the last window */
  double compute_limit;      /* 0..1; 0 when unlimited */
  int compute_policy;        /* enum gs_compute_policy */
  int priority;              /* enum gs_priority */
  uint64_t gpu_ns;           /* device time used, cumulative */
  uint64_t throttled_ns;     /* time spent waiting at the compute gate, cumulative */
  /* Checked from outside, by NVML's per-process accounting (the daemon's verifier). */
  uint64_t vram_over_bytes; /* device memory over the limit now; 0: none */
  double compute_over;      /* share of the GPU's time over the compute limit now; 0: none */
  uint64_t vram_violations; /* violations counted, cumulative */
  uint64_t compute_violations;
};

/* One row per (tenant, GPU) the tenant uses. */
struct gs_snapshot {
  uint64_t taken_unix_ns;
  char hostname[GS_SNAP_STR];
  char driver_version[GS_SNAP_STR];
  int ngpus;
  struct gs_snap_gpu *gpus;
  int ntenants;
  struct gs_snap_tenant *tenants;
};

#endif
