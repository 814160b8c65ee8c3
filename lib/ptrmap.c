/* Concurrent pointer map for the interposer's bookkeeping; see ptrmap.h for the design. */
#include <gpuslice/ptrmap.h>

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#define KEY_BUSY GS_PTRMAP_BUSY
#define MIN_CAP 64ULL

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
  t->shift = 64 - (unsigned) __builtin_ctzll(cap);
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
  m->min_mask = t->mask;
  m->spare = NULL;
  pthread_mutex_init(&m->resize_lock, NULL);
  return 0;
}

void gs_ptrmap_destroy(struct gs_ptrmap *m)
{
  table_free(atomic_load(&m->table));
  if (m->spare)
    table_free(m->spare);
  pthread_mutex_destroy(&m->resize_lock);
}

/* A rebuild is under way: steps back out and waits for it, then announces itself again. */
struct gs_ptrmap_table *gs__ptrmap_enter_wait(struct gs_ptrmap *m)
{
  for (;;) {
    atomic_fetch_sub(&m->active, 1);
    while (atomic_load(&m->resizing))
      sched_yield();
    atomic_fetch_add(&m->active, 1);
    if (!atomic_load(&m->resizing))
      return atomic_load_explicit(&m->table, memory_order_acquire);
  }
}

static uint64_t live_in(struct gs_ptrmap_table *t)
{
  uint64_t live = 0;
  for (uint64_t i = 0; i <= t->mask; i++)
    live += atomic_load(&t->slot[i].key) > KEY_BUSY;
  return live;
}

/* A table for at least want entries: the spare one, wiped, when it is the size wanted (the
 * common case, a table full of removed entries rebuilt at its own size: no system call). */
static struct gs_ptrmap_table *table_for(struct gs_ptrmap *m, uint64_t want)
{
  uint64_t cap = m->min_mask + 1;
  while (cap < want)
    cap <<= 1;
  struct gs_ptrmap_table *t = m->spare;
  if (t && t->mask + 1 == cap) {
    m->spare = NULL;
    memset(t->slot, 0, cap * sizeof(t->slot[0])); /* mask and shift stay: the same size */
    atomic_store(&t->claimed, 0);
    return t;
  }
  return table_new(cap);
}

/* Rebuilds the table at four times the live count (never below its first size), once no
 * operation is inside it; the old table is kept as the next rebuild's spare. */
static int rebuild(struct gs_ptrmap *m, struct gs_ptrmap_table *full)
{
  int rc = 0;
  pthread_mutex_lock(&m->resize_lock);
  if (atomic_load(&m->table) != full)
    goto out; /* someone rebuilt it while we waited */
  atomic_store(&m->resizing, true);
  while (atomic_load(&m->active) != 0)
    sched_yield();
  struct gs_ptrmap_table *t = table_for(m, live_in(full) * 4);
  if (!t) {
    errno = ENOMEM;
    rc = -1;
  } else {
    for (uint64_t i = 0; i <= full->mask; i++) {
      uint64_t k = atomic_load(&full->slot[i].key);
      if (k > KEY_BUSY)
        gs__ptrmap_table_put(t, k, atomic_load(&full->slot[i].value));
    }
    atomic_store(&m->table, t);
    if (m->spare)
      table_free(m->spare);
    m->spare = full;
  }
  atomic_store(&m->resizing, false);
out:
  pthread_mutex_unlock(&m->resize_lock);
  return rc;
}

int gs__ptrmap_put_rebuild(struct gs_ptrmap *m, struct gs_ptrmap_table *full, uint64_t key,
                           uint64_t value)
{
  for (;;) {
    if (rebuild(m, full) < 0)
      return -1;
    full = gs__ptrmap_enter(m);
    bool done = gs__ptrmap_table_put(full, key, value);
    gs__ptrmap_leave(m);
    if (done)
      return 0;
  }
}

bool gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *value)
{
  struct gs_ptrmap_entry *e = gs__ptrmap_table_find(gs__ptrmap_enter(m), key);
  if (e)
    *value = atomic_load_explicit(&e->value, memory_order_relaxed);
  gs__ptrmap_leave(m);
  return e != NULL;
}

bool gs_ptrmap_add(struct gs_ptrmap *m, uint64_t key, int64_t delta, uint64_t *after)
{
  struct gs_ptrmap_entry *e = gs__ptrmap_table_find(gs__ptrmap_enter(m), key);
  if (e)
    *after = atomic_fetch_add_explicit(&e->value, (uint64_t) delta, memory_order_acq_rel) +
      (uint64_t) delta;
  gs__ptrmap_leave(m);
  return e != NULL;
}

uint64_t gs_ptrmap_count(struct gs_ptrmap *m)
{
  uint64_t n = live_in(gs__ptrmap_enter(m));
  gs__ptrmap_leave(m);
  return n;
}
