/* The gate's clock: CLOCK_MONOTONIC nanoseconds, read on x86-64 from the time-stamp counter
 * (about 10 ns) rather than through clock_gettime (about 25 ns in the vDSO), since a gated
 * launch reads it every time. Only where the kernel itself keeps time by the TSC (clocksource
 * "tsc": constant, synchronized across CPUs); elsewhere clock_gettime. See compute-gate.h.
 *
 * The counter's rate is measured against clock_gettime: first over CALIBRATE_NS (until then
 * the clock is clock_gettime's), then again over the whole time since, at most every
 * RETUNE_NS, from the gate's slow paths, so that the two never drift apart by more than a few
 * microseconds. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "compute-gate.h"

#define CALIBRATE_NS 1000000ull
#define RETUNE_NS 100000000ull

struct gs_gate_clock gs__gate_clock;

enum { CLOCK_UNKNOWN, CLOCK_TSC, CLOCK_SYSTEM };
static _Atomic int mode;
static _Atomic uint64_t tuned_ns;

uint64_t gs__mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

#if defined(__x86_64__)
static bool kernel_keeps_time_by_tsc(void)
{
  char buf[32] = "";
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
  if (!f)
    return false;
  bool ok = fgets(buf, sizeof(buf), f) && strcmp(buf, "tsc\n") == 0;
  fclose(f);
  return ok;
}

/* A (counter, time) pair read back to back. */
static void pair(uint64_t *tsc, uint64_t *ns)
{
  *tsc = __rdtsc();
  *ns = gs__mono_ns();
}

/* The rate since the anchor, as ns per tick in 32.32 fixed point. */
static uint64_t rate_since_anchor(uint64_t tsc, uint64_t ns)
{
  struct gs_gate_clock *c = &gs__gate_clock;
  if (tsc <= c->tsc0 || ns <= c->ns0)
    return 0;
  return (uint64_t) (((unsigned __int128) (ns - c->ns0) << 32) / (tsc - c->tsc0));
}
#endif

void gs__gate_clock_tune(void)
{
#if defined(__x86_64__)
  struct gs_gate_clock *c = &gs__gate_clock;
  int m = atomic_load(&mode);
  if (m == CLOCK_SYSTEM)
    return;
  if (m == CLOCK_UNKNOWN) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (atomic_load(&mode) == CLOCK_UNKNOWN) {
      if (kernel_keeps_time_by_tsc())
        pair(&c->tsc0, &c->ns0);
      atomic_store(&mode, kernel_keeps_time_by_tsc() ? CLOCK_TSC : CLOCK_SYSTEM);
    }
    pthread_mutex_unlock(&lock);
    return;
  }
  uint64_t tsc, ns;
  pair(&tsc, &ns);
  uint64_t last = atomic_load(&tuned_ns);
  if (ns < c->ns0 + CALIBRATE_NS || ns < last + RETUNE_NS ||
      !atomic_compare_exchange_strong(&tuned_ns, &last, ns))
    return;
  uint64_t rate = rate_since_anchor(tsc, ns);
  if (rate)
    atomic_store_explicit(&c->mult, rate, memory_order_release);
#endif
}

uint64_t gs__gate_now_slow(void)
{
  gs__gate_clock_tune();
  return gs__mono_ns();
}
