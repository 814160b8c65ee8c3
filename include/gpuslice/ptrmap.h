/* A concurrent hash map from device pointer to what was allocated there, for the interposer's
 * alloc/free bookkeeping.
 *
 * Put, get and take take no lock, make no syscall and allocate nothing in the common case:
 * one open-addressing table, claimed slot by slot with compare-and-swap. When the table is
 * half full of live and removed entries it is rebuilt at four times the live count, never
 * below its first size, into the table the last rebuild left (so that churn at a steady count
 * rebuilds with no system call); that rare step briefly holds other operations back (they
 * announce themselves in an `active` counter and wait while `resizing` is set), which is what
 * keeps every common operation a few atomic instructions with no tombstone build-up under
 * churn.
 *
 * Depends on libc alone: it is linked into the interposer. */
#ifndef GS_PTRMAP_H
#define GS_PTRMAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct gs_ptrmap_entry {
  _Atomic uint64_t key; /* 0 empty, 1 removed, 2 being written, else the pointer */
  _Atomic uint64_t value;
};

struct gs_ptrmap_table {
  uint64_t mask;            /* capacity - 1; capacity is a power of two */
  unsigned shift;           /* 64 - log2(capacity): a key's home slot is in its hash's top bits */
  _Atomic uint64_t claimed; /* slots no longer empty: live, removed or being written */
  struct gs_ptrmap_entry slot[];
};

struct gs_ptrmap {
  _Atomic(struct gs_ptrmap_table *) table;
  _Atomic int64_t active; /* operations inside the table right now */
  _Atomic bool resizing;
  uint64_t min_mask;             /* the first table's: rebuilds never go below it */
  struct gs_ptrmap_table *spare; /* the table the last rebuild left, under resize_lock */
  pthread_mutex_t resize_lock;
};

/* Prepares an empty map sized for `initial` entries. Returns 0, or -1 with errno set. */
int gs_ptrmap_init(struct gs_ptrmap *m, uint64_t initial);
void gs_ptrmap_destroy(struct gs_ptrmap *m);

bool gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *value);
/* Adds delta (wrapping) to the value of key in one atomic step, for counts kept per key;
 * true with *after set to the new value, false when key is not there. */
bool gs_ptrmap_add(struct gs_ptrmap *m, uint64_t key, int64_t delta, uint64_t *after);
/* The entries in the map: a scan of the table, for tests and reports, not for hot paths. */
uint64_t gs_ptrmap_count(struct gs_ptrmap *m);

/* ---- put and take, inline: they are on the interposer's alloc/free path ---- */

/* Inlined whatever the compiler's estimate: this is the allocation path. */
#define GS_PTRMAP_INLINE static inline __attribute__((always_inline))

#define GS_PTRMAP_EMPTY 0ULL
#define GS_PTRMAP_GONE 1ULL
#define GS_PTRMAP_BUSY 2ULL

/* What put and take fall back on, in ptrmap.c: waiting out a rebuild, and rebuilding a table
 * that has no room left. */
struct gs_ptrmap_table *gs__ptrmap_enter_wait(struct gs_ptrmap *m);
int gs__ptrmap_put_rebuild(struct gs_ptrmap *m, struct gs_ptrmap_table *full, uint64_t key,
                           uint64_t value);

/* A key's home slot: the top bits of the key times 2^64 / phi (Fibonacci hashing). Device
 * pointers are aligned, so their low bits carry little; the product's top bits depend on all
 * of them. */
GS_PTRMAP_INLINE uint64_t gs__ptrmap_home(const struct gs_ptrmap_table *t, uint64_t k)
{
  return (k * 0x9e3779b97f4a7c15ULL) >> t->shift;
}

/* Announces an operation; waits only while a rebuild is under way. The increment and the
 * flag check pair with the rebuilder's flag store and count check (both sequentially
 * consistent), so either the operation sees the flag or the rebuilder sees the operation. */
GS_PTRMAP_INLINE struct gs_ptrmap_table *gs__ptrmap_enter(struct gs_ptrmap *m)
{
  atomic_fetch_add(&m->active, 1);
  if (__builtin_expect(!atomic_load(&m->resizing), 1))
    return atomic_load_explicit(&m->table, memory_order_acquire);
  return gs__ptrmap_enter_wait(m);
}

GS_PTRMAP_INLINE void gs__ptrmap_leave(struct gs_ptrmap *m)
{
  atomic_fetch_sub_explicit(&m->active, 1, memory_order_release);
}

/* Into t: true when done; false when the table should be rebuilt first (half its slots
 * claimed, or no slot free). Claims the slot before writing the value, so that two writers
 * never share one. */
GS_PTRMAP_INLINE bool gs__ptrmap_table_put(struct gs_ptrmap_table *t, uint64_t key, uint64_t value)
{
  uint64_t i = gs__ptrmap_home(t, key);
  for (uint64_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
    struct gs_ptrmap_entry *e = &t->slot[i];
    uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    if (k > GS_PTRMAP_GONE)
      continue;
    if (k == GS_PTRMAP_EMPTY &&
        atomic_load_explicit(&t->claimed, memory_order_relaxed) * 2 >= t->mask + 1)
      return false; /* half claimed: rebuild rather than lengthen probe chains */
    if (!atomic_compare_exchange_strong_explicit(&e->key, &k, GS_PTRMAP_BUSY, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    if (k == GS_PTRMAP_EMPTY)
      atomic_fetch_add_explicit(&t->claimed, 1, memory_order_relaxed);
    atomic_store_explicit(&e->value, value, memory_order_relaxed);
    atomic_store_explicit(&e->key, key, memory_order_release);
    return true;
  }
  return false;
}

GS_PTRMAP_INLINE struct gs_ptrmap_entry *gs__ptrmap_table_find(struct gs_ptrmap_table *t,
                                                               uint64_t key)
{
  uint64_t i = gs__ptrmap_home(t, key);
  for (uint64_t p = 0; p <= t->mask; p++, i = (i + 1) & t->mask) {
    uint64_t k = atomic_load_explicit(&t->slot[i].key, memory_order_acquire);
    if (k == key)
      return &t->slot[i];
    if (k == GS_PTRMAP_EMPTY)
      return NULL;
  }
  return NULL;
}

/* Records key -> value. Keys 0, 1 and 2 are reserved. Returns 0, or -1 (ENOMEM) when the
 * table must grow and cannot. */
GS_PTRMAP_INLINE int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t value)
{
  struct gs_ptrmap_table *t = gs__ptrmap_enter(m);
  bool done = gs__ptrmap_table_put(t, key, value);
  gs__ptrmap_leave(m);
  return __builtin_expect(done, 1) ? 0 : gs__ptrmap_put_rebuild(m, t, key, value);
}

/* Finds and removes key; true with *value filled if it was there. Of two concurrent removers
 * of one key, the compare-and-swap lets exactly one through. */
GS_PTRMAP_INLINE bool gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *value)
{
  bool ok = false;
  struct gs_ptrmap_entry *e = gs__ptrmap_table_find(gs__ptrmap_enter(m), key);
  if (e) {
    uint64_t v = atomic_load_explicit(&e->value, memory_order_relaxed), k = key;
    ok = atomic_compare_exchange_strong_explicit(&e->key, &k, GS_PTRMAP_GONE, memory_order_acq_rel,
                                                 memory_order_relaxed);
    if (ok)
      *value = v;
  }
  gs__ptrmap_leave(m);
  return ok;
}

#endif
