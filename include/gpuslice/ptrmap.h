/* A concurrent hash map from device pointer to what was allocated there, for the interposer's
 * alloc/free bookkeeping.
 *
 * Put, get and take take no lock, make no syscall and allocate nothing in the common case:
 * one open-addressing table with linear probing, each slot claimed with compare-and-swap. A
 * removed entry leaves its slot empty, and a put takes the first empty slot from the key's
 * home, so churn at a steady count never fills the table with tombstones; a lookup goes no
 * further than the longest probe any put has made into the table (its reach), so a miss costs
 * a few probes however much churn the table has seen.
 *
 * A slot's key is held at BUSY by whoever changes the slot: a put while it writes the value, a
 * take while it reads it, the rebuild while it copies it. Nothing else writes a slot, so a
 * value read under the hold belongs to the key that was there (no ABA on the value).
 *
 * When a put would have to probe further than GS_PTRMAP_REACH_MAX, the table grows: under a
 * mutex, a rebuild moves every slot into a table at least twice as large, marking each one
 * MOVED as it goes (a live key is held BUSY, copied, then marked), and then publishes the new
 * table. An operation that meets a MOVED or BUSY slot waits for that and starts again on the
 * new table; one that met neither was done before its slot moved, and is carried over. Old
 * tables are only ever marked, never reused or unmapped before gs_ptrmap_destroy, so an
 * operation that loaded the table pointer just before a rebuild never needs announcing: no
 * counter, no lock and no fence on the common path. They cost at most as much memory again
 * as the current table, since each is at most half its successor.
 *
 * Keys 0 to 2 are reserved (device pointers, handles and host addresses never are).
 *
 * Depends on libc alone: it is linked into the interposer. */
#ifndef GS_PTRMAP_H
#define GS_PTRMAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* 16-byte aligned, like the table's slots, so that a slot's address is one shift and one
 * add from its index. */
struct __attribute__((aligned(16))) gs_ptrmap_entry {
  _Atomic uint64_t key; /* GS_PTRMAP_EMPTY, _BUSY, _MOVED, else the key */
  _Atomic uint64_t value;
};
_Static_assert(sizeof(struct gs_ptrmap_entry) == 16, "gs__ptrmap_home shifts by 4");

struct gs_ptrmap_table {
  uint64_t mask;                 /* capacity - 1; capacity is a power of two */
  unsigned shift;                /* 64 - log2(capacity): a key's home is its hash's top bits */
  _Atomic uint32_t reach;        /* the longest probe a put has made into this table */
  struct gs_ptrmap_table *older; /* the table this one replaced, kept until destroy */
  struct gs_ptrmap_entry slot[];
};

struct gs_ptrmap {
  _Atomic(struct gs_ptrmap_table *) table;
  pthread_mutex_t grow_lock; /* one rebuild at a time */
};

/* Prepares an empty map sized for `initial` entries. Returns 0, or -1 with errno set. */
int gs_ptrmap_init(struct gs_ptrmap *m, uint64_t initial);
/* Unmaps every table the map has had; no operation may be under way. */
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
#define GS_PTRMAP_BUSY 1ULL
#define GS_PTRMAP_MOVED 2ULL
/* A put that would probe further grows the table instead. */
#define GS_PTRMAP_REACH_MAX 32u

/* The full paths, in ptrmap.c: every case the inline ones below do not finish at the key's
 * home slot (probing on, waiting out a hold or a rebuild, growing). */
int gs__ptrmap_put_slow(struct gs_ptrmap *m, uint64_t key, uint64_t value);
bool gs__ptrmap_take_slow(struct gs_ptrmap *m, uint64_t key, uint64_t *value);

/* A key's home slot: the top bits of the key times 2^64 / phi (Fibonacci hashing). Device
 * pointers are aligned, so their low bits carry little; the product's top bits depend on all
 * of them. */
GS_PTRMAP_INLINE struct gs_ptrmap_entry *gs__ptrmap_home(struct gs_ptrmap_table *t, uint64_t k)
{
  /* Written as a byte offset: GCC then folds the slots' offset into one address computation. */
  return (struct gs_ptrmap_entry *) ((char *) t->slot +
                                     (((k * 0x9e3779b97f4a7c15ULL) >> t->shift) << 4));
}

GS_PTRMAP_INLINE struct gs_ptrmap_table *gs__ptrmap_table(struct gs_ptrmap *m)
{
  return atomic_load_explicit(&m->table, memory_order_acquire);
}

/* Records key -> value. Returns 0, or -1 (ENOMEM) when the table must grow and cannot. The
 * common case: the key's home slot is empty, and is claimed at once. */
GS_PTRMAP_INLINE int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t value)
{
  struct gs_ptrmap_entry *e = gs__ptrmap_home(gs__ptrmap_table(m), key);
  uint64_t k = GS_PTRMAP_EMPTY;
  if (__builtin_expect(atomic_compare_exchange_strong_explicit(
                         &e->key, &k, GS_PTRMAP_BUSY, memory_order_acquire, memory_order_relaxed),
                       1)) {
    atomic_store_explicit(&e->value, value, memory_order_relaxed);
    atomic_store_explicit(&e->key, key, memory_order_release);
    return 0;
  }
  return gs__ptrmap_put_slow(m, key, value);
}

/* Finds and removes key; true with *value filled if it was there. Of two concurrent removers
 * of one key, the compare-and-swap lets exactly one through. The common case: the key is in
 * its home slot, held at once. */
GS_PTRMAP_INLINE bool gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *value)
{
  struct gs_ptrmap_entry *e = gs__ptrmap_home(gs__ptrmap_table(m), key);
  uint64_t k = key;
  if (__builtin_expect(atomic_compare_exchange_strong_explicit(
                         &e->key, &k, GS_PTRMAP_BUSY, memory_order_acquire, memory_order_relaxed),
                       1)) {
    *value = atomic_load_explicit(&e->value, memory_order_relaxed);
    atomic_store_explicit(&e->key, GS_PTRMAP_EMPTY, memory_order_release);
    return true;
  }
  return gs__ptrmap_take_slow(m, key, value);
}

#endif
