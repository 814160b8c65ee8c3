/* Concurrent pointer map for the interposer's bookkeeping; see ptrmap.h for the design. */
#include <gpuslice/ptrmap.h>

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mman.h>

#define EMPTY GS_PTRMAP_EMPTY
#define BUSY GS_PTRMAP_BUSY
#define MOVED GS_PTRMAP_MOVED
#define MIN_CAP 64ULL

static size_t table_bytes(uint64_t cap)
{
  return sizeof(struct gs_ptrmap_table) + cap * sizeof(struct gs_ptrmap_entry);
}

/* mmap rather than malloc: zeroed pages (every slot EMPTY), and nothing taken from the host's
 * allocator. */
_Static_assert(offsetof(struct gs_ptrmap_table, slot) == 32,
               "a slot is an index shift from the table");
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
  t->shift = 64 - (unsigned) __builtin_ctzll(cap);
  return t;
}

int gs_ptrmap_init(struct gs_ptrmap *m, uint64_t initial)
{
  struct gs_ptrmap_table *t = table_new(initial * 2);
  if (!t)
    return -1;
  atomic_init(&m->table, t);
  pthread_mutex_init(&m->grow_lock, NULL);
  return 0;
}

void gs_ptrmap_destroy(struct gs_ptrmap *m)
{
  struct gs_ptrmap_table *t = atomic_load(&m->table);
  while (t) {
    struct gs_ptrmap_table *older = t->older;
    munmap(t, table_bytes(t->mask + 1));
    t = older;
  }
  pthread_mutex_destroy(&m->grow_lock);
}

static struct gs_ptrmap_entry *next(struct gs_ptrmap_table *t, struct gs_ptrmap_entry *e)
{
  return &t->slot[(uint64_t) (e - t->slot + 1) & t->mask];
}

/* The slot's key once nobody holds it. */
static uint64_t settled(struct gs_ptrmap_entry *e)
{
  uint64_t k;
  while ((k = atomic_load_explicit(&e->key, memory_order_acquire)) == BUSY)
    sched_yield();
  return k;
}

/* t was met moving: waits until the rebuild has published its successor. */
static struct gs_ptrmap_table *after_move(struct gs_ptrmap *m, struct gs_ptrmap_table *t)
{
  struct gs_ptrmap_table *n;
  while ((n = gs__ptrmap_table(m)) == t)
    sched_yield();
  return n;
}

/* Lookups stop after reach probes: a put raises it before it claims a slot that far. */
static void raise_reach(struct gs_ptrmap_table *t, uint32_t probe)
{
  uint32_t r = atomic_load_explicit(&t->reach, memory_order_relaxed);
  while (probe > r &&
         !atomic_compare_exchange_weak_explicit(&t->reach, &r, probe, memory_order_release,
                                                memory_order_relaxed))
    ;
}

enum put_result { PUT_DONE, PUT_MOVED, PUT_TOO_FAR };

/* Into t, no further than `limit` probes from the key's home. */
static enum put_result table_put(struct gs_ptrmap_table *t, uint64_t key, uint64_t value,
                                 uint64_t limit)
{
  struct gs_ptrmap_entry *e = gs__ptrmap_home(t, key);
  for (uint64_t p = 0; p <= limit && p <= t->mask; p++, e = next(t, e)) {
    uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    while (k == EMPTY) {
      raise_reach(t, (uint32_t) p);
      if (atomic_compare_exchange_weak_explicit(&e->key, &k, BUSY, memory_order_acquire,
                                                memory_order_acquire)) {
        atomic_store_explicit(&e->value, value, memory_order_relaxed);
        atomic_store_explicit(&e->key, key, memory_order_release);
        return PUT_DONE;
      }
    }
    if (k == MOVED)
      return PUT_MOVED;
  }
  return PUT_TOO_FAR;
}

/* The slot of t holding key, or NULL: absent from t, or *moved when the search met a slot
 * already moved (search t's successor). */
static struct gs_ptrmap_entry *find(struct gs_ptrmap_table *t, uint64_t key, bool *moved)
{
  struct gs_ptrmap_entry *e = gs__ptrmap_home(t, key);
  uint32_t reach = atomic_load_explicit(&t->reach, memory_order_acquire);
  *moved = false;
  for (uint32_t p = 0; p <= reach; p++, e = next(t, e)) {
    uint64_t k = settled(e);
    if (k == key)
      return e;
    if (k == MOVED) {
      *moved = true;
      return NULL;
    }
  }
  return NULL;
}

/* The slot holding key, held BUSY by the caller, in whichever table holds it now; NULL when
 * the map does not hold key. */
static struct gs_ptrmap_entry *hold(struct gs_ptrmap *m, uint64_t key)
{
  struct gs_ptrmap_table *t = gs__ptrmap_table(m);
  for (;;) {
    bool moved;
    struct gs_ptrmap_entry *e = find(t, key, &moved);
    if (e) {
      uint64_t k = key;
      if (atomic_compare_exchange_strong_explicit(&e->key, &k, BUSY, memory_order_acquire,
                                                  memory_order_relaxed))
        return e;
      continue; /* taken or moved meanwhile: look again */
    }
    if (!moved)
      return NULL;
    t = after_move(m, t);
  }
}

static uint64_t live_in(struct gs_ptrmap_table *t)
{
  uint64_t live = 0;
  for (uint64_t i = 0; i <= t->mask; i++)
    live += atomic_load(&t->slot[i].key) > MOVED;
  return live;
}

/* Marks every slot of `from` MOVED, copying each live one into `to` first (held meanwhile). */
static void move_all(struct gs_ptrmap_table *from, struct gs_ptrmap_table *to)
{
  for (uint64_t i = 0; i <= from->mask; i++) {
    struct gs_ptrmap_entry *e = &from->slot[i];
    for (;;) {
      uint64_t k = settled(e);
      if (k == EMPTY) {
        if (atomic_compare_exchange_strong(&e->key, &k, MOVED))
          break;
      } else if (atomic_compare_exchange_strong(&e->key, &k, BUSY)) {
        table_put(to, k, atomic_load_explicit(&e->value, memory_order_relaxed), to->mask);
        atomic_store_explicit(&e->key, MOVED, memory_order_release);
        break;
      }
    }
  }
}

/* Replaces full with a table at least twice its size and four times its live entries; does
 * nothing when another thread replaced it first. */
static int grow(struct gs_ptrmap *m, struct gs_ptrmap_table *full)
{
  int rc = 0;
  pthread_mutex_lock(&m->grow_lock);
  if (gs__ptrmap_table(m) == full) {
    uint64_t want = 2 * (full->mask + 1), live4 = 4 * live_in(full);
    struct gs_ptrmap_table *t = table_new(live4 > want ? live4 : want);
    if (!t) {
      errno = ENOMEM;
      rc = -1;
    } else {
      move_all(full, t);
      t->older = full;
      atomic_store_explicit(&m->table, t, memory_order_release);
    }
  }
  pthread_mutex_unlock(&m->grow_lock);
  return rc;
}

int gs__ptrmap_put_slow(struct gs_ptrmap *m, uint64_t key, uint64_t value)
{
  struct gs_ptrmap_table *t = gs__ptrmap_table(m);
  for (;;) {
    switch (table_put(t, key, value, GS_PTRMAP_REACH_MAX)) {
    case PUT_DONE: return 0;
    case PUT_MOVED: t = after_move(m, t); break;
    case PUT_TOO_FAR:
      if (grow(m, t) < 0)
        return -1;
      t = gs__ptrmap_table(m);
      break;
    }
  }
}

/* The value under key, and the slot let go as `after`: EMPTY for a take, key again for a get.
 * False when the map does not hold key. */
static bool read_and_let_go(struct gs_ptrmap *m, uint64_t key, uint64_t after, uint64_t *value)
{
  struct gs_ptrmap_entry *e = hold(m, key);
  if (!e)
    return false;
  *value = atomic_load_explicit(&e->value, memory_order_relaxed);
  atomic_store_explicit(&e->key, after, memory_order_release);
  return true;
}

bool gs__ptrmap_take_slow(struct gs_ptrmap *m, uint64_t key, uint64_t *value)
{
  return read_and_let_go(m, key, EMPTY, value);
}

bool gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *value)
{
  return read_and_let_go(m, key, key, value);
}

bool gs_ptrmap_add(struct gs_ptrmap *m, uint64_t key, int64_t delta, uint64_t *after)
{
  struct gs_ptrmap_entry *e = hold(m, key);
  if (!e)
    return false;
  uint64_t v = atomic_load_explicit(&e->value, memory_order_relaxed) + (uint64_t) delta;
  atomic_store_explicit(&e->value, v, memory_order_relaxed);
  atomic_store_explicit(&e->key, key, memory_order_release);
  *after = v;
  return true;
}

uint64_t gs_ptrmap_count(struct gs_ptrmap *m)
{
  return live_in(gs__ptrmap_table(m));
}
