/* The monitoring reaper's view of the simulated processes: a pidfd per slot, opened once and
 * checked against the slot's start time then, so that each later check is one poll() instead
 * of a /proc/PID/stat read. A node daemon asks NVML about every process each sample (hundreds
 * of /proc reads a second, most of its CPU with 256 tenants), which a real driver, that knows
 * its processes, does not cost. Only the monitoring path (gpusim_reap_dead_every) uses it, and
 * only where the process may open many files: a workload's own reaper keeps reading /proc. */
#include "sim-state.h"

#include <gpuslice/proc.h>
#include <poll.h>
#include <pthread.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <unistd.h>

/* Pidfds only while the soft limit leaves this many files for everything else. */
#define WATCH_MIN_NOFILE (GPUSIM_MAX_PROCS * 4)

static struct {
  pid_t pid;
  uint64_t start;
  int fd; /* -1: none */
} watch[GPUSIM_MAX_PROCS];
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;
static bool watch_on;

static void watch_init(void)
{
  struct rlimit rl;
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++)
    watch[i].fd = -1;
  watch_on = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= WATCH_MIN_NOFILE;
}

/* True when slot i's (pid, start_time) still runs; the caller holds watch_mu. */
static bool watched_alive(int i, pid_t pid, uint64_t start_time)
{
  if (watch[i].fd < 0 || watch[i].pid != pid || watch[i].start != start_time) {
    if (watch[i].fd >= 0)
      close(watch[i].fd);
    watch[i].fd = pidfd_open(pid, 0);
    watch[i].pid = pid;
    watch[i].start = start_time;
    /* Opened first, then checked: if the start time matches now, the pidfd is that process. */
    if (watch[i].fd < 0 || !gs_proc_alive(pid, start_time)) {
      bool alive = watch[i].fd < 0 && gs_proc_alive(pid, start_time);
      if (watch[i].fd >= 0)
        close(watch[i].fd);
      watch[i].fd = -1;
      return alive;
    }
  }
  struct pollfd p = { .fd = watch[i].fd, .events = POLLIN };
  if (poll(&p, 1, 0) == 0)
    return true;
  close(watch[i].fd);
  watch[i].fd = -1;
  return false;
}

bool gpusim_proc_alive_watched(int slot, pid_t pid, uint64_t start_time)
{
  pthread_once(&watch_once, watch_init);
  if (!watch_on || slot < 0 || slot >= GPUSIM_MAX_PROCS)
    return gs_proc_alive(pid, start_time);
  pthread_mutex_lock(&watch_mu);
  bool alive = watched_alive(slot, pid, start_time);
  pthread_mutex_unlock(&watch_mu);
  return alive;
}
