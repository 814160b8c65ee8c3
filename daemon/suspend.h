/* Suspending idle tenants and resuming them (docs/suspend.md). Private to daemon/.
 *
 *   suspend.c        suspending: refusals, locking and checkpointing every process of the
 *                    tenant through the driver (gpu-cuda.c), the memory it keeps
 *   resume.c         resuming: asked by the API or by the tenant itself, waiting for room,
 *                    restoring and unlocking
 *   suspend-watch.c  the watcher: while a tenant is suspended, a timer polls the suspended
 *                    tenants' ledgers for their processes' requests to run, and steps the
 *                    resumes that wait for room
 *   suspend-rules.c  the pure rules (tests/unit/test_daemon_suspend.c): the one-line reasons,
 *                    whether a resume fits */
#ifndef GS_DAEMON_SUSPEND_H
#define GS_DAEMON_SUSPEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpuslice.h>

#include "gs-cuda.h"

struct daemon;
struct tenant;

/* ---- the operations (suspend.c, resume.c) ---- */

/* Suspends t, waiting at most lock_timeout_ms (0: the setting) for its submitted work. Returns
 * 0, or -1 with the HTTP status (409 refused, 503 no usable driver) and a one-line reason in
 * err; a refused tenant is left as it was, running. */
int suspend_tenant(struct daemon *d, struct tenant *t, unsigned lock_timeout_ms, int *status,
                   gs_error_t *err);
/* Asks for t to run again, by "api" or "demand" (its own process). Returns 0 (*status 200: it
 * runs; 202: it waits for room, resume_step goes on with it), or -1 with 409 and err when t is
 * not suspended. */
int resume_tenant(struct daemon *d, struct tenant *t, const char *by, int *status, gs_error_t *err);
/* A waiting resume's next try: restores when the room is there, fails at its deadline (the
 * tenant stays suspended, waiting processes give up, t->sus.error says why). */
void resume_step(struct daemon *d, struct tenant *t);
/* A tenant adopted by a restarted daemon that was not running: a suspended one stays
 * suspended (its memory kept again where the setting says so); one caught half way is brought
 * back. */
void suspend_adopted(struct daemon *d, struct tenant *t);
/* Before t leaves the registry: gives back the memory kept for it, closes its suspension. */
void suspend_forget(struct daemon *d, struct tenant *t);
/* The tenant's run state (enum gs_run_state), from its limits file. */
uint32_t suspend_state(const struct tenant *t);

/* Between suspend.c and resume.c: the run state written to the tenant's limits files (and
 * its processes woken); the driver, loaded at the first need; the tenant's processes the
 * driver has in one of the states want[0..nwant) (*out: free it); the memory the daemon keeps
 * for a suspended tenant (struct tenant_suspend.hold), taken and given back. */
void suspend_set_state(struct tenant *t, uint32_t state);
int suspend_driver(struct daemon *d, gs_error_t *err);
int suspend_procs(struct daemon *d, struct tenant *t, const CUprocessState *want, int nwant,
                  pid_t **out);
void suspend_hold(struct daemon *d, struct tenant *t);
void suspend_unhold(struct daemon *d, struct tenant *t);

/* ---- the watcher (suspend-watch.c) ---- */

/* The watcher's timer: a timerfd the poll loop waits on, -1 when it could not be made. */
int suspend_watch_open(struct daemon *d);
void suspend_watch_close(struct daemon *d);
/* Arms the timer while some tenant is suspended or resuming, disarms it otherwise. */
void suspend_watch_update(struct daemon *d);
/* One tick: reads the suspended tenants' resume requests, steps the waiting resumes. */
void suspend_watch_tick(struct daemon *d);

/* ---- the rules (suspend-rules.c) ---- */

/* The first GPU of need[0..ngpus) (bytes to bring back) that free_[] cannot take, with what it
 * lacks in *missing; -1 when everything fits. */
int suspend_room_short(const uint64_t *need, const uint64_t *free_, int ngpus, uint64_t *missing);
/* Why the driver's answer r (named rname) to op ("lock", "checkpoint") on pid refuses the
 * suspension of tenant: one line, ending with what became of the tenant. */
void suspend_refusal(char *buf, size_t len, const char *tenant, pid_t pid, const char *op,
                     CUresult r, const char *rname, unsigned lock_timeout_ms);
/* The one line of a resume that found no room in time. */
void suspend_timeout_reason(char *buf, size_t len, const char *tenant, double waited_s, int gpu,
                            uint64_t need, uint64_t free_, uint64_t missing);
/* "12.0 GiB", "512.0 MiB", "640 bytes". */
void suspend_bytes_text(char *buf, size_t len, uint64_t bytes);

#endif
