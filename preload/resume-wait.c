/* Resume on demand: see resume-wait.h and docs/suspend.md.
 *
 * The daemon writes the tenant's run state into its limits file (struct gs_limits.run_state),
 * which this process maps read-only. While it is not running, a call that needs the GPU bumps
 * the request counter in the tenant's ledger (struct gs_ledger_resume; the daemon polls it for
 * suspended tenants only) and waits on the run state, a futex the daemon wakes when it changes.
 * The wait is bounded by the limits file's resume_wait_ms, and ends early when the daemon says
 * a resume failed (resume_failures moves): the call then fails with CUDA_ERROR_OUT_OF_MEMORY,
 * the tenant stays suspended, and its memory stays safe in host memory. Once it runs, the wait
 * is added to the ledger, which the daemon reports as the tenant's resume wait. */
#include "resume-wait.h"

#include <time.h>

#include <gpuslice/log.h>
#include <gpuslice/tenant-ledger.h>

#include "quota.h"

#define WAIT_SLICE_NS 50000000ULL  /* between looks at the run state, woken or not */
#define ASK_AGAIN_NS 1000000000ULL /* asks again after this: a daemon that restarted missed it */
#define DEFAULT_WAIT_MS 120000u    /* when the limits file says nothing */

static const _Atomic uint32_t always_running = GS_RUN_RUNNING;
/* Until the first call finds out: not running, so that every call asks. */
static const _Atomic uint32_t not_known = GS_RUN_SUSPENDING;
const _Atomic uint32_t *_Atomic gs__run_state = &not_known;

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static CUresult give_up(const struct gs_ledger *l, uint64_t waited_ns, bool failed)
{
  static atomic_bool said;
  if (!atomic_exchange(&said, true))
    GS_LOG(GS_LOG_ERROR,
           "tenant '%s': %s after %.1f s waiting to be resumed (`gpuslice ps` says why); the "
           "call fails with CUDA_ERROR_OUT_OF_MEMORY and the tenant stays suspended",
           l->name, failed ? "the daemon could not make room" : "no resume", waited_ns / 1e9);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult wait_until_running(struct gs_ledger *l, const struct gs_limits *lim)
{
  uint64_t t0 = now_ns(), asked = t0;
  uint64_t failures = atomic_load(&lim->resume_failures);
  uint64_t bound =
    (uint64_t) (lim->resume_wait_ms ? lim->resume_wait_ms : DEFAULT_WAIT_MS) * 1000000ULL;
  gs_ledger_resume_ask(l);
  for (;;) {
    uint32_t st = atomic_load(&lim->run_state);
    uint64_t now = now_ns();
    if (st == GS_RUN_RUNNING) {
      gs_ledger_resume_waited(l, now - t0);
      return CUDA_SUCCESS;
    }
    if (atomic_load(&lim->resume_failures) != failures || now - t0 >= bound)
      return give_up(l, now - t0, atomic_load(&lim->resume_failures) != failures);
    if (now - asked >= ASK_AGAIN_NS) {
      gs_ledger_resume_ask(l);
      asked = now;
    }
    gs_limits_wait_run_state(lim, st, WAIT_SLICE_NS);
  }
}

CUresult gs__resume_wait_slow(void)
{
  struct gs_ledger *l = gs__tenant_ledger();
  const struct gs_limits *lim = l ? gs_ledger_authority(l) : NULL;
  atomic_store_explicit(&gs__run_state, lim ? &lim->run_state : &always_running,
                        memory_order_release);
  if (!lim || atomic_load(&lim->run_state) == GS_RUN_RUNNING)
    return CUDA_SUCCESS;
  return wait_until_running(l, lim);
}
