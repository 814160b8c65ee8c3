/* The tenant ledger in shared memory as the tenant's own processes use it: creating and
 * attaching (through the mapper in shm.c), process slots, and charging; see gs-ledger.h for
 * what it holds and why. Reading a ledger from outside the tenant is in ledger-read.c. */
#include <gpuslice/tenant-ledger.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/env.h>
#include <gpuslice/fs.h>
#include <gpuslice/limits.h>
#include <gpuslice/proc.h>
#include "ledger-internal.h"

const char *gs_ledger_state_dir(void)
{
  static char buf[4096];
  const char *dir = gs_getenv_nonempty("GPUSLICE_STATE_DIR");
  const char *xdg = gs_getenv_nonempty("XDG_RUNTIME_DIR");
  if (dir)
    snprintf(buf, sizeof(buf), "%s", dir);
  else if (geteuid() == 0)
    snprintf(buf, sizeof(buf), "/run/gpuslice");
  else if (xdg)
    snprintf(buf, sizeof(buf), "%s/gpuslice", xdg);
  else
    snprintf(buf, sizeof(buf), "/tmp/gpuslice-%u", (unsigned) geteuid());
  return buf;
}

bool gs_ledger_state_dir_is_per_user(const char *dir)
{
  return !gs_getenv_nonempty("GPUSLICE_STATE_DIR") && geteuid() != 0 &&
    strcmp(dir, gs_ledger_state_dir()) == 0;
}

int gs_ledger_state_dir_check(const char *dir, gs_error_t *err)
{
  return gs_dir_check_safe(dir, gs_ledger_state_dir_is_per_user(dir), err);
}

int gs_ledger_state_dir_make(const char *dir, gs_error_t *err)
{
  if (gs_mkdir_p(dir, gs_ledger_state_dir_is_per_user(dir) ? 0700 : 0755, err) < 0)
    return -1;
  return gs_ledger_state_dir_check(dir, err);
}

bool gs_ledger_name_valid(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || n >= GS_LEDGER_NAME_MAX || name[0] == '.')
    return false;
  return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

const struct gs__shm_layout gs__ledger_shm = {
  "tenant ledger",
  GS_LEDGER_MAGIC,
  GS_LEDGER_VERSION,
  sizeof(struct gs_ledger),
};

int gs__ledger_path(char *buf, size_t len, const char *dir, const char *name, gs_error_t *err)
{
  if (!gs_ledger_name_valid(name))
    return gs_make_error(err, 0, "bad tenant name '%s' (want 1-63 of A-Z a-z 0-9 . _ -)", name);
  if ((size_t) snprintf(buf, len, "%s/tenants/%s", dir, name) >= len)
    return gs_make_error(err, ENAMETOOLONG, "tenant path under '%s'", dir);
  return 0;
}

int gs_ledger_attach(const char *dir, const char *name, struct gs_ledger **out, gs_error_t *err)
{
  char path[4096];
  if (gs__ledger_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  return gs__shm_open(path, &gs__ledger_shm, GS__SHM_WRITE | GS__SHM_PROC_LINK, (void **) out, NULL,
                      err);
}

void gs_ledger_detach(struct gs_ledger *l)
{
  gs__shm_close(l, &gs__ledger_shm);
}

static void fill(struct gs_ledger *l, const struct gs_ledger_spec *spec)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  l->version = GS_LEDGER_VERSION;
  l->size = sizeof(*l);
  snprintf(l->name, sizeof(l->name), "%s", spec->name);
  snprintf(l->labels, sizeof(l->labels), "%s", spec->labels ? spec->labels : "");
  l->owner_pid = getpid();
  atomic_init(&l->slots_used, GS_SLOTS_KNOWN);
  l->owner_start_time = gs_proc_start_time(getpid());
  l->created_unix_ns = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
  l->context_reserve_bytes = spec->context_reserve_bytes;
  atomic_init(&l->compute.limit_ppm, spec->compute_ppm);
  atomic_init(&l->compute.policy, spec->compute_policy);
  atomic_init(&l->compute.priority, spec->priority);
  atomic_init(&l->compute.slice_ms, spec->slice_ms);
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    atomic_init(&l->gpu[g].limit_ppm, spec->limit_ppm[g]);
    atomic_init(&l->gpu[g].limit_bytes, spec->limit_ppm[g] ? GS_LIMIT_NONE : spec->limit_bytes[g]);
  }
  /* Readers check the magic first; it goes in last. */
  __atomic_store_n(&l->magic, GS_LEDGER_MAGIC, __ATOMIC_RELEASE);
}

/* A ledger whose owner has died is a leftover: it may be replaced. */
static bool leftover(const char *dir, const char *name)
{
  struct gs_ledger *l = NULL;
  gs_error_t e = NULL;
  if (gs_ledger_attach(dir, name, &l, &e) < 0) {
    gs_error_release(&e);
    return true;
  }
  bool dead = !gs_proc_alive(l->owner_pid, l->owner_start_time);
  gs_ledger_detach(l);
  return dead;
}

static int create_file(const char *path, struct gs_ledger **out, gs_error_t *err)
{
  return gs__shm_open(path, &gs__ledger_shm, GS__SHM_CREATE | GS__SHM_EXCL | GS__SHM_WRITE,
                      (void **) out, NULL, err);
}

/* Hands e over to the caller's err (or drops it when the caller wants none). */
static int pass_error(gs_error_t *err, gs_error_t e)
{
  if (err) {
    gs_error_release(err);
    *err = e;
  } else {
    gs_error_release(&e);
  }
  return -1;
}

int gs_ledger_create(const char *dir, const struct gs_ledger_spec *spec, struct gs_ledger **out,
                     gs_error_t *err)
{
  char path[4096], tdir[4096];
  gs_error_t e = NULL;
  if (gs__ledger_path(path, sizeof(path), dir, spec->name, err) < 0)
    return -1;
  snprintf(tdir, sizeof(tdir), "%s/tenants", dir);
  if (gs_mkdir_p(tdir, 0700, err) < 0)
    return -1;
  int rc = create_file(path, out, &e);
  if (rc < 0 && e->status == EEXIST && leftover(dir, spec->name)) {
    unlink(path);
    rc = create_file(path, out, &e);
  }
  if (rc < 0 && e->status == EEXIST) {
    gs_error_release(&e);
    return gs_make_error(err, EEXIST, "tenant '%s' is already running", spec->name);
  }
  if (rc < 0)
    return pass_error(err, e);
  fill(*out, spec);
  return 0;
}

int gs_ledger_remove(const char *dir, const char *name, gs_error_t *err)
{
  char path[4096];
  if (gs__ledger_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  if (unlink(path) < 0 && errno != ENOENT)
    return gs_make_error(err, errno, "remove '%s'", path);
  return 0;
}

/* ---- process slots ---- */

/* How many slots from proc[0] may be live: the ledger's own count where it keeps one. */
static int slots_in_use(struct gs_ledger *l)
{
  uint32_t used = atomic_load(&l->slots_used);
  if (!(used & GS_SLOTS_KNOWN))
    return GS_LEDGER_MAX_PROCS;
  used &= ~GS_SLOTS_KNOWN;
  return used < GS_LEDGER_MAX_PROCS ? (int) used : GS_LEDGER_MAX_PROCS;
}

static bool same_process(const struct gs_ledger_proc *a, const struct gs_ledger_proc *b)
{
  return a->pid == b->pid && a->start_time == b->start_time;
}

/* Adds what p held to held[] and empties p. */
static void slot_take(struct gs_ledger_proc *p, uint64_t held[GS_LEDGER_MAX_GPUS])
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    held[g] += atomic_exchange(&p->used[g], 0);
}

/* Takes held[] off the tenant's usage. */
static void give_back(struct gs_ledger *l, const uint64_t held[GS_LEDGER_MAX_GPUS])
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    if (held[g])
      atomic_fetch_sub(&l->gpu[g].used_bytes, held[g]);
}

/* The most thread slots drained with their process's slot: more than any interposer claims
 * (GS_THREAD_SLOTS_MAX); any beyond are given back later, as orphans. */
#define THREAD_SLOTS_DRAINED 64

/* Empties p, which this caller holds in REAPING, and the thread slots of its process, and gives
 * the sum back to the tenant at once: a thread slot alone may be below what its thread holds
 * (memory it freed that another thread had allocated), so each slot given back by itself would
 * leave the tenant's usage too low for a moment. Then p becomes p_after and the thread slots
 * thread_after: free, or still the ending process's (exited, thread). */
static void slot_drain_to(struct gs_ledger *l, struct gs_ledger_proc *p, uint32_t p_after,
                          uint32_t thread_after)
{
  uint64_t held[GS_LEDGER_MAX_GPUS] = { 0 };
  struct gs_ledger_proc *taken[THREAD_SLOTS_DRAINED];
  int n = 0;
  for (int i = 0, end = slots_in_use(l); i < end && n < THREAD_SLOTS_DRAINED; i++) {
    struct gs_ledger_proc *t = &l->proc[i];
    uint32_t thread = GS_SLOT_THREAD;
    if (t != p && atomic_load(&t->state) == GS_SLOT_THREAD && same_process(t, p) &&
        atomic_compare_exchange_strong(&t->state, &thread, GS_SLOT_REAPING))
      taken[n++] = t;
  }
  slot_take(p, held);
  for (int i = 0; i < n; i++)
    slot_take(taken[i], held);
  give_back(l, held);
  for (int i = 0; i < n; i++)
    atomic_store(&taken[i]->state, thread_after);
  atomic_store(&p->state, p_after);
}

/* The compare-and-swap makes sure that of several reapers exactly one drains the slot, live
 * or exited (from). */
static bool slot_reap_from(struct gs_ledger *l, struct gs_ledger_proc *p, uint32_t from, bool dead)
{
  if (!dead || !atomic_compare_exchange_strong(&p->state, &from, GS_SLOT_REAPING))
    return false;
  slot_drain_to(l, p, GS_SLOT_FREE, GS_SLOT_FREE);
  return true;
}

static bool slot_reap_if(struct gs_ledger *l, struct gs_ledger_proc *p, bool dead)
{
  return slot_reap_from(l, p, GS_SLOT_LIVE, dead);
}

/* Whether p is a process's own slot, live or exited: what a reaper looks at. */
static bool owns_process(uint32_t state)
{
  return state == GS_SLOT_LIVE || state == GS_SLOT_EXITED;
}

/* True when a slot other than t, live, exited or being reaped, is t's process's: t is given
 * back with it. */
static bool has_owner(struct gs_ledger *l, const struct gs_ledger_proc *t, int end)
{
  for (int i = 0; i < end; i++) {
    const struct gs_ledger_proc *p = &l->proc[i];
    uint32_t state = atomic_load(&p->state);
    if (p != t && (owns_process(state) || state == GS_SLOT_REAPING) && same_process(p, t))
      return true;
  }
  return false;
}

/* Gives back a thread slot by itself. */
static bool thread_reap(struct gs_ledger *l, struct gs_ledger_proc *t)
{
  uint32_t thread = GS_SLOT_THREAD;
  if (!atomic_compare_exchange_strong(&t->state, &thread, GS_SLOT_REAPING))
    return false;
  uint64_t held[GS_LEDGER_MAX_GPUS] = { 0 };
  slot_take(t, held);
  give_back(l, held);
  atomic_store(&t->state, GS_SLOT_FREE);
  return true;
}

/* A thread slot whose process is dead and has no slot of its own left (it ended while one of
 * its threads was still claiming): nothing else will give it back. */
static bool orphan_reap_if(struct gs_ledger *l, struct gs_ledger_proc *t, int end)
{
  return !gs_proc_alive(t->pid, t->start_time) && !has_owner(l, t, end) && thread_reap(l, t);
}

int gs_ledger_reap(struct gs_ledger *l)
{
  int n = 0, end = slots_in_use(l);
  for (int i = 0; i < end; i++) {
    struct gs_ledger_proc *p = &l->proc[i];
    uint32_t state = atomic_load(&p->state);
    if (owns_process(state))
      n += slot_reap_from(l, p, state, !gs_proc_alive(p->pid, p->start_time));
  }
  for (int i = 0; i < end; i++)
    if (atomic_load(&l->proc[i].state) == GS_SLOT_THREAD)
      n += orphan_reap_if(l, &l->proc[i], end);
  return n;
}

/* Raises slots_used past slot i, in a ledger that keeps it (GS_SLOTS_KNOWN). */
static void note_slot_used(struct gs_ledger *l, int i)
{
  uint32_t cur = atomic_load(&l->slots_used);
  while ((cur & GS_SLOTS_KNOWN) && (cur & ~GS_SLOTS_KNOWN) < (uint32_t) i + 1 &&
         !atomic_compare_exchange_weak(&l->slots_used, &cur, GS_SLOTS_KNOWN | ((uint32_t) i + 1)))
    ;
}

/* Frees the slots of processes that exited and are now dead, before a claim looks for a free
 * one: so that the slots of processes that come and go are reused, and the slots in use stay
 * few. A look at /proc for each exited slot, on a process's or thread's first claim only. */
static void reap_exited(struct gs_ledger *l)
{
  for (int i = 0, end = slots_in_use(l); i < end; i++) {
    struct gs_ledger_proc *p = &l->proc[i];
    if (atomic_load(&p->state) == GS_SLOT_EXITED)
      slot_reap_from(l, p, GS_SLOT_EXITED, !gs_proc_alive(p->pid, p->start_time));
  }
}

/* A free slot among the first `end` for (pid, start_time), empty, in state (live or thread);
 * NULL when none is free even after reaping. */
static struct gs_ledger_proc *slot_claim(struct gs_ledger *l, pid_t pid, uint64_t start_time,
                                         uint32_t state, int end)
{
  reap_exited(l);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < end; i++) {
      struct gs_ledger_proc *p = &l->proc[i];
      uint32_t free_ = GS_SLOT_FREE;
      if (!atomic_compare_exchange_strong(&p->state, &free_, GS_SLOT_CLAIMING))
        continue;
      p->pid = pid;
      p->start_time = start_time;
      for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
        atomic_store(&p->used[g], 0);
      note_slot_used(l, i);
      atomic_store(&p->state, state);
      return p;
    }
    gs_ledger_reap(l);
  }
  return NULL;
}

struct gs_ledger_proc *gs_ledger_claim(struct gs_ledger *l, pid_t pid, uint64_t start_time)
{
  /* A live slot with our own identity was claimed by the image that exec replaced; exec
   * destroyed that image's contexts, so what it held is free again. */
  for (int i = 0; i < GS_LEDGER_MAX_PROCS; i++) {
    struct gs_ledger_proc *p = &l->proc[i];
    if (atomic_load(&p->state) == GS_SLOT_LIVE && p->pid == pid)
      slot_reap_if(l, p, p->start_time == start_time);
  }
  for (int i = 0; i < GS_LEDGER_MAX_PROCS; i++) {
    struct gs_ledger_proc *t = &l->proc[i];
    if (atomic_load(&t->state) == GS_SLOT_THREAD && t->pid == pid && t->start_time == start_time)
      thread_reap(l, t); /* the old image's, left without its process's slot */
  }
  return slot_claim(l, pid, start_time, GS_SLOT_LIVE, GS_LEDGER_MAX_PROCS);
}

struct gs_ledger_proc *gs_ledger_claim_thread(struct gs_ledger *l,
                                              const struct gs_ledger_proc *owner)
{
  return slot_claim(l, owner->pid, owner->start_time, GS_SLOT_THREAD, GS_LEDGER_THREAD_SLOTS);
}

void gs_ledger_unclaim(struct gs_ledger *l, struct gs_ledger_proc *p)
{
  uint32_t live = GS_SLOT_LIVE;
  if (p && atomic_compare_exchange_strong(&p->state, &live, GS_SLOT_REAPING))
    slot_drain_to(l, p, GS_SLOT_EXITED, GS_SLOT_THREAD);
}

/* ---- memory ---- */

/* The daemon's limits for the one ledger this process charges, when it has any (see
 * gs-limits.h): they take precedence over the ledger's own fields, which the tenant can write.
 * Process-local: set once by the interposer at attach, inherited across fork. */
static const struct gs_ledger *authority_of;
static const struct gs_limits *_Atomic authority;

void gs_ledger_set_authority(const struct gs_ledger *l, const struct gs_limits *lim)
{
  authority_of = l;
  atomic_store_explicit(&authority, lim, memory_order_release);
}

static inline const struct gs_limits *authority_for(const struct gs_ledger *l)
{
  const struct gs_limits *a = atomic_load_explicit(&authority, memory_order_acquire);
  return a && authority_of == l ? a : NULL;
}

const struct gs_limits *gs_ledger_authority(const struct gs_ledger *l)
{
  return authority_for(l);
}

void gs_ledger_resume_ask(struct gs_ledger *l)
{
  atomic_fetch_add(&l->resume.requests, 1);
}

void gs_ledger_resume_waited(struct gs_ledger *l, uint64_t ns)
{
  atomic_fetch_add(&l->resume.wait_ns_total, ns);
  atomic_store(&l->resume.last_wait_ns, ns);
  atomic_fetch_add(&l->resume.waits, 1); /* last: a reader that sees the count sees its time */
}

uint32_t gs_ledger_compute_limit_ppm(const struct gs_ledger *l)
{
  const struct gs_limits *a = authority_for(l);
  return atomic_load_explicit(a ? &a->compute.limit_ppm : &l->compute.limit_ppm,
                              memory_order_relaxed);
}

uint32_t gs_ledger_compute_policy(const struct gs_ledger *l)
{
  const struct gs_limits *a = authority_for(l);
  return atomic_load_explicit(a ? &a->compute.policy : &l->compute.policy, memory_order_relaxed);
}

uint32_t gs_ledger_priority(const struct gs_ledger *l)
{
  const struct gs_limits *a = authority_for(l);
  return atomic_load_explicit(a ? &a->compute.priority : &l->compute.priority,
                              memory_order_relaxed);
}

uint64_t gs_ledger_limit(struct gs_ledger *l, int gpu, uint64_t device_total)
{
  const struct gs_limits *a = authority_for(l);
  if (a)
    return atomic_load_explicit(&a->limit_bytes[gpu], memory_order_relaxed);
  struct gs_ledger_gpu *g = &l->gpu[gpu];
  uint64_t limit = atomic_load(&g->limit_bytes);
  uint32_t ppm = atomic_load(&g->limit_ppm);
  if (limit == GS_LIMIT_NONE && ppm && device_total) {
    uint64_t want = gs_limit_resolve(limit, ppm, device_total);
    /* Every process computes the same figure; the first to store it wins. */
    atomic_compare_exchange_strong(&g->limit_bytes, &limit, want);
    limit = atomic_load(&g->limit_bytes);
  }
  return limit;
}

int gs_ledger_reserve(struct gs_ledger *l, struct gs_ledger_proc *p, int gpu, uint64_t bytes)
{
  return gs_ledger_reserve_within(l, p, gpu, bytes, GS_LIMIT_NONE);
}

int gs_ledger_reserve_within(struct gs_ledger *l, struct gs_ledger_proc *p, int gpu, uint64_t bytes,
                             uint64_t cap)
{
  struct gs_ledger_gpu *g = &l->gpu[gpu];
  const struct gs_limits *a = authority_for(l);
  uint64_t limit =
    atomic_load_explicit(a ? &a->limit_bytes[gpu] : &g->limit_bytes, memory_order_relaxed);
  if (cap < limit)
    limit = cap;
  uint64_t cur = atomic_load_explicit(&g->used_bytes, memory_order_relaxed);
  do {
    if (bytes > limit || cur > limit - bytes)
      return -1;
  } while (!atomic_compare_exchange_weak_explicit(&g->used_bytes, &cur, cur + bytes,
                                                  memory_order_acq_rel, memory_order_relaxed));
  atomic_fetch_add_explicit(&p->used[gpu], bytes, memory_order_relaxed);
  uint64_t peak = atomic_load_explicit(&g->peak_bytes, memory_order_relaxed);
  while (cur + bytes > peak &&
         !atomic_compare_exchange_weak_explicit(&g->peak_bytes, &peak, cur + bytes,
                                                memory_order_relaxed, memory_order_relaxed))
    ;
  return 0;
}

void gs_ledger_release(struct gs_ledger *l, struct gs_ledger_proc *p, int gpu, uint64_t bytes)
{
  atomic_fetch_sub_explicit(&p->used[gpu], bytes, memory_order_relaxed);
  atomic_fetch_sub_explicit(&l->gpu[gpu].used_bytes, bytes, memory_order_acq_rel);
}
