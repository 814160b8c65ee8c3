/* The daemon's side of a tenant's ledger and of its owner: sampling the ledger through a
 * descriptor kept open, mirroring the daemon's limits into it, and noticing when the owner
 * ends, and the processes it has seen in the ledger's slots, which keep it alive until they
 * end. How a ledger is read without mapping it (the tenant may truncate it at any time),
 * its path, header check and layout, all belong to lib/ (gs-ledger.h). */
#include "daemon.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/pidfd.h>
#include <unistd.h>

void tenant_mirror_limits(const struct tenant *t)
{
  gs_error_t err = NULL;
  if (gs_ledger_write_limits(t->ledger_dir, t->name, t->uid, t->created_unix_ns, t->limits, &err) <
      0) {
    GS_LOG(GS_LOG_DEBUG, "tenant '%s': mirror limits: %s", t->name, err->msg);
    gs_error_release(&err);
  }
}

int tenant_reread(struct tenant *t, struct gs_ledger_copy *buf)
{
  if (t->ledger_fd < 0) {
    t->ledger_fd = gs_ledger_read_open(t->ledger_dir, t->name, NULL);
    if (t->ledger_fd < 0)
      return -1;
  }
  return gs_ledger_read_fd(t->ledger_fd, t->name, t->uid, buf, NULL);
}

bool tenant_owner_alive(struct tenant *t)
{
  if (t->held)
    return true; /* only a DELETE ends a held tenant */
  if (t->pidfd < 0) {
    /* Opened first, then checked: if the start time matches now, the pidfd is that process. */
    t->pidfd = pidfd_open(t->owner_pid, 0);
    if (t->pidfd < 0 || !gs_proc_alive(t->owner_pid, t->owner_start_time))
      return false;
  }
  struct pollfd p = { .fd = t->pidfd, .events = POLLIN };
  return poll(&p, 1, 0) == 0;
}

static bool known(const struct tenant *t, const struct gs_ledger_pid *p)
{
  for (int i = 0; i < t->nprocs; i++)
    if (t->procs[i].pid == p->pid && t->procs[i].start_time == p->start_time)
      return true;
  return false;
}

static void prune_ended(struct tenant *t)
{
  int n = 0;
  for (int i = 0; i < t->nprocs; i++)
    if (gs_proc_alive(t->procs[i].pid, t->procs[i].start_time))
      t->procs[n++] = t->procs[i];
  t->nprocs = n;
}

void tenant_track_procs(struct tenant *t)
{
  if (t->ledger_fd < 0)
    return;
  if (!t->procs)
    t->procs = xcalloc(GS_LEDGER_MAX_PROCS, sizeof(*t->procs));
  prune_ended(t);
  struct gs_ledger_pid *now = xcalloc(GS_LEDGER_MAX_PROCS, sizeof(*now));
  int n = gs_ledger_read_procs(t->ledger_fd, now, GS_LEDGER_MAX_PROCS, NULL);
  for (int i = 0; i < n && t->nprocs < GS_LEDGER_MAX_PROCS; i++)
    if (!known(t, &now[i]) && gs_proc_alive(now[i].pid, now[i].start_time))
      t->procs[t->nprocs++] = now[i];
  free(now);
}

int tenant_live_procs(struct tenant *t, pid_t except)
{
  int n = 0;
  prune_ended(t);
  for (int i = 0; i < t->nprocs; i++)
    n += t->procs[i].pid != except;
  return n;
}
