/* FGD on clusters small enough to work the fragment out by hand: the workload's typical
 * shapes and their weights, F_n for idle and used nodes, CPU-only shapes counting all idle
 * GPU, and FGD choosing the node (and the GPU) that grows the fragment least. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <gpuslice/place.h>

static struct gs_place_request req(int64_t cpu, int num, int milli)
{
  return (struct gs_place_request){ .name = "p",
                                    .cpu_milli = cpu,
                                    .mem_mib = 0,
                                    .num_gpu = num,
                                    .gpu_milli = milli,
                                    .model_mask = GS_PLACE_ANY_MODEL };
}

static gs_place_cluster_t *make(const struct gs_place_node_spec *n, size_t k,
                                const struct gs_place_request *w, size_t nw, double cov)
{
  gs_error_t err = NULL;
  gs_place_cluster_t *c = gs_place_cluster_new(n, k, &err);
  assert_non_null(c);
  assert_int_equal(gs_place_set_workload(c, w, nw, cov, &err), 0);
  return c;
}

static double frag(gs_place_cluster_t *c)
{
  struct gs_place_stats st;
  gs_place_stats(c, &st);
  return st.frag_milli;
}

static void place(gs_place_cluster_t *c, struct gs_place_request r, struct gs_place_choice *ch)
{
  assert_int_equal(gs_place_decide(c, GS_PLACE_FGD, &r, ch), 1);
  gs_place_commit(c, &r, ch);
}

static const struct gs_place_node_spec one_gpu = { "a", 8000, 8192, 1, "T4" };

static void test_cpu_only_shapes_count_all_idle_gpu(void **state)
{
  (void) state;
  struct gs_place_request w[4] = { req(1000, 1, 1000), req(1000, 1, 1000), req(1000, 1, 1000),
                                   req(1000, 0, 0) };
  gs_place_cluster_t *c = make(&one_gpu, 1, w, 4, 1.0);
  /* p = 3/4 whole GPU (fits: no fragment), 1/4 CPU-only (all 1000 idle) */
  assert_float_equal(frag(c), 250.0, 1e-9);
  struct gs_place_choice ch;
  place(c, req(0, 1, 500), &ch);
  /* 500 left: the whole-GPU shape no longer fits, so all of it is fragment for both */
  assert_float_equal(frag(c), 500.0, 1e-9);
  gs_place_cluster_free(c);
}

static void test_coverage_keeps_most_popular_shapes(void **state)
{
  (void) state;
  struct gs_place_request w[4] = { req(1000, 1, 1000), req(1000, 1, 1000), req(1000, 1, 1000),
                                   req(1000, 0, 0) };
  gs_place_cluster_t *c = make(&one_gpu, 1, w, 4, 0.5);
  assert_float_equal(frag(c), 0.0, 1e-9); /* only the whole-GPU shape, which fits */
  gs_place_cluster_free(c);
}

static void test_shape_lacking_cpu_makes_all_idle_gpu_fragment(void **state)
{
  (void) state;
  struct gs_place_request w[1] = { req(6000, 1, 500) };
  gs_place_cluster_t *c = make(&one_gpu, 1, w, 1, 1.0);
  assert_float_equal(frag(c), 0.0, 1e-9);
  struct gs_place_choice ch;
  place(c, req(4000, 0, 0), &ch); /* 4000 CPU left < 6000 */
  assert_float_equal(frag(c), 1000.0, 1e-9);
  gs_place_cluster_free(c);
}

static void test_fgd_avoids_leaving_unusable_leftover(void **state)
{
  (void) state;
  const struct gs_place_node_spec n[2] = { { "a", 8000, 8192, 1, "T4" },
                                           { "b", 8000, 8192, 1, "T4" } };
  struct gs_place_request w[1] = { req(1000, 1, 500) };
  gs_place_cluster_t *c = make(n, 2, w, 1, 1.0);
  struct gs_place_choice ch;
  place(c, req(1000, 1, 500), &ch);
  int used = ch.node;
  /* 300 more on the used node leaves 200, useless to a 500 request: F grows by 200 and the
   * score is sigmoid(-0.2)·100 = 45. On the idle node 700 stays usable: F stays 0, 50. */
  struct gs_place_request r = req(1000, 1, 300);
  assert_int_equal(gs_place_decide(c, GS_PLACE_FGD, &r, &ch), 1);
  assert_int_equal(ch.node, 1 - used);
  assert_int_equal(ch.score, 50);
  /* best-fit packs it onto the used node instead */
  assert_int_equal(gs_place_decide(c, GS_PLACE_BEST_FIT, &r, &ch), 1);
  assert_int_equal(ch.node, used);
  gs_place_cluster_free(c);
}

static void test_fgd_picks_gpu_within_node(void **state)
{
  (void) state;
  const struct gs_place_node_spec n = { "a", 64000, 65536, 2, "T4" };
  struct gs_place_request w[1] = { req(0, 1, 600) };
  gs_place_cluster_t *c = make(&n, 1, w, 1, 1.0);
  struct gs_place_choice ch;
  place(c, req(0, 1, 400), &ch); /* GPU0 left 600 or GPU1; either keeps both usable */
  int g = ch.gpu_mask == 1 ? 0 : 1;
  assert_int_equal(gs_place_gpu_left(c, 0, g), 600);
  /* 400 more: on the 600 GPU it leaves 200 (fragment 200); on the idle GPU 600 (usable). */
  place(c, req(0, 1, 400), &ch);
  assert_int_equal(gs_place_gpu_left(c, 0, g), 600);
  assert_int_equal(gs_place_gpu_left(c, 0, 1 - g), 600);
  gs_place_cluster_free(c);
}

static void test_fgd_scores_are_cached_but_follow_changes(void **state)
{
  (void) state;
  const struct gs_place_node_spec n[3] = { { "a", 8000, 8192, 1, "T4" },
                                           { "b", 8000, 8192, 1, "T4" },
                                           { "c", 8000, 8192, 1, "T4" } };
  struct gs_place_request w[1] = { req(1000, 1, 500) };
  gs_place_cluster_t *c = make(n, 3, w, 1, 1.0);
  struct gs_place_choice ch;
  for (int i = 0; i < 6; i++)
    place(c, req(1000, 1, 500), &ch); /* the same shape, again and again */
  for (int i = 0; i < 3; i++)
    assert_int_equal(gs_place_gpu_left(c, i, 0), 0);
  struct gs_place_request r = req(1000, 1, 500);
  assert_int_equal(gs_place_decide(c, GS_PLACE_FGD, &r, &ch), 0);
  gs_place_cluster_free(c);
}

static void test_workload_rejects_bad_coverage(void **state)
{
  (void) state;
  gs_error_t err = NULL;
  gs_place_cluster_t *c = gs_place_cluster_new(&one_gpu, 1, &err);
  struct gs_place_request w = req(1, 0, 0);
  assert_int_equal(gs_place_set_workload(c, &w, 1, 0.0, &err), -1);
  gs_error_release(&err);
  assert_int_equal(gs_place_set_workload(c, &w, 0, 1.0, &err), -1);
  gs_error_release(&err);
  gs_place_cluster_free(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_cpu_only_shapes_count_all_idle_gpu),
    cmocka_unit_test(test_coverage_keeps_most_popular_shapes),
    cmocka_unit_test(test_shape_lacking_cpu_makes_all_idle_gpu_fragment),
    cmocka_unit_test(test_fgd_avoids_leaving_unusable_leftover),
    cmocka_unit_test(test_fgd_picks_gpu_within_node),
    cmocka_unit_test(test_fgd_scores_are_cached_but_follow_changes),
    cmocka_unit_test(test_workload_rejects_bad_coverage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
