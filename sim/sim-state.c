/* The shared state file of the simulated driver: creation, validation, per-process memory
 * slots with reaping of dead processes, and the device timeline. See sim-state.h. */
#include "sim-state.h"

#include <gpuslice/proc.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct gpusim_shared *g_state;
static char g_err[4096 + 512]; /* room for a full path and its reason */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct gpusim_proc *g_self;
static pid_t g_self_pid;
static pthread_mutex_t g_self_lock = PTHREAD_MUTEX_INITIALIZER;

void gpusim_warn(const char *fmt, ...)
{
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fprintf(stderr, "gpusim: %s\n", line);
}

uint64_t gpusim_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* The kernel's sleep overshoots by tens of microseconds, which is 5% of a 1 ms kernel;
 * sleeping to just short of the deadline and spinning the rest keeps waits exact. */
#define SPIN_NS 200000ULL

void gpusim_sleep_until(uint64_t t)
{
  uint64_t now = gpusim_now_ns();
  if (t > now + SPIN_NS) {
    uint64_t wake = t - SPIN_NS;
    struct timespec ts = { (time_t) (wake / 1000000000ULL), (long) (wake % 1000000000ULL) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
      ;
  }
  while (gpusim_now_ns() < t)
    __builtin_ia32_pause();
}

uint64_t gpusim_util_period_ns(void)
{
  const char *s = secure_getenv("GPUSIM_UTIL_PERIOD_MS");
  long ms = s ? strtol(s, NULL, 10) : 0;
  return (uint64_t) (ms > 0 ? ms : 1000) * 1000000ULL;
}

/* ---- processes ---- */

uint64_t gpusim_proc_start_time(pid_t pid)
{
  return gs_proc_start_time(pid);
}

bool gpusim_proc_alive(pid_t pid, uint64_t start_time)
{
  return gs_proc_alive(pid, start_time);
}

/* ---- robust locks ---- */

/* The GPU instance process slot i's memory on device d is charged to, or NULL. */
static struct gpusim_mig_gi *bound_gi(int i, int d)
{
  uint8_t b = g_state->proc_mig[i][d];
  return b ? &g_state->mig[d].gi[GPUSIM_MIG_BIND_GI(b)] : NULL;
}

static void mem_repair(struct gpusim_dev *d)
{
  int di = (int) (d - g_state->dev);
  uint64_t sum = 0;
  for (int g = 0; g < GPUSIM_MIG_GI; g++)
    g_state->mig[di].gi[g].used_bytes = 0;
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++)
    if (atomic_load(&g_state->proc[i].state) != GPUSIM_SLOT_FREE) {
      struct gpusim_mig_gi *gi = bound_gi(i, di);
      sum += g_state->proc[i].used[di];
      if (gi)
        gi->used_bytes += g_state->proc[i].used[di];
    }
  atomic_store(&d->used_bytes, sum);
}

static void mem_lock(struct gpusim_dev *d)
{
  if (pthread_mutex_lock(&d->mem_lock) == EOWNERDEAD) {
    /* The owner died between its two updates: the per-process counts are the truth. */
    mem_repair(d);
    pthread_mutex_consistent(&d->mem_lock);
  }
}

void gpusim_mem_lock(int d)
{
  mem_lock(&g_state->dev[d]);
}

void gpusim_mem_unlock(int d)
{
  pthread_mutex_unlock(&g_state->dev[d].mem_lock);
}

static void exec_lock(struct gpusim_dev *d)
{
  /* An interrupted append leaves at worst one stale ring entry, which only ages out. */
  if (pthread_mutex_lock(&d->exec_lock) == EOWNERDEAD)
    pthread_mutex_consistent(&d->exec_lock);
}

/* ---- the state file ---- */

static uint64_t fnv1a(const char *s)
{
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++) {
    h ^= (unsigned char) *s;
    h *= 0x100000001b3ULL;
  }
  return h;
}

static void init_mutex(pthread_mutex_t *m)
{
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
}

static void state_init(struct gpusim_shared *s, const char *spec, const int *models, int ndev)
{
  memset(s, 0, sizeof(*s));
  s->version = GPUSIM_VERSION;
  s->size = sizeof(*s);
  s->ndev = (uint32_t) ndev;
  snprintf(s->spec, sizeof(s->spec), "%s", spec);
  for (int i = 0; i < ndev; i++) {
    s->dev[i].model = models[i];
    s->dev[i].index = i;
    s->dev[i].total_bytes = gpusim_models[models[i]].mem_bytes;
    init_mutex(&s->dev[i].mem_lock);
    init_mutex(&s->dev[i].exec_lock);
    s->health[i].created_ns = gpusim_now_ns();
  }
  __atomic_store_n(&s->magic, GPUSIM_MAGIC, __ATOMIC_RELEASE);
}

static const char *state_check(const struct gpusim_shared *s, const char *spec, const char *path)
{
  if (s->magic != GPUSIM_MAGIC)
    snprintf(g_err, sizeof(g_err), "state file %s is not a gpusim state file", path);
  else if (s->version != GPUSIM_VERSION || s->size != sizeof(*s))
    snprintf(g_err, sizeof(g_err), "state file %s has version %u size %u, want version %u size %zu",
             path, s->version, s->size, GPUSIM_VERSION, sizeof(*s));
  else if (strncmp(s->spec, spec, sizeof(s->spec)) != 0)
    snprintf(g_err, sizeof(g_err), "state file %s describes '%s', not '%s'", path, s->spec, spec);
  else
    return NULL;
  return g_err;
}

static struct gpusim_shared *state_map(const char *path, const char *spec, const int *models,
                                       int ndev)
{
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(g_err, sizeof(g_err), "open state file %s: %s", path, strerror(errno));
    return NULL;
  }
  struct gpusim_shared *s = MAP_FAILED;
  struct stat st;
  /* The lock makes creation atomic: whoever finds the file empty initializes it. */
  if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0) {
    snprintf(g_err, sizeof(g_err), "lock state file %s: %s", path, strerror(errno));
    goto out;
  }
  bool fresh = st.st_size == 0;
  if (fresh && ftruncate(fd, sizeof(*s)) < 0) {
    snprintf(g_err, sizeof(g_err), "size state file %s: %s", path, strerror(errno));
    goto out;
  }
  if (!fresh && (size_t) st.st_size != sizeof(*s)) {
    snprintf(g_err, sizeof(g_err), "state file %s has size %lld, want %zu", path,
             (long long) st.st_size, sizeof(*s));
    goto out;
  }
  s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (s == MAP_FAILED) {
    snprintf(g_err, sizeof(g_err), "map state file %s: %s", path, strerror(errno));
    goto out;
  }
  if (fresh)
    state_init(s, spec, models, ndev);
  else if (state_check(s, spec, path)) {
    munmap(s, sizeof(*s));
    s = MAP_FAILED;
  }
out:
  /* Unlock explicitly: the mapping keeps the open file alive, so close() alone would leave the
   * lock held for as long as this process stays mapped, and every other opener would block. */
  flock(fd, LOCK_UN);
  close(fd);
  return s == MAP_FAILED ? NULL : s;
}

static void state_open(void)
{
  const char *spec = secure_getenv("GPUSLICE_SIM");
  const char *dir = secure_getenv("GPUSIM_STATE_DIR");
  int models[GPUSIM_MAX_DEVICES];
  char path[4096];

  if (!spec) {
    snprintf(g_err, sizeof(g_err),
             "GPUSLICE_SIM is not set; it lists the simulated devices, e.g. h100-80gb:2,t4");
    return;
  }
  int ndev = gpusim_spec_parse(spec, models, g_err, sizeof(g_err));
  if (ndev < 0)
    return;
  if (strlen(spec) >= sizeof(((struct gpusim_shared *) 0)->spec)) {
    snprintf(g_err, sizeof(g_err), "GPUSLICE_SIM: longer than 255 characters");
    return;
  }
  snprintf(path, sizeof(path), "%s/gpusim-%u-%016llx", dir && *dir ? dir : "/dev/shm",
           (unsigned) getuid(), (unsigned long long) fnv1a(spec));
  g_state = state_map(path, spec, models, ndev);
}

struct gpusim_shared *gpusim_state(const char **err)
{
  pthread_once(&g_once, state_open);
  if (!g_state && err)
    *err = g_err;
  return g_state;
}

/* ---- process slots ---- */

static void slot_release(struct gpusim_proc *p)
{
  int slot = (int) (p - g_state->proc);
  for (uint32_t d = 0; d < g_state->ndev; d++) {
    struct gpusim_dev *dev = &g_state->dev[d];
    mem_lock(dev);
    struct gpusim_mig_gi *gi = bound_gi(slot, (int) d);
    if (gi)
      gi->used_bytes -= p->used[d] < gi->used_bytes ? p->used[d] : gi->used_bytes;
    g_state->proc_mig[slot][d] = 0;
    atomic_fetch_sub(&dev->used_bytes, p->used[d]);
    p->used[d] = 0;
    pthread_mutex_unlock(&dev->mem_lock);
    atomic_store(&p->contexts[d], 0);
  }
  atomic_store(&p->state, GPUSIM_SLOT_FREE);
}

/* Reaps the slot if it is LIVE and `dead` says so; the CAS makes sure only one reaper does. */
static int slot_reap_if(struct gpusim_proc *p, bool dead)
{
  uint32_t live = GPUSIM_SLOT_LIVE;
  if (!dead || !atomic_compare_exchange_strong(&p->state, &live, GPUSIM_SLOT_REAPING))
    return 0;
  slot_release(p);
  return 1;
}

static int reap_dead(bool watched)
{
  int n = 0;
  if (!gpusim_state(NULL))
    return 0;
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++) {
    struct gpusim_proc *p = &g_state->proc[i];
    if (p == g_self || atomic_load(&p->state) != GPUSIM_SLOT_LIVE)
      continue;
    bool alive = watched ? gpusim_proc_alive_watched(i, p->pid, p->start_time)
                         : gpusim_proc_alive(p->pid, p->start_time);
    n += slot_reap_if(p, !alive);
  }
  return n;
}

int gpusim_reap_dead(void)
{
  return reap_dead(false);
}

int gpusim_reap_dead_every(uint64_t period_ns)
{
  static _Atomic uint64_t last;
  uint64_t now = gpusim_now_ns(), prev = atomic_load(&last);
  if (prev && now < prev + period_ns)
    return 0;
  if (!atomic_compare_exchange_strong(&last, &prev, now))
    return 0;
  return reap_dead(true);
}

static struct gpusim_proc *slot_claim(pid_t pid, uint64_t start)
{
  /* A LIVE slot with our own identity belongs to the image we replaced by exec; the real
   * driver drops that image's contexts, so its memory goes back now. */
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++) {
    struct gpusim_proc *p = &g_state->proc[i];
    if (atomic_load(&p->state) == GPUSIM_SLOT_LIVE && p->pid == pid)
      slot_reap_if(p, p->start_time == start);
  }
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < GPUSIM_MAX_PROCS; i++) {
      struct gpusim_proc *p = &g_state->proc[i];
      uint32_t free_ = GPUSIM_SLOT_FREE;
      if (!atomic_compare_exchange_strong(&p->state, &free_, GPUSIM_SLOT_CLAIMING))
        continue;
      p->pid = pid;
      p->start_time = start;
      memset(p->used, 0, sizeof(p->used));
      memset(g_state->proc_mig[i], 0, sizeof(g_state->proc_mig[i]));
      memset(&p->ckpt, 0, sizeof(p->ckpt)); /* RUNNING, no service thread yet, no caller */
      atomic_store(&p->state, GPUSIM_SLOT_LIVE);
      return p;
    }
    gpusim_reap_dead();
  }
  return NULL;
}

struct gpusim_proc *gpusim_self(void)
{
  pid_t pid = getpid();
  if (!gpusim_state(NULL))
    return NULL;
  pthread_mutex_lock(&g_self_lock);
  if (!g_self || g_self_pid != pid) {
    /* After fork the child is a new process for the driver: it gets its own slot. */
    g_self = slot_claim(pid, gpusim_proc_start_time(pid));
    g_self_pid = pid;
    if (!g_self)
      GPUSIM_WARN_ONCE("all %d process slots are in use", GPUSIM_MAX_PROCS);
  }
  struct gpusim_proc *self = g_self;
  pthread_mutex_unlock(&g_self_lock);
  return self;
}

struct gpusim_proc *gpusim_proc_find(pid_t pid)
{
  if (!gpusim_state(NULL))
    return NULL;
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++) {
    struct gpusim_proc *p = &g_state->proc[i];
    if (atomic_load(&p->state) == GPUSIM_SLOT_LIVE && p->pid == pid &&
        gpusim_proc_alive(pid, p->start_time))
      return p;
  }
  return NULL;
}

/* Gives this process's memory back at normal exit, as the driver does at context teardown. */
__attribute__((destructor)) static void self_release(void)
{
  if (g_self && g_self_pid == getpid())
    slot_reap_if(g_self, true);
}

/* ---- memory ---- */

/* Whether bytes more fit in total with used taken. */
static bool fits(uint64_t used, uint64_t total, uint64_t bytes)
{
  return bytes <= total && used <= total - bytes;
}

/* On a GPU in MIG mode a process holds memory only in the instance it is bound to, and the
 * instance's own size is its limit; a GPU outside MIG mode is one pool. */
static int mem_try(struct gpusim_dev *dev, int d, struct gpusim_proc *self, uint64_t bytes)
{
  int ok = 0;
  mem_lock(dev);
  struct gpusim_mig_gi *gi = bound_gi((int) (self - g_state->proc), d);
  uint64_t used = atomic_load(&dev->used_bytes);
  bool whole = g_state->mig[d].mode == 0 && !gi;
  bool in_gi = gi && gi->live && fits(gi->used_bytes, gi->total_bytes, bytes);
  if ((whole || in_gi) && fits(used, dev->total_bytes, bytes)) {
    self->used[d] += bytes;
    if (gi)
      gi->used_bytes += bytes;
    atomic_store(&dev->used_bytes, used + bytes);
    ok = 1;
  }
  pthread_mutex_unlock(&dev->mem_lock);
  return ok;
}

int gpusim_mem_reserve(int d, uint64_t bytes)
{
  struct gpusim_proc *self = gpusim_self();
  if (!self)
    return -1;
  struct gpusim_dev *dev = &g_state->dev[d];
  if (mem_try(dev, d, self, bytes))
    return 0;
  /* Full: memory held by dead processes may be what is missing. */
  if (gpusim_reap_dead() > 0 && mem_try(dev, d, self, bytes))
    return 0;
  return -1;
}

void gpusim_mem_release(int d, uint64_t bytes)
{
  struct gpusim_proc *self = gpusim_self();
  if (!self)
    return;
  struct gpusim_dev *dev = &g_state->dev[d];
  mem_lock(dev);
  if (bytes > self->used[d])
    bytes = self->used[d];
  self->used[d] -= bytes;
  struct gpusim_mig_gi *gi = bound_gi((int) (self - g_state->proc), d);
  if (gi)
    gi->used_bytes -= bytes < gi->used_bytes ? bytes : gi->used_bytes;
  atomic_fetch_sub(&dev->used_bytes, bytes);
  pthread_mutex_unlock(&dev->mem_lock);
}

/* ---- the timeline ---- */

uint64_t gpusim_exec_schedule(int d, uint64_t not_before_ns, uint64_t dur_ns, uint64_t *start)
{
  struct gpusim_dev *dev = &g_state->dev[d];
  pid_t pid = getpid();
  exec_lock(dev);
  uint64_t s = dev->busy_until_ns > not_before_ns ? dev->busy_until_ns : not_before_ns;
  uint64_t e = s + dur_ns;
  struct gpusim_interval *last =
    dev->ring_count ? &dev->ring[(dev->ring_count - 1) % GPUSIM_RING] : NULL;
  /* Back-to-back work of one process is one interval, so a saturated device needs few entries. */
  if (last && last->pid == pid && last->end_ns == s) {
    last->end_ns = e;
  } else {
    struct gpusim_interval *slot = &dev->ring[dev->ring_count % GPUSIM_RING];
    slot->start_ns = s;
    slot->end_ns = e;
    slot->pid = pid;
    dev->ring_count++;
  }
  dev->busy_until_ns = e;
  g_state->health[d].busy_booked_ns += dur_ns;
  pthread_mutex_unlock(&dev->exec_lock);
  if (start)
    *start = s;
  return e;
}

/* gpusim_busy_ns with the device's exec_lock held. */
static uint64_t busy_ns_locked(const struct gpusim_dev *dev, uint64_t from, uint64_t to, pid_t pid)
{
  uint64_t busy = 0;
  uint64_t n = dev->ring_count < GPUSIM_RING ? dev->ring_count : GPUSIM_RING;
  for (uint64_t k = 0; k < n; k++) {
    const struct gpusim_interval *iv = &dev->ring[(dev->ring_count - 1 - k) % GPUSIM_RING];
    if (iv->end_ns <= from)
      break; /* intervals are in time order: everything older ends earlier still */
    if (pid && iv->pid != pid)
      continue;
    uint64_t s = iv->start_ns > from ? iv->start_ns : from;
    uint64_t e = iv->end_ns < to ? iv->end_ns : to;
    if (e > s)
      busy += e - s;
  }
  return busy;
}

uint64_t gpusim_busy_ns(int d, uint64_t from, uint64_t to, pid_t pid)
{
  struct gpusim_dev *dev = &g_state->dev[d];
  exec_lock(dev);
  uint64_t busy = busy_ns_locked(dev, from, to, pid);
  pthread_mutex_unlock(&dev->exec_lock);
  return busy;
}

int gpusim_busy_by_pid(int d, uint64_t from, uint64_t to, pid_t *pids, uint64_t *busy, int max)
{
  struct gpusim_dev *dev = &g_state->dev[d];
  int n = 0;
  exec_lock(dev);
  uint64_t count = dev->ring_count < GPUSIM_RING ? dev->ring_count : GPUSIM_RING;
  for (uint64_t k = 0; k < count; k++) {
    const struct gpusim_interval *iv = &dev->ring[(dev->ring_count - 1 - k) % GPUSIM_RING];
    if (iv->end_ns <= from)
      break; /* intervals are in time order */
    uint64_t s = iv->start_ns > from ? iv->start_ns : from, e = iv->end_ns < to ? iv->end_ns : to;
    if (e <= s)
      continue;
    int i = 0;
    while (i < n && pids[i] != iv->pid)
      i++; /* a window holds few processes' kernels; the last one seen is usually first */
    if (i == n && n < max) {
      pids[n] = iv->pid;
      busy[n++] = 0;
    }
    if (i < n)
      busy[i] += e - s;
  }
  pthread_mutex_unlock(&dev->exec_lock);
  return n;
}

uint64_t gpusim_busy_total_ns(int d, uint64_t now)
{
  struct gpusim_dev *dev = &g_state->dev[d];
  exec_lock(dev);
  /* Booked work that has not run yet is at the timeline's end, well inside the ring. */
  uint64_t ahead = busy_ns_locked(dev, now, UINT64_MAX, 0);
  uint64_t booked = g_state->health[d].busy_booked_ns;
  pthread_mutex_unlock(&dev->exec_lock);
  return booked > ahead ? booked - ahead : 0;
}

void gpusim_xid_record(int d, uint64_t xid)
{
  struct gpusim_dev *dev = &g_state->dev[d];
  struct gpusim_dev_health *h = &g_state->health[d];
  /* The lock orders injectors; readers see an entry once the count that covers it is stored. */
  exec_lock(dev);
  uint64_t n = atomic_load(&h->xid_count);
  h->xid[n % GPUSIM_XID_RING] = xid;
  atomic_store(&h->xid_count, n + 1);
  pthread_mutex_unlock(&dev->exec_lock);
}
