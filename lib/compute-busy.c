/* The compute board's busy bitmap: which rows may compete for the GPU, so that the scheduler
 * looks at those alone and a board of 1,024 mostly idle tenants costs what a board of its busy
 * ones would. A row's processes set its bit after they store the time they launched or
 * waited; whoever lists the busy rows clears the bits of rows that no longer compete.
 *
 * Setting and clearing race only in one way that matters: a row marked busy again just as a
 * lister clears it. Both sides write first and read the other's word second (sequentially
 * consistent), so one of them sees the other: the lister puts back a bit whose row turned out
 * to compete after all. */
#include "compute-internal.h"

static void bit_set(_Atomic uint64_t *w, uint64_t m)
{
  if (!(atomic_load_explicit(w, memory_order_relaxed) & m))
    atomic_fetch_or(w, m);
}

void gs_board_busy_mark(struct gs_board *b, int row)
{
  if (row < 0 || row >= GS_BOARD_ROWS)
    return;
  int w = row / 64;
  bit_set(&b->busy[w], 1ull << (row % 64));
  bit_set(&b->busy_summary, 1ull << w);
}

/* Clears row's bit, then looks again: a process that marked it meanwhile is seen. */
static bool prune(struct gs_board *b, int row, uint64_t now)
{
  int w = row / 64;
  uint64_t m = 1ull << (row % 64);
  uint64_t left = atomic_fetch_and(&b->busy[w], ~m) & ~m;
  if (!left) {
    atomic_fetch_and(&b->busy_summary, ~(1ull << w));
    if (atomic_load(&b->busy[w]))
      bit_set(&b->busy_summary, 1ull << w);
  }
  if (!gs__row_contending(b, row, now))
    return false;
  gs_board_busy_mark(b, row);
  return true;
}

int gs_board_busy_rows(struct gs_board *b, uint64_t now, int16_t *rows)
{
  int n = 0;
  for (uint64_t s = atomic_load(&b->busy_summary); s; s &= s - 1) {
    int w = __builtin_ctzll(s);
    for (uint64_t m = atomic_load(&b->busy[w]); m; m &= m - 1) {
      int i = w * 64 + __builtin_ctzll(m);
      if (gs__row_contending(b, i, now) || prune(b, i, now))
        rows[n++] = (int16_t) i;
    }
  }
  return n;
}
