/* The node-by-node API (lib/place-node.c): per-GPU fit with its reason, and scores that,
 * taken node by node with the tie order, choose what gs_place_decide chooses, for every
 * policy, over a run of requests that fill a small cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/place.h>

#include "place-fixtures.h"

/* Two 80 GiB GPUs with 50 GiB taken on each (625 milli): 40 GiB (500) fits on neither,
 * though the node has 750 idle in all; 30 GiB (375) fits. */
static void test_per_gpu_fit_refuses_what_the_node_total_admits(void **state)
{
  (void) state;
  const struct gs_place_node_spec n[] = { { "n", 64000, 262144, 2, "H100" } };
  gs_place_cluster_t *c = make(n, 1);
  struct gs_place_request held = req(1000, 1, 625);
  for (int g = 0; g < 2; g++) {
    struct gs_place_choice ch = { .node = 0, .gpu_mask = UINT32_C(1) << g };
    assert_int_equal(gs_place_node_take(c, &held, &ch), 0);
  }
  char why[160] = "";
  struct gs_place_request r = req(1000, 1, 500);
  assert_int_equal(gs_place_node_fits(c, 0, &r, why, sizeof why), 0);
  assert_non_null(strstr(why, "no GPU has 500 milli idle: the most is 375"));
  assert_non_null(strstr(why, "750 idle on the node"));
  struct gs_place_choice ch;
  assert_int_equal(gs_place_node_score(c, GS_PLACE_FGD, 0, &r, &ch), 0);
  r.gpu_milli = 375;
  assert_int_equal(gs_place_node_fits(c, 0, &r, why, sizeof why), 1);
  assert_int_equal(gs_place_node_fits(c, 1, &r, why, sizeof why), -1);
  gs_place_cluster_free(c);
}

static void test_take_refuses_a_gpu_without_room_and_changes_nothing(void **state)
{
  (void) state;
  const struct gs_place_node_spec n[] = { { "n", 64000, 262144, 2, "H100" } };
  gs_place_cluster_t *c = make(n, 1);
  struct gs_place_request r = req(1000, 1, 700);
  struct gs_place_choice ch = { .node = 0, .gpu_mask = 1 };
  assert_int_equal(gs_place_node_take(c, &r, &ch), 0);
  assert_int_equal(gs_place_node_take(c, &r, &ch), -1);
  ch.gpu_mask = 4; /* GPU 2 of a node of 2 */
  assert_int_equal(gs_place_node_take(c, &r, &ch), -1);
  ch.gpu_mask = 3; /* two GPUs for a one-GPU request */
  assert_int_equal(gs_place_node_take(c, &r, &ch), -1);
  assert_int_equal(gs_place_gpu_left(c, 0, 0), 300);
  assert_int_equal(gs_place_gpu_left(c, 0, 1), 1000);
  gs_place_cluster_free(c);
}

/* What a scheduler that asks node by node picks: the highest score, ties to the lowest tie
 * rank; first-fit to the lowest index. */
static int pick(gs_place_cluster_t *c, enum gs_place_policy p, const struct gs_place_request *r,
                struct gs_place_choice *out)
{
  int found = 0, best_rank = 0;
  gs_place_node_prepare(c, p, r);
  for (int i = 0; i < (int) gs_place_cluster_size(c); i++) {
    struct gs_place_choice ch;
    if (!gs_place_node_score(c, p, i, r, &ch))
      continue;
    int rank = p == GS_PLACE_FIRST_FIT ? i : gs_place_node_tie_rank(c, i);
    if (!found || ch.score > out->score || (ch.score == out->score && rank < best_rank)) {
      *out = ch;
      best_rank = rank;
      found = 1;
    }
  }
  return found;
}

static void test_node_scores_choose_what_decide_chooses(void **state)
{
  (void) state;
  const struct gs_place_node_spec n[] = {
    { "a", 32000, 131072, 2, "T4" },   { "b", 96000, 393216, 8, "V100" },
    { "c", 64000, 262144, 4, "V100" }, { "d", 96000, 393216, 8, "V100" },
    { "e", 16000, 65536, 0, "" },      { "f", 64000, 262144, 4, "T4" },
  };
  /* A mix of the trace's shapes: CPU only, sharing, whole and multi-GPU. */
  const int shapes[][3] = { { 4000, 1, 500 },  { 2000, 1, 250 },   { 8000, 1, 1000 },
                            { 1000, 0, 0 },    { 16000, 2, 1000 }, { 4000, 1, 750 },
                            { 8000, 4, 1000 }, { 2000, 1, 100 } };
  enum { N_REQ = 60 };
  struct gs_place_request reqs[N_REQ];
  for (int i = 0; i < N_REQ; i++) {
    const int *s = shapes[(i * 5 + i / 3) % 8];
    reqs[i] = req(s[0], s[1], s[2]);
  }
  const enum gs_place_policy policies[] = { GS_PLACE_FIRST_FIT, GS_PLACE_BEST_FIT,
                                            GS_PLACE_GPU_PACKING, GS_PLACE_FGD, GS_PLACE_FGD_MEM };
  for (size_t k = 0; k < sizeof policies / sizeof policies[0]; k++) {
    gs_place_cluster_t *byd = make(n, 6), *byn = make(n, 6);
    gs_error_t err = NULL;
    assert_int_equal(gs_place_set_workload(byd, reqs, N_REQ, 0.95, &err), 0);
    assert_int_equal(gs_place_set_workload(byn, reqs, N_REQ, 0.95, &err), 0);
    gs_place_set_tie_seed(byd, 7);
    gs_place_set_tie_seed(byn, 7);
    int placed = 0;
    for (int i = 0; i < N_REQ; i++) {
      struct gs_place_choice d, m;
      int okd = gs_place_decide(byd, policies[k], &reqs[i], &d);
      int okn = pick(byn, policies[k], &reqs[i], &m);
      assert_int_equal(okd, okn);
      if (!okd)
        continue;
      assert_int_equal(d.node, m.node);
      assert_int_equal(d.gpu_mask, m.gpu_mask);
      gs_place_commit(byd, &reqs[i], &d);
      gs_place_commit(byn, &reqs[i], &m);
      placed++;
    }
    assert_true(placed > 10 && placed < N_REQ); /* it filled the cluster */
    gs_place_cluster_free(byd);
    gs_place_cluster_free(byn);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_per_gpu_fit_refuses_what_the_node_total_admits),
    cmocka_unit_test(test_take_refuses_a_gpu_without_room_and_changes_nothing),
    cmocka_unit_test(test_node_scores_choose_what_decide_chooses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
