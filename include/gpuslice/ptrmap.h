/* A concurrent hash map from device pointer to what was allocated there, for the interposer's
 * alloc/free bookkeeping.
 *
 * Put, get and take take no lock, make no syscall and allocate nothing in the common case:
 * one open-addressing table, claimed slot by slot with compare-and-swap. When the table is
 * half full of live and removed entries it is rebuilt at four times the live count; that
 * rare step briefly holds other operations back (they announce themselves in an `active`
 * counter and wait while `resizing` is set), which is what keeps every common operation a
 * few atomic instructions with no tombstone build-up under churn.
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
  _Atomic uint64_t claimed; /* slots no longer empty: live, removed or being written */
  struct gs_ptrmap_entry slot[];
};

struct gs_ptrmap {
  _Atomic(struct gs_ptrmap_table *) table;
  _Atomic int64_t active; /* operations inside the table right now */
  _Atomic bool resizing;
  _Atomic uint64_t live;
  pthread_mutex_t resize_lock;
};

/* Prepares an empty map sized for `initial` entries. Returns 0, or -1 with errno set. */
int gs_ptrmap_init(struct gs_ptrmap *m, uint64_t initial);
void gs_ptrmap_destroy(struct gs_ptrmap *m);

/* Records key -> value. Keys 0, 1 and 2 are reserved. Returns 0, or -1 (ENOMEM) when the
 * table must grow and cannot. */
int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t value);
/* Finds and removes key; true with *value filled if it was there. Of two concurrent removers
 * of one key, exactly one succeeds. */
bool gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *value);
bool gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *value);
/* Adds delta (wrapping) to the value of key in one atomic step, for counts kept per key;
 * true with *after set to the new value, false when key is not there. */
bool gs_ptrmap_add(struct gs_ptrmap *m, uint64_t key, int64_t delta, uint64_t *after);
uint64_t gs_ptrmap_count(struct gs_ptrmap *m);

#endif
