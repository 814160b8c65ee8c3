/* Resuming a suspended tenant (docs/suspend.md), asked by the API (`gpuslice resume`) or by
 * one of the tenant's own processes (suspend-watch.c sees its request in the ledger): its
 * checkpointed processes are restored, at the same addresses, and unlocked.
 *
 * The room comes first. Memory the daemon kept for the tenant is given back just before the
 * restore; memory that was lent to others (oversubscribe on) must be free again on every GPU,
 * as NVML counts it, before the driver is asked: NVIDIA's driver r570-r580 leaves a process it
 * failed to restore for want of memory unable to restore at all. So a resume that finds no room
 * waits, stepped by the watcher, until resume_timeout; then it fails with one line naming the
 * tenant and the bytes missing, the tenant stays suspended with its memory in host memory, and
 * the processes waiting for it give up. */
#include "daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu-cuda.h"
#include "suspend.h"

/* The resume could not be done: the tenant stays suspended and its waiting processes give up
 * (resume_failures moves before the state, so that a process woken by the state sees it). */
static int fail(struct daemon *d, struct tenant *t, const char *msg)
{
  snprintf(t->sus.error, sizeof(t->sus.error), "%s", msg);
  atomic_fetch_add(&t->limits->resume_failures, 1);
  t->sus.asked_mono = 0;
  if (d->cfg.oversubscribe == OVERSUBSCRIBE_OFF && d->cuda)
    suspend_hold(d, t); /* what was given back for the restore is kept again, where it still is */
  suspend_set_state(t, GS_RUN_SUSPENDED);
  GS_LOG(GS_LOG_WARN, "%s", msg);
  return -1;
}

/* The GPU whose free memory cannot take what t needs back there (what the daemon keeps for it
 * counts as free for it), with the figures for the message; -1 when all fit. */
static int room_short(struct daemon *d, const struct tenant *t, uint64_t *need, uint64_t *free_,
                      uint64_t *missing)
{
  for (int g = 0; g < d->snap.ngpus; g++) {
    need[g] = atomic_load(&t->limits->suspended_bytes[g]);
    free_[g] = 0;
    if (need[g] && nvml_memory_free(d->nvml, g, &free_[g]) < 0)
      free_[g] = 0;
    if (t->sus.hold[g])
      free_[g] += need[g];
  }
  return suspend_room_short(need, free_, d->snap.ngpus, missing);
}

static void done(struct daemon *d, struct tenant *t, int nprocs)
{
  struct tenant_suspend *s = &t->sus;
  gs_error_t err = NULL;
  s->resumes++;
  s->resume_s = daemon_now_mono() - s->asked_mono;
  s->suspended_s += daemon_now_unix() - s->started_unix;
  s->started_unix = 0;
  s->asked_mono = 0;
  s->error[0] = '\0';
  if (usage_db_resumed(d->db, t, s->asked_by, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    atomic_store(&t->limits->suspended_bytes[g], 0);
  suspend_set_state(t, GS_RUN_RUNNING);
  GS_LOG(GS_LOG_INFO, "tenant '%s' resumed (asked by %s): %d process%s in %.3f s", t->name,
         s->asked_by, nprocs, nprocs == 1 ? "" : "es", s->resume_s);
}

/* Restores every checkpointed process and unlocks every locked one; a restore the driver
 * refuses checkpoints again those already restored. 1 done, 0 to try again, -1 failed. */
static int restore_all(struct daemon *d, struct tenant *t)
{
  static const CUprocessState want[] = { CU_PROCESS_STATE_CHECKPOINTED, CU_PROCESS_STATE_LOCKED };
  _cleanup_free_ pid_t *pids = NULL;
  char msg[512];
  int n = suspend_procs(d, t, want, 2, &pids), i;
  CUresult r = CUDA_SUCCESS;
  suspend_unhold(d, t);
  for (i = 0; i < n; i++) {
    CUprocessState s;
    if (cuda_proc_state(d->cuda, pids[i], &s) == CUDA_SUCCESS &&
        s == CU_PROCESS_STATE_CHECKPOINTED &&
        (r = cuda_proc_restore(d->cuda, pids[i])) != CUDA_SUCCESS)
      break;
  }
  if (r != CUDA_SUCCESS) {
    for (int k = 0; k < i; k++)
      cuda_proc_checkpoint(d->cuda, pids[k]);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && daemon_now_mono() < t->sus.deadline_mono) {
      if (d->cfg.oversubscribe == OVERSUBSCRIBE_OFF)
        suspend_hold(d, t);
      return 0; /* taken meanwhile: the watcher tries again */
    }
    snprintf(msg, sizeof(msg),
             "tenant '%s' not resumed: restore of process %d failed (%s); it "
             "stays suspended",
             t->name, (int) pids[i], cuda_error_name(d->cuda, r));
    return fail(d, t, msg);
  }
  for (i = 0; i < n; i++)
    cuda_proc_unlock(d->cuda, pids[i]);
  done(d, t, n);
  return 1;
}

/* 1 done, 0 waiting for room, -1 failed. */
static int step(struct daemon *d, struct tenant *t)
{
  uint64_t need[GS_LEDGER_MAX_GPUS], free_[GS_LEDGER_MAX_GPUS], missing;
  char msg[512];
  gs_error_t err = NULL;
  if (suspend_state(t) != GS_RUN_RESUMING)
    return suspend_state(t) == GS_RUN_RUNNING ? 1 : -1;
  int g = room_short(d, t, need, free_, &missing);
  if (g >= 0) {
    double now = daemon_now_mono();
    if (now < t->sus.deadline_mono)
      return 0;
    suspend_timeout_reason(msg, sizeof(msg), t->name, now - t->sus.asked_mono, g, need[g], free_[g],
                           missing);
    return fail(d, t, msg);
  }
  if (suspend_driver(d, &err) < 0) {
    snprintf(msg, sizeof(msg), "tenant '%s' not resumed: %s", t->name, err->msg);
    gs_error_release(&err);
    return fail(d, t, msg);
  }
  return restore_all(d, t);
}

void resume_step(struct daemon *d, struct tenant *t)
{
  step(d, t);
}

int resume_tenant(struct daemon *d, struct tenant *t, const char *by, int *status, gs_error_t *err)
{
  uint32_t st = suspend_state(t);
  *status = 409;
  if (st == GS_RUN_RESUMING) {
    *status = 202;
    return 0;
  }
  if (st != GS_RUN_SUSPENDED)
    return gs_make_error(err, 0, "tenant '%s' is not suspended (it is %s)", t->name,
                         gs_run_state_name(st));
  t->sus.asked_mono = daemon_now_mono();
  t->sus.deadline_mono = t->sus.asked_mono + d->cfg.resume_timeout;
  snprintf(t->sus.asked_by, sizeof(t->sus.asked_by), "%s", by);
  suspend_set_state(t, GS_RUN_RESUMING);
  suspend_watch_update(d);
  int r = step(d, t);
  if (r < 0)
    return gs_make_error(err, 0, "%s", t->sus.error);
  *status = r > 0 ? 200 : 202;
  return 0;
}
