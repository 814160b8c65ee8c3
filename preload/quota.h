/* The tenant as the interposer sees it: which ledger this process charges, its slot there,
 * and the maps from what the driver handed out (pointers, handles, arrays, contexts) to what
 * was charged for it.
 *
 * Without GPUSLICE_TENANT the process is no tenant: nothing is charged and every hook
 * passes straight through. With it, but with a ledger that cannot be read, allocations are
 * refused (CUDA_ERROR_NOT_PERMITTED) rather than left unlimited, and the reason is logged once. */
#ifndef GS_PRELOAD_QUOTA_H
#define GS_PRELOAD_QUOTA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs-cuda.h"
#include <gpuslice/tenant-ledger.h>
#include <gpuslice/ptrmap.h>

/* What a map entry records: the bytes charged and the GPU, packed in one word. */
#define GS_CHARGE(bytes, gpu) (((uint64_t) (gpu) << 56) | (bytes))
#define GS_CHARGE_BYTES(v) ((v) & ((1ULL << 56) - 1))
#define GS_CHARGE_GPU(v) ((int) ((v) >> 56))
/* The most one charge may be: a pebibyte less a byte, more than any GPU holds. Bits 50 to 55
 * of an entry are therefore 0, and the entry shifted right by 50 is its GPU's lane offset. */
#define GS_CHARGE_MAX ((1ULL << 50) - 1)

enum gs_map {
  GS_MAP_PTR,    /* device pointers: cuMemAlloc*, managed, async */
  GS_MAP_HANDLE, /* VMM allocation handles */
  GS_MAP_ARRAY,  /* arrays and mipmapped arrays */
  GS_MAP_CTX,    /* contexts made with cuCtxCreate */
  /* Raw maps (gs__map_*), not charges. */
  GS_MAP_HANDLE_REFS, /* VMM handle -> references keeping its memory: the user's, plus one per mapping */
  GS_MAP_VA_HANDLE, /* start of a mapping made by cuMemMap -> the handle it maps */
  GS_MAP_VA_SIZE,   /* start of a mapping -> its size */
  GS_MAP_COUNT
};

/* The tenant's ledger, or NULL when the process is no tenant. */
struct gs_ledger *gs__tenant_ledger(void);

/* True when this process belongs to a tenant whose ledger is attached. */
bool gs__tenant_active(void);

/* ---- the allocation path's fast lane (inline, below) ---- */

#define GS_QUOTA_INLINE static inline __attribute__((always_inline))

/* What charging gpu touches, once the process has a ledger slot and knows its limit there:
 * the tenant's usage and peak, the process's slot, the limit in force (the daemon's limits
 * file or the ledger) and the cap of other systems' variables, never above GS_CHARGE_MAX (so
 * that every charge the lane admits packs into a map entry). Set once per GPU by the first full
 * charge; closed again in a forked child. One cache line each: a free finds its lane from the
 * GPU in its charge with a shift. */
struct __attribute__((aligned(64))) gs__lane {
  _Atomic uint64_t *used, *peak, *proc_used;
  const _Atomic uint64_t *limit;
  uint64_t cap;
  uint64_t tag; /* GS_CHARGE(0, gpu): or'd with the bytes, the map entry's value */
  int gpu;
};
_Static_assert(sizeof(struct gs__lane) == 64, "gs__lane_of shifts by 6");
extern struct gs__lane gs__lanes[GS_LEDGER_MAX_GPUS];
/* What the allocation and free fast paths of a thread read, in one thread-local block. */
struct gs__tls_fast {
  /* The lane of the thread's current GPU, once open and the thread has a slot of its own;
   * NULL until then and after each change of the thread's current context (gs__ctx_changed),
   * like the current GPU. */
  struct gs__lane *lane;
  /* The thread's own ledger slot's used[] (a word per GPU), or NULL (thread-slot.c). */
  _Atomic uint64_t *used;
  /* What cuMemFree_v2's fast path looks at: the run state once the maps are live, the
   * driver's cuMemFree_v2 is known and the thread has a slot of its own; until then a word
   * that sends every free of the thread the full way. */
  const _Atomic uint32_t *free_gate;
};
extern __thread struct gs__tls_fast gs__tls __attribute__((tls_model("initial-exec")));
/* What free_gate is until then: a run state that is not "running". */
extern const _Atomic uint32_t gs__free_not_ready;
extern _Atomic bool gs__lane_ready[GS_LEDGER_MAX_GPUS];
/* The maps, and whether they are up: true once the process is attached to its tenant. */
extern struct gs_ptrmap gs__maps[GS_MAP_COUNT];
extern _Atomic bool gs__maps_live;

/* A thread with a slot of its own charges it with plain stores, any other its process's slot
 * through the lane, with locked instructions (thread-slot.c). The most slots of their own a
 * process's threads hold; the others share the process's. */
#define GS_THREAD_SLOTS_MAX 8
/* Claims the calling thread a slot of its own, once, if one is left: owner is its process's. */
void gs__thread_slot_open(struct gs_ledger *l, const struct gs_ledger_proc *owner);
/* gs__thread_slot_open for this process's tenant, once it has its slot. */
void gs__thread_slot_want(void);
/* In a forked child: it has no thread slots (they are the parent's). */
void gs__thread_slot_after_fork(void);

/* The full paths behind the inline ones: everything the lane does not cover (no tenant yet
 * or at all, a GPU beyond the ledger, the limit reached: reaping, pools, the refusal). */
CUresult gs__charge_slow(int gpu, uint64_t bytes, const char *what);
CUresult gs__charge_quiet_slow(int gpu, uint64_t bytes);
void gs__uncharge_slow(int gpu, uint64_t bytes);
bool gs__remember_slow(enum gs_map map, uint64_t key, uint64_t bytes, int gpu);
bool gs__forget_slow(enum gs_map map, uint64_t key, uint64_t *charge);
void gs__peak_raise(struct gs__lane *ln, uint64_t now_used);

GS_QUOTA_INLINE struct gs__lane *gs__lane(int gpu)
{
  return (unsigned) gpu < GS_LEDGER_MAX_GPUS &&
      atomic_load_explicit(&gs__lane_ready[gpu], memory_order_acquire)
    ? &gs__lanes[gpu]
    : NULL;
}

/* True when *w < v: one compare with memory on x86-64, where a load is an atomic load. For a
 * word only looked at (the peak, raised by CAS when this says so). */
GS_QUOTA_INLINE bool gs__word_below(const _Atomic uint64_t *w, uint64_t v)
{
#if defined(__x86_64__)
  bool below;
  __asm__ volatile("cmpq %2, %1" : "=@ccb"(below) : "m"(*w), "r"(v));
  return below;
#else
  return atomic_load_explicit(w, memory_order_relaxed) < v;
#endif
}

/* Adds d (wrapping) to a word only the calling thread writes: no locked instruction, and on
 * x86-64 one instruction, whose 64-bit store a reader elsewhere never sees torn. */
GS_QUOTA_INLINE void gs__own_add(_Atomic uint64_t *w, uint64_t d)
{
#if defined(__x86_64__)
  __asm__("addq %1, %0" : "+m"(*w) : "r"(d));
#else
  atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) + d, memory_order_relaxed);
#endif
}

/* Subtracts d (wrapping) from such a word. */
GS_QUOTA_INLINE void gs__own_sub(_Atomic uint64_t *w, uint64_t d)
{
#if defined(__x86_64__)
  __asm__("subq %1, %0" : "+m"(*w) : "r"(d));
#else
  atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) - d, memory_order_relaxed);
#endif
}

/* What the process holds on the lane's GPU moves by d: in the thread's own slot when it has
 * one, else in the process's. */
GS_QUOTA_INLINE void gs__slot_move(struct gs__lane *ln, uint64_t d)
{
  _Atomic uint64_t *mine = gs__tls.used;
  if (__builtin_expect(mine != NULL, 1))
    gs__own_add(&mine[ln->gpu], d);
  else
    atomic_fetch_add_explicit(ln->proc_used, d, memory_order_relaxed);
}

/* The tenant's part of a lane's charge: one compare-and-swap against the limit, and the peak.
 * False when it does not fit, and for 0 bytes (the full path then looks again, and may reap or
 * refuse). */
GS_QUOTA_INLINE bool gs__lane_take(struct gs__lane *ln, uint64_t bytes)
{
  uint64_t limit = atomic_load_explicit(ln->limit, memory_order_relaxed);
  uint64_t cur = atomic_load_explicit(ln->used, memory_order_relaxed), next;
  if (ln->cap < limit)
    limit = ln->cap;
  do {
    next = cur + bytes;
    if (next <= cur || next > limit) /* 0 bytes, a sum that wraps, or past the limit */
      return false;
  } while (!atomic_compare_exchange_weak_explicit(ln->used, &cur, next, memory_order_acq_rel,
                                                  memory_order_relaxed));
  if (__builtin_expect(gs__word_below(ln->peak, next), 0))
    gs__peak_raise(ln, next);
  return true;
}

/* The lane's charge: gs__lane_take, then one add to the process's or the thread's slot. */
GS_QUOTA_INLINE bool gs__lane_charge(struct gs__lane *ln, uint64_t bytes)
{
  if (!gs__lane_take(ln, bytes))
    return false;
  gs__slot_move(ln, bytes);
  return true;
}

/* The lane a map entry's charge was made through: open, since the charge went through it.
 * Every entry's GPU is below GS_LEDGER_MAX_GPUS and its bytes at most GS_CHARGE_MAX. */
GS_QUOTA_INLINE struct gs__lane *gs__lane_of(uint64_t charge)
{
  return (struct gs__lane *) ((char *) gs__lanes + (charge >> (56 - 6)));
}

/* Charges bytes on gpu to the tenant before the driver is asked for them. CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY past the limit (logged once), or CUDA_ERROR_NOT_PERMITTED when the
 * ledger is unreadable. Always succeeds when the process is no tenant. */
GS_QUOTA_INLINE CUresult gs__charge(int gpu, uint64_t bytes, const char *what)
{
  struct gs__lane *ln = gs__lane(gpu);
  if (__builtin_expect(ln && gs__lane_charge(ln, bytes), 1))
    return CUDA_SUCCESS;
  return gs__charge_slow(gpu, bytes, what);
}

/* gs__charge without the refusal's log line, for a caller with another way to try first;
 * gs__refuse then logs it (once per process) and returns CUDA_ERROR_OUT_OF_MEMORY. */
GS_QUOTA_INLINE CUresult gs__charge_quiet(int gpu, uint64_t bytes)
{
  struct gs__lane *ln = gs__lane(gpu);
  if (ln && gs__lane_charge(ln, bytes))
    return CUDA_SUCCESS;
  return gs__charge_quiet_slow(gpu, bytes);
}
CUresult gs__refuse(int gpu, uint64_t bytes, const char *what);
/* Charges without checking the limit: for putting back what a failed free had released. */
void gs__charge_force(int gpu, uint64_t bytes);

GS_QUOTA_INLINE void gs__lane_uncharge(struct gs__lane *ln, uint64_t bytes)
{
  gs__slot_move(ln, -bytes);
  atomic_fetch_sub_explicit(ln->used, bytes, memory_order_acq_rel);
}

GS_QUOTA_INLINE void gs__uncharge(int gpu, uint64_t bytes)
{
  struct gs__lane *ln = gs__lane(gpu);
  if (__builtin_expect(ln == NULL, 0))
    gs__uncharge_slow(gpu, bytes);
  else
    gs__lane_uncharge(ln, bytes);
}

/* Records what was charged for key; on failure (no memory for the map) returns false and the
 * caller undoes the allocation. */
GS_QUOTA_INLINE bool gs__remember(enum gs_map map, uint64_t key, uint64_t bytes, int gpu)
{
  if (__builtin_expect(gs__lane(gpu) != NULL, 1))
    return gs_ptrmap_put(&gs__maps[map], key, GS_CHARGE(bytes, gpu)) == 0;
  return gs__remember_slow(map, key, bytes, gpu);
}

/* Forgets key and gives back its charge. False when gpuslice never charged for it. */
GS_QUOTA_INLINE bool gs__forget(enum gs_map map, uint64_t key, uint64_t *charge)
{
  uint64_t v;
  if (__builtin_expect(!atomic_load_explicit(&gs__maps_live, memory_order_acquire), 0))
    return gs__forget_slow(map, key, charge);
  if (!gs_ptrmap_take(&gs__maps[map], key, &v))
    return false;
  gs__uncharge(GS_CHARGE_GPU(v), GS_CHARGE_BYTES(v));
  if (charge)
    *charge = v;
  return true;
}
/* What was charged for key, leaving it recorded. False when gpuslice never charged for it. */
bool gs__peek(enum gs_map map, uint64_t key, uint64_t *charge);

/* The raw maps, for values that are not charges; all false when the process is no tenant.
 * gs__map_add changes a value in place, atomically (see gs_ptrmap_add). */
bool gs__map_put(enum gs_map map, uint64_t key, uint64_t value);
bool gs__map_get(enum gs_map map, uint64_t key, uint64_t *value);
bool gs__map_take(enum gs_map map, uint64_t key, uint64_t *value);
bool gs__map_add(enum gs_map map, uint64_t key, int64_t delta, uint64_t *after);

/* The GPU the calling thread's current context is on, or -1. Cached per thread until
 * gs__ctx_changed: the thread's GPU plus one, 0 when not known. */
extern __thread int gs__tls_gpu __attribute__((tls_model("initial-exec")));
int gs__current_gpu_slow(void);
GS_QUOTA_INLINE int gs__current_gpu(void)
{
  int v = gs__tls_gpu;
  return __builtin_expect(v != 0, 1) ? v - 1 : gs__current_gpu_slow();
}
/* The calling thread's current context may have changed (the context hooks): forgets what was
 * cached about it, its GPU and its compute gate. */
void gs__ctx_changed(void);

/* The generation of the tenant's limits file (bumped by the daemon at every change), or of a
 * word that never moves when limits are the ledger's own. */
const _Atomic uint64_t *gs__limits_generation(void);

/* Forgets the primary contexts counted so far: a forked child has none of its own. */
void gs__ctx_after_fork(void);

/* Bytes each CUDA context is charged; 0 when the process is no tenant. */
uint64_t gs__context_reserve(void);

/* The tenant's limit on gpu as this process holds it (lowered by HAMi's or KAI's variables,
 * gpuslice/peer-limits.h), and the tenant's usage there. False when gpu is not limited. */
bool gs__limit(int gpu, uint64_t *limit, uint64_t *used);

/* The tenant's compute limit (millionths, 0 for none) and policy on gpu as this process
 * holds them: the ledger's (or the daemon's), lowered by CUDA_DEVICE_SM_LIMIT[_<i>] to a cap.
 * The compute gate reads these, never the ledger's getters. */
uint32_t gs__compute_limit_ppm(int gpu);
uint32_t gs__compute_policy(int gpu);

#endif
