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
#define GS_SNAP_MIG_MAX 7       /* GPU instances on one GPU */
#define GS_SNAP_SHARING_MAX 160 /* "mig:" and seven profile@start */

/* One MIG GPU instance of a GPU in MIG mode: dcgm-exporter's GPU_I_PROFILE and GPU_I_ID. */
struct gs_snap_mig {
  char profile[24];       /* "1g.10gb" */
  unsigned gi_id;         /* NVML's GPU instance id */
  char uuid[GS_SNAP_STR]; /* the MIG device of its first compute instance */
  uint64_t fb_total_bytes, fb_used_bytes, fb_free_bytes;
};

struct gs_snap_gpu {
  int index;                    /* NVML index, as dcgm-exporter's `gpu` label */
  char uuid[GS_SNAP_STR];       /* "GPU-..." */
  char pci_bus_id[GS_SNAP_STR]; /* "00000000:3B:00.0" */
  char device[16];              /* "nvidia0" */
  char model[GS_SNAP_STR];      /* nvmlDeviceGetName */
  /* Memory info v2 where the driver has it: used without, reserved apart from, the driver's
   * own reserve; with v1 only, used includes it and reserved is 0 (GS_SNAP_HAVE_FB_RESERVED unset). */
  uint64_t fb_total_bytes, fb_used_bytes, fb_free_bytes, fb_reserved_bytes;
  unsigned util_pct;     /* nvmlDeviceGetUtilizationRates().gpu */
  unsigned mem_util_pct; /* ... .memory: DCGM's memory copy utilization */
  unsigned power_mw;
  unsigned temp_c;
  unsigned sm_clock_mhz, mem_clock_mhz;
  /* The rest of dcgm-exporter's default fields. Each is valid only when its bit is in `have`:
   * a GPU that cannot give a reading gets no sample, as with dcgm-exporter. */
  uint32_t have; /* GS_SNAP_HAVE_* */
  unsigned mem_temp_c;
  uint64_t energy_mj; /* since the driver was loaded */
  unsigned pcie_replays;
  unsigned enc_util_pct, dec_util_pct;
  uint64_t xid_last;     /* the last XID error NVML reported since the daemon started; 0: none */
  uint64_t nvlink_kib;   /* NVLink data sent and received over all links, KiB */
  unsigned vgpu_license; /* 0: no vGPU licence held (bare metal, passthrough) */
  unsigned remapped_corr, remapped_unc, remap_failure;
  /* GPM (Hopper and later) over the last sampling interval: ratios 0..1, PCIe in bytes/s. */
  double prof_gr_active, prof_tensor_active, prof_dram_active;
  double prof_pcie_tx_bps, prof_pcie_rx_bps;
  /* How the GPU is shared, as the daemon's `sharing` setting says: "timeslice", "mps" or
   * "mig:<layout>"; "" when not known. */
  char sharing[GS_SNAP_SHARING_MAX];
  int nmig; /* MIG GPU instances, sorted by id; 0 outside MIG mode */
  struct gs_snap_mig mig[GS_SNAP_MIG_MAX];
};

enum {
  GS_SNAP_HAVE_FB_RESERVED = 1u << 0,
  GS_SNAP_HAVE_MEM_TEMP = 1u << 1,
  GS_SNAP_HAVE_ENERGY = 1u << 2,
  GS_SNAP_HAVE_PCIE_REPLAY = 1u << 3,
  GS_SNAP_HAVE_ENC = 1u << 4,
  GS_SNAP_HAVE_DEC = 1u << 5,
  GS_SNAP_HAVE_XID = 1u << 6, /* the driver delivers XID events */
  GS_SNAP_HAVE_NVLINK = 1u << 7,
  GS_SNAP_HAVE_VGPU_LICENSE = 1u << 8,
  GS_SNAP_HAVE_REMAP = 1u << 9,
  GS_SNAP_HAVE_PROF_GR = 1u << 10,
  GS_SNAP_HAVE_PROF_TENSOR = 1u << 11,
  GS_SNAP_HAVE_PROF_DRAM = 1u << 12,
  GS_SNAP_HAVE_PROF_PCIE_TX = 1u << 13,
  GS_SNAP_HAVE_PROF_PCIE_RX = 1u << 14,
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
  /* Suspension (docs/suspend.md); 0 for a tenant never suspended. */
  int run_state;              /* enum gs_run_state: running, suspending, suspended, resuming */
  uint64_t suspensions;       /* times suspended, cumulative */
  uint64_t suspended_bytes;   /* what the current suspension moved off this GPU; 0 running */
  double suspended_seconds;   /* time spent suspended, cumulative, the current one included */
  uint64_t resumes;           /* times resumed, cumulative */
  double resume_seconds;      /* the last resume: from asked for to running again */
  uint64_t resume_waits;      /* calls of the tenant's processes that waited for a resume */
  double resume_wait_seconds; /* their waits, summed */
  /* Idle detection (docs/idle.md): time since the tenant's last GPU activity while it holds
   * memory, 0 while active; the tenant's, the same on each of its rows. */
  double idle_seconds;
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
