/* The compute board's scheduling rules: who has the next turn, what a turn of device time
 * costs each row, the cap policy's credit, and taking and giving back the turn. See
 * gs-compute.h for the model. */
#include "compute-internal.h"

#include <errno.h>
#include <signal.h>

/* Priorities in the order they win. */
static int rank(uint32_t priority)
{
  return priority == GS_PRIO_HIGH ? 2 : priority == GS_PRIO_LOW ? 0 : 1;
}

uint32_t gs_board_weight(struct gs_board *b, int row, uint64_t now)
{
  uint32_t own = atomic_load(&b->row[row].weight_ppm);
  if (own)
    return own;
  uint64_t limited = 0;
  unsigned unlimited = 1;
  int16_t busy[GS_BOARD_ROWS];
  for (int k = 0, n = gs_board_busy_rows(b, now, busy); k < n; k++) {
    int i = busy[k];
    if (i == row)
      continue;
    uint32_t w = atomic_load(&b->row[i].weight_ppm);
    limited += w;
    unlimited += w == 0;
  }
  uint64_t left = limited < GS_WEIGHT_FULL ? (GS_WEIGHT_FULL - limited) / unlimited : 0;
  return left > GS_WEIGHT_MIN ? (uint32_t) left : GS_WEIGHT_MIN;
}

static bool capped(struct gs_board_row *r)
{
  uint32_t w = atomic_load(&r->weight_ppm);
  return atomic_load(&r->policy) == GS_COMPUTE_CAP && w && w < GS_WEIGHT_FULL;
}

/* Tops up a capped row's credit at its share of the wall time since the last top-up, up to
 * two turns' worth: enough to run whole turns, too little to save up idle time. */
static int64_t credit_accrue(struct gs_board *b, struct gs_board_row *r, uint64_t now)
{
  uint64_t at = atomic_load(&r->credit_at_ns);
  int64_t cap = (int64_t) (2 * gs_board_slice_ns(b));
  if (now > at && atomic_compare_exchange_strong(&r->credit_at_ns, &at, now)) {
    int64_t add = (int64_t) ((now - at) * atomic_load(&r->weight_ppm) / GS_WEIGHT_FULL);
    int64_t c = atomic_fetch_add(&r->credit_ns, add) + add;
    while (c > cap && !atomic_compare_exchange_weak(&r->credit_ns, &c, cap))
      ;
  }
  return atomic_load(&r->credit_ns);
}

uint64_t gs_board_cap_wait(struct gs_board *b, int row, uint64_t now)
{
  struct gs_board_row *r = &b->row[row];
  if (!capped(r))
    return 0;
  int64_t c = credit_accrue(b, r, now);
  return c >= 0 ? 0 : (uint64_t) (-c) * GS_WEIGHT_FULL / atomic_load(&r->weight_ppm) + 1;
}

uint64_t gs_board_cap_budget(struct gs_board *b, int row, uint64_t now)
{
  struct gs_board_row *r = &b->row[row];
  if (!capped(r))
    return UINT64_MAX;
  int64_t c = credit_accrue(b, r, now);
  return c > 0 ? (uint64_t) c : 0;
}

int gs_board_pick(struct gs_board *b, uint64_t now)
{
  int best = -1;
  int16_t busy[GS_BOARD_ROWS];
  for (int k = 0, n = gs_board_busy_rows(b, now, busy); k < n; k++) {
    int i = busy[k];
    if (!gs__row_waiting(b, i, now) || gs_board_cap_wait(b, i, now) > 0)
      continue;
    if (best < 0) {
      best = i;
      continue;
    }
    int ri = rank(atomic_load(&b->row[i].priority)), rb = rank(atomic_load(&b->row[best].priority));
    if (ri > rb || (ri == rb && atomic_load(&b->row[i].vtime) < atomic_load(&b->row[best].vtime)))
      best = i;
  }
  return best;
}

void gs_board_wait_mark(struct gs_board *b, int row, uint64_t now)
{
  struct gs_board_row *r = &b->row[row];
  if (now > gs__row_seen(b, row) + 2 * gs_board_slice_ns(b) && !gs__row_holding(b, row)) {
    uint64_t floor = UINT64_MAX;
    int16_t busy[GS_BOARD_ROWS];
    for (int k = 0, n = gs_board_busy_rows(b, now, busy); k < n; k++) {
      int i = busy[k];
      if (i != row && (gs__row_waiting(b, i, now) || gs__row_holding(b, i)) &&
          atomic_load(&b->row[i].vtime) < floor)
        floor = atomic_load(&b->row[i].vtime);
    }
    uint64_t v = atomic_load(&r->vtime);
    while (floor != UINT64_MAX && v < floor && !atomic_compare_exchange_weak(&r->vtime, &v, floor))
      ;
  }
  atomic_store(&r->waiting_ns, now);
  gs_board_busy_mark(b, row);
}

/* The holder's own row counts too: a holder never marks itself waiting (taking the turn
 * clears the mark), so a fresh mark there is another process of the same tenant. */
bool gs_board_others_waiting(struct gs_board *b, int row, uint64_t now)
{
  (void) row;
  int16_t busy[GS_BOARD_ROWS];
  for (int k = 0, n = gs_board_busy_rows(b, now, busy); k < n; k++)
    if (gs__row_waiting(b, busy[k], now) && gs_board_cap_wait(b, busy[k], now) == 0)
      return true;
  return false;
}

void gs_board_charge(struct gs_board *b, int row, uint64_t ns, uint64_t now)
{
  struct gs_board_row *r = &b->row[row];
  if (!ns)
    return;
  atomic_fetch_add(&r->vtime, ns * GS_WEIGHT_FULL / gs_board_weight(b, row, now));
  atomic_fetch_add(&r->used_ns, ns);
  if (capped(r)) {
    credit_accrue(b, r, now);
    atomic_fetch_sub(&r->credit_ns, (int64_t) ns);
  }
}

static uint64_t install(struct gs_board *b, uint64_t cur, int row, pid_t pid, uint64_t now)
{
  uint32_t gen = (atomic_fetch_add(&b->gen, 1) + 1) & GS_TURN_GEN_MASK;
  uint64_t t = GS_TURN(row, pid, gen);
  if (!atomic_compare_exchange_strong(&b->turn, &cur, t))
    return 0;
  atomic_store(&b->turn_start_ns, now);
  atomic_store(&b->holder_active_ns, now);
  return t;
}

uint64_t gs_board_take(struct gs_board *b, int row, pid_t pid, uint64_t now)
{
  return atomic_load(&b->turn) == 0 ? install(b, 0, row, pid, now) : 0;
}

bool gs_board_release(struct gs_board *b, uint64_t turn)
{
  bool ok = atomic_compare_exchange_strong(&b->turn, &turn, 0);
  atomic_fetch_add(&b->seq, 1);
  return ok;
}

_Atomic uint32_t *gs_board_wake_next(struct gs_board *b, uint64_t now)
{
  int next = gs_board_pick(b, now);
  if (next < 0)
    return NULL;
  atomic_fetch_add(&b->wake[next], 1);
  return &b->wake[next];
}

static bool holder_gone(pid_t pid)
{
  return kill(pid, 0) < 0 && errno == ESRCH;
}

bool gs_board_holder_gone(uint64_t turn)
{
  return holder_gone(GS_TURN_PID(turn));
}

uint64_t gs_board_steal(struct gs_board *b, int row, pid_t pid, uint64_t now, uint64_t idle_ns)
{
  uint64_t cur = atomic_load(&b->turn);
  if (cur == 0)
    return install(b, 0, row, pid, now);
  uint64_t active = atomic_load(&b->holder_active_ns);
  bool idle = active != UINT64_MAX && now > active + idle_ns;
  if (!idle && !holder_gone(GS_TURN_PID(cur)))
    return 0;
  return install(b, cur, row, pid, now);
}

uint64_t gs_board_preempt(struct gs_board *b, int row, pid_t pid, uint64_t now)
{
  uint64_t cur = atomic_load(&b->turn);
  if (!cur ||
      rank(atomic_load(&b->row[GS_TURN_ROW(cur)].priority)) >=
        rank(atomic_load(&b->row[row].priority)))
    return 0;
  return install(b, cur, row, pid, now);
}

int gs_board_contenders(struct gs_board *b, int row, uint64_t now, bool *higher)
{
  int n = 0, mine = rank(atomic_load(&b->row[row].priority));
  *higher = false;
  int16_t busy[GS_BOARD_ROWS];
  for (int k = 0, nb = gs_board_busy_rows(b, now, busy); k < nb; k++) {
    int i = busy[k];
    if (i == row)
      continue;
    n++;
    *higher |= rank(atomic_load(&b->row[i].priority)) > mine;
  }
  return n;
}

int gs_board_rank(struct gs_board *b, int row)
{
  return rank(atomic_load(&b->row[row].priority));
}
