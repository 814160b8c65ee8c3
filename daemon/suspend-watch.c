/* The watcher of suspended tenants (suspend.h): a timer of its own, armed only while some
 * tenant is suspended or resuming, so that a suspended tenant's process that asks to run is
 * noticed within milliseconds, not at the next sample.
 *
 * Each tick reads one small block, struct gs_ledger_resume, of each suspended tenant's ledger
 * (one pread through the descriptor the daemon keeps; never the whole registry, never a
 * mapping), and starts a resume where its request count moved; and steps the resumes that wait
 * for room. */
#include "daemon.h"

#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "suspend.h"

#define TICK_NS 5000000L /* 5 ms */

int suspend_watch_open(struct daemon *d)
{
  d->suspend_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  d->suspend_armed = false;
  return d->suspend_tfd;
}

void suspend_watch_close(struct daemon *d)
{
  if (d->suspend_tfd >= 0)
    close(d->suspend_tfd);
  d->suspend_tfd = -1;
}

void suspend_watch_update(struct daemon *d)
{
  bool want = false;
  for (int i = 0; i < d->reg.n && !want; i++)
    want = !d->reg.v[i]->exited && suspend_state(d->reg.v[i]) != GS_RUN_RUNNING;
  if (want == d->suspend_armed || d->suspend_tfd < 0)
    return;
  struct itimerspec it;
  memset(&it, 0, sizeof(it));
  if (want)
    it.it_interval.tv_nsec = it.it_value.tv_nsec = TICK_NS;
  timerfd_settime(d->suspend_tfd, 0, &it, NULL);
  d->suspend_armed = want;
}

/* A suspended tenant whose processes asked to run since the last look. */
static bool asked(struct tenant *t)
{
  struct gs_ledger_resume_copy r;
  if (t->ledger_fd < 0 || gs_ledger_read_resume(t->ledger_fd, &r) < 0 ||
      r.requests == t->sus.requests_seen)
    return false;
  t->sus.requests_seen = r.requests;
  return true;
}

void suspend_watch_tick(struct daemon *d)
{
  uint64_t ticks;
  if (read(d->suspend_tfd, &ticks, sizeof(ticks)) < 0)
    return;
  for (int i = 0; i < d->reg.n; i++) {
    struct tenant *t = d->reg.v[i];
    uint32_t st = t->exited ? GS_RUN_RUNNING : suspend_state(t);
    int status;
    gs_error_t err = NULL;
    if (st == GS_RUN_SUSPENDED && asked(t))
      resume_tenant(d, t, "demand", &status, &err);
    else if (st == GS_RUN_RESUMING)
      resume_step(d, t);
    gs_error_release(&err);
  }
  suspend_watch_update(d);
}
