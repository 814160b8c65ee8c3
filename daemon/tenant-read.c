/* The daemon's side of a tenant's ledger and of its owner: sampling the ledger through a
 * descriptor kept open, mirroring the daemon's limits into it, and noticing when the owner
 * ends, and the processes it has seen in the ledger's slots, which keep it alive until they
 * end (each watched by pidfd, proc-watch.c). How a ledger is read without mapping it (the
 * tenant may truncate it at any time), its path, header check and layout, all belong to lib/
 * (gs-ledger.h). */
#include "daemon.h"

#include <stdlib.h>

#include "suspend.h"

#define RESUME_SETTLE 10 /* samples */
#define RESUME_EVERY 10  /* samples */

void tenant_mirror_limits(const struct tenant *t)
{
  gs_error_t err = NULL;
  if (gs_ledger_write_limits(t->ledger_dir, t->name, t->uid, t->created_unix_ns, t->limits, &err) <
      0) {
    GS_LOG(GS_LOG_DEBUG, "tenant '%s': mirror limits: %s", t->name, err->msg);
    gs_error_release(&err);
  }
}

/* Whether this reading takes the ledger's resume block (the tenant's resume waits, for the API
 * and /metrics): at every sample while the tenant is not running and for RESUME_SETTLE samples
 * after, since its processes count a wait when they see it run again; else every RESUME_EVERY
 * samples, so that a count written later still shows within that many. Only a tenant that was
 * not running waits (preload/resume-wait.c), and only the daemon sets its run state. */
static bool resume_due(struct tenant *t)
{
  bool running = suspend_state(t) == GS_RUN_RUNNING, due = !running || t->resume_settle > 0;
  if (!running)
    t->resume_settle = RESUME_SETTLE;
  else if (t->resume_settle > 0)
    t->resume_settle--;
  t->resume_skips = t->resume_skips + 1 < RESUME_EVERY ? t->resume_skips + 1 : 0;
  return due || t->resume_skips == 0;
}

int tenant_reread(struct tenant *t, struct gs_ledger_copy *buf, struct ledger_procs *procs)
{
  bool resume = true;
  if (t->ledger_fd < 0) {
    t->ledger_fd = gs_ledger_read_open(t->ledger_dir, t->name, NULL);
    t->ledger_checked = false;
    if (t->ledger_fd < 0)
      return -1;
  }
  if (t->ledger_checked) { /* the descriptor's file was found regular and the tenant's */
    resume = resume_due(t);
    procs->n = gs_ledger_read_kept_procs(t->ledger_fd, t->name, t->slots_used, resume, buf,
                                         procs->v, GS_LEDGER_MAX_PROCS, NULL);
  } else {
    t->ledger_checked = gs_ledger_read_fd(t->ledger_fd, t->name, t->uid, buf, NULL) == 0;
    if (!t->ledger_checked)
      return -1;
    procs->n =
      gs_ledger_read_procs_in(t->ledger_fd, buf->slots_used, procs->v, GS_LEDGER_MAX_PROCS, NULL);
    procs->n = procs->n < 0 ? 0 : procs->n; /* the head was read: slots unread name none */
  }
  if (procs->n < 0)
    return -1;
  t->slots_used = buf->slots_used;
  if (resume)
    t->sus.asked = buf->resume;
  return 0;
}

bool tenant_owner_alive(struct tenant *t)
{
  if (t->held)
    return true; /* only a DELETE ends a held tenant */
  if (t->owner_state == OWNER_UNWATCHED) {
    t->owner_state =
      proc_watch_open(&t->owner, t->owner_pid, t->owner_start_time) ? OWNER_WATCHED : OWNER_ENDED;
    proc_watch_subscribe(&t->owner);
  }
  if (t->owner_state == OWNER_WATCHED && !proc_watch_running(&t->owner)) {
    proc_watch_close(&t->owner);
    t->owner_state = OWNER_ENDED; /* a process does not come back: never asked again */
  }
  return t->owner_state == OWNER_WATCHED;
}

static bool known(const struct tenant *t, const struct gs_ledger_pid *p)
{
  for (int i = 0; i < t->nprocs; i++)
    if (t->procs[i].pid == p->pid && t->procs[i].start_time == p->start_time)
      return true;
  return false;
}

static void add_proc(struct tenant *t, const struct gs_ledger_pid *p)
{
  struct watched_proc w;
  if (!proc_watch_open(&w, p->pid, p->start_time))
    return; /* not running (the slot's word is checked, never taken) */
  if (t->nprocs == t->procs_cap) {
    t->procs_cap = t->procs_cap ? 2 * t->procs_cap : 4;
    t->procs = xrealloc(t->procs, (size_t) t->procs_cap * sizeof(*t->procs));
  }
  t->procs[t->nprocs++] = w;
}

/* The processes that ended are dropped only when a new one comes (and by tenant_live_procs):
 * an ended one left in t->procs is never taken for another, being (pid, start time), so a
 * sample in which the slots name no new process costs no check at all. */
void tenant_track_procs(struct tenant *t, const struct ledger_procs *now)
{
  bool pruned = false;
  for (int i = 0; i < now->n; i++) {
    if (known(t, &now->v[i]))
      continue;
    if (!pruned)
      t->nprocs = proc_watch_prune(t->procs, t->nprocs);
    pruned = true;
    if (t->nprocs < GS_LEDGER_MAX_PROCS)
      add_proc(t, &now->v[i]);
  }
}

int tenant_live_procs(struct tenant *t, pid_t except)
{
  int n = 0;
  t->nprocs = proc_watch_prune(t->procs, t->nprocs);
  for (int i = 0; i < t->nprocs; i++)
    n += t->procs[i].pid != except;
  return n;
}

void tenant_forget_procs(struct tenant *t)
{
  for (int i = 0; i < t->nprocs; i++)
    proc_watch_close(&t->procs[i]);
  free(t->procs);
  t->procs = NULL;
  t->nprocs = t->procs_cap = 0;
  proc_watch_close(&t->owner);
}
