/* The interposer's tenant state: attaching to the ledger named by the environment, the
 * process's slot, and charging against the quota. See quota.h.
 *
 * The fast path of gs__charge is one compare-and-swap on the tenant's usage plus one add on
 * the process's slot; the slow path (reaping dead processes, logging a refusal) only runs
 * when the limit is reached. */
#include "quota.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <gpuslice.h>
#include <gpuslice/daemon-paths.h>
#include <gpuslice/limits.h>
#include <gpuslice/peer-limits.h>
#include <gpuslice/proc.h>
#include "compute-gate.h"
#include "pool-reserve.h"
#include "real.h"

static struct {
  struct gs_ledger *ledger;
  bool failed; /* GPUSLICE_TENANT is set but its ledger could not be attached */
  _Atomic(struct gs_ledger_proc *) slot;
  _Atomic bool resolved[GS_LEDGER_MAX_GPUS];
  atomic_bool refusal_logged;
  /* What other systems' variables (HAMi's, KAI's) lower this process's limits to, read once
   * at attach: the same in every process of a pod, which carries one environment. */
  struct gs_peer_limits peer;
  /* The daemon's limits file, when it decides the tenant's limits. */
  const struct gs_limits *limits;
} T;

struct gs_ptrmap gs__maps[GS_MAP_COUNT];
_Atomic bool gs__maps_live;
struct gs__lane gs__lanes[GS_LEDGER_MAX_GPUS];
_Atomic bool gs__lane_ready[GS_LEDGER_MAX_GPUS];

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

static bool maps_init(void)
{
  for (int i = 0; i < GS_MAP_COUNT; i++)
    if (gs_ptrmap_init(&gs__maps[i], 1024) < 0)
      return false;
  return true;
}

/* After fork the child is a new process for the driver: the parent's allocations are not its
 * own, and it needs a slot of its own (so its lanes, which point at the parent's, close). */
static void after_fork_in_child(void)
{
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++)
    atomic_store(&gs__lane_ready[i], false);
  atomic_store(&T.slot, NULL);
  for (int i = 0; i < GS_MAP_COUNT; i++) {
    gs_ptrmap_destroy(&gs__maps[i]);
    gs_ptrmap_init(&gs__maps[i], 1024);
  }
  pthread_mutex_init(&slot_lock, NULL);
  gs__thread_slot_after_fork();
  gs__ctx_after_fork();
  gs__pool_after_fork();
}

/* At a normal exit the driver frees all the process held; the ledger gives it back at once
 * too, instead of waiting for a reaper to notice, and frees the slot for the next process. */
__attribute__((destructor)) static void release_at_exit(void)
{
  struct gs_ledger_proc *p = atomic_exchange(&T.slot, NULL);
  if (T.ledger && p && p->pid == getpid())
    gs_ledger_unclaim(T.ledger, p);
}

/* While the node daemon runs, its read-only limits file decides the limits, not the ledger
 * the tenant can write (see gpuslice/limits.h): read from the daemon's own directory only,
 * where its socket is, and checked there once. The mapping is kept for the life of the
 * process. */
static void bind_daemon_limits(void)
{
  struct gs_limits *lim = NULL;
  if (gs_limits_find(gs_daemon_dir(), T.ledger, &lim) == 1) {
    gs_ledger_set_authority(T.ledger, lim);
    T.limits = lim;
  }
}

const _Atomic uint64_t *gs__limits_generation(void)
{
  static const _Atomic uint64_t still = 0;
  return T.limits ? &T.limits->generation : &still; /* bound at attach, before any gate */
}

/* A variable of another system that is ignored: said once, at attach. The value is the
 * environment's, so it is cut short and stripped of control characters first. */
static void peer_bad(const char *name, const char *value, const char *expected, void *data)
{
  char v[65];
  (void) data;
  snprintf(v, sizeof(v), "%s", value);
  gs_scrub_ctl(v, '?');
  GS_LOG(GS_LOG_WARN, "%s='%s' is not %s; ignored", name, v, expected);
}

static void attach(void)
{
  const char *name = gs_getenv_nonempty("GPUSLICE_TENANT");
  gs_error_t err = NULL;
  gs_log_init_from_env();
  if (!name)
    return;
  gs_peer_limits_read(&T.peer, gs_getenv, peer_bad, NULL);
  const char *dir = gs_ledger_state_dir();
  if (!maps_init() || gs_ledger_state_dir_check(dir, &err) < 0 ||
      gs_ledger_attach(dir, name, &T.ledger, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s; GPU allocations will be refused", name,
           err ? err->msg : "out of memory");
    gs_error_release(&err);
    T.failed = true;
    return;
  }
  bind_daemon_limits();
  gs__pool_reserve_init();
  pthread_atfork(NULL, NULL, after_fork_in_child);
  atomic_store_explicit(&gs__maps_live, true, memory_order_release);
}

/* Set once attach has run, whatever it found: from then on ledger() is a load and a branch. */
static _Atomic bool attached;

static void attach_once(void)
{
  attach();
  atomic_store_explicit(&attached, true, memory_order_release);
}

static inline struct gs_ledger *ledger(void)
{
  if (__builtin_expect(!atomic_load_explicit(&attached, memory_order_acquire), 0))
    pthread_once(&once, attach_once);
  return T.ledger;
}

bool gs__tenant_active(void)
{
  return ledger() != NULL;
}

static struct gs_ledger_proc *slot(void)
{
  struct gs_ledger_proc *p = atomic_load_explicit(&T.slot, memory_order_acquire);
  if (__builtin_expect(p != NULL, 1))
    return p;
  pthread_mutex_lock(&slot_lock);
  p = atomic_load(&T.slot);
  if (!p) {
    p = gs_ledger_claim(T.ledger, getpid(), gs_proc_start_time(getpid()));
    if (!p)
      GS_LOG(GS_LOG_ERROR, "tenant '%s': all %d process slots are taken", T.ledger->name,
             GS_LEDGER_MAX_PROCS);
    atomic_store(&T.slot, p);
  }
  pthread_mutex_unlock(&slot_lock);
  return p;
}

/* A percentage limit becomes bytes once this process knows the device's size. */
static void resolve_limit(int gpu)
{
  size_t total = 0;
  CUdevice dev;
  if (atomic_load_explicit(&T.resolved[gpu], memory_order_relaxed))
    return;
  gs__cuda_resolve();
  if (gs__cuda.cuDeviceGet && gs__cuda.cuDeviceGet(&dev, gpu) == CUDA_SUCCESS &&
      gs__cuda.cuDeviceTotalMem_v2 && gs__cuda.cuDeviceTotalMem_v2(&total, dev) == CUDA_SUCCESS)
    gs_ledger_limit(T.ledger, gpu, total);
  atomic_store(&T.resolved[gpu], true);
}

/* The limit this process holds the tenant to on gpu: the tenant's, lowered by the peer
 * variables. */
static uint64_t effective_limit(int gpu)
{
  return gs_peer_lower(gs_ledger_limit(T.ledger, gpu, 0), T.peer.mem_bytes[gpu]);
}

static void log_refusal(int gpu, uint64_t bytes, const char *what)
{
  if (atomic_exchange(&T.refusal_logged, true))
    return;
  struct gs_ledger_gpu *g = &T.ledger->gpu[gpu];
  if (bytes > GS_CHARGE_MAX)
    GS_LOG(GS_LOG_ERROR,
           "tenant '%s': %s of %llu bytes on GPU %d refused: more than the %llu bytes one "
           "allocation may be",
           T.ledger->name, what, (unsigned long long) bytes, gpu,
           (unsigned long long) GS_CHARGE_MAX);
  else
    GS_LOG(
      GS_LOG_ERROR, "tenant '%s': %s of %llu bytes on GPU %d refused: %llu of %llu bytes in use",
      T.ledger->name, what, (unsigned long long) bytes, gpu,
      (unsigned long long) atomic_load(&g->used_bytes), (unsigned long long) effective_limit(gpu));
}

/* The charge the lane could not make, in full: it also opens the lane. */
static CUresult charge(int gpu, uint64_t bytes);

CUresult gs__charge_slow(int gpu, uint64_t bytes, const char *what)
{
  CUresult rc = charge(gpu, bytes);
  return rc == CUDA_ERROR_OUT_OF_MEMORY ? gs__refuse(gpu, bytes, what) : rc;
}

CUresult gs__charge_quiet_slow(int gpu, uint64_t bytes)
{
  return charge(gpu, bytes);
}

/* Once the process has a slot and its limit on gpu is known, the lane to charge gpu by. */
static void lane_open(int gpu, struct gs_ledger_proc *p)
{
  struct gs_ledger_gpu *g = &T.ledger->gpu[gpu];
  if (atomic_load(&gs__lane_ready[gpu]))
    return;
  gs__lanes[gpu] = (struct gs__lane){
    .used = &g->used_bytes,
    .peak = &g->peak_bytes,
    .proc_used = &p->used[gpu],
    .limit = T.limits ? &T.limits->limit_bytes[gpu] : &g->limit_bytes,
    .cap = T.peer.mem_bytes[gpu] < GS_CHARGE_MAX ? T.peer.mem_bytes[gpu] : GS_CHARGE_MAX,
    .tag = GS_CHARGE(0, gpu),
    .gpu = gpu,
  };
  atomic_store_explicit(&gs__lane_ready[gpu], true, memory_order_release);
}

void gs__peak_raise(struct gs__lane *ln, uint64_t now_used)
{
  uint64_t peak = atomic_load_explicit(ln->peak, memory_order_relaxed);
  while (now_used > peak &&
         !atomic_compare_exchange_weak_explicit(ln->peak, &peak, now_used, memory_order_relaxed,
                                                memory_order_relaxed))
    ;
}

CUresult gs__refuse(int gpu, uint64_t bytes, const char *what)
{
  if (ledger() && gpu >= 0 && gpu < GS_LEDGER_MAX_GPUS)
    log_refusal(gpu, bytes, what);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult charge(int gpu, uint64_t bytes)
{
  struct gs_ledger *l = ledger();
  if (!l)
    return T.failed ? CUDA_ERROR_NOT_PERMITTED : CUDA_SUCCESS;
  if (gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS)
    return CUDA_SUCCESS; /* beyond what the ledger tracks; see docs/limits */
  if (bytes > GS_CHARGE_MAX)
    return CUDA_ERROR_OUT_OF_MEMORY; /* more than any GPU holds, and than a map entry packs */
  struct gs_ledger_proc *p = slot();
  if (!p)
    return CUDA_ERROR_NOT_PERMITTED;
  resolve_limit(gpu);
  lane_open(gpu, p);
  uint64_t cap = T.peer.mem_bytes[gpu];
  if (gs_ledger_reserve_within(l, p, gpu, bytes, cap) == 0)
    return CUDA_SUCCESS;
  /* At the limit: memory held by the tenant's dead processes may be what is missing, or
   * reserve charge that this process's pools have given back since the last settle. */
  if (gs_ledger_reap(l) > 0 && gs_ledger_reserve_within(l, p, gpu, bytes, cap) == 0)
    return CUDA_SUCCESS;
  if (gs__pool_kept(gpu)) {
    gs__pool_settle_gpu(gpu);
    if (gs_ledger_reserve_within(l, p, gpu, bytes, cap) == 0)
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

void gs__charge_force(int gpu, uint64_t bytes)
{
  struct gs_ledger_proc *p;
  if (!ledger() || gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS || !(p = slot()))
    return;
  atomic_fetch_add(&p->used[gpu], bytes);
  atomic_fetch_add(&T.ledger->gpu[gpu].used_bytes, bytes);
}

void gs__uncharge_slow(int gpu, uint64_t bytes)
{
  struct gs_ledger_proc *p;
  if (!ledger() || gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS || !(p = slot()))
    return;
  gs_ledger_release(T.ledger, p, gpu, bytes);
}

bool gs__remember_slow(enum gs_map map, uint64_t key, uint64_t bytes, int gpu)
{
  if (!ledger() || gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS)
    return true; /* nothing was charged, so there is nothing to remember */
  return gs_ptrmap_put(&gs__maps[map], key, GS_CHARGE(bytes, gpu)) == 0;
}

bool gs__forget_slow(enum gs_map map, uint64_t key, uint64_t *charge)
{
  uint64_t v;
  if (!ledger() || !gs_ptrmap_take(&gs__maps[map], key, &v))
    return false;
  gs__uncharge(GS_CHARGE_GPU(v), GS_CHARGE_BYTES(v));
  if (charge)
    *charge = v;
  return true;
}

bool gs__peek(enum gs_map map, uint64_t key, uint64_t *charge)
{
  return ledger() && gs_ptrmap_get(&gs__maps[map], key, charge);
}

bool gs__map_put(enum gs_map map, uint64_t key, uint64_t value)
{
  return ledger() && gs_ptrmap_put(&gs__maps[map], key, value) == 0;
}

bool gs__map_get(enum gs_map map, uint64_t key, uint64_t *value)
{
  return ledger() && gs_ptrmap_get(&gs__maps[map], key, value);
}

bool gs__map_take(enum gs_map map, uint64_t key, uint64_t *value)
{
  return ledger() && gs_ptrmap_take(&gs__maps[map], key, value);
}

bool gs__map_add(enum gs_map map, uint64_t key, int64_t delta, uint64_t *after)
{
  return ledger() && gs_ptrmap_add(&gs__maps[map], key, delta, after);
}

/* 1 when the process sees exactly one GPU, 0 when it sees more, -1 until known. */
static _Atomic int single_gpu = -1;
__thread int gs__tls_gpu __attribute__((tls_model("initial-exec")));

int gs__current_gpu_slow(void)
{
  CUdevice dev;
  int n, single = atomic_load_explicit(&single_gpu, memory_order_relaxed);
  /* With one GPU visible every context is on GPU 0: no need to ask the driver. */
  if (single == 1) {
    gs__tls_gpu = 1;
    return 0;
  }
  gs__cuda_resolve();
  if (single < 0 && gs__cuda.cuDeviceGetCount && gs__cuda.cuDeviceGetCount(&n) == CUDA_SUCCESS)
    atomic_store_explicit(&single_gpu, n == 1, memory_order_relaxed);
  if (!gs__cuda.cuCtxGetDevice || gs__cuda.cuCtxGetDevice(&dev) != CUDA_SUCCESS)
    return -1; /* no current context: nothing to remember */
  gs__tls_gpu = dev + 1;
  return dev;
}

void gs__thread_slot_want(void)
{
  struct gs_ledger *l = ledger();
  if (l)
    gs__thread_slot_open(l, slot());
}

void gs__ctx_changed(void)
{
  gs__tls_gpu = 0;
  gs__tls.lane = NULL;
  gs__gate_tls = &gs__gate_unknown;
}

bool gs__limit(int gpu, uint64_t *limit, uint64_t *used)
{
  struct gs_ledger *l = ledger();
  if (!l || gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS)
    return false;
  resolve_limit(gpu);
  *limit = effective_limit(gpu);
  *used = atomic_load(&l->gpu[gpu].used_bytes);
  return *limit != GS_LIMIT_NONE;
}

/* HAMi's CUDA_DEVICE_SM_LIMIT is a ceiling on the GPU's time whether or not anyone else wants
 * it, which is gpuslice's cap; as a cap at the lower of the two shares it never gives the
 * tenant more than its own limit, by weight or by time. */
uint32_t gs__compute_limit_ppm(int gpu)
{
  struct gs_ledger *l = ledger();
  uint32_t own = l ? gs_ledger_compute_limit_ppm(l) : 0;
  uint32_t peer = l && gpu >= 0 && gpu < GS_LEDGER_MAX_GPUS ? T.peer.sm_ppm[gpu] : 0;
  return peer && (!own || peer < own) ? peer : own;
}

uint32_t gs__compute_policy(int gpu)
{
  struct gs_ledger *l = ledger();
  if (l && gpu >= 0 && gpu < GS_LEDGER_MAX_GPUS && T.peer.sm_ppm[gpu])
    return GS_COMPUTE_CAP;
  return l ? gs_ledger_compute_policy(l) : GS_COMPUTE_SHARE;
}

uint64_t gs__context_reserve(void)
{
  struct gs_ledger *l = ledger();
  return l ? l->context_reserve_bytes : 0;
}

struct gs_ledger *gs__tenant_ledger(void)
{
  return ledger();
}
