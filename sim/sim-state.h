/* State that every process using the simulated driver shares: the devices, the memory
 * each process holds on them, and the device's execution timeline.
 *
 * It lives in one file mapped by every process (by default /dev/shm/gpusim-<uid>-<hash>,
 * keyed by GPUSLICE_SIM so that different device lists never share state). The layout
 * starts with a magic, a version and a size; a mismatch is an error, never a crash.
 *
 * Execution is modelled in virtual time: a launch is given the next free interval on the
 * device's timeline at the moment it is launched, which is exactly "one kernel at a time,
 * in arrival order". Waiting (stream, event, context synchronization) sleeps until the
 * interval ends. Memory is counted per process so that a process that dies without freeing
 * gives its memory back, as the real driver does, when anyone notices it is gone.
 *
 * What lives elsewhere: per-process objects (contexts, streams, allocations) are in
 * cuda-*.c; the model catalogue is in sim-models.c. */
#ifndef GPUSIM_STATE_H
#define GPUSIM_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sim-mig-state.h"
#include "sim-models.h"

#define GPUSIM_MAGIC 0x4753494d53544154ULL /* "GSIMSTAT" */
#define GPUSIM_VERSION 3
#define GPUSIM_MAX_PROCS 1024
#define GPUSIM_RING 4096
#define GPUSIM_XID_RING 64

struct gpusim_interval {
  uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
  int32_t pid;
  uint32_t pad;
};

struct gpusim_dev {
  int32_t model; /* index into gpusim_models */
  int32_t index;
  uint64_t total_bytes;
  _Atomic uint64_t used_bytes; /* written under mem_lock, read by anyone */
  pthread_mutex_t mem_lock;    /* robust and process-shared */
  pthread_mutex_t exec_lock;   /* robust and process-shared; guards the timeline below */
  uint64_t busy_until_ns;      /* end of the last interval handed out */
  uint64_t
    ring_count; /* intervals ever appended; ring[(ring_count - 1) % GPUSIM_RING] is the newest */
  struct gpusim_interval ring[GPUSIM_RING];
};

enum { GPUSIM_SLOT_FREE = 0, GPUSIM_SLOT_CLAIMING, GPUSIM_SLOT_LIVE, GPUSIM_SLOT_REAPING };

/* A process's checkpoint mailbox (cuda-checkpoint.c). The checkpoint API is called by another
 * process, a controller, but the process's device memory is private mappings only the process
 * itself can copy: a controller posts one request at a time here and waits for the answer,
 * which a service thread of the target, started at cuInit, works out inside the target. The
 * sequence words are futexes. */
struct gpusim_ckpt {
  _Atomic uint32_t state;    /* CUprocessState, written by the target's service thread */
  _Atomic int32_t tid;       /* the service thread's tid; 0 while the process has none */
  _Atomic int32_t caller;    /* the pid of the controller holding the mailbox; 0 when free */
  _Atomic uint32_t req_seq;  /* bumped by the controller once op and timeout_ms are written */
  uint32_t op;               /* enum gpusim_ckpt_op */
  uint32_t timeout_ms;       /* a lock's timeout; 0 for none */
  _Atomic uint32_t done_seq; /* the req_seq answered last: result is its answer */
  int32_t result;            /* a CUresult */
};

enum gpusim_ckpt_op {
  GPUSIM_CKPT_LOCK = 1,
  GPUSIM_CKPT_CHECKPOINT,
  GPUSIM_CKPT_RESTORE,
  GPUSIM_CKPT_UNLOCK
};

struct gpusim_proc {
  _Atomic uint32_t state;
  int32_t pid;
  uint64_t start_time;               /* from /proc/<pid>/stat, so a reused pid is a new process */
  uint64_t used[GPUSIM_MAX_DEVICES]; /* under the device's mem_lock */
  _Atomic uint32_t contexts[GPUSIM_MAX_DEVICES];
  struct gpusim_ckpt ckpt;
};

/* Per device, what NVML reports beyond memory and the timeline's recent past: the device's
 * whole busy time since the state was made (its energy counter integrates over it) and the
 * XID errors a test injected (gpusim_xid_inject), which NVML's events deliver. */
struct gpusim_dev_health {
  uint64_t created_ns;     /* CLOCK_MONOTONIC when the state was made: the "driver load" */
  uint64_t busy_booked_ns; /* every interval ever handed out, summed; under exec_lock */
  _Atomic uint64_t
    xid_count; /* XIDs ever injected; xid[(count - 1) % GPUSIM_XID_RING] is the newest */
  uint64_t xid[GPUSIM_XID_RING];
};

struct gpusim_shared {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  uint32_t ndev;
  uint32_t pad;
  char spec[256];
  struct gpusim_dev dev[GPUSIM_MAX_DEVICES];
  struct gpusim_proc proc[GPUSIM_MAX_PROCS];
  struct gpusim_dev_health health[GPUSIM_MAX_DEVICES];
  /* Version 3: MIG (sim-mig-state.h) and the compute mode. */
  struct gpusim_mig mig[GPUSIM_MAX_DEVICES];
  uint8_t proc_mig[GPUSIM_MAX_PROCS][GPUSIM_MAX_DEVICES]; /* per process slot, GPUSIM_MIG_BIND */
};

/* The state file's layout, pinned: every process on the simulated driver maps it. A change
 * here forces a bump of GPUSIM_VERSION. The mutexes are the platform's, so offsets past them
 * are counted in GPUSIM_MUTEX (40 bytes on x86-64 glibc); the file is only ever shared
 * between processes of one machine. */
#define GPUSIM_MUTEX sizeof(pthread_mutex_t)
_Static_assert(GPUSIM_MUTEX % 8 == 0,
               "pthread_mutex_t is not a multiple of 8 bytes: recount the pins");
_Static_assert(sizeof(struct gpusim_interval) == 24,
               "gpusim_interval changed: bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_interval, end_ns) == 8, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_interval, pid) == 16, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, index) == 4, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, total_bytes) == 8, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, used_bytes) == 16, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, mem_lock) == 24, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, exec_lock) == 24 + GPUSIM_MUTEX, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, busy_until_ns) == 24 + 2 * GPUSIM_MUTEX,
               "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, ring_count) == 32 + 2 * GPUSIM_MUTEX,
               "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev, ring) == 40 + 2 * GPUSIM_MUTEX, "bump GPUSIM_VERSION");
_Static_assert(sizeof(struct gpusim_dev) == 40 + 2 * GPUSIM_MUTEX + 4096 * 24,
               "gpusim_dev changed: bump GPUSIM_VERSION");
_Static_assert(sizeof(struct gpusim_ckpt) == 32, "gpusim_ckpt changed: bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_ckpt, req_seq) == 12, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_ckpt, done_seq) == 24, "bump GPUSIM_VERSION");
_Static_assert(sizeof(struct gpusim_proc) == 240, "gpusim_proc changed: bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_proc, pid) == 4, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_proc, start_time) == 8, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_proc, used) == 16, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_proc, contexts) == 144, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_proc, ckpt) == 208, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, version) == 8, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, size) == 12, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, ndev) == 16, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, spec) == 24, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, dev) == 280, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, proc) == 280 + 16 * sizeof(struct gpusim_dev),
               "bump GPUSIM_VERSION");
_Static_assert(sizeof(struct gpusim_dev_health) == 24 + 64 * 8,
               "gpusim_dev_health changed: bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev_health, busy_booked_ns) == 8, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_dev_health, xid_count) == 16, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, health) ==
                 280 + 16 * sizeof(struct gpusim_dev) + 1024 * 240,
               "bump GPUSIM_VERSION");
#define GPUSIM_MIG_OFFSET (280 + 16 * sizeof(struct gpusim_dev) + 1024 * 240 + 16 * (24 + 64 * 8))
_Static_assert(offsetof(struct gpusim_shared, mig) == GPUSIM_MIG_OFFSET, "bump GPUSIM_VERSION");
_Static_assert(offsetof(struct gpusim_shared, proc_mig) ==
                 GPUSIM_MIG_OFFSET + 16 * sizeof(struct gpusim_mig),
               "bump GPUSIM_VERSION");
_Static_assert(sizeof(struct gpusim_shared) ==
                 GPUSIM_MIG_OFFSET + 16 * sizeof(struct gpusim_mig) + 1024 * 16,
               "gpusim_shared changed: bump GPUSIM_VERSION");

/* Maps the shared state described by GPUSLICE_SIM, creating it on first use. The mapping is
 * process-wide and made once. Returns NULL and a one-line message on bad input or a bad file. */
struct gpusim_shared *gpusim_state(const char **err);

/* This process's slot, claimed on first call; NULL if every slot is taken. */
struct gpusim_proc *gpusim_self(void);

/* The live slot of the running process pid, or NULL. */
struct gpusim_proc *gpusim_proc_find(pid_t pid);

/* Takes bytes of device memory for this process: 0, or -1 when the device is full. */
int gpusim_mem_reserve(int dev, uint64_t bytes);
void gpusim_mem_release(int dev, uint64_t bytes);
/* The device's memory lock, which also guards its MIG state (sim-mig.c). */
void gpusim_mem_lock(int dev);
void gpusim_mem_unlock(int dev);

/* Gives back the memory of processes that have died. Returns how many were reaped. */
int gpusim_reap_dead(void);

/* Appends a kernel of dur_ns to the device's timeline, starting no earlier than not_before_ns.
 * Returns its end; *start receives its start. */
uint64_t gpusim_exec_schedule(int dev, uint64_t not_before_ns, uint64_t dur_ns, uint64_t *start);

/* Busy nanoseconds on the device since the state was made up to now: booked work that has
 * already run. */
uint64_t gpusim_busy_total_ns(int dev, uint64_t now);

/* Records XID error `xid` on device dev, as the driver would on a fault: every event set
 * registered for XIDs on that device receives it. A test control, never called by gpuslice. */
void gpusim_xid_record(int dev, uint64_t xid);

/* Busy nanoseconds on the device in [from, to), for one pid or for all (pid == 0). */
uint64_t gpusim_busy_ns(int dev, uint64_t from, uint64_t to, pid_t pid);
/* Device dev's busy time in [from, to) per process, in one pass over its timeline: fills
 * pids[] and busy[] (room for max) with each process that ran in the window, whether it still
 * runs or not, and returns how many. */
int gpusim_busy_by_pid(int dev, uint64_t from, uint64_t to, pid_t *pids, uint64_t *busy, int max);

/* Busy fraction over the sample period that NVML reports: GPUSIM_UTIL_PERIOD_MS, default 1000. */
uint64_t gpusim_util_period_ns(void);

uint64_t gpusim_now_ns(void);
/* Sleeps until CLOCK_MONOTONIC reaches t, finishing with a short spin for precision. */
void gpusim_sleep_until(uint64_t t);

/* True when (pid, start_time) names a process that is still running. */
/* Reaps as gpusim_reap_dead does, unless this process did so less than period_ns ago: for
 * monitoring queries, which a daemon makes many times a second. */
int gpusim_reap_dead_every(uint64_t period_ns);
bool gpusim_proc_alive(pid_t pid, uint64_t start_time);
/* The same for the process of slot `slot`, through a pidfd kept per slot where the process may
 * open that many files (proc-watch.c): for the monitoring path. */
bool gpusim_proc_alive_watched(int slot, pid_t pid, uint64_t start_time);
/* Start time of a process in clock ticks since boot, or 0 if it is gone. */
uint64_t gpusim_proc_start_time(pid_t pid);

/* Prints one line, "gpusim: <message>", to stderr. */
void gpusim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, at most once per call site, for diagnostics that a loop would repeat. */
#define GPUSIM_WARN_ONCE(...)             \
  do {                                    \
    static atomic_bool warned_;           \
    if (!atomic_exchange(&warned_, true)) \
      gpusim_warn(__VA_ARGS__);           \
  } while (0)

/* Returns from the calling function with expr's result unless that is ok: the CUDA and NVML
 * libraries' GSC_TRY and GSN_TRY, each for its own result type. */
#define GPUSIM_TRY(type, ok, expr) \
  do {                             \
    type r_ = (expr);              \
    if (r_ != (ok))                \
      return r_;                   \
  } while (0)

#endif
