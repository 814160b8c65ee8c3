/* Internals of the simulated CUDA driver (libcuda.so.1): the per-process object model shared
 * by the cuda-*.c files. One file per concern: cuda-init.c (cuInit, fork, errors' plumbing),
 * cuda-device.c, cuda-ctx.c, cuda-mem.c (allocation table, alloc/free), cuda-copy.c,
 * cuda-pool.c, cuda-vmm.c, cuda-ipc.c, cuda-array.c, cuda-module.c, cuda-stream.c, cuda-event.c,
 * cuda-launch.c, cuda-graph.c, cuda-procaddr.c, cuda-error.c, cuda-checkpoint.c (the
 * checkpoint API and the service thread that carries it out) and cuda-ckpt-save.c (moving the
 * process's device memory to host memory and back).
 *
 * Concurrency: one process-wide recursive mutex (gsc_lock) guards every object below. This
 * is a test double, not a hot path; the only rule is that nothing sleeps while holding it.
 * Cross-process state (device memory counts, the device timeline) lives in sim-state.c.
 *
 * Handles given to callers are pointers to the structs below. They are validated by looking
 * them up in a per-kind registry before being dereferenced, so a stale or garbage handle gets
 * CUDA_ERROR_INVALID_HANDLE / INVALID_CONTEXT instead of a crash. */
#ifndef GPUSIM_CUDA_INTERNAL_H
#define GPUSIM_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The ABI header is included with default visibility, so every entry point it declares is
 * exported from the library although the build hides everything else. */
#pragma GCC visibility push(default)
#include "gs-cuda.h"
#pragma GCC visibility pop

#include "sim-state.h"

/* Marks a definition as part of the exported API (the declaration already is; this is for
 * the reader). */
#define GSC_API __attribute__((visibility("default")))

#define GSC_PUSHBUF 1024 /* kernels a stream may have in flight before a launch blocks */
#define GSC_VMM_GRANULARITY (2ULL << 20)
#define GSC_VMM_MEMFD_NAME "gpusim-vmm:%d:%u" /* device, requested handle types */
#define GSC_PITCH_ALIGN 512

/* ---- the registry of live objects ---- */

enum gsc_kind {
  GSC_CTX,
  GSC_STREAM,
  GSC_EVENT,
  GSC_MODULE,
  GSC_FUNC,
  GSC_LIBRARY,
  GSC_KERNEL,
  GSC_POOL,
  GSC_GRAPH,
  GSC_GRAPH_EXEC,
  GSC_ARRAY,
  GSC_MIPMAP,
  GSC_VMM,
  GSC_KIND_COUNT
};

struct gsc_obj {
  struct gsc_obj *prev, *next;
};

extern struct gsc_obj gsc_registry[GSC_KIND_COUNT];

void gsc_obj_add(struct gsc_obj *o, enum gsc_kind kind);
void gsc_obj_del(struct gsc_obj *o);
/* p itself when p is a live object of that kind, else NULL. Never dereferences p first. */
void *gsc_obj_find(const void *p, enum gsc_kind kind);
/* Unregisters and frees an object that owns nothing else (o is the start of its struct). */
void gsc_obj_free(struct gsc_obj *o);
struct CUctx_st;
/* The body of the destroy and unload entry points: under the lock, the handle, when it is a
 * live object of its kind, goes to free_fn; else the answer is bad (INVALID_HANDLE, or
 * INVALID_VALUE where the real driver says that). */
CUresult gsc_obj_destroy(const void *handle, enum gsc_kind kind, void (*free_fn)(void *),
                         CUresult bad);
/* Hands every object of a kind that context c owns (every one, when c is NULL) to free_fn;
 * ctx_off is the offset of its struct's context pointer. */
void gsc_obj_free_owned(enum gsc_kind kind, size_t ctx_off, const struct CUctx_st *c,
                        void (*free_fn)(void *));

#define GSC_FOREACH(var, kind)                                                 \
  for (struct gsc_obj *var = gsc_registry[kind].next, *var##_next = var->next; \
       var != &gsc_registry[kind]; var = var##_next, var##_next = var->next)

/* ---- the devices this process sees (cuda-visible.c) ---- */

/* A device ordinal's GPU (its index in the shared state) and, for a MIG device, its GPU and
 * compute instance slots; -1 for a whole GPU. */
struct gsc_visible {
  int phys;
  int gi, ci;
};

/* ---- the process-wide driver state ---- */

struct gsc_driver {
  atomic_bool initialized;
  /* 1 while a controller holds the process LOCKED or CHECKPOINTED (cuda-checkpoint.c): new
   * calls wait at GSC_CHECK_INIT until it is 0 again. A futex word. */
  _Atomic uint32_t held;
  bool forking; /* true while a forked child discards the parent's objects */
  struct gpusim_shared *sh;
  int ndev; /* devices this process sees: CUDA_VISIBLE_DEVICES, MIG */
  struct gsc_visible vis[GPUSIM_MAX_DEVICES];
  uint64_t default_kernel_ns;
  uint64_t next_id;
  struct CUctx_st *primary[GPUSIM_MAX_DEVICES];
  struct CUmemPoolHandle_st *default_pool[GPUSIM_MAX_DEVICES];
  struct CUmemPoolHandle_st *current_pool[GPUSIM_MAX_DEVICES];
};

extern struct gsc_driver gsc;

void gsc_lock(void);
void gsc_unlock(void);
void gsc_unlockp(int *unused);
/* Holds gsc_lock until the end of the enclosing block. */
#define GSC_LOCKED __attribute__((cleanup(gsc_unlockp), unused)) int gsc_locked_ = (gsc_lock(), 0)

/* Waits while a controller holds the process locked (cuda-checkpoint.c). */
void gsc_gate_wait(void);

/* Every entry point past cuInit starts here: the driver is initialized, and the call waits
 * while the process is locked for a checkpoint, as the real driver's calls do. */
#define GSC_CHECK_INIT()                                                            \
  do {                                                                              \
    if (!atomic_load(&gsc.initialized))                                             \
      return CUDA_ERROR_NOT_INITIALIZED;                                            \
    if (__builtin_expect(atomic_load_explicit(&gsc.held, memory_order_acquire), 0)) \
      gsc_gate_wait();                                                              \
  } while (0)

/* The prologue of an entry point: the driver is initialized, and gsc_lock is held to the end
 * of the function. */
#define GSC_ENTER() \
  GSC_CHECK_INIT(); \
  GSC_LOCKED
/* The prologue of an entry point that answers through out: the driver is initialized, out is
 * given, and gsc_lock is held to the end of the function (so this cannot be a do/while). */
#define GSC_ENTER_OUT(out)           \
  GSC_CHECK_INIT();                  \
  if (!(out))                        \
    return CUDA_ERROR_INVALID_VALUE; \
  GSC_LOCKED
/* The same for a device query: dev is a device, out is given, the lock is held. */
#define GSC_ENTER_DEV_OUT(dev, out)  \
  GSC_TRY(gsc_dev_check(dev));       \
  if (!(out))                        \
    return CUDA_ERROR_INVALID_VALUE; \
  GSC_LOCKED
#define GSC_TRY(expr) GPUSIM_TRY(CUresult, CUDA_SUCCESS, expr)

static inline uint64_t gsc_max(uint64_t a, uint64_t b)
{
  return a > b ? a : b;
}

/* ---- contexts (cuda-ctx.c) ---- */

struct CUctx_st {
  struct gsc_obj obj;
  int dev;
  unsigned flags;
  bool primary;
  bool active; /* false once destroyed (or, for a primary one, released to zero) */
  int refs;    /* primary contexts: retain count */
  unsigned long long id;
  struct CUstream_st *legacy;
  size_t limits[16];
};

CUresult gsc_dev_check(CUdevice dev);
/* The calling thread's current context, or INVALID_CONTEXT / CONTEXT_IS_DESTROYED. */
CUresult gsc_ctx_current(struct CUctx_st **out);
CUresult gsc_ctx_check(CUcontext ctx);
/* Makes a context usable: its legacy stream and the device slot's context count. */
CUresult gsc_ctx_activate(struct CUctx_st *c);
/* Frees everything the context owns and drops it from the device slot. */
void gsc_ctx_teardown(struct CUctx_st *c);
void gsc_ctx_reset_thread(void);

/* ---- devices (cuda-visible.c) ---- */

/* Enumerates the devices this process sees into gsc.ndev and gsc.vis, and binds it to the
 * MIG device it sees. */
CUresult gsc_visible_init(void);
/* The GPU behind device ordinal dev: what the shared state's per-device figures are indexed by. */
int gsc_phys(CUdevice dev);
const struct gpusim_model *gsc_model(CUdevice dev);
/* The device's memory: a MIG device's is its GPU instance's. */
uint64_t gsc_dev_total(CUdevice dev);
uint64_t gsc_dev_used(CUdevice dev);
void gsc_dev_name(CUdevice dev, char *buf, size_t len);
/* "GPU-..." or, for a MIG device, "MIG-...". */
void gsc_dev_uuid(CUdevice dev, char *buf, size_t len);
int gsc_dev_sms(CUdevice dev);

/* ---- streams (cuda-stream.c) ---- */

struct CUstream_st {
  struct gsc_obj obj;
  struct CUctx_st *ctx;
  unsigned flags;
  int priority;
  bool legacy, per_thread;
  unsigned long long id;
  uint64_t tail_ns;           /* end of the last operation queued on it */
  uint64_t ring[GSC_PUSHBUF]; /* end times of kernels possibly still running, oldest first */
  unsigned ring_head, ring_count;
  struct CUgraph_st *capture; /* non-NULL while capturing */
  uint64_t capture_id;
  CUstreamCaptureMode capture_mode;
};

struct CUstream_st *gsc_stream_new(struct CUctx_st *c, unsigned flags, int priority);
void gsc_stream_free(struct CUstream_st *s);
/* Resolves a stream handle, including NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD;
 * per_thread says how NULL is read (the _ptsz/_ptds entry points). Under gsc_lock. */
CUresult gsc_stream_get(CUstream h, bool per_thread, struct CUstream_st **out);
/* The earliest time new work on s may start: its own tail plus the implicit legacy-stream
 * synchronization with the other blocking streams of its context. */
uint64_t gsc_stream_ready_ns(const struct CUstream_st *s);
/* Latest tail over every stream of a context. */
uint64_t gsc_ctx_tail_ns(const struct CUctx_st *c);
/* Sleeps (without the lock) until t, then lets the device's pools shrink to their thresholds. */
void gsc_wait_until(int dev, uint64_t t);
CUresult gsc_stream_sync(CUstream h, bool per_thread);

/* ---- memory (cuda-mem.c) ---- */

/* GSC_MEM_IPC: another process's allocation opened with cuIpcOpenMemHandle (cuda-ipc.c); it is
 * not charged again, and cuMemFree does not take it. */
enum gsc_mem_kind {
  GSC_MEM_DEVICE,
  GSC_MEM_MANAGED,
  GSC_MEM_POOL,
  GSC_MEM_HOST,
  GSC_MEM_VMM,
  GSC_MEM_IPC
};

struct gsc_alloc {
  uintptr_t base;
  size_t size;    /* what the caller asked for, and what is charged */
  size_t map_len; /* length of our own mapping, 0 when the mapping belongs to someone else */
  int dev;        /* -1 for host memory */
  enum gsc_mem_kind kind;
  struct CUctx_st *ctx; /* owner: freed with it; NULL for pool and VMM memory */
  struct CUmemPoolHandle_st *pool;
  struct gsc_vmm *vmm;
  unsigned flags;    /* host allocation flags, or VMM access flags */
  bool ipc_exported; /* cuIpcGetMemHandle handed out a handle to it: no checkpoint */
  struct gsc_alloc *prev, *next;
};

/* A fresh anonymous NORESERVE mapping of at least len bytes: only touched pages cost RAM. */
void *gsc_map(size_t len);
int gsc_alloc_insert(struct gsc_alloc *a);
void gsc_alloc_remove(struct gsc_alloc *a);
/* The allocation holding [p, p + len), or NULL. */
struct gsc_alloc *gsc_alloc_find(uintptr_t p, size_t len);
/* Any allocation overlapping [p, p + len), or NULL. */
struct gsc_alloc *gsc_alloc_overlap(uintptr_t p, size_t len);
struct gsc_alloc *gsc_alloc_first(void);
/* Device memory: takes the device charge, maps it, records it. */
CUresult gsc_dev_alloc(struct CUctx_st *c, size_t size, enum gsc_mem_kind kind, CUdeviceptr *out);
/* Unmaps and unrecords, and gives the charge back unless a pool or VMM handle holds it. */
void gsc_alloc_free(struct gsc_alloc *a);
/* Device mappings through the benchmark's cache (cuda-map-cache.c, GPUSIM_MAP_CACHE): a freed
 * mapping of at most GSC_MAP_CACHE_BYTES may be kept and handed out again. With gsc_lock. */
#define GSC_MAP_CACHE_BYTES (64u << 10)
void gsc_map_cache_init(void);
void *gsc_map_cached(size_t len);
void gsc_unmap_cached(void *p, size_t len);
/* A device range for a copy or set: INVALID_VALUE unless it lies inside one device allocation. */
CUresult gsc_dev_range(CUdeviceptr p, size_t len);
/* Device charges. While a forked child drops what it inherited (gsc.forking), releases are
 * skipped: those bytes belong to the parent's slot. */
CUresult gsc_charge(int dev, uint64_t bytes);
void gsc_uncharge(int dev, uint64_t bytes);

/* ---- pools (cuda-pool.c) ---- */

struct CUmemPoolHandle_st {
  struct gsc_obj obj;
  int dev;
  bool is_default;
  uint64_t reserved, used, threshold, reserved_high, used_high;
  int reuse[3]; /* the three CU_MEMPOOL_ATTR_REUSE_* switches */
  CUmemPoolProps props;
};

CUresult gsc_pool_create_default(int dev);
void gsc_pool_free_bytes(struct CUmemPoolHandle_st *p, uint64_t bytes);
/* Gives reserved-but-unused bytes back to the device down to keep (never below used). */
void gsc_pool_trim(struct CUmemPoolHandle_st *p, uint64_t keep);
void gsc_pools_settle(int dev);
void gsc_pool_destroy(struct CUmemPoolHandle_st *p);

/* ---- virtual memory (cuda-vmm.c) ---- */

struct gsc_vmm {
  struct gsc_obj obj;
  int fd; /* memfd: two mappings of one handle share its pages */
  size_t size;
  int dev;
  int refs;      /* user references plus mappings; freed at 0 */
  int user_refs; /* cuMemCreate and cuMemRetainAllocationHandle, less cuMemRelease */
  CUmemAllocationProp prop;
  bool imported; /* made by cuMemImportFromShareableHandle: the exporter holds the charge */
  bool exported; /* cuMemExportToShareableHandle handed it out: no checkpoint */
};

void gsc_vmm_put(struct gsc_vmm *h);
/* A handle around fd (which it takes over), registered with one user reference. NULL when out
 * of memory. The memfd's name records the device and handle types, for importers. */
struct gsc_vmm *gsc_vmm_wrap(int fd, size_t size, const CUmemAllocationProp *prop, bool imported);
/* A fresh memfd of size bytes named for prop, or -1. */
int gsc_vmm_memfd(size_t size, const CUmemAllocationProp *prop);
struct gsc_vmm *gsc_vmm_find(CUmemGenericAllocationHandle handle);

/* ---- sharing between processes (cuda-ipc.c) ---- */

/* An IPC mapping is going away (close, its context destroyed, or a fork): forget its record. */
void gsc_ipc_gone(struct gsc_alloc *a);

/* ---- modules and functions (cuda-module.c) ---- */

struct CUfunc_st {
  struct gsc_obj obj;
  struct CUmod_st *mod; /* NULL for functions obtained from a library kernel */
  struct CUkern_st *kern;
  struct CUctx_st *ctx;
  char name[1024]; /* mangled C++ names run long */
  int max_dyn_shared;
  int carveout;
  CUfunc_cache cache;
};

/* Accepts a CUfunction or, as the real driver does, a CUkernel passed in its place. */
CUresult gsc_func_get(CUfunction f, struct CUfunc_st **out);
void gsc_module_ctx_gone(struct CUctx_st *c);
void gsc_library_free_all(void);

/* ---- launches and graphs ---- */

/* Queues one kernel of dur_ns on a stream (or adds it to the graph being captured). */
CUresult gsc_launch(struct CUstream_st *s, uint64_t dur_ns, const char *name);
CUresult gsc_kernel_duration(const struct CUfunc_st *f, void **params, void **extra, uint64_t *ns);
CUresult gsc_graph_add_kernel(struct CUgraph_st *g, uint64_t dur_ns, const char *name);
/* Frees every graph and executable graph (a forked child dropping its inheritance). */
void gsc_graph_free_all(void);

/* ---- events (cuda-event.c) ---- */

struct CUevent_st {
  struct gsc_obj obj;
  struct CUctx_st *ctx;
  unsigned flags;
  bool recorded;
  uint64_t time_ns; /* when the work recorded before it completes */
};

void gsc_event_ctx_gone(struct CUctx_st *c);

/* ---- checkpoint and restore (cuda-checkpoint.c, cuda-ckpt-save.c) ---- */

/* Starts the process's checkpoint service thread, once per process (a forked child starts
 * its own at its cuInit). Under gsc_lock. */
CUresult gsc_ckpt_start(void);
/* A forked child is RUNNING and has no service thread. */
void gsc_ckpt_after_fork(void);
/* With gsc_lock held by the service thread: what the real driver refuses to checkpoint
 * (managed memory, memory shared with other processes) gives CUDA_ERROR_NOT_SUPPORTED. */
CUresult gsc_ckpt_supported(void);
/* Copies the process's device memory to host memory and releases it on the device: the
 * mappings become inaccessible reservations at the same addresses, the charges leave the
 * device, the contexts leave NVML's process list. On failure nothing has changed. */
CUresult gsc_ckpt_save(void);
/* The reverse: charges the device again (CUDA_ERROR_OUT_OF_MEMORY, nothing changed, when it
 * is full), maps the same addresses and copies the memory back. */
CUresult gsc_ckpt_load(void);

/* ---- arrays (cuda-array.c) ---- */

void gsc_array_ctx_gone(struct CUctx_st *c);

#endif
