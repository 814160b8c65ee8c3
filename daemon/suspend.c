/* Suspending a tenant (docs/suspend.md): every process of it that uses the GPU is locked (its
 * submitted work finishes, its new CUDA calls block) and checkpointed (its device memory moves
 * to host memory and the GPU's is freed) through the driver's checkpoint API (gpu-cuda.c). The
 * tenant is suspended only when all of them are: a process the driver refuses undoes the
 * others, and the tenant keeps running, with the driver's reason in one line.
 *
 * What it moved stays the tenant's unless suspended memory may be lent (the oversubscribe
 * setting): the daemon then allocates as much itself on each GPU, so no one else takes it, and
 * gives it back just before the tenant's resume (resume.c).
 *
 * Everything runs in the daemon's one thread: while the lock waits for the tenant's work (at
 * most the lock timeout) and the driver copies, the API and /metrics wait. */
#include "daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-cuda.h"
#include "suspend.h"
#include "verify.h"

#define NVML_PROCS_MAX 4096

uint32_t suspend_state(const struct tenant *t)
{
  return atomic_load(&t->limits->run_state);
}

void suspend_set_state(struct tenant *t, uint32_t state)
{
  gs_limits_set_run_state(t->limits, state);
  if (t->limits_prev)
    gs_limits_mirror(t->limits_prev, t->limits);
}

int suspend_driver(struct daemon *d, gs_error_t *err)
{
  if (d->cuda)
    return 0;
  if (cuda_open(&d->cuda, err) < 0)
    return -1;
  GS_LOG(GS_LOG_INFO, "CUDA driver loaded for suspending tenants");
  return 0;
}

int suspend_procs(struct daemon *d, struct tenant *t, const CUprocessState *want, int nwant,
                  pid_t **out)
{
  struct gs_ledger_copy l;
  _cleanup_free_ struct gs_ledger_pid *seen = xmalloc(GS_LEDGER_MAX_PROCS * sizeof(*seen));
  struct ledger_procs procs = { seen, 0 };
  if (tenant_reread(t, &l, &procs) == 0)
    tenant_track_procs(t, &procs);
  tenant_live_procs(t, 0); /* drops the ones that ended */
  pid_t *v = xcalloc((size_t) t->nprocs + 1, sizeof(*v));
  int n = 0;
  for (int i = 0; i < t->nprocs; i++) {
    CUprocessState s;
    if (cuda_proc_state(d->cuda, t->procs[i].pid, &s) != CUDA_SUCCESS)
      continue; /* no CUDA in it (yet) */
    for (int k = 0; k < nwant; k++)
      if (s == want[k])
        v[n++] = t->procs[i].pid;
  }
  *out = v;
  return n;
}

static bool has_pid(const pid_t *v, int n, pid_t pid)
{
  for (int i = 0; i < n; i++)
    if (v[i] == pid)
      return true;
  return false;
}

/* What pids hold on each GPU, as NVML counts them (contexts included): what a resume must find
 * room for. */
static void bytes_on_gpus(struct daemon *d, const pid_t *pids, int n, uint64_t *bytes)
{
  _cleanup_free_ struct verify_proc *p = xcalloc(NVML_PROCS_MAX, sizeof(*p));
  for (int g = 0; g < d->snap.ngpus; g++) {
    int k = nvml_processes(d->nvml, g, p, NVML_PROCS_MAX);
    for (int i = 0; i < k; i++)
      if (has_pid(pids, n, p[i].pid))
        bytes[g] += p[i].vram_bytes;
  }
}

void suspend_hold(struct daemon *d, struct tenant *t)
{
  for (int g = 0; g < d->snap.ngpus; g++) {
    uint64_t bytes = atomic_load(&t->limits->suspended_bytes[g]);
    if (!bytes || t->sus.hold[g])
      continue;
    CUresult r = cuda_hold(d->cuda, g, bytes, &t->sus.hold[g]);
    if (r != CUDA_SUCCESS)
      GS_LOG(
        GS_LOG_WARN,
        "tenant '%s': cannot keep its %llu bytes on GPU %d (%s): its resume will wait for room",
        t->name, (unsigned long long) bytes, g, cuda_error_name(d->cuda, r));
  }
}

void suspend_unhold(struct daemon *d, struct tenant *t)
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    if (t->sus.hold[g]) {
      cuda_release(d->cuda, g, t->sus.hold[g]);
      t->sus.hold[g] = 0;
    }
}

/* ---- refusals before anything is touched ---- */

static int precheck(struct daemon *d, struct tenant *t, int *status, gs_error_t *err)
{
  uint32_t st = suspend_state(t);
  *status = 409;
  if (t->exited)
    return gs_make_error(err, 0, "tenant '%s' has ended", t->name);
  if (st == GS_RUN_SUSPENDED)
    return gs_make_error(err, 0, "tenant '%s' is already suspended", t->name);
  if (st != GS_RUN_RUNNING)
    return gs_make_error(err, 0, "tenant '%s' is being suspended or resumed", t->name);
  for (int g = 0; g < d->snap.ngpus; g++)
    if (tenant_gpu_row(t, g, d->snap.ngpus) && nvml_mig_enabled(d->nvml, g))
      return gs_make_error(err, 0,
                           "tenant '%s' not suspended: GPU %d is in MIG mode, where the driver "
                           "cannot checkpoint processes; it keeps running",
                           t->name, g);
  if (suspend_driver(d, err) < 0) {
    *status = 503;
    return gs_error_prepend(err, "tenant '%s' not suspended", t->name);
  }
  return 0;
}

/* ---- locking and checkpointing, undone on a refusal ---- */

static void undo(struct daemon *d, const pid_t *pids, int locked, int checkpointed)
{
  for (int i = 0; i < checkpointed; i++)
    cuda_proc_restore(d->cuda, pids[i]);
  for (int i = 0; i < locked; i++)
    cuda_proc_unlock(d->cuda, pids[i]);
}

static int lock_and_checkpoint(struct daemon *d, struct tenant *t, const pid_t *pids, int n,
                               unsigned timeout_ms, uint64_t *bytes, gs_error_t *err)
{
  char line[512];
  CUresult r = CUDA_SUCCESS;
  int i;
  for (i = 0; i < n && (r = cuda_proc_lock(d->cuda, pids[i], timeout_ms)) == CUDA_SUCCESS; i++)
    ;
  if (r != CUDA_SUCCESS) {
    undo(d, pids, i, 0);
    suspend_refusal(line, sizeof(line), t->name, pids[i], "lock", r, cuda_error_name(d->cuda, r),
                    timeout_ms);
    return gs_make_error(err, 0, "%s", line);
  }
  bytes_on_gpus(d, pids, n, bytes); /* locked: what they hold now is what moves */
  for (i = 0; i < n && (r = cuda_proc_checkpoint(d->cuda, pids[i])) == CUDA_SUCCESS; i++)
    ;
  if (r != CUDA_SUCCESS) {
    undo(d, pids, n, i);
    suspend_refusal(line, sizeof(line), t->name, pids[i], "checkpoint", r,
                    cuda_error_name(d->cuda, r), timeout_ms);
    return gs_make_error(err, 0, "%s", line);
  }
  return 0;
}

static void record(struct daemon *d, struct tenant *t, const uint64_t *bytes, double t0)
{
  struct tenant_suspend *s = &t->sus;
  gs_error_t err = NULL;
  uint64_t total = 0;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    atomic_store(&t->limits->suspended_bytes[g], bytes[g]);
    total += bytes[g];
  }
  t->limits->suspended_unix_ns = (uint64_t) (daemon_now_unix() * 1e9);
  t->limits->resume_wait_ms = (uint32_t) (d->cfg.resume_timeout * 1000.0) + 10000u;
  s->started_unix = daemon_now_unix();
  s->known = true;
  s->suspensions++;
  s->suspend_s = daemon_now_mono() - t0;
  s->error[0] = '\0';
  if (usage_db_suspended(d->db, t, total, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
}

int suspend_tenant(struct daemon *d, struct tenant *t, unsigned lock_timeout_ms, int *status,
                   gs_error_t *err)
{
  static const CUprocessState running = CU_PROCESS_STATE_RUNNING;
  uint64_t bytes[GS_LEDGER_MAX_GPUS] = { 0 };
  struct gs_ledger_resume_copy asked = { 0 };
  double t0 = daemon_now_mono();
  unsigned timeout_ms =
    lock_timeout_ms ? lock_timeout_ms : (unsigned) (d->cfg.lock_timeout * 1000.0);
  if (precheck(d, t, status, err) < 0)
    return -1;
  _cleanup_free_ pid_t *pids = NULL;
  int n = suspend_procs(d, t, &running, 1, &pids);
  if (n == 0) {
    *status = 409;
    return gs_make_error(err, 0, "tenant '%s' not suspended: none of its processes uses the GPU",
                         t->name);
  }
  /* What its processes asked before now is not a request to undo this suspension. */
  if (t->ledger_fd >= 0 && gs_ledger_read_resume(t->ledger_fd, &asked) == 0)
    t->sus.requests_seen = asked.requests;
  suspend_set_state(t, GS_RUN_SUSPENDING);
  if (lock_and_checkpoint(d, t, pids, n, timeout_ms, bytes, err) < 0) {
    suspend_set_state(t, GS_RUN_RUNNING);
    snprintf(t->sus.error, sizeof(t->sus.error), "%s", (*err)->msg);
    *status = 409;
    GS_LOG(GS_LOG_WARN, "%s", (*err)->msg);
    return -1;
  }
  record(d, t, bytes, t0);
  if (d->cfg.oversubscribe == OVERSUBSCRIBE_OFF)
    suspend_hold(d, t);
  suspend_set_state(t, GS_RUN_SUSPENDED);
  suspend_watch_update(d);
  char moved[32];
  uint64_t total = 0;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    total += bytes[g];
  suspend_bytes_text(moved, sizeof(moved), total);
  GS_LOG(GS_LOG_INFO, "tenant '%s' suspended: %d process%s, %s off the GPU in %.3f s", t->name, n,
         n == 1 ? "" : "es", moved, t->sus.suspend_s);
  *status = 200;
  return 0;
}

void suspend_adopted(struct daemon *d, struct tenant *t)
{
  struct gs_ledger_resume_copy asked = { 0 };
  uint32_t st = suspend_state(t);
  t->sus.known = true;
  if (st == GS_RUN_RUNNING)
    return;
  if (t->ledger_fd >= 0 && gs_ledger_read_resume(t->ledger_fd, &asked) == 0)
    t->sus.requests_seen = asked.requests;
  t->sus.started_unix = (double) t->limits->suspended_unix_ns / 1e9;
  gs_error_t err = NULL;
  if (st == GS_RUN_SUSPENDED && d->cfg.oversubscribe == OVERSUBSCRIBE_OFF &&
      suspend_driver(d, &err) == 0)
    suspend_hold(d, t);
  gs_error_release(&err);
  if (st != GS_RUN_SUSPENDED) {
    /* Caught half way by the daemon's end: brought back, as a failed suspend would be. */
    suspend_set_state(t, GS_RUN_SUSPENDED);
    int status;
    resume_tenant(d, t, "restart", &status, &err);
    gs_error_release(&err);
  }
  GS_LOG(GS_LOG_INFO, "tenant '%s' adopted %s", t->name,
         suspend_state(t) == GS_RUN_RUNNING ? "and resumed" : "suspended");
  suspend_watch_update(d);
}

void suspend_forget(struct daemon *d, struct tenant *t)
{
  gs_error_t err = NULL;
  if (d->cuda)
    suspend_unhold(d, t);
  if (t->sus.db_row && usage_db_resumed(d->db, t, "ended", &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
}
