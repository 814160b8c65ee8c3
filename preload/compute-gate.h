/* The compute gate: what the launch hooks ask before submitting work, so that a tenant gets
 * its share of each GPU's time (include/gpuslice/compute.h has the model and the board).
 *
 * Each process keeps one gate per GPU it launches on. A gate holds the process's turn on the
 * GPU's board, if it has one, and the markers it measures its own device time with:
 * events recorded on the launching stream every few launches. The device time between two
 * markers of one busy period is the stream's; a marker recorded when the stream is idle
 * starts a new period. Because only the holder of the turn has work on the GPU, that time
 * is the tenant's own.
 *
 * Most GPUs need no gating: while no tenant on the GPU has a compute limit or a priority (the
 * board's gating word says so) and the process's own tenant has none, a gate is open, and a
 * launch costs a thread-local load, two shared loads (the gating word and the generation of
 * the tenant's limits) and compares with what the gate saw when it last looked (gs__gate_open).
 * A change to either word sends the next launch of every process through gs__gate_decide,
 * which looks again: a neighbour that arrives with a limit, or `gpuslice set`, takes effect at
 * the next launch.
 *
 * Where gating is needed, the common case, a launch by the holder of an unexpired turn that
 * launched last within GS_GATE_GAP_NS and has no periodic work due, passes gs__gate_pass: the
 * clock (one TSC read) and the gate's words (the board's turn is the one shared), its counters
 * written before the jump to the driver; no lock, no syscall, no allocation, and on x86-64 no
 * frame either (preload/hook-launch.c). Everything else takes the gate's mutex and may wait:
 * that is the gating.
 *
 * Gating fails closed. A gate without a board row (every row taken) waits for one or has
 * its launches refused, as GPUSLICE_BOARD_FULL says; a gate that could not be made at all
 * (no board) refuses them. A tenant's launch never runs ungated. */
#ifndef GS_PRELOAD_GATE_H
#define GS_PRELOAD_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <gpuslice/compute.h>
#include "gs-cuda.h"

#define GS_MARK_RING 16

struct gs_marker {
  CUevent ev;
  bool start; /* recorded on an idle stream: no busy time before it */
};

/* A process's markers on one GPU, oldest first. */
struct gs_markers {
  CUevent spare[GS_MARK_RING + 1];
  int nspare;
  struct gs_marker ring[GS_MARK_RING];
  unsigned head, count;
  CUevent last; /* the newest completed marker, from which the next busy time counts */
  bool broken;  /* events could not be made: nothing is measured */
};

struct gs_gate {
  /* What the launch path reads, first: the board's gating word and the tenant's limits'
   * generation (or constants where there is no board or no limits file), as the gate last saw
   * them, and whether it was open then. Written under mu. */
  const _Atomic uint32_t *gatingp;
  const _Atomic uint64_t *limgenp;
  _Atomic uint32_t seen_gating;
  _Atomic bool open;
  _Atomic uint64_t seen_limgen;
  uint64_t gating_checked_ns; /* when a gated process last had the gating word looked at again */
  struct gs_board *b;
  struct gs_ledger *ledger;
  _Atomic int row; /* on the board; -1 until one is claimed (under mu) */
  int gpu;
  pthread_mutex_t mu;
  _Atomic uint64_t turn;        /* the turn this process holds, 0 for none */
  _Atomic uint64_t deadline_ns; /* when the turn must be looked at again */
  _Atomic uint64_t last_launch_ns;
  _Atomic uint32_t since_mark;   /* launches since the newest marker */
  _Atomic(CUstream) last_stream; /* where the newest launch went: drains are recorded there */
  _Atomic bool last_ptsz;
  uint64_t last_mark_ns;
  uint64_t refreshed_ns;
  uint64_t shared_ns;  /* when the board was last told this process is active */
  uint32_t mark_every; /* launches per marker, set by how contended the GPU is */
  int keep;            /* markers a holder may have outstanding; -1: never wait */
  uint64_t share_at_ns, share_used_ns;
  struct gs_markers mk;
};

/* CLOCK_MONOTONIC ns, by clock_gettime. */
uint64_t gs__mono_ns(void);

/* The gate's clock (gate-clock.c): CLOCK_MONOTONIC ns from the time-stamp counter once its
 * rate is known, else by clock_gettime. anchor and mult are set before mult is stored. */
struct gs_gate_clock {
  uint64_t tsc0, ns0;    /* a counter reading and the time at it */
  _Atomic uint64_t mult; /* ns per tick, 32.32 fixed point; 0 while unknown */
};
extern struct gs_gate_clock gs__gate_clock;
uint64_t gs__gate_now_slow(void);
/* From the gate's slow paths: learns the counter's rate, and keeps it in step. */
void gs__gate_clock_tune(void);

static inline uint64_t gs__gate_now(void)
{
#if defined(__x86_64__)
  uint64_t m = atomic_load_explicit(&gs__gate_clock.mult, memory_order_acquire);
  if (__builtin_expect(m != 0, 1))
    return gs__gate_clock.ns0 +
      (uint64_t) (((unsigned __int128) (__builtin_ia32_rdtsc() - gs__gate_clock.tsc0) * m) >> 32);
#endif
  return gs__gate_now_slow();
}

/* The gate of the calling thread's current GPU, cached per thread: &gs__gate_unknown until the
 * thread first launches and after each change of its current context (gs__ctx_changed). A
 * process that is no tenant caches an always-open gate. Never NULL. */
extern __thread struct gs_gate *gs__gate_tls __attribute__((tls_model("initial-exec")));
extern struct gs_gate gs__gate_unknown;

/* True when g (the cached gate) is open and nothing it depends on has moved since it looked:
 * the launch goes straight to the driver. */
static inline bool gs__gate_open(const struct gs_gate *g)
{
  return atomic_load_explicit(&g->open, memory_order_relaxed) &&
    atomic_load_explicit(g->gatingp, memory_order_relaxed) ==
    atomic_load_explicit(&g->seen_gating, memory_order_relaxed) &&
    atomic_load_explicit(g->limgenp, memory_order_relaxed) ==
    atomic_load_explicit(&g->seen_limgen, memory_order_relaxed);
}

/* A pause between launches after which the stream may have gone idle. */
#define GS_GATE_GAP_NS 20000ull
/* Markers at least this often while launching, however few the launches. */
#define GS_GATE_MARK_NS 500000ull
/* How often a process tells the board it is still active. */
#define GS_GATE_SHARE_NS 500000ull

/* True while g holds the board's turn and it has not expired at now. */
static inline __attribute__((always_inline)) bool gs__gate_turn_good(const struct gs_gate *g,
                                                                     uint64_t now)
{
  uint64_t t = atomic_load_explicit(&g->turn, memory_order_relaxed);
  return t && now < atomic_load_explicit(&g->deadline_ns, memory_order_relaxed) &&
    atomic_load_explicit(&g->b->turn, memory_order_relaxed) == t;
}

/* After gs__gate_open said no: the gate the launch must pass, or NULL when the launch goes
 * straight to the driver (the process is no tenant, or the gate is open after all, having
 * looked again). Finds the thread's gate when g is &gs__gate_unknown. A GPU that cannot be
 * gated has a gate without a board, which refuses every launch (the reason is logged once). */
struct gs_gate *gs__gate_decide(struct gs_gate *g);

/* After gs__gate_open said no: g itself when it is closed and nothing has moved (the launch
 * passes the gate), else what gs__gate_decide says. */
static inline struct gs_gate *gs__gate_closed(struct gs_gate *g)
{
  if (!atomic_load_explicit(&g->open, memory_order_relaxed) &&
      atomic_load_explicit(g->gatingp, memory_order_relaxed) ==
        atomic_load_explicit(&g->seen_gating, memory_order_relaxed) &&
      atomic_load_explicit(g->limgenp, memory_order_relaxed) ==
        atomic_load_explicit(&g->seen_limgen, memory_order_relaxed))
    return g;
  return gs__gate_decide(g);
}

/* The gated launch's fast path, after gs__gate_open said no: true when g is closed and nothing
 * it depends on has moved, the process holds an unexpired turn, it launched last within
 * GS_GATE_GAP_NS (its stream is still busy) and none of the gate's periodic work is due (a
 * marker, telling the board it is active). The launch is then counted here, as
 * gs__gate_leave would count it after, so that the hook can jump to the driver: a launch the
 * driver refuses is counted too, which at worst records a marker early. On false the hook
 * takes the whole path (gs__gate_closed, gs__gate_enter, the launch, gs__gate_leave). One
 * clock read, no store but the gate's own counters. */
static inline __attribute__((always_inline)) bool gs__gate_pass(struct gs_gate *g, CUstream s,
                                                                bool ptsz)
{
  if (atomic_load_explicit(&g->open, memory_order_relaxed) ||
      atomic_load_explicit(g->gatingp, memory_order_relaxed) !=
        atomic_load_explicit(&g->seen_gating, memory_order_relaxed) ||
      atomic_load_explicit(g->limgenp, memory_order_relaxed) !=
        atomic_load_explicit(&g->seen_limgen, memory_order_relaxed))
    return false;
  uint64_t now = gs__gate_now();
  uint32_t n = atomic_load_explicit(&g->since_mark, memory_order_relaxed) + 1;
  if (!gs__gate_turn_good(g, now) ||
      now >= atomic_load_explicit(&g->last_launch_ns, memory_order_relaxed) + GS_GATE_GAP_NS ||
      n >= g->mark_every || now >= g->last_mark_ns + GS_GATE_MARK_NS ||
      now >= g->shared_ns + GS_GATE_SHARE_NS)
    return false;
  atomic_store_explicit(&g->last_stream, s, memory_order_relaxed);
  atomic_store_explicit(&g->last_ptsz, ptsz, memory_order_relaxed);
  atomic_store_explicit(&g->last_launch_ns, now, memory_order_relaxed);
  /* Not an atomic add: two threads that count one launch once only mark a launch later. */
  atomic_store_explicit(&g->since_mark, n, memory_order_relaxed);
  return true;
}

/* With mu held, as the gate opens: charges what the markers measured and gives back a turn
 * the process holds, since it will launch without turns from now on. */
void gs__gate_quit(struct gs_gate *g);

/* Before a launch: returns, with the time, when this process may submit work to the GPU;
 * 0 when the launch is refused (no board, or no row: see gs__gate_row). */
uint64_t gs__gate_enter(struct gs_gate *g, CUstream s, bool ptsz);
/* With mu held: true once the gate has a board row, claiming one now if it has none. When
 * every row is taken it waits for one, or not, as GPUSLICE_BOARD_FULL says (compute-gate.c). */
bool gs__gate_row(struct gs_gate *g);
/* After a launch that succeeded; now is what enter returned. */
void gs__gate_leave(struct gs_gate *g, CUstream s, bool ptsz, uint64_t now);
/* Around a synchronize call: a holder that has drained its work gives the turn back there
 * when others wait. */
void gs__gate_sync_begin(struct gs_gate *g);
void gs__gate_sync_end(struct gs_gate *g);

/* At exit: gives back a turn the process still holds, so nobody waits for it to be found dead. */
void gs__gate_exit(struct gs_gate *g);

/* Markers (compute-gate-marker.c). The mutex is held. */
void gs__marker_record(struct gs_markers *m, CUstream s, bool ptsz, bool start);
/* Device time of the markers that have completed, waiting until at most `keep` are
 * outstanding (keep < 0: never wait). */
uint64_t gs__marker_collect(struct gs_markers *m, int keep);
/* True when every marker has completed. */
static inline bool gs__marker_idle(const struct gs_markers *m)
{
  return m->count == 0;
}

#endif
