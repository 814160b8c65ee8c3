/* Unit tests for lib/compute-board.c and lib/compute-sched.c: the board file, rows, and the
 * rules that decide who has the next turn and what a turn costs. Time is passed in, so the
 * rules are checked without sleeping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpuslice/compute.h>
#include "temp-dir.h"

#define MS 1000000ull
#define T0 (1000 * 1000 * MS) /* a clock far from zero, as CLOCK_MONOTONIC is */

static char dir[64];
static struct gs_board *b;

static int setup(void **state)
{
  gs_error_t err = NULL;
  (void) state;
  snprintf(dir, sizeof(dir), "/tmp/gs-board-XXXXXX");
  if (!mkdtemp(dir) || gs_board_open(dir, "GPU-test", &b, &err) < 0)
    return -1;
  return 0;
}

static int teardown(void **state)
{
  (void) state;
  gs_board_close(b);
  return gs_test_remove_dir(dir);
}

static int row(const char *name, uint32_t pct, uint32_t policy, uint32_t prio)
{
  return gs_board_row_claim(b, name, pct * 10000, policy, prio, T0);
}

/* A share row that has waited for the GPU since T0. */
static int waiting_row(const char *name, uint32_t pct, uint32_t prio)
{
  int i = row(name, pct, GS_COMPUTE_SHARE, prio);
  gs_board_wait_mark(b, i, T0);
  return i;
}

static void test_board_reopen_sees_same_rows(void **state)
{
  struct gs_board *again = NULL;
  gs_error_t err = NULL;
  (void) state;
  int a = row("a", 70, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  assert_int_equal(gs_board_open(dir, "GPU-test", &again, &err), 0);
  assert_int_equal(gs_board_row_claim(again, "a", 700000, GS_COMPUTE_SHARE, GS_PRIO_NORMAL, T0), a);
  assert_int_equal(atomic_load(&again->row[a].weight_ppm), 700000);
  gs_board_close(again);
}

static void test_board_rejects_bad_uuid_and_foreign_file(void **state)
{
  struct gs_board *x = NULL;
  gs_error_t err = NULL;
  char path[128];
  (void) state;
  assert_int_equal(gs_board_open(dir, "../etc", &x, &err), -1);
  assert_non_null(strstr(err->msg, "bad GPU UUID"));
  gs_error_release(&err);
  snprintf(path, sizeof(path), "%s/gpus/GPU-junk", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("junk", f);
  fclose(f);
  assert_int_equal(gs_board_open(dir, "GPU-junk", &x, &err), -1);
  assert_non_null(strstr(err->msg, "size"));
  gs_error_release(&err);
}

static void test_pick_prefers_row_furthest_behind_its_share(void **state)
{
  (void) state;
  int a = waiting_row("a", 70, GS_PRIO_NORMAL), c = waiting_row("c", 30, GS_PRIO_NORMAL);
  /* 10 ms each: a's 70% share makes its 10 ms cost less than c's. */
  gs_board_charge(b, a, 10 * MS, T0);
  gs_board_charge(b, c, 10 * MS, T0);
  assert_int_equal(gs_board_pick(b, T0), a);
  /* Once a has had 70/30 times c's time, the two are level; a little more tips it. */
  gs_board_charge(b, a, 10 * MS * 40 / 30, T0);
  gs_board_charge(b, a, 1000, T0);
  assert_int_equal(gs_board_pick(b, T0), c);
}

static void test_pick_takes_higher_priority_first(void **state)
{
  (void) state;
  waiting_row("lo", 50, GS_PRIO_LOW);
  int hi = waiting_row("hi", 10, GS_PRIO_HIGH);
  gs_board_charge(b, hi, 500 * MS, T0);
  assert_int_equal(gs_board_pick(b, T0), hi);
}

static void test_waiting_goes_stale(void **state)
{
  (void) state;
  int a = waiting_row("a", 50, GS_PRIO_NORMAL);
  assert_int_equal(gs_board_pick(b, T0 + 1 * MS), a);
  assert_int_equal(gs_board_pick(b, T0 + GS_WAIT_FRESH_NS + 1), -1);
}

static void test_cap_holds_row_to_its_share_of_wall_time(void **state)
{
  (void) state;
  int a = row("a", 40, GS_COMPUTE_CAP, GS_PRIO_NORMAL);
  assert_int_equal(gs_board_cap_wait(b, a, T0), 0);
  /* 20 ms used at once: at 40% that is paid back over 50 ms of wall time. */
  gs_board_charge(b, a, 20 * MS, T0);
  uint64_t wait = gs_board_cap_wait(b, a, T0);
  assert_in_range(wait, 50 * MS - 1000, 50 * MS + 1000);
  /* A capped row that is waiting its credit back is not picked. */
  gs_board_wait_mark(b, a, T0 + 10 * MS);
  assert_int_equal(gs_board_pick(b, T0 + 10 * MS), -1);
  assert_true(gs_board_cap_wait(b, a, T0 + 49 * MS) > 0);
  assert_int_equal(gs_board_cap_wait(b, a, T0 + 51 * MS), 0);
}

static void test_cap_does_not_save_up_idle_time(void **state)
{
  (void) state;
  int a = row("a", 40, GS_COMPUTE_CAP, GS_PRIO_NORMAL);
  uint64_t budget = gs_board_cap_budget(b, a, T0 + 3600 * 1000 * MS);
  assert_true(budget <= 2 * gs_board_slice_ns(b));
  assert_int_equal(gs_board_cap_budget(b, row("s", 40, GS_COMPUTE_SHARE, GS_PRIO_NORMAL), T0),
                   UINT64_MAX);
}

static void test_unlimited_rows_share_what_limited_ones_leave(void **state)
{
  (void) state;
  int a = waiting_row("a", 60, GS_PRIO_NORMAL), u = waiting_row("u", 0, GS_PRIO_NORMAL),
      v = waiting_row("v", 0, GS_PRIO_NORMAL);
  assert_int_equal(gs_board_weight(b, a, T0), 600000);
  assert_int_equal(gs_board_weight(b, u, T0), 200000);
  assert_int_equal(gs_board_weight(b, v, T0), 200000);
}

static void test_returning_row_starts_level_not_ahead(void **state)
{
  (void) state;
  int a = row("a", 50, GS_COMPUTE_SHARE, GS_PRIO_NORMAL),
      c = row("c", 50, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  uint64_t later = T0 + 10000 * MS;
  gs_board_wait_mark(b, a, later);
  gs_board_charge(b, a, 5000 * MS, later);
  /* c was idle all along: it comes back level with a, not 5 s ahead of it. */
  gs_board_wait_mark(b, c, later);
  assert_int_equal(atomic_load(&b->row[c].vtime), atomic_load(&b->row[a].vtime));
}

static void test_turn_is_exclusive_and_stealable_from_idle_or_dead(void **state)
{
  (void) state;
  int a = row("a", 50, GS_COMPUTE_SHARE, GS_PRIO_NORMAL),
      c = row("c", 50, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  uint64_t t = gs_board_take(b, a, getpid(), T0);
  assert_true(t != 0);
  assert_int_equal(gs_board_take(b, c, getpid(), T0), 0);
  assert_int_equal(gs_board_steal(b, c, getpid(), T0 + 1 * MS, 2 * MS), 0);
  uint64_t s = gs_board_steal(b, c, getpid(), T0 + 3 * MS, 2 * MS);
  assert_true(s != 0 && GS_TURN_ROW(s) == c);
  assert_false(gs_board_release(b, t)); /* the old holder's word no longer holds it */
  assert_true(gs_board_release(b, s));
  /* A holder that no longer exists loses the turn at once, even while "synchronizing". */
  assert_true(gs_board_take(b, a, 0x3ffffff, T0) != 0); /* above any pid_max */
  atomic_store(&b->holder_active_ns, UINT64_MAX);
  assert_true(gs_board_steal(b, c, getpid(), T0, 2 * MS) != 0);
}

static void test_rows_run_out_cleanly(void **state)
{
  char name[16];
  (void) state;
  for (int i = 0; i < GS_BOARD_ROWS; i++) {
    snprintf(name, sizeof(name), "t%d", i);
    assert_true(row(name, 1, GS_COMPUTE_SHARE, GS_PRIO_NORMAL) >= 0);
  }
  assert_int_equal(row("one-too-many", 1, GS_COMPUTE_SHARE, GS_PRIO_NORMAL), -1);
  /* A row unused for a minute goes to a newcomer. */
  assert_true(gs_board_row_claim(b, "late", 10000, 0, 0, T0 + GS_ROW_STALE_NS + 1) >= 0);
}

/* Issue #12: a 65th tenant found no row and ran ungated. The board now holds 1,024, and a
 * turn word names any of them. */
static void test_board_holds_1024_tenants_and_their_turns(void **state)
{
  char name[16];
  int last = -1;
  (void) state;
  for (int i = 0; i < 1024; i++) {
    snprintf(name, sizeof(name), "t%d", i);
    int r = row(name, 1, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
    assert_int_equal(r, i);
    last = r;
  }
  assert_int_equal(row("t1024", 1, GS_COMPUTE_SHARE, GS_PRIO_NORMAL), -1);
  uint64_t t = gs_board_take(b, last, getpid(), T0);
  assert_true(t != 0);
  assert_int_equal(GS_TURN_ROW(t), 1023);
  assert_int_equal(GS_TURN_PID(t), getpid());
  /* A waiting row past the old 64 is seen by the scheduler. */
  assert_true(gs_board_release(b, t));
  gs_board_wait_mark(b, 1000, T0);
  assert_int_equal(gs_board_pick(b, T0), 1000);
}

/* Scans stop at the rows ever claimed, so that a board of few tenants is scanned as a small one. */
static void test_scans_stop_at_the_rows_in_use(void **state)
{
  (void) state;
  assert_int_equal(gs_board_rows(b), 0);
  int a = row("a", 30, GS_COMPUTE_SHARE, GS_PRIO_NORMAL),
      c = row("c", 30, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  assert_int_equal(gs_board_rows(b), 2);
  assert_int_equal(row("a", 30, GS_COMPUTE_SHARE, GS_PRIO_NORMAL), a);
  assert_int_equal(gs_board_rows(b), 2);
  gs_board_wait_mark(b, c, T0);
  assert_int_equal(gs_board_pick(b, T0), c);
  atomic_store(&b->rows_used, 100000); /* a corrupt hint stays within the board */
  assert_int_equal(gs_board_rows(b), GS_BOARD_ROWS);
}

static void test_board_full_setting_is_wait_bounded_or_refuse(void **state)
{
  static const struct {
    const char *in;
    int rc;
    uint32_t mode, wait_s;
  } cases[] = {
    { NULL, 0, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "", 0, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "wait", 0, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "wait:5", 0, GS_BOARD_FULL_WAIT, 5 },
    { "wait:0", 0, GS_BOARD_FULL_WAIT, 0 },
    { "wait:86400", 0, GS_BOARD_FULL_WAIT, 86400 },
    { "refuse", 0, GS_BOARD_FULL_REFUSE, GS_BOARD_FULL_WAIT_S },
    /* Anything else is the default, never "ungated". */
    { "open", -1, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "wait:", -1, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "wait:-1", -1, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "wait:5s", -1, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "wait:86401", -1, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "wait:99999999999999999999", -1, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
    { "REFUSE", -1, GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S },
  };
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gs_board_full f;
    assert_int_equal(gs_board_full_parse(cases[i].in, &f), cases[i].rc);
    assert_int_equal(f.mode, cases[i].mode);
    assert_int_equal(f.wait_s, cases[i].wait_s);
  }
}

/* Launches need gating while a live row has a compute limit or a priority, and only then. */
static void test_gating_word_follows_the_rows_limits(void **state)
{
  (void) state;
  assert_false(GS_GATING_NEEDED(atomic_load(&b->gating)));
  row("mem", 0, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  uint32_t w = atomic_load(&b->gating);
  assert_false(GS_GATING_NEEDED(w));
  assert_int_not_equal(GS_GATING_GEN(w), 0); /* every claim moves it */
  int lim = row("lim", 30, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  assert_true(GS_GATING_NEEDED(atomic_load(&b->gating)));
  atomic_store(&b->row[lim].active_ns, 0); /* its last process exited */
  assert_int_equal(gs_board_row_release(b, "lim", T0), 1);
  assert_false(GS_GATING_NEEDED(atomic_load(&b->gating)));
  row("prio", 0, GS_COMPUTE_SHARE, GS_PRIO_HIGH);
  assert_true(GS_GATING_NEEDED(atomic_load(&b->gating)));
  /* A row nobody has used for a minute stops gating at the next periodic look. */
  uint32_t now = gs_board_gating_update(b, T0 + GS_ROW_STALE_NS + 1, false);
  assert_false(GS_GATING_NEEDED(now));
  assert_int_equal(atomic_load(&b->gating), now);
}

/* A periodic look stores only a different answer; a change always stores, with a new
 * generation, so that a look that missed it cannot stand. */
static void test_gating_update_stores_changes_always_and_looks_only_when_different(void **state)
{
  (void) state;
  row("lim", 30, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  uint32_t w = atomic_load(&b->gating);
  assert_int_equal(gs_board_gating_update(b, T0, false), w);
  uint32_t c = gs_board_gating_update(b, T0, true);
  assert_int_equal(GS_GATING_GEN(c), GS_GATING_GEN(w) + 1);
  assert_true(GS_GATING_NEEDED(c));
}

/* A process killed while it held the turn: the release hands the turn back for the others
 * and frees the row once its last launch is two turns old. */
static void test_row_release_hands_back_a_turn_whose_holder_died(void **state)
{
  (void) state;
  int a = row("gone", 30, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  waitpid(dead, NULL, 0);
  uint64_t t = gs_board_take(b, a, dead, T0);
  assert_int_not_equal(t, 0);
  assert_true(gs_board_holder_gone(t));
  atomic_store(&b->row[a].active_ns, 0); /* its last launch, long ago */
  assert_int_equal(gs_board_row_release(b, "gone", T0), 1);
  assert_int_equal(atomic_load(&b->turn), 0);
  assert_int_equal(atomic_load(&b->row[a].state), GS_ROW_FREE);
  assert_false(GS_GATING_NEEDED(atomic_load(&b->gating)));
}

static void test_row_release_frees_the_row_unless_it_still_competes(void **state)
{
  (void) state;
  int a = row("a", 30, GS_COMPUTE_SHARE, GS_PRIO_NORMAL);
  uint64_t t = gs_board_take(b, a, getpid(), T0);
  assert_int_equal(gs_board_row_release(b, "a", T0), 0); /* holds the turn */
  assert_int_equal(atomic_load(&b->row[a].state), GS_ROW_LIVE);
  assert_true(gs_board_release(b, t));
  assert_int_equal(gs_board_row_release(b, "a", T0), 0); /* launched just now */
  atomic_store(&b->row[a].active_ns, 0);                 /* its last process exited */
  assert_int_equal(gs_board_row_release(b, "a", T0), 1);
  assert_int_equal(atomic_load(&b->row[a].state), GS_ROW_FREE);
  assert_int_equal(gs_board_row_release(b, "a", T0), 0); /* none left */
  assert_int_equal(gs_board_row_release(b, "nobody", T0), 0);
}

/* The scheduler looks at the rows marked busy alone; rows that stopped competing are pruned
 * from the bitmap, so 1,024 idle tenants cost nothing per handover. */
static void test_busy_rows_are_the_competing_ones_and_idle_ones_are_pruned(void **state)
{
  char name[16];
  int16_t busy[GS_BOARD_ROWS];
  (void) state;
  for (int i = 0; i < GS_BOARD_ROWS; i++) {
    snprintf(name, sizeof(name), "t%d", i);
    assert_int_equal(row(name, 0, GS_COMPUTE_SHARE, GS_PRIO_NORMAL), i);
  }
  assert_int_equal(gs_board_busy_rows(b, T0, busy), GS_BOARD_ROWS); /* all just launched */
  uint64_t later = T0 + 10 * gs_board_slice_ns(b);
  assert_int_equal(gs_board_busy_rows(b, later, busy), 0);
  assert_int_equal(atomic_load(&b->busy_summary), 0);
  for (int w = 0; w < GS_BOARD_BUSY_WORDS; w++)
    assert_int_equal(atomic_load(&b->busy[w]), 0);
  gs_board_wait_mark(b, 700, later);
  gs_board_wait_mark(b, 3, later);
  assert_int_equal(gs_board_busy_rows(b, later, busy), 2);
  assert_int_equal(busy[0], 3);
  assert_int_equal(busy[1], 700);
  assert_int_equal(gs_board_pick(b, later), 3);
  /* A row that launched again is seen again once it marks itself busy. */
  atomic_store(&b->row[5].active_ns, later);
  gs_board_busy_mark(b, 5);
  bool higher;
  assert_int_equal(gs_board_contenders(b, 3, later, &higher), 2);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_board_reopen_sees_same_rows, setup, teardown),
    cmocka_unit_test_setup_teardown(test_board_rejects_bad_uuid_and_foreign_file, setup, teardown),
    cmocka_unit_test_setup_teardown(test_pick_prefers_row_furthest_behind_its_share, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_pick_takes_higher_priority_first, setup, teardown),
    cmocka_unit_test_setup_teardown(test_waiting_goes_stale, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cap_holds_row_to_its_share_of_wall_time, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cap_does_not_save_up_idle_time, setup, teardown),
    cmocka_unit_test_setup_teardown(test_unlimited_rows_share_what_limited_ones_leave, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_returning_row_starts_level_not_ahead, setup, teardown),
    cmocka_unit_test_setup_teardown(test_turn_is_exclusive_and_stealable_from_idle_or_dead, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_rows_run_out_cleanly, setup, teardown),
    cmocka_unit_test_setup_teardown(test_board_holds_1024_tenants_and_their_turns, setup, teardown),
    cmocka_unit_test_setup_teardown(test_scans_stop_at_the_rows_in_use, setup, teardown),
    cmocka_unit_test_setup_teardown(test_board_full_setting_is_wait_bounded_or_refuse, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_gating_word_follows_the_rows_limits, setup, teardown),
    cmocka_unit_test_setup_teardown(
      test_gating_update_stores_changes_always_and_looks_only_when_different, setup, teardown),
    cmocka_unit_test_setup_teardown(test_row_release_hands_back_a_turn_whose_holder_died, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_row_release_frees_the_row_unless_it_still_competes, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_busy_rows_are_the_competing_ones_and_idle_ones_are_pruned,
                                    setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
