/* Watching processes by pidfd: the daemon notices that a process it knows, named by (pid, start
 * time), has ended with a poll of a pidfd it holds, instead of reading /proc/PID/stat at every
 * sample. The pidfd is opened first and the start time checked once after: if it still matches,
 * the pidfd is that process (a pid is not reused before its process is reaped), so a reused pid
 * can never be taken for it. A pidfd is readable once its process has exited, zombie or not,
 * as gs_proc_alive counts a zombie as ended.
 *
 * Where no pidfd can be had (no pidfd_open, EMFILE, the budget below spent) a process is
 * watched as before, by reading /proc at each check (gs_proc_alive); one that cannot be read
 * either, for want of a descriptor, counts as running until it can. The budget: the daemon
 * raises its soft RLIMIT_NOFILE to the hard limit at start and lets watched processes hold at
 * most half of what a reserve leaves of it, so that a tenant starting many processes cannot take from
 * the API and metrics servers, the ledgers and SQLite the descriptors they need. Not here: which
 * processes are watched (tenant-read.c, verifier.c). */
#include "daemon.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gpuslice/proc.h>

/* Descriptors kept for everything else: the tenants' ledgers and owners' pidfds, the API's and
 * the metrics server's 256 connections each, SQLite. */
#define WATCH_RESERVE 1024
#define PRUNE_CHUNK 64

static int budget = -1; /* pidfds watched processes may hold; -1 until computed */
static int held;

static int budget_of(rlim_t soft)
{
  if (soft == RLIM_INFINITY || soft > (rlim_t) 1 << 30)
    soft = (rlim_t) 1 << 30;
  long b = ((long) soft - WATCH_RESERVE) / 2;
  return b > 0 ? (int) b : 0;
}

static int current_budget(void)
{
  struct rlimit rl;
  if (budget < 0)
    budget = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? budget_of(rl.rlim_cur) : 0;
  return budget;
}

void proc_watch_init(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rlim_t want = rl.rlim_max;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
      GS_LOG(GS_LOG_WARN, "raise the open files limit to %llu: %s", (unsigned long long) want,
             strerror(errno));
  }
  budget = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? budget_of(rl.rlim_cur) : 0;
}

void proc_watch_log(void)
{
  struct rlimit rl = { 0 };
  getrlimit(RLIMIT_NOFILE, &rl);
  GS_LOG(GS_LOG_INFO, "processes watched by pidfd: %d at most (open files limit %llu)%s",
         current_budget(), (unsigned long long) rl.rlim_cur,
         current_budget() ? "" : "; through /proc instead");
}

int proc_watch_budget(void)
{
  return current_budget();
}

int proc_watch_held(void)
{
  return held;
}

/* gs_proc_alive, except that a /proc the daemon cannot read for want of a descriptor (EMFILE,
 * ENFILE) cannot tell, and then the process counts as running: the daemon's hold on a tenant
 * must not end on a shortage of descriptors. It is asked again at the next check. */
static bool alive_by_proc(pid_t pid, uint64_t start_time)
{
  errno = 0;
  if (gs_proc_alive(pid, start_time))
    return true;
  return errno == EMFILE || errno == ENFILE;
}

/* A pidfd for pid, or -1 when none can be had (then /proc is read instead), or -2 when pid is
 * gone. */
static int open_pidfd(pid_t pid)
{
  if (held >= current_budget())
    return -1;
  int fd = pidfd_open(pid, 0);
  if (fd >= 0) {
    held++;
    return fd;
  }
  return errno == ESRCH ? -2 : -1; /* EMFILE, ENFILE, ENOSYS, ENOMEM: fall back */
}

void proc_watch_close(struct watched_proc *w)
{
  proc_watch_unsubscribe(w);
  if (w->pidfd >= 0) {
    close(w->pidfd);
    held--;
  }
  w->pidfd = -1;
}

bool proc_watch_open(struct watched_proc *w, pid_t pid, uint64_t start_time)
{
  *w = (struct watched_proc){ .pid = pid, .start_time = start_time, .pidfd = -1 };
  if (pid <= 0)
    return false;
  int fd = open_pidfd(pid);
  if (fd == -2)
    return false;
  w->pidfd = fd;
  /* Checked after the open: a match now means the pidfd is the process of (pid, start_time). */
  if (!alive_by_proc(pid, start_time)) {
    proc_watch_close(w);
    return false;
  }
  return true;
}

bool proc_watch_alive(const struct watched_proc *w)
{
  if (w->pidfd < 0)
    return alive_by_proc(w->pid, w->start_time);
  struct pollfd p = { .fd = w->pidfd, .events = POLLIN };
  /* An error of poll itself (EINTR, ENOMEM) says nothing: ask /proc. */
  int r = poll(&p, 1, 0);
  return r == 0 || (r < 0 && alive_by_proc(w->pid, w->start_time));
}

/* Polls v[0..n) (n <= PRUNE_CHUNK) in one call; ended[i] tells which have exited. */
static void poll_chunk(const struct watched_proc *v, int n, bool *ended)
{
  struct pollfd p[PRUNE_CHUNK];
  int np = 0;
  for (int i = 0; i < n; i++)
    if (v[i].pidfd >= 0)
      p[np++] = (struct pollfd){ .fd = v[i].pidfd, .events = POLLIN };
  bool polled = np == 0 || poll(p, (nfds_t) np, 0) >= 0;
  for (int i = 0, k = 0; i < n; i++) {
    if (v[i].pidfd < 0 || !polled)
      ended[i] = !alive_by_proc(v[i].pid, v[i].start_time);
    else
      ended[i] = p[k].revents != 0;
    k += v[i].pidfd >= 0;
  }
}

int proc_watch_prune(struct watched_proc *v, int n)
{
  int kept = 0;
  for (int base = 0; base < n; base += PRUNE_CHUNK) {
    int len = n - base < PRUNE_CHUNK ? n - base : PRUNE_CHUNK;
    bool ended[PRUNE_CHUNK];
    poll_chunk(v + base, len, ended);
    for (int i = 0; i < len; i++) {
      if (ended[i])
        proc_watch_close(&v[base + i]);
      else
        v[kept++] = v[base + i];
    }
  }
  return kept;
}
