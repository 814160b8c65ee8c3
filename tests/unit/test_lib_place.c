/* Placement model and the simple policies on small clusters whose answers can be checked
 * by hand: feasibility (CPU, memory, GPU model, whole GPUs), first-fit, best-fit,
 * gpu-packing, tie order, commits and the replay's bookkeeping. FGD is in
 * test_lib_place_fgd.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <gpuslice/place.h>

#include "place-fixtures.h"

static const struct gs_place_node_spec two_nodes[] = {
  { "a", 32000, 65536, 2, "T4" },
  { "b", 96000, 393216, 8, "V100" },
};

static int place(gs_place_cluster_t *c, enum gs_place_policy p, struct gs_place_request *r,
                 struct gs_place_choice *ch)
{
  int ok = gs_place_decide(c, p, r, ch);
  if (ok)
    gs_place_commit(c, r, ch);
  return ok;
}

static void test_policy_names_round_trip(void **state)
{
  (void) state;
  enum gs_place_policy p;
  const char *names[] = { "first-fit", "best-fit", "gpu-packing", "fgd" };
  for (int i = 0; i < 4; i++) {
    assert_int_equal(gs_place_policy_from_name(names[i], &p), 0);
    assert_string_equal(gs_place_policy_name(p), names[i]);
  }
  assert_int_equal(gs_place_policy_from_name("random", &p), -1);
  assert_int_equal(gs_place_policy_from_name(NULL, &p), -1);
}

static void test_cluster_rejects_too_many_gpus(void **state)
{
  (void) state;
  struct gs_place_node_spec n = { "big", 1000, 1000, GS_PLACE_MAX_GPUS + 1, "X" };
  gs_error_t err = NULL;
  assert_null(gs_place_cluster_new(&n, 1, &err));
  assert_non_null(err);
  gs_error_release(&err);
  assert_null(gs_place_cluster_new(&n, 0, &err));
  gs_error_release(&err);
}

static void test_model_mask_parses_spec_against_cluster(void **state)
{
  (void) state;
  gs_place_cluster_t *c = make(two_nodes, 2);
  assert_true(gs_place_model_mask(c, NULL) == GS_PLACE_ANY_MODEL);
  assert_true(gs_place_model_mask(c, "") == GS_PLACE_ANY_MODEL);
  assert_int_equal(gs_place_model_mask(c, "T4"), 1);
  assert_int_equal(gs_place_model_mask(c, "V100|T4"), 3);
  assert_int_equal(gs_place_model_mask(c, "A100"), 0);
  assert_int_equal(gs_place_model_mask(c, "T"), 0); /* whole names only */
  gs_place_cluster_free(c);
}

static void test_fit_checks_cpu_memory_and_model(void **state)
{
  (void) state;
  gs_place_cluster_t *c = make(two_nodes, 2);
  struct gs_place_choice ch;
  struct gs_place_request r = req(64000, 1, 500); /* only b has the CPU */
  assert_int_equal(gs_place_decide(c, GS_PLACE_FIRST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 1);
  r = req(1000, 1, 500);
  r.mem_mib = 100000; /* only b has the memory */
  assert_int_equal(gs_place_decide(c, GS_PLACE_FIRST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 1);
  r = req(1000, 1, 500);
  r.model_mask = gs_place_model_mask(c, "V100");
  assert_int_equal(gs_place_decide(c, GS_PLACE_FIRST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 1);
  r.model_mask = gs_place_model_mask(c, "A100");
  assert_int_equal(gs_place_decide(c, GS_PLACE_BEST_FIT, &r, &ch), 0);
  r = req(200000, 0, 0);
  assert_int_equal(gs_place_decide(c, GS_PLACE_FGD, &r, &ch), 0);
  gs_place_cluster_free(c);
}

static void test_multi_gpu_request_needs_whole_idle_gpus(void **state)
{
  (void) state;
  struct gs_place_node_spec n = { "a", 64000, 65536, 2, "T4" };
  gs_place_cluster_t *c = make(&n, 1);
  struct gs_place_choice ch;
  struct gs_place_request share = req(1000, 1, 100), two = req(1000, 2, 1000);
  assert_int_equal(place(c, GS_PLACE_FIRST_FIT, &share, &ch), 1);
  /* 1900 milli idle, but only one whole GPU */
  assert_int_equal(gs_place_decide(c, GS_PLACE_FIRST_FIT, &two, &ch), 0);
  gs_place_cluster_free(c);
}

static void test_first_fit_takes_first_node_in_list(void **state)
{
  (void) state;
  gs_place_cluster_t *c = make(two_nodes, 2);
  gs_place_set_tie_seed(c, 7); /* first-fit ignores the tie order */
  struct gs_place_choice ch;
  struct gs_place_request r = req(1000, 1, 1000);
  assert_int_equal(place(c, GS_PLACE_FIRST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 0);
  assert_int_equal(ch.gpu_mask, 1);
  assert_int_equal(place(c, GS_PLACE_FIRST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 0);
  assert_int_equal(ch.gpu_mask, 2);
  assert_int_equal(place(c, GS_PLACE_FIRST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 1);
  gs_place_cluster_free(c);
}

static void test_best_fit_prefers_node_left_with_least(void **state)
{
  (void) state;
  gs_place_cluster_t *c = make(two_nodes, 2);
  struct gs_place_choice ch;
  struct gs_place_request r = req(8000, 1, 1000);
  /* a: 1 - (0.5*24000/128000 + 0.5*1000/8000) = 0.84375 -> 84; b: 1 - (0.34375+0.4375) -> 21 */
  assert_int_equal(place(c, GS_PLACE_BEST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 0);
  assert_int_equal(ch.score, 84);
  gs_place_cluster_free(c);
}

static void test_best_fit_takes_tightest_gpu(void **state)
{
  (void) state;
  struct gs_place_node_spec n = { "a", 64000, 65536, 3, "T4" };
  gs_place_cluster_t *c = make(&n, 1);
  struct gs_place_choice ch;
  struct gs_place_request a = req(0, 1, 300), b = req(0, 1, 600), x = req(0, 1, 300);
  place(c, GS_PLACE_BEST_FIT, &a, &ch); /* GPU0: 700 */
  assert_int_equal(ch.gpu_mask, 1);
  place(c, GS_PLACE_BEST_FIT, &b, &ch); /* tightest is GPU0 (700) */
  assert_int_equal(ch.gpu_mask, 1);
  assert_int_equal(gs_place_gpu_left(c, 0, 0), 100);
  place(c, GS_PLACE_BEST_FIT, &x, &ch); /* GPU0 has 100 only: GPU1 */
  assert_int_equal(ch.gpu_mask, 2);
  gs_place_cluster_free(c);
}

static void test_gpu_packing_prefers_shared_then_used_then_idle(void **state)
{
  (void) state;
  gs_place_cluster_t *c = make(two_nodes, 2);
  struct gs_place_choice ch;
  struct gs_place_request share = req(1000, 1, 500), whole = req(1000, 1, 1000);
  /* Both idle: a scores max(33-2, 2) = 31, b max(33-8, 8) = 25: the smaller node. */
  assert_int_equal(place(c, GS_PLACE_GPU_PACKING, &share, &ch), 1);
  assert_int_equal(ch.node, 0);
  assert_int_equal(ch.score, 31);
  /* a shares its used GPU: 100 - 50/10 = 95. */
  assert_int_equal(place(c, GS_PLACE_GPU_PACKING, &share, &ch), 1);
  assert_int_equal(ch.node, 0);
  assert_int_equal(ch.score, 95);
  assert_int_equal(ch.gpu_mask, 1);
  /* A whole GPU on the used node a: 50 - 1 = 49 beats idle b (25). */
  assert_int_equal(place(c, GS_PLACE_GPU_PACKING, &whole, &ch), 1);
  assert_int_equal(ch.node, 0);
  assert_int_equal(ch.score, 49);
  gs_place_cluster_free(c);
}

static void test_ties_follow_seeded_order(void **state)
{
  (void) state;
  struct gs_place_node_spec same[8];
  for (int i = 0; i < 8; i++)
    same[i] = (struct gs_place_node_spec){ "n", 8000, 8192, 1, "T4" };
  gs_place_cluster_t *c = make(same, 8);
  struct gs_place_request r = req(1000, 1, 1000);
  struct gs_place_choice ch;
  assert_int_equal(gs_place_decide(c, GS_PLACE_BEST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, 0); /* no seed: the nodes' own order */
  int seen = 0;
  for (uint64_t s = 0; s < 32; s++) {
    gs_place_set_tie_seed(c, s);
    assert_int_equal(gs_place_decide(c, GS_PLACE_BEST_FIT, &r, &ch), 1);
    seen |= 1 << ch.node;
    struct gs_place_choice again;
    gs_place_set_tie_seed(c, s);
    gs_place_decide(c, GS_PLACE_BEST_FIT, &r, &again);
    assert_int_equal(again.node, ch.node); /* same seed, same choice */
  }
  assert_true(__builtin_popcount((unsigned) seen) > 1);
  gs_place_cluster_free(c);
}

static void test_commit_updates_resources_and_stats(void **state)
{
  (void) state;
  gs_place_cluster_t *c = make(two_nodes, 2);
  struct gs_place_choice ch;
  struct gs_place_request r = req(4000, 2, 1000);
  assert_int_equal(place(c, GS_PLACE_FIRST_FIT, &r, &ch), 1);
  assert_int_equal(gs_place_cpu_left(c, 0), 28000);
  assert_int_equal(gs_place_gpu_left(c, 0, 0), 0);
  assert_int_equal(gs_place_gpu_left(c, 0, 1), 0);
  assert_int_equal(gs_place_gpu_left(c, 0, 2), -1);
  struct gs_place_stats st;
  gs_place_stats(c, &st);
  assert_int_equal(st.gpu_milli_capacity, 10000);
  assert_int_equal(st.gpu_milli_allocated, 2000);
  gs_place_cluster_free(c);
}

static void test_replay_counts_every_arrival_and_stops_at_inflate(void **state)
{
  (void) state;
  struct gs_place_request pods[3] = { req(1000, 1, 1000), req(1000, 1, 500), req(1000, 0, 0) };
  pods[0].name = "p0";
  pods[1].name = "p1";
  pods[2].name = "p2";
  struct gs_place_replay_opts o = { .policy = GS_PLACE_BEST_FIT, .inflate = 1.3, .seed = 42 };
  struct gs_place_replay_result res;
  gs_error_t err = NULL;
  assert_int_equal(gs_place_replay(two_nodes, 2, pods, 3, &o, &res, &err), 0);
  assert_int_equal(res.decisions, res.pods_placed + res.pods_failed);
  assert_true(res.gpu_alloc_ratio > 0.9 && res.gpu_alloc_ratio <= 1.0);
  assert_true(res.pods_failed > 0); /* 130% cannot all fit */
  o.inflate = 0;
  assert_int_equal(gs_place_replay(two_nodes, 2, pods, 3, &o, &res, &err), -1);
  gs_error_release(&err);
}

static void test_replay_is_deterministic_per_seed(void **state)
{
  (void) state;
  struct gs_place_request pods[4] = { req(1000, 1, 1000), req(2000, 1, 300), req(500, 0, 0),
                                      req(1000, 2, 1000) };
  const char *names[] = { "d", "c", "b", "a" };
  for (int i = 0; i < 4; i++)
    pods[i].name = names[i];
  for (int p = 0; p < 4; p++) {
    struct gs_place_replay_opts o = { .policy = (enum gs_place_policy) p,
                                      .inflate = 1.3,
                                      .seed = 9 };
    struct gs_place_replay_result a, b;
    gs_error_t err = NULL;
    assert_int_equal(gs_place_replay(two_nodes, 2, pods, 4, &o, &a, &err), 0);
    assert_int_equal(gs_place_replay(two_nodes, 2, pods, 4, &o, &b, &err), 0);
    assert_int_equal(a.pods_placed, b.pods_placed);
    assert_true(a.gpu_alloc_ratio == b.gpu_alloc_ratio);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_policy_names_round_trip),
    cmocka_unit_test(test_cluster_rejects_too_many_gpus),
    cmocka_unit_test(test_model_mask_parses_spec_against_cluster),
    cmocka_unit_test(test_fit_checks_cpu_memory_and_model),
    cmocka_unit_test(test_multi_gpu_request_needs_whole_idle_gpus),
    cmocka_unit_test(test_first_fit_takes_first_node_in_list),
    cmocka_unit_test(test_best_fit_prefers_node_left_with_least),
    cmocka_unit_test(test_best_fit_takes_tightest_gpu),
    cmocka_unit_test(test_gpu_packing_prefers_shared_then_used_then_idle),
    cmocka_unit_test(test_ties_follow_seeded_order),
    cmocka_unit_test(test_commit_updates_resources_and_stats),
    cmocka_unit_test(test_replay_counts_every_arrival_and_stops_at_inflate),
    cmocka_unit_test(test_replay_is_deterministic_per_seed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
