/* The verifier's pure logic (verify.c): which tenant a GPU process belongs to, whether what
 * NVML says a tenant uses breaks its limits, and which processes to act on. No NVML, no
 * /proc and no registry here: the sampler's glue (verifier.c) feeds it plain numbers and a
 * parent lookup, so that tests/unit/test_daemon_verify.c can drive every case.
 *
 * The rules, documented in docs/daemon.md#verifying-from-outside:
 *  - a process belongs to the tenant whose owner (its `gpuslice run`) is the process itself
 *    or an ancestor, following parents up to VERIFY_DEPTH_MAX steps; failing that, to the
 *    tenant whose ledger has a live slot for it (a process that joined the tenant through its
 *    environment), if it runs as the tenant's user (verifier.c checks that);
 *  - device memory: NVML's usedGpuMemory of the tenant's processes on a GPU, summed, is over
 *    the limit when it exceeds it by more than VERIFY_VRAM_SLACK per process (what a CUDA
 *    context holds beyond the interposer's estimate); the violation is the whole excess;
 *  - GPU time: the tenant's summed smUtil is over its compute limit when it exceeds it by more
 *    than VERIFY_COMPUTE_MARGIN_PPM, and counts only for a cap-policy tenant, or for a
 *    share-policy one while another process used the same GPU (contended). */
#ifndef GS_DAEMON_VERIFY_H
#define GS_DAEMON_VERIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define VERIFY_DEPTH_MAX 32
#define VERIFY_VRAM_SLACK (128ULL << 20)
#define VERIFY_COMPUTE_MARGIN_PPM 100000u /* 10 points of the GPU's time */

/* One process NVML reports on one GPU. */
struct verify_proc {
  pid_t pid;
  uint64_t start_time; /* /proc's, to signal the same process */
  uint64_t vram_bytes; /* usedGpuMemory */
  unsigned sm_pct;     /* smUtil over the last window, 0 when NVML had no sample */
  int tenant;          /* index of the owning tenant, -1 for none */
  bool offender;       /* picked by verify_pick_* */
  bool gone;           /* NVML has a utilization sample for it but lists it no more: it ended */
};

/* A tenant's owner: its processes are this one and its descendants. */
struct verify_root {
  pid_t pid;
  int tenant;
};

/* The parent of pid, 0 with *ppid set, -1 when it is gone. */
typedef int (*verify_parent_fn)(pid_t pid, pid_t *ppid, void *data);

/* A ledger slot's claim on a process, for one that ancestry placed under no tenant (verifier.c
 * reads the slots only for a process not seen before). */
struct verify_known {
  pid_t pid;
  uint64_t start_time;
  int tenant; /* -1: none */
};

/* Sorts roots by pid, for verify_tenant_of. */
void verify_roots_sort(struct verify_root *roots, int n);
/* The tenant pid belongs to, or -1: pid or its nearest ancestor that is a root. */
int verify_tenant_of(pid_t pid, const struct verify_root *roots, int n, verify_parent_fn parent,
                     void *data);

/* Bytes over the limit (nvml_bytes - limit) when beyond the slack of nprocs processes, else 0.
 * limit UINT64_MAX means none. */
uint64_t verify_vram_over(uint64_t nvml_bytes, uint64_t limit, int nprocs);
/* Millionths of the GPU's time over the limit (used - limit) when beyond the margin and the
 * policy makes the limit binding, else 0. limit_ppm 0 means none. */
uint32_t verify_compute_over(uint32_t used_ppm, uint32_t limit_ppm, bool cap_policy,
                             bool contended);

/* Marks offenders among tenant's processes in p[]: the largest users of device memory first,
 * until what is left fits within limit. Returns how many were marked. */
int verify_pick_vram(struct verify_proc *p, int n, int tenant, uint64_t limit);
/* The same for GPU time: the busiest first, until what is left fits within limit_ppm. */
int verify_pick_compute(struct verify_proc *p, int n, int tenant, uint32_t limit_ppm);

#endif
