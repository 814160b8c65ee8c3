/* Verifying from outside: the interposer lives in the tenant's processes and can be left out
 * (a child started without LD_PRELOAD, a static binary) or fooled (a rewritten ledger), so at
 * each sample the daemon reads NVML's own per-process accounting, attributes each process to
 * a tenant by its ancestry in /proc (else by the live slots of the tenants' ledgers, for a
 * process that joined a tenant through its environment), and compares the sums with the
 * tenant's limits. An excess is a violation: counted, logged once when it starts, written to
 * the usage ledger,
 * shown in the snapshot, and acted on (violation_action) at every interval it lasts.
 * The rules themselves are verify.c's; this file reads NVML and /proc and acts. /proc is
 * read only for the processes NVML reports, and their ancestors up to a tenant's owner, and
 * only when a process is new or tenants came or went: the processes seen are watched by pidfd
 * with their verdicts (verifier-seen.c). */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/proc.h>

#include "verify.h"

#define VERIFY_PROCS_MAX 1024

static const char *const action_names[] = { "none", "signal", "kill" };

static uint64_t mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* The parent lookup verify_tenant_of walks with. A parent starts no later than its child, so an
 * ancestor that started after the process below it is a reused pid, not its parent: the walk
 * stops there, as at a process that is gone. The first process asked about must be the one
 * NVML reported, as the verifier saw it (start). */
struct walk {
  uint64_t start;
  bool asked;
};

static int proc_parent(pid_t pid, pid_t *ppid, void *data)
{
  struct walk *w = data;
  uint64_t start;
  if (gs_proc_parent(pid, ppid, &start) < 0)
    return -1;
  if (w->asked ? start > w->start : start != w->start)
    return -1;
  w->start = start;
  w->asked = true;
  return 0;
}

/* Every live tenant's owner, sorted: the roots of the process trees. An owner that has ended is
 * none: its pid may be another process's now, and its children have been reparented anyway. */
static int build_roots(struct daemon *d)
{
  if (d->vroots_cap < d->reg.n) {
    d->vroots_cap = d->reg.n;
    d->vroots = xrealloc(d->vroots, (size_t) d->vroots_cap * sizeof(*d->vroots));
  }
  int n = 0;
  for (int i = 0; i < d->reg.n; i++) {
    const struct tenant *t = d->reg.v[i];
    if (!t->exited && t->owner_pid > 1 && t->owner_state != OWNER_ENDED)
      d->vroots[n++] = (struct verify_root){ .pid = t->owner_pid, .tenant = i };
  }
  verify_roots_sort(d->vroots, n);
  return n;
}

/* Changes whenever a tenant comes or goes, so that the verdicts (tenant indices) are redone. */
static uint64_t registry_sig(const struct daemon *d)
{
  uint64_t sig = (uint64_t) d->reg.n * 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < d->reg.n; i++)
    sig = (sig ^ (d->reg.v[i]->created_unix_ns + (uint64_t) i)) * 0x100000001b3ULL;
  return sig;
}

/* True when the process runs as uid: /proc/PID belongs to its real owner. */
static bool runs_as(pid_t pid, uid_t uid)
{
  char path[32];
  struct stat st;
  snprintf(path, sizeof(path), "/proc/%d", (int) pid);
  return stat(path, &st) == 0 && st.st_uid == uid;
}

/* Every live slot of every tenant's ledger, read at most once per sample, and only when a
 * process not seen before is left out by ancestry. */
struct slot_table {
  bool read;
  int n;
  struct verify_known *v;
};

static void slots_read(struct daemon *d, struct slot_table *st)
{
  _cleanup_free_ struct gs_ledger_pid *slots = xcalloc(GS_LEDGER_MAX_PROCS, sizeof(*slots));
  int cap = 0;
  st->read = true;
  for (int ti = 0; ti < d->reg.n; ti++) {
    struct tenant *t = d->reg.v[ti];
    int n = t->exited || t->ledger_fd < 0
      ? 0
      : gs_ledger_read_procs(t->ledger_fd, slots, GS_LEDGER_MAX_PROCS, NULL);
    for (int k = 0; k < n; k++) {
      if (st->n == cap) {
        cap = cap ? 2 * cap : 64;
        st->v = xrealloc(st->v, (size_t) cap * sizeof(*st->v));
      }
      st->v[st->n++] = (struct verify_known){ .pid = slots[k].pid,
                                              .start_time = slots[k].start_time,
                                              .tenant = ti };
    }
  }
}

/* The tenant whose ledger has a live slot for p, if p runs as that tenant's user, or -1. */
static int slot_owner(struct daemon *d, struct slot_table *st, const struct verify_proc *p)
{
  if (!st->read)
    slots_read(d, st);
  for (int i = 0; i < st->n; i++)
    /* A slot of another user's tenant does not claim the process: the next one may. */
    if (st->v[i].pid == p->pid && st->v[i].start_time == p->start_time &&
        runs_as(p->pid, d->reg.v[st->v[i].tenant]->uid))
      return st->v[i].tenant;
  return -1;
}

/* The tenant of p, found from /proc: its ancestry, else the ledgers' slots. */
static int find_tenant(struct daemon *d, struct slot_table *st, const struct verify_proc *p,
                       int nroots)
{
  struct walk w = { .start = p->start_time };
  int t = verify_tenant_of(p->pid, d->vroots, nroots, proc_parent, &w);
  return t >= 0 ? t : slot_owner(d, st, p);
}

/* Places each process NVML reported: the verdict kept for it while it is the same process and
 * no tenant came or went, else one found again. */
static void attribute(struct daemon *d, struct verify_proc *p, int np, int nroots,
                      struct slot_table *st)
{
  for (int i = 0; i < np; i++) {
    struct verify_seen *s = verify_seen_get(d, p[i].pid);
    p[i].start_time = s ? s->w.start_time : 0;
    if (!s) {
      p[i].tenant = -1; /* ended, or a zombie: it holds no GPU context any more */
      continue;
    }
    if (s->tenant == VERIFY_UNKNOWN)
      s->tenant = find_tenant(d, st, &p[i], nroots);
    p[i].tenant = s->tenant;
  }
}

/* Signals (pid, start time) through a pidfd, so that a reused pid is never hit: the one the
 * verifier watches it with, else one opened and checked now. */
static void signal_proc(const struct daemon *d, const struct verify_proc *p, int sig)
{
  const struct verify_seen *s = verify_seen_find(d, p->pid);
  bool watched = s && s->w.pidfd >= 0 && s->w.start_time == p->start_time;
  int fd = watched ? s->w.pidfd : pidfd_open(p->pid, 0);
  if (fd < 0)
    return;
  if ((watched || gs_proc_alive(p->pid, p->start_time)) &&
      syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0)
    GS_LOG(GS_LOG_WARN, "violation: signal pid %d: %s", (int) p->pid, strerror(errno));
  if (!watched)
    close(fd);
}

/* Acts on the marked offenders and lists them in pids ("1,2,3"). */
static void act(const struct daemon *d, struct verify_proc *p, int np, char *pids, size_t len)
{
  size_t used = 0;
  pids[0] = '\0';
  for (int i = 0; i < np; i++) {
    if (!p[i].offender)
      continue;
    int w = snprintf(pids + used, len - used, "%s%d", used ? "," : "", (int) p[i].pid);
    if (w > 0 && (size_t) w < len - used)
      used += (size_t) w;
    if (d->cfg.violation_action != VIOLATION_NONE)
      signal_proc(d, &p[i], d->cfg.violation_action == VIOLATION_KILL ? SIGKILL : SIGTERM);
  }
}

/* A violation that has just started: the log line and the usage ledger's row. */
static void record(struct daemon *d, struct tenant *t, const struct usage_violation *v)
{
  gs_error_t err = NULL;
  GS_LOG(GS_LOG_WARN,
         "tenant '%s' GPU %d: %s violation: NVML says %llu, limit %llu, over by %llu (pids %s; "
         "action %s)",
         t->name, v->gpu, v->kind, (unsigned long long) v->measured, (unsigned long long) v->limit,
         (unsigned long long) v->over, v->pids, v->action);
  if (t->db_id && usage_db_violation(d->db, t, v, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
}

/* A tenant's processes on one GPU, summed. */
struct tenant_sum {
  uint64_t bytes;
  uint32_t ppm;
  int nprocs;
  int busy; /* of them with a utilization sample above 0 */
};

/* Every tenant's sums on GPU g, in one pass over its processes (a pass per tenant was a
 * fifth of the daemon's own time at 1,024 tenants); the processes with a utilization sample
 * above 0, anyone's, are counted into *busy. The caller frees the array. */
static struct tenant_sum *sums(const struct daemon *d, const struct verify_proc *p, int np,
                               int *busy)
{
  struct tenant_sum *v = xcalloc((size_t) d->reg.n + 1, sizeof(*v));
  *busy = 0;
  for (int i = 0; i < np; i++) {
    *busy += p[i].sm_pct > 0;
    if (p[i].tenant < 0 || p[i].tenant >= d->reg.n)
      continue;
    struct tenant_sum *s = &v[p[i].tenant];
    s->bytes += p[i].vram_bytes;
    s->ppm += p[i].sm_pct * 10000u;
    s->nprocs++;
    s->busy += p[i].sm_pct > 0;
  }
  return v;
}

static void clear_marks(struct verify_proc *p, int np)
{
  for (int i = 0; i < np; i++)
    p[i].offender = false;
}

/* One kind of violation of tenant ti on GPU g: act at every interval, record at the start. */
static void violation(struct daemon *d, int ti, int g, struct usage_violation *v, bool started,
                      struct verify_proc *p, int np)
{
  char pids[256];
  act(d, p, np, pids, sizeof(pids));
  clear_marks(p, np);
  if (!started)
    return;
  v->gpu = g;
  v->at = daemon_now_unix();
  v->action = action_names[d->cfg.violation_action];
  v->pids = pids;
  record(d, d->reg.v[ti], v);
}

/* Checks tenant ti on GPU g against its sums; busy: the processes busy there, anyone's (the
 * tenant's share is contended when some are another's). */
static void check_tenant(struct daemon *d, int ti, int g, struct verify_proc *p, int np,
                         const struct tenant_sum *sum, int busy)
{
  struct tenant *t = d->reg.v[ti];
  struct tenant_gpu *tg = &t->gpu[g];
  uint64_t limit = atomic_load(&t->limits->limit_bytes[g]);
  uint32_t cppm = atomic_load(&t->limits->compute.limit_ppm);
  bool cap = atomic_load(&t->limits->compute.policy) == GS_COMPUTE_CAP;
  tg->nvml_bytes = sum->bytes;
  tg->nvml_ppm = sum->ppm;
  uint64_t vover = verify_vram_over(tg->nvml_bytes, limit, sum->nprocs);
  uint32_t cover = verify_compute_over(tg->nvml_ppm, cppm, cap, busy > sum->busy);
  bool vstart = vover && !tg->vram_over_bytes, cstart = cover && !tg->compute_over_ppm;
  tg->vram_violations += vstart;
  tg->compute_violations += cstart;
  tg->vram_over_bytes = vover;
  tg->compute_over_ppm = cover;
  if (vover) {
    verify_pick_vram(p, np, ti, limit);
    violation(d, ti, g,
              &(struct usage_violation){
                .kind = "vram", .measured = tg->nvml_bytes, .limit = limit, .over = vover },
              vstart, p, np);
  }
  if (cover) {
    verify_pick_compute(p, np, ti, cppm);
    violation(d, ti, g,
              &(struct usage_violation){
                .kind = "compute", .measured = tg->nvml_ppm, .limit = cppm, .over = cover },
              cstart, p, np);
  }
}

/* The ended processes NVML still had samples of belong to the tenant they were found to be
 * of while they ran (the verdict the verifier keeps until its next sweep). */
static void attribute_gone(struct daemon *d, struct verify_proc *p, int from, int to)
{
  for (int i = from; i < to; i++) {
    const struct verify_seen *s = verify_seen_find(d, p[i].pid);
    p[i].tenant = s && s->tenant != VERIFY_UNKNOWN ? s->tenant : -1;
  }
}

/* Adds to each tenant's nvml_ns its processes' utilization (gone ones included) over the time
 * since GPU g's last reading. */
static void account(struct daemon *d, int g, const struct verify_proc *p, int nall)
{
  uint64_t now = mono_ns(), span = d->util_read_ns[g] ? now - d->util_read_ns[g] : 0;
  d->util_read_ns[g] = now;
  for (int i = 0; i < nall; i++)
    if (p[i].tenant >= 0 && p[i].tenant < d->reg.n)
      d->reg.v[p[i].tenant]->gpu[g].nvml_ns += p[i].sm_pct * span / 100;
}

/* NVML's processes on GPU g, placed and with their utilization; -1 when NVML cannot say. The
 * first np of p[] are listed processes, the rest up to the count returned ended ones. */
static int read_gpu(struct daemon *d, int g, int nroots, struct slot_table *st, int *np)
{
  *np = nvml_processes(d->nvml, g, d->vprocs, VERIFY_PROCS_MAX);
  if (*np < 0)
    return -1;
  attribute(d, d->vprocs, *np, nroots, st);
  int nall = nvml_process_util(d->nvml, g, d->vprocs, *np, VERIFY_PROCS_MAX);
  attribute_gone(d, d->vprocs, *np, nall);
  account(d, g, d->vprocs, nall);
  return nall;
}

static void verify_gpu(struct daemon *d, int g, int nroots, struct slot_table *st)
{
  int np;
  if (read_gpu(d, g, nroots, st, &np) < 0)
    return; /* NVML cannot say: the last verdicts stand */
  int busy;
  _cleanup_free_ struct tenant_sum *sum = sums(d, d->vprocs, np, &busy);
  for (int ti = 0; ti < d->reg.n; ti++)
    if (!d->reg.v[ti]->exited)
      check_tenant(d, ti, g, d->vprocs, np, &sum[ti], busy);
}

void verifier_run(struct daemon *d)
{
  if (d->cfg.verify != VERIFY_ON)
    return;
  uint64_t t0 = mono_ns();
  if (!d->vprocs)
    d->vprocs = xcalloc(VERIFY_PROCS_MAX, sizeof(*d->vprocs));
  int nroots = build_roots(d);
  uint64_t sig = registry_sig(d);
  if (sig != d->vseen_sig)
    verify_seen_forget_verdicts(d);
  d->vseen_sig = sig;
  d->vsample++;
  struct slot_table st = { 0 };
  for (int g = 0; g < d->snap.ngpus; g++)
    verify_gpu(d, g, nroots, &st);
  free(st.v);
  verify_seen_sweep(d);
  d->verify_ns_total += mono_ns() - t0;
}

void verifier_account(struct daemon *d)
{
  int np;
  if (d->cfg.verify != VERIFY_ON || !d->vprocs)
    return; /* nothing read yet: the first run's reading covers it */
  int nroots = build_roots(d);
  struct slot_table st = { 0 };
  for (int g = 0; g < d->snap.ngpus; g++)
    read_gpu(d, g, nroots, &st, &np);
  free(st.v);
}

void verifier_release(struct daemon *d)
{
  free(d->vprocs);
  free(d->vroots);
  verify_seen_release(d);
  d->vprocs = NULL;
  d->vroots = NULL;
  d->vroots_cap = 0;
}
