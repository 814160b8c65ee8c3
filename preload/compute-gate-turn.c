/* The gate's turn-taking: the fast check before each launch, waiting for a turn, ending a
 * turn (drain the GPU of this process's work, charge it, give the turn back or renew it),
 * and the markers recorded after launches. See compute-gate.h and include/gpuslice/compute.h. */
#include <limits.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compute-gate.h"
#include <gpuslice/log.h>
#include "quota.h"
#include "real.h"

/* How often a gate looks at the board to see how contended the GPU is. */
#define REFRESH_NS 1000000ull
/* The longest a waiter sleeps before looking at the board again: it is woken when its turn
 * comes, and looks on its own only to keep its row fresh, to find a holder gone idle or dead,
 * or to take a turn nobody has taken. */
#define WAIT_NS GS_WAIT_LOOK_NS
/* A holder that has neither launched nor synchronized for this long has gone idle. */
#define IDLE_STEAL_NS 2000000ull
/* A free turn that the waiter picked for it has not taken for this long is anyone's. */
#define UNCLAIMED_NS 2000000ull
/* The shortest turn a capped tenant is given, so that handovers stay rare. */
#define MIN_TURN_NS 1000000ull
/* Launches per marker for a tenant alone on the GPU and not capped: its device time only
 * feeds its counters, and busy time between two markers is the same however far apart. */
#define MARK_ALONE 256
/* How often a gated process has the board's gating word looked at again, so that rows gone
 * stale stop gating the GPU. */
#define GATING_CHECK_NS 1000000000ull

static void futex_wait(_Atomic uint32_t *w, uint32_t val, uint64_t ns)
{
  struct timespec ts = { (time_t) (ns / 1000000000ull), (long) (ns % 1000000000ull) };
  syscall(SYS_futex, (uint32_t *) (uintptr_t) w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
  syscall(SYS_futex, (uint32_t *) (uintptr_t) w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The tenant's share of this GPU over the last second or so, from its row's total. */
static void share_update(struct gs_gate *g, uint64_t now)
{
  uint64_t used = atomic_load(&g->b->row[g->row].used_ns);
  if (!g->share_at_ns || now < g->share_at_ns + 1000000000ull)
    goto out;
  uint64_t ppm = (used - g->share_used_ns) * 1000000ull / (now - g->share_at_ns);
  atomic_store(&g->ledger->gpu[g->gpu].share_ppm, (uint32_t) (ppm > 1000000 ? 1000000 : ppm));
out:
  if (!g->share_at_ns || now >= g->share_at_ns + 1000000000ull) {
    g->share_at_ns = now;
    g->share_used_ns = used;
  }
}

static void account(struct gs_gate *g, uint64_t used, uint64_t now)
{
  if (used) {
    gs_board_charge(g->b, g->row, used, now);
    atomic_fetch_add(&g->ledger->gpu[g->gpu].gpu_ns, used);
  }
  share_update(g, now);
}

/* Follows live limit changes, and sets how closely to measure: tightly (a marker per launch,
 * little in flight) when the GPU is contended or the tenant capped, loosely when alone. */
static void refresh(struct gs_gate *g, uint64_t now)
{
  struct gs_board_row *r = &g->b->row[g->row];
  bool higher;
  if (now < g->refreshed_ns + REFRESH_NS)
    return;
  g->refreshed_ns = now;
  uint32_t ppm = gs__compute_limit_ppm(g->gpu), prio = gs_ledger_priority(g->ledger);
  bool changed = atomic_exchange(&r->weight_ppm, ppm) != ppm;
  atomic_store(&r->policy, gs__compute_policy(g->gpu));
  changed |= atomic_exchange(&r->priority, prio) != prio;
  if (changed || now >= g->gating_checked_ns + GATING_CHECK_NS) {
    g->gating_checked_ns = now;
    gs_board_gating_update(g->b, now, changed);
  }
  int others = gs_board_contenders(g->b, g->row, now, &higher);
  bool capped = gs_board_cap_budget(g->b, g->row, now) != UINT64_MAX;
  g->mark_every = others || capped ? 1 : MARK_ALONE;
  /* Under a tenant of higher priority, one kernel at a time: it never waits behind more. */
  g->keep = higher ? 0 : others || capped ? 4 : -1;
}

static uint64_t turn_length(struct gs_gate *g, uint64_t now)
{
  uint64_t slice = gs_board_slice_ns(g->b), budget = gs_board_cap_budget(g->b, g->row, now);
  if (budget < MIN_TURN_NS)
    budget = MIN_TURN_NS;
  return budget < slice ? budget : slice;
}

/* Collects the markers, waiting until at most `keep` are outstanding. While a holder waits
 * for its own work it is busy, not idle: nobody may take the turn from it meanwhile. */
static uint64_t collect(struct gs_gate *g, int keep)
{
  uint64_t t = atomic_load(&g->turn);
  bool holding = keep >= 0 && t && atomic_load(&g->b->turn) == t;
  if (holding)
    atomic_store(&g->b->holder_active_ns, UINT64_MAX);
  uint64_t ns = gs__marker_collect(&g->mk, keep);
  if (holding && atomic_load(&g->b->turn) == t)
    atomic_store(&g->b->holder_active_ns, gs__mono_ns());
  return ns;
}

/* Records a marker after the newest launch, so that everything launched is measured. */
static void mark_pending(struct gs_gate *g, bool start)
{
  if (atomic_load(&g->since_mark) == 0)
    return;
  gs__marker_record(&g->mk, atomic_load(&g->last_stream), atomic_load(&g->last_ptsz), start);
  atomic_store(&g->since_mark, 0);
}

/* Gives the turn back and wakes the one row that should have it next: waking every waiter at
 * every handover would cost a board of many waiting tenants most of a CPU. */
static void give_back(struct gs_gate *g, uint64_t t)
{
  uint64_t now = gs__mono_ns();
  gs_board_release(g->b, t);
  atomic_store(&g->b->turn_start_ns, now);
  atomic_store(&g->turn, 0);
  _Atomic uint32_t *next = gs_board_wake_next(g->b, now);
  if (next)
    futex_wake(next);
}

/* Ends or renews the turn. A tenant alone and uncapped renews without draining; otherwise the
 * process waits for its own work to finish, so that the time charged is all of it. */
static void turn_end(struct gs_gate *g, uint64_t now)
{
  uint64_t t = atomic_load(&g->turn);
  bool lost = atomic_load(&g->b->turn) != t;
  bool others = gs_board_others_waiting(g->b, g->row, now);
  bool capped = gs_board_cap_budget(g->b, g->row, now) != UINT64_MAX;
  if (!lost && !others && !capped) {
    account(g, gs__marker_collect(&g->mk, -1), now);
    atomic_store(&g->b->holder_active_ns, now);
    atomic_store(&g->deadline_ns, now + gs_board_slice_ns(g->b));
    return;
  }
  mark_pending(g, false);
  account(g, collect(g, 0), now);
  now = gs__mono_ns();
  if (!lost && !others && gs_board_cap_wait(g->b, g->row, now) == 0) {
    atomic_store(&g->b->holder_active_ns, now);
    atomic_store(&g->deadline_ns, now + turn_length(g, now));
    return;
  }
  if (lost)
    atomic_store(&g->turn, 0);
  else
    give_back(g, t);
}

static uint64_t try_take(struct gs_gate *g, uint64_t now)
{
  struct gs_board *b = g->b;
  pid_t pid = getpid();
  int best = gs_board_pick(b, now);
  uint64_t t = gs_board_preempt(b, g->row, pid, now);
  if (t)
    return t;
  if (best == g->row || best < 0)
    t = gs_board_take(b, g->row, pid, now);
  if (!t && atomic_load(&b->turn) == 0 && now > atomic_load(&b->turn_start_ns) + UNCLAIMED_NS)
    t = gs_board_take(b, g->row, pid, now);
  if (!t && (best == g->row || best < 0))
    t = gs_board_steal(b, g->row, pid, now, IDLE_STEAL_NS);
  return t;
}

/* Waits for a turn; the time spent is the tenant's throttled time. */
static void acquire(struct gs_gate *g)
{
  struct gs_board *b = g->b;
  uint64_t t0 = gs__mono_ns(), now = t0;
  for (;;) {
    uint32_t seq = atomic_load(&b->wake[g->row]);
    gs_board_wait_mark(b, g->row, now);
    uint64_t wait = gs_board_cap_wait(b, g->row, now), t = wait ? 0 : try_take(g, now);
    if (t) {
      atomic_store(&b->row[g->row].waiting_ns, 0);
      atomic_store(&g->turn, t);
      atomic_store(&g->deadline_ns, now + turn_length(g, now));
      atomic_fetch_add(&g->ledger->gpu[g->gpu].throttled_ns, now - t0);
      return;
    }
    futex_wait(&b->wake[g->row], seq, wait && wait < WAIT_NS ? wait : WAIT_NS);
    now = gs__mono_ns();
  }
}

/* After a pause the stream may be idle: finish measuring what came before, and start a new
 * busy period with a start marker if nothing is left in flight. */
static void after_gap(struct gs_gate *g, uint64_t now)
{
  account(g, gs__marker_collect(&g->mk, -1), now);
  mark_pending(g, gs__marker_idle(&g->mk));
}

/* False when the launch is refused: the gate has no board, or no row on it. */
static bool enter_slow(struct gs_gate *g, CUstream s, bool ptsz, uint64_t now)
{
  if (!g->b)
    return false;
  pthread_mutex_lock(&g->mu);
  if (g->row < 0) {
    if (!gs__gate_row(g)) {
      pthread_mutex_unlock(&g->mu);
      return false;
    }
    now = gs__mono_ns(); /* it may have waited for the row */
  }
  refresh(g, now);
  if (now >= atomic_load(&g->last_launch_ns) + GS_GATE_GAP_NS)
    after_gap(g, now);
  while (!gs__gate_turn_good(g, now)) {
    if (atomic_load(&g->turn))
      turn_end(g, now);
    else
      acquire(g);
    now = gs__mono_ns();
  }
  if (gs__marker_idle(&g->mk) && atomic_load(&g->since_mark) == 0)
    gs__marker_record(&g->mk, s, ptsz, true);
  pthread_mutex_unlock(&g->mu);
  return true;
}

uint64_t gs__gate_enter(struct gs_gate *g, CUstream s, bool ptsz)
{
  uint64_t now = gs__gate_now();
  if (__builtin_expect(gs__gate_turn_good(g, now) &&
                         now < atomic_load_explicit(&g->last_launch_ns, memory_order_relaxed) +
                             GS_GATE_GAP_NS,
                       1))
    return now;
  gs__gate_clock_tune();
  return enter_slow(g, s, ptsz, now) ? gs__gate_now() : 0;
}

static void leave_slow(struct gs_gate *g, uint64_t now)
{
  if (pthread_mutex_trylock(&g->mu) != 0)
    return; /* another thread is at it: the next launch marks instead */
  refresh(g, now);
  mark_pending(g, false);
  g->last_mark_ns = now;
  account(g, collect(g, g->keep), now);
  pthread_mutex_unlock(&g->mu);
}

void gs__gate_leave(struct gs_gate *g, CUstream s, bool ptsz, uint64_t now)
{
  atomic_store_explicit(&g->last_stream, s, memory_order_relaxed);
  atomic_store_explicit(&g->last_ptsz, ptsz, memory_order_relaxed);
  atomic_store_explicit(&g->last_launch_ns, now, memory_order_relaxed);
  /* Not an atomic add: two threads that count one launch once only mark a launch later. */
  uint32_t n = atomic_load_explicit(&g->since_mark, memory_order_relaxed) + 1;
  atomic_store_explicit(&g->since_mark, n, memory_order_relaxed);
  if (__builtin_expect(n >= g->mark_every || now >= g->last_mark_ns + GS_GATE_MARK_NS, 0))
    leave_slow(g, now);
  if (__builtin_expect(now >= g->shared_ns + GS_GATE_SHARE_NS, 0)) {
    g->shared_ns = now;
    atomic_store(&g->b->row[g->row].active_ns, now);
    gs_board_busy_mark(g->b, g->row);
    uint64_t t = atomic_load_explicit(&g->turn, memory_order_relaxed);
    if (t && atomic_load_explicit(&g->b->turn, memory_order_relaxed) == t)
      atomic_store_explicit(&g->b->holder_active_ns, now, memory_order_relaxed);
  }
}

void gs__gate_quit(struct gs_gate *g)
{
  uint64_t t = atomic_load(&g->turn);
  if (!g->b || g->row < 0)
    return;
  mark_pending(g, false);
  account(g, gs__marker_collect(&g->mk, -1), gs__mono_ns());
  if (t && atomic_load(&g->b->turn) == t)
    give_back(g, t);
  atomic_store(&g->turn, 0);
}

void gs__gate_sync_begin(struct gs_gate *g)
{
  uint64_t t = atomic_load(&g->turn);
  if (t && atomic_load(&g->b->turn) == t)
    atomic_store(&g->b->holder_active_ns, UINT64_MAX);
}

void gs__gate_exit(struct gs_gate *g)
{
  uint64_t t = atomic_load(&g->turn), mine = g->shared_ns;
  if (!g->b || g->row < 0)
    return;
  if (t && atomic_load(&g->b->turn) == t)
    give_back(g, t);
  /* Unless another process of the tenant has launched since, the tenant no longer competes:
   * others need not keep measuring as if it did. */
  atomic_compare_exchange_strong(&g->b->row[g->row].active_ns, &mine, 0);
}

/* The process has waited for its work: if nothing of it is left in flight and someone else
 * wants the GPU, the turn goes back now rather than at its end. */
void gs__gate_sync_end(struct gs_gate *g)
{
  uint64_t t = atomic_load(&g->turn);
  if (!t)
    return;
  pthread_mutex_lock(&g->mu);
  uint64_t now = gs__mono_ns();
  atomic_store(&g->b->holder_active_ns, now);
  mark_pending(g, false);
  account(g, gs__marker_collect(&g->mk, -1), now);
  t = atomic_load(&g->turn);
  bool want = gs_board_others_waiting(g->b, g->row, now);
  if (t && want && gs__marker_idle(&g->mk)) {
    if (atomic_load(&g->b->turn) == t)
      give_back(g, t);
    else
      atomic_store(&g->turn, 0);
  }
  pthread_mutex_unlock(&g->mu);
}
