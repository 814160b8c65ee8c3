/* Concurrent pointer map for the interposer's bookkeeping; see ptrmap.h for the design. */
#include <gpuslice/ptrmap.h>

#include <errno.h>
#include <sched.h>
#include <sys/mman.h>

#define KEY_EMPTY 0ULL
#define KEY_GONE 1ULL
#define KEY_BUSY 2ULL
#define MIN_CAP 64ULL

/* Device pointers are aligned, so their low bits carry little: mix before masking. */
static inline uint64_t mix(uint64_t k)
{
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

static size_t table_bytes(uint64_t cap)
{
  return sizeof(struct gs_ptrmap_table) + cap * sizeof(struct gs_ptrmap_entry);
}

/* mmap rather than malloc: zeroed pages, and nothing taken from the host's allocator. */
static struct gs_ptrmap_table *table_new(uint64_t want)
{
  uint64_t cap = MIN_CAP;
  while (cap < want)
    cap <<= 1;
  struct gs_ptrmap_table *t =
    mmap(NULL, table_bytes(cap), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (t == MAP_FAILED)
    return NULL;
  t->mask = cap - 1;
  return t;
}

static void table_free(struct gs_ptrmap_table *t)
{
  munmap(t, table_bytes(t->mask + 1));
}

int gs_ptrmap_init(struct gs_ptrmap *m, uint64_t initial)
{
  struct gs_ptrmap_table *t = table_new(initial * 2);
  if (!t)
    return -1;
  atomic_init(&m->table, t);
  atomic_init(&m->active, 0);
  atomic_init(&m->resizing, false);
  atomic_init(&m->live, 0);
  pthread_mutex_init(&m->resize_lock, NULL);
  return 0;
}

void gs_ptrmap_destroy(struct gs_ptrmap *m)
{
  table_free(atomic_load(&m->table));
  pthread_mutex_destroy(&m->resize_lock);
}

/* Announces an operation; waits only while a rebuild is under way. The increment and the
 * flag check pair with the rebuilder's flag store and count check (both sequentially
 * consistent), so either the operation sees the flag or the rebuilder sees the operation. */
static struct gs_ptrmap_table *enter(struct gs_ptrmap *m)
{
  for (;;) {
    atomic_fetch_add(&m->active, 1);
    if (!atomic_load(&m->resizing))
      return atomic_load_explicit(&m->table, memory_order_acquire);
    atomic_fetch_sub(&m->active, 1);
    while (atomic_load(&m->resizing))
      sched_yield();
  }
}

static void leave(struct gs_ptrmap *m)
{
  atomic_fetch_sub_explicit(&m->active, 1, memory_order_release);
}

enum put_result { PUT_DONE, PUT_FULL };

static enum put_result table_put(struct gs_ptrmap_table *t, uint64_t key, uint64_t value)
{
  uint64_t i = mix(key) & t->mask;
  for (uint64_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
    struct gs_ptrmap_entry *e = &t->slot[i];
    uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    if (k != KEY_EMPTY && k != KEY_GONE)
      continue;
    if (k == KEY_EMPTY &&
        atomic_load_explicit(&t->claimed, memory_order_relaxed) * 2 >= t->mask + 1)
      return PUT_FULL; /* half claimed: rebuild rather than lengthen probe chains */
    /* Claim the slot before writing the value, so two writers never share one slot. */
    if (!atomic_compare_exchange_strong_explicit(&e->key, &k, KEY_BUSY, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    if (k == KEY_EMPTY)
      atomic_fetch_add_explicit(&t->claimed, 1, memory_order_relaxed);
    atomic_store_explicit(&e->value, value, memory_order_relaxed);
    atomic_store_explicit(&e->key, key, memory_order_release);
    return PUT_DONE;
  }
  return PUT_FULL;
}

static struct gs_ptrmap_entry *table_find(struct gs_ptrmap_table *t, uint64_t key)
{
  uint64_t i = mix(key) & t->mask;
  for (uint64_t p = 0; p <= t->mask; p++, i = (i + 1) & t->mask) {
    uint64_t k = atomic_load_explicit(&t->slot[i].key, memory_order_acquire);
    if (k == key)
      return &t->slot[i];
    if (k == KEY_EMPTY)
      return NULL;
  }
  return NULL;
}

/* Rebuilds the table at four times the live count, once no operation is inside it. */
static int rebuild(struct gs_ptrmap *m, struct gs_ptrmap_table *full)
{
  int rc = 0;
  pthread_mutex_lock(&m->resize_lock);
  if (atomic_load(&m->table) != full)
    goto out; /* someone rebuilt it while we waited */
  atomic_store(&m->resizing, true);
  while (atomic_load(&m->active) != 0)
    sched_yield();
  uint64_t live = 0;
  for (uint64_t i = 0; i <= full->mask; i++)
    live += atomic_load(&full->slot[i].key) > KEY_BUSY;
  struct gs_ptrmap_table *t = table_new(live * 4);
  if (!t) {
    errno = ENOMEM;
    rc = -1;
  } else {
    for (uint64_t i = 0; i <= full->mask; i++) {
      uint64_t k = atomic_load(&full->slot[i].key);
      if (k > KEY_BUSY)
        table_put(t, k, atomic_load(&full->slot[i].value));
    }
    atomic_store(&m->table, t);
    table_free(full);
  }
  atomic_store(&m->resizing, false);
out:
  pthread_mutex_unlock(&m->resize_lock);
  return rc;
}

int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t value)
{
  for (;;) {
    struct gs_ptrmap_table *t = enter(m);
    enum put_result r = table_put(t, key, value);
    leave(m);
    if (r == PUT_DONE) {
      atomic_fetch_add_explicit(&m->live, 1, memory_order_relaxed);
      return 0;
    }
    if (rebuild(m, t) < 0)
      return -1;
  }
}

bool gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *value)
{
  struct gs_ptrmap_entry *e = table_find(enter(m), key);
  if (e)
    *value = atomic_load_explicit(&e->value, memory_order_relaxed);
  leave(m);
  return e != NULL;
}

bool gs_ptrmap_add(struct gs_ptrmap *m, uint64_t key, int64_t delta, uint64_t *after)
{
  struct gs_ptrmap_entry *e = table_find(enter(m), key);
  if (e)
    *after = atomic_fetch_add_explicit(&e->value, (uint64_t) delta, memory_order_acq_rel) +
      (uint64_t) delta;
  leave(m);
  return e != NULL;
}

bool gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *value)
{
  bool ok = false;
  struct gs_ptrmap_entry *e = table_find(enter(m), key);
  if (e) {
    uint64_t v = atomic_load_explicit(&e->value, memory_order_relaxed);
    uint64_t k = key;
    /* Of two concurrent removers, the compare-and-swap lets exactly one through. */
    ok = atomic_compare_exchange_strong_explicit(&e->key, &k, KEY_GONE, memory_order_acq_rel,
                                                 memory_order_relaxed);
    if (ok)
      *value = v;
  }
  leave(m);
  if (ok)
    atomic_fetch_sub_explicit(&m->live, 1, memory_order_relaxed);
  return ok;
}

uint64_t gs_ptrmap_count(struct gs_ptrmap *m)
{
  return atomic_load_explicit(&m->live, memory_order_relaxed);
}
