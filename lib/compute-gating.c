/* The compute board's gating word: whether the GPU's launches need gating at all. Turns only
 * matter when some tenant has a compute limit or a priority; until one does, every tenant's
 * launch costs one load of this word and a compare (preload/compute-gate.c).
 *
 * The word is rewritten, with a new generation, by whoever changes what it depends on: a row
 * claimed or given back, a row's limits changed live; and now and then by a gated process, so
 * that the rows of tenants gone without a word (stale) stop gating. Each writer looks at every
 * row after reading the word and stores only if the word has not moved meanwhile, else looks
 * again: the last store always comes from a look that saw every change before it. A changer
 * always stores (so that a concurrent look that missed its change cannot stand); the periodic
 * look stores only a different answer. */
#include "compute-internal.h"

#include <string.h>

bool gs_board_row_gates(struct gs_board *b, int i, uint64_t now)
{
  struct gs_board_row *r = &b->row[i];
  if (!gs__row_live(b, i) || now > gs__row_seen(b, i) + GS_ROW_STALE_NS)
    return false;
  return atomic_load(&r->weight_ppm) != 0 || atomic_load(&r->priority) != GS_PRIO_NORMAL;
}

static bool any_row_gates(struct gs_board *b, uint64_t now)
{
  for (int i = 0, rows = gs_board_rows(b); i < rows; i++)
    if (gs_board_row_gates(b, i, now))
      return true;
  return false;
}

uint32_t gs_board_gating_update(struct gs_board *b, uint64_t now, bool changed)
{
  uint32_t w = atomic_load(&b->gating);
  for (;;) {
    bool needed = any_row_gates(b, now);
    if (!changed && needed == GS_GATING_NEEDED(w))
      return w;
    uint32_t want = GS_GATING(GS_GATING_GEN(w) + 1, needed);
    if (atomic_compare_exchange_strong(&b->gating, &w, want))
      return want;
  }
}
