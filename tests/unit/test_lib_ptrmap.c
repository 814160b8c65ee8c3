/* Unit tests for lib/ptrmap.c, the interposer's pointer map: it must never lose or invent an
 * entry, through growth, churn and concurrent use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>

#include <gpuslice/ptrmap.h>

/* Keys shaped like device pointers: large and 256-byte aligned. */
static uint64_t key_of(uint64_t thread, uint64_t i)
{
  return 0x7f0000000000ULL + ((thread << 32) | (i << 8));
}

static void test_put_get_take_round_trip(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  uint64_t v = 0;
  assert_int_equal(gs_ptrmap_init(&m, 4), 0);
  assert_int_equal(gs_ptrmap_put(&m, key_of(0, 1), 111), 0);
  assert_true(gs_ptrmap_get(&m, key_of(0, 1), &v));
  assert_int_equal(v, 111);
  assert_false(gs_ptrmap_get(&m, key_of(0, 2), &v));
  assert_true(gs_ptrmap_take(&m, key_of(0, 1), &v));
  assert_int_equal(v, 111);
  assert_false(gs_ptrmap_take(&m, key_of(0, 1), &v)); /* a second free of one pointer misses */
  assert_int_equal(gs_ptrmap_count(&m), 0);
  gs_ptrmap_destroy(&m);
}

static void test_add_counts_in_place_and_misses_absent_keys(void **state)
{
  struct gs_ptrmap m;
  uint64_t v = 0;
  (void) state;
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  assert_false(gs_ptrmap_add(&m, 0x1000, 1, &v));
  assert_int_equal(gs_ptrmap_put(&m, 0x1000, 1), 0);
  assert_true(gs_ptrmap_add(&m, 0x1000, 2, &v));
  assert_int_equal(v, 3);
  assert_true(gs_ptrmap_add(&m, 0x1000, -3, &v));
  assert_int_equal(v, 0);
  assert_true(gs_ptrmap_get(&m, 0x1000, &v));
  assert_int_equal(v, 0);
  gs_ptrmap_destroy(&m);
}

/* Far more entries than the first table holds: every rebuild must carry all of them over. */
static void test_growth_keeps_every_entry(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  const uint64_t n = 200000;
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  for (uint64_t i = 0; i < n; i++)
    assert_int_equal(gs_ptrmap_put(&m, key_of(0, i), i * 3), 0);
  assert_int_equal(gs_ptrmap_count(&m), n);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t v;
    assert_true(gs_ptrmap_take(&m, key_of(0, i), &v));
    assert_int_equal(v, i * 3);
  }
  assert_int_equal(gs_ptrmap_count(&m), 0);
  gs_ptrmap_destroy(&m);
}

/* A million alloc/free pairs with ten live entries: removed slots are reclaimed, so the table
 * stays small instead of growing with every new pointer. */
static void test_churn_does_not_grow_the_table(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  uint64_t v;
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  for (uint64_t i = 0; i < 1000000; i++) {
    assert_int_equal(gs_ptrmap_put(&m, key_of(1, i), i), 0);
    if (i >= 10)
      assert_true(gs_ptrmap_take(&m, key_of(1, i - 10), &v));
  }
  assert_int_equal(gs_ptrmap_count(&m), 10);
  assert_true(atomic_load(&m.table)->mask + 1 <= 256);
  gs_ptrmap_destroy(&m);
}

/* Keys whose home is the same slot of m's table, found by search: their chain is the case a
 * lookup must follow past removed entries. */
static void same_home(struct gs_ptrmap *m, uint64_t *keys, int n)
{
  struct gs_ptrmap_table *t = atomic_load(&m->table);
  struct gs_ptrmap_entry *home = gs__ptrmap_home(t, key_of(2, 0));
  int found = 0;
  for (uint64_t i = 0; found < n; i++)
    if (gs__ptrmap_home(t, key_of(2, i)) == home)
      keys[found++] = key_of(2, i);
}

/* A removed entry leaves its slot empty; the entries that had probed past it stay found, and
 * the next put of that home takes the slot again. */
static void test_a_removed_slot_never_hides_the_chain_behind_it(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  uint64_t k[4], v;
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  same_home(&m, k, 4);
  for (int i = 0; i < 3; i++)
    assert_int_equal(gs_ptrmap_put(&m, k[i], 100 + i), 0);
  assert_true(gs_ptrmap_take(&m, k[0], &v));
  assert_int_equal(v, 100);
  assert_true(gs_ptrmap_get(&m, k[2], &v)); /* two slots past the emptied home */
  assert_int_equal(v, 102);
  assert_int_equal(gs_ptrmap_put(&m, k[3], 103), 0);
  struct gs_ptrmap_table *t = atomic_load(&m.table);
  assert_int_equal(atomic_load(&gs__ptrmap_home(t, k[3])->key), k[3]);
  assert_true(gs_ptrmap_take(&m, k[1], &v));
  assert_int_equal(v, 101);
  assert_true(gs_ptrmap_take(&m, k[2], &v));
  assert_int_equal(v, 102);
  assert_false(gs_ptrmap_take(&m, k[2], &v));
  assert_int_equal(gs_ptrmap_count(&m), 1);
  gs_ptrmap_destroy(&m);
}

/* Lookups go no further than the longest probe a put made: after a million pairs of churn
 * with ten entries live, that is under ten slots, so a miss stays a few probes. */
static void test_churn_keeps_a_miss_short(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  uint64_t v;
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  for (uint64_t i = 0; i < 1000000; i++) {
    assert_int_equal(gs_ptrmap_put(&m, key_of(3, i), i), 0);
    if (i >= 10)
      assert_true(gs_ptrmap_take(&m, key_of(3, i - 10), &v));
  }
  assert_true(atomic_load(&atomic_load(&m.table)->reach) < 10);
  assert_false(gs_ptrmap_get(&m, key_of(4, 1), &v));
  gs_ptrmap_destroy(&m);
}

struct counter {
  struct gs_ptrmap *m;
  uint64_t key, adds;
  int errors;
};

static void *count_up(void *arg)
{
  struct counter *c = arg;
  uint64_t after;
  for (uint64_t i = 0; i < c->adds; i++)
    if (!gs_ptrmap_add(c->m, c->key, 1, &after))
      c->errors++;
  return NULL;
}

/* Counts kept in place (a VMM handle's references) lose no update while the table they are in
 * is moved to a larger one, again and again. */
static void test_adds_during_growth_are_never_lost(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  pthread_t t;
  uint64_t v;
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  struct counter c = { &m, key_of(5, 1), 200000, 0 };
  assert_int_equal(gs_ptrmap_put(&m, c.key, 0), 0);
  struct gs_ptrmap_table *first = atomic_load(&m.table);
  pthread_create(&t, NULL, count_up, &c);
  for (uint64_t i = 0; i < 100000; i++)
    assert_int_equal(gs_ptrmap_put(&m, key_of(6, i), i), 0);
  pthread_join(t, NULL);
  assert_int_equal(c.errors, 0);
  assert_ptr_not_equal(atomic_load(&m.table), first);
  assert_true(gs_ptrmap_get(&m, c.key, &v));
  assert_int_equal(v, 200000);
  assert_int_equal(gs_ptrmap_count(&m), 100001);
  gs_ptrmap_destroy(&m);
}

struct worker {
  struct gs_ptrmap *m;
  uint64_t id;
  int errors;
};

static void *churn_worker(void *arg)
{
  struct worker *w = arg;
  uint64_t v;
  for (uint64_t i = 0; i < 50000; i++) {
    if (gs_ptrmap_put(w->m, key_of(w->id, i), i ^ w->id) < 0)
      w->errors++;
    if (i >= 100 && (!gs_ptrmap_take(w->m, key_of(w->id, i - 100), &v) || v != ((i - 100) ^ w->id)))
      w->errors++;
  }
  for (uint64_t i = 50000 - 100; i < 50000; i++)
    if (!gs_ptrmap_take(w->m, key_of(w->id, i), &v))
      w->errors++;
  return NULL;
}

static void test_concurrent_threads_never_lose_entries(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  pthread_t t[8];
  struct worker w[8];
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  for (int i = 0; i < 8; i++) {
    w[i] = (struct worker){ &m, (uint64_t) i + 1, 0 };
    pthread_create(&t[i], NULL, churn_worker, &w[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].errors, 0);
  }
  assert_int_equal(gs_ptrmap_count(&m), 0);
  gs_ptrmap_destroy(&m);
}

struct racer {
  struct gs_ptrmap *m;
  int wins;
};

static void *take_all(void *arg)
{
  struct racer *r = arg;
  uint64_t v;
  for (uint64_t i = 0; i < 20000; i++)
    r->wins += gs_ptrmap_take(r->m, key_of(9, i), &v);
  return NULL;
}

static void test_double_free_race_has_exactly_one_winner(void **state)
{
  (void) state;
  struct gs_ptrmap m;
  struct racer r[4];
  pthread_t t[4];
  assert_int_equal(gs_ptrmap_init(&m, 16), 0);
  for (uint64_t i = 0; i < 20000; i++)
    assert_int_equal(gs_ptrmap_put(&m, key_of(9, i), i), 0);
  for (int i = 0; i < 4; i++) {
    r[i] = (struct racer){ &m, 0 };
    pthread_create(&t[i], NULL, take_all, &r[i]);
  }
  int wins = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    wins += r[i].wins;
  }
  assert_int_equal(wins, 20000);
  assert_int_equal(gs_ptrmap_count(&m), 0);
  gs_ptrmap_destroy(&m);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_put_get_take_round_trip),
    cmocka_unit_test(test_add_counts_in_place_and_misses_absent_keys),
    cmocka_unit_test(test_growth_keeps_every_entry),
    cmocka_unit_test(test_churn_does_not_grow_the_table),
    cmocka_unit_test(test_a_removed_slot_never_hides_the_chain_behind_it),
    cmocka_unit_test(test_churn_keeps_a_miss_short),
    cmocka_unit_test(test_adds_during_growth_are_never_lost),
    cmocka_unit_test(test_concurrent_threads_never_lose_entries),
    cmocka_unit_test(test_double_free_race_has_exactly_one_winner),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
