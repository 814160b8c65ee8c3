/* The daemon's side of a tenant's ledger and of its owner: sampling the ledger through a
 * descriptor kept open, mirroring the daemon's limits into it, and noticing when the owner
 * ends. How a ledger is read without mapping it (the tenant may truncate it at any time),
 * its path, header check and layout, all belong to lib/ (gs-ledger.h). */
#include "daemon.h"

#include <poll.h>
#include <sys/pidfd.h>
#include <unistd.h>

void tenant_mirror_limits(const struct tenant *t)
{
  gs_error_t err = NULL;
  if (gs_ledger_write_limits(t->ledger_dir, t->name, t->uid, t->created_unix_ns, t->limits, &err) < 0) {
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
  if (t->pidfd < 0) {
    /* Opened first, then checked: if the start time matches now, the pidfd is that process. */
    t->pidfd = pidfd_open(t->owner_pid, 0);
    if (t->pidfd < 0 || !gs_proc_alive(t->owner_pid, t->owner_start_time))
      return false;
  }
  struct pollfd p = { .fd = t->pidfd, .events = POLLIN };
  return poll(&p, 1, 0) == 0;
}
