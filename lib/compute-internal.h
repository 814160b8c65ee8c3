/* What the compute board's files share: the states of a row that the scheduler, the busy
 * bitmap and the gating word all read. Private to lib/. */
#ifndef GS_COMPUTE_INTERNAL_H
#define GS_COMPUTE_INTERNAL_H

#include <gpuslice/compute.h>

static inline bool gs__row_live(struct gs_board *b, int i)
{
  return atomic_load_explicit(&b->row[i].state, memory_order_acquire) == GS_ROW_LIVE;
}

static inline bool gs__row_waiting(struct gs_board *b, int i, uint64_t now)
{
  uint64_t w = atomic_load(&b->row[i].waiting_ns);
  return gs__row_live(b, i) && w && now < w + GS_WAIT_FRESH_NS;
}

static inline bool gs__row_holding(struct gs_board *b, int i)
{
  uint64_t t = atomic_load(&b->turn);
  return t && GS_TURN_ROW(t) == i;
}

/* Rows that compete for the GPU now: waiting, holding, or launching within the last turn. */
static inline bool gs__row_contending(struct gs_board *b, int i, uint64_t now)
{
  uint64_t a = atomic_load(&b->row[i].active_ns);
  return gs__row_waiting(b, i, now) || gs__row_holding(b, i) ||
    (gs__row_live(b, i) && now < a + 2 * gs_board_slice_ns(b));
}

/* The last time any process of row i launched or waited. */
static inline uint64_t gs__row_seen(struct gs_board *b, int i)
{
  uint64_t a = atomic_load(&b->row[i].active_ns), w = atomic_load(&b->row[i].waiting_ns);
  return a > w ? a : w;
}

#endif
