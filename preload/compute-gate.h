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
 * The common case, a launch by the holder of an unexpired turn, reads four words (one of them,
 * the board's turn, shared) and the clock: no lock, no syscall, no allocation. Everything else takes the gate's
 * mutex and may wait: that is the gating.
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

/* The gate for the calling thread's GPU, or NULL when the process is no tenant: then
 * launches pass straight through. A GPU that cannot be gated has a gate without a board,
 * which refuses every launch (the reason is logged once). */
struct gs_gate *gs__gate(void);

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

uint64_t gs__mono_ns(void);

#endif
