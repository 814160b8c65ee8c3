/* fgd-mem on clusters small enough to follow by hand: each case is a cluster, a workload,
 * requests committed first, and one request that fgd-mem must place differently from FGD
 * (memory in the fragment, a CPU-only request onto the node with the least idle GPU, a
 * sharing request onto the tightest GPU of the cluster, a whole-GPU request kept off a fully
 * idle 4-GPU node). Plus the name, and caches that follow commits and releases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <gpuslice/place.h>

static struct gs_place_request req(int64_t cpu, int64_t mem, int num, int milli)
{
  return (struct gs_place_request){ .name = "p",
                                    .cpu_milli = cpu,
                                    .mem_mib = mem,
                                    .num_gpu = num,
                                    .gpu_milli = milli,
                                    .model_mask = GS_PLACE_ANY_MODEL };
}

struct pre { /* a request committed before the one under test, on a given node and GPUs */
  struct gs_place_request r;
  int node;
  uint32_t mask;
};

struct decision_case {
  const char *what;
  struct gs_place_node_spec nodes[3];
  size_t n_nodes;
  struct gs_place_request workload; /* the one typical shape (coverage 1) */
  struct pre pre[3];
  size_t n_pre;
  struct gs_place_request r;
  int fgd_node, fgd_gpu;         /* FGD's choice: node, and GPU for sharing (-1: any) */
  int fgd_mem_node, fgd_mem_gpu; /* fgd-mem's */
};

static const struct decision_case cases[] = {
  { .what = "a CPU-only request that would strand a node's GPUs behind its memory",
    .nodes = { { "a", 16000, 8000, 2, "T4" }, { "b", 16000, 20000, 2, "T4" } },
    .n_nodes = 2,
    .workload = { .cpu_milli = 1000, .mem_mib = 4000, .num_gpu = 1, .gpu_milli = 1000 },
    .r = { .cpu_milli = 1000, .mem_mib = 5000 },
    .fgd_node = 0,
    .fgd_gpu = -1,
    .fgd_mem_node = 1,
    .fgd_mem_gpu = -1 },
  { .what = "a CPU-only request among nodes FGD scores the same",
    .nodes = { { "a", 16000, 16000, 2, "T4" }, { "b", 16000, 16000, 2, "T4" } },
    .n_nodes = 2,
    .workload = { .cpu_milli = 1000, .mem_mib = 1000, .num_gpu = 1, .gpu_milli = 1000 },
    .pre = { { { .cpu_milli = 1000, .mem_mib = 1000, .num_gpu = 1, .gpu_milli = 1000 }, 1, 1 } },
    .n_pre = 1,
    .r = { .cpu_milli = 1000, .mem_mib = 1000 },
    .fgd_node = 0,
    .fgd_gpu = -1,
    .fgd_mem_node = 1,
    .fgd_mem_gpu = -1 },
  { .what = "a sharing request with two GPUs that score the same",
    .nodes = { { "a", 16000, 16000, 3, "T4" } },
    .n_nodes = 1,
    .workload = { .cpu_milli = 1000, .mem_mib = 1000, .num_gpu = 1, .gpu_milli = 1000 },
    .pre = { { { .cpu_milli = 100, .mem_mib = 100, .num_gpu = 1, .gpu_milli = 400 }, 0, 2 },
             { { .cpu_milli = 100, .mem_mib = 100, .num_gpu = 1, .gpu_milli = 500 }, 0, 4 } },
    .n_pre = 2,
    .r = { .cpu_milli = 100, .mem_mib = 100, .num_gpu = 1, .gpu_milli = 300 },
    .fgd_node = 0,
    .fgd_gpu = 1,
    .fgd_mem_node = 0,
    .fgd_mem_gpu = 2 },
  /* FGD's fragment change is -300 on either partly used GPU, so it takes the first node;
   * fgd-mem takes the GPU with the least room left anywhere: 400 on node b. */
  { .what = "a sharing request with a tighter GPU on another node",
    .nodes = { { "a", 16000, 16000, 2, "T4" }, { "b", 16000, 16000, 2, "T4" } },
    .n_nodes = 2,
    .workload = { .cpu_milli = 1000, .mem_mib = 1000, .num_gpu = 1, .gpu_milli = 1000 },
    .pre = { { { .cpu_milli = 100, .mem_mib = 100, .num_gpu = 1, .gpu_milli = 200 }, 0, 1 },
             { { .cpu_milli = 100, .mem_mib = 100, .num_gpu = 1, .gpu_milli = 600 }, 1, 1 } },
    .n_pre = 2,
    .r = { .cpu_milli = 100, .mem_mib = 100, .num_gpu = 1, .gpu_milli = 300 },
    .fgd_node = 0,
    .fgd_gpu = 0,
    .fgd_mem_node = 1,
    .fgd_mem_gpu = 0 },
  /* A whole GPU changes no fragment on either node; fgd-mem keeps the fully idle 4-GPU node
   * for the rare pods that need all of it. */
  { .what = "a whole-GPU request and a fully idle 4-GPU node",
    .nodes = { { "a", 64000, 64000, 4, "V100" }, { "b", 64000, 64000, 4, "V100" } },
    .n_nodes = 2,
    .workload = { .cpu_milli = 1000, .mem_mib = 1000, .num_gpu = 1, .gpu_milli = 1000 },
    .pre = { { { .cpu_milli = 1000, .mem_mib = 1000, .num_gpu = 1, .gpu_milli = 1000 }, 1, 1 } },
    .n_pre = 1,
    .r = { .cpu_milli = 1000, .mem_mib = 1000, .num_gpu = 1, .gpu_milli = 1000 },
    .fgd_node = 0,
    .fgd_gpu = -1,
    .fgd_mem_node = 1,
    .fgd_mem_gpu = -1 },
};

static gs_place_cluster_t *make(const struct decision_case *k)
{
  gs_error_t err = NULL;
  gs_place_cluster_t *c = gs_place_cluster_new(k->nodes, k->n_nodes, &err);
  assert_non_null(c);
  struct gs_place_request w = k->workload;
  w.model_mask = GS_PLACE_ANY_MODEL;
  assert_int_equal(gs_place_set_workload(c, &w, 1, 1.0, &err), 0);
  for (size_t i = 0; i < k->n_pre; i++) {
    struct gs_place_request r = k->pre[i].r;
    r.model_mask = GS_PLACE_ANY_MODEL;
    struct gs_place_choice ch = { k->pre[i].node, k->pre[i].mask, 0 };
    gs_place_commit(c, &r, &ch);
  }
  return c;
}

static void expect_choice(const struct decision_case *k, enum gs_place_policy p, int node, int gpu)
{
  gs_place_cluster_t *c = make(k);
  struct gs_place_request r = k->r;
  r.model_mask = GS_PLACE_ANY_MODEL;
  struct gs_place_choice ch;
  assert_int_equal(gs_place_decide(c, p, &r, &ch), 1);
  if (ch.node != node || (gpu >= 0 && ch.gpu_mask != UINT32_C(1) << gpu))
    fail_msg("%s: %s chose node %d mask %#x, expected node %d GPU %d", k->what,
             gs_place_policy_name(p), ch.node, (unsigned) ch.gpu_mask, node, gpu);
  gs_place_cluster_free(c);
}

static void test_fgd_mem_decides_where_fgd_falls_short(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    expect_choice(&cases[i], GS_PLACE_FGD, cases[i].fgd_node, cases[i].fgd_gpu);
    expect_choice(&cases[i], GS_PLACE_FGD_MEM, cases[i].fgd_mem_node, cases[i].fgd_mem_gpu);
  }
}

static void test_fgd_mem_name_round_trips(void **state)
{
  (void) state;
  enum gs_place_policy p;
  assert_int_equal(gs_place_policy_from_name("fgd-mem", &p), 0);
  assert_int_equal(p, GS_PLACE_FGD_MEM);
  assert_string_equal(gs_place_policy_name(GS_PLACE_FGD_MEM), "fgd-mem");
}

/* Cached scores must follow the node: a commit changes the choice, and a release of that
 * commit brings the first choice back. */
static void test_fgd_mem_caches_follow_commit_and_release(void **state)
{
  (void) state;
  gs_place_cluster_t *c = make(&cases[0]);
  struct gs_place_request big = req(1000, 5000, 0, 0), gpu = req(1000, 1000, 2, 1000);
  gpu.model_mask = big.model_mask = GS_PLACE_ANY_MODEL;
  struct gs_place_choice first, taken, again;
  assert_int_equal(gs_place_decide(c, GS_PLACE_FGD_MEM, &big, &first), 1);
  assert_int_equal(first.node, 1);
  taken = (struct gs_place_choice){ 1, 3, 0 }; /* node b's two GPUs */
  gs_place_commit(c, &gpu, &taken);
  /* with b's GPUs taken, big strands no GPU there, and b wins by the tie term as well */
  assert_int_equal(gs_place_decide(c, GS_PLACE_FGD_MEM, &big, &again), 1);
  assert_int_equal(again.node, 1);
  assert_true(again.score > first.score);
  gs_place_release(c, &gpu, &taken);
  assert_int_equal(gs_place_decide(c, GS_PLACE_FGD_MEM, &big, &again), 1);
  assert_int_equal(again.node, first.node);
  assert_int_equal(again.score, first.score);
  gs_place_cluster_free(c);
}

/* A replay with fgd-mem runs to the end and, with room for everything, places everything. */
static void test_fgd_mem_replay_places_what_fits(void **state)
{
  (void) state;
  static const struct gs_place_node_spec nodes[] = { { "a", 64000, 65536, 8, "T4" },
                                                     { "b", 64000, 65536, 8, "T4" } };
  struct gs_place_request pods[] = { req(4000, 4000, 1, 1000), req(2000, 2000, 1, 500),
                                     req(1000, 1000, 0, 0), req(4000, 4000, 2, 1000) };
  struct gs_place_replay_opts o = { .policy = GS_PLACE_FGD_MEM, .inflate = 0.5, .seed = 7 };
  struct gs_place_replay_result res;
  gs_error_t err = NULL;
  assert_int_equal(gs_place_replay(nodes, 2, pods, 4, &o, &res, &err), 0);
  assert_int_equal(res.pods_failed, 0);
  assert_true(res.pods_placed > 0);
  assert_true(res.gpu_alloc_ratio > 0.4 && res.gpu_alloc_ratio <= 0.5);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fgd_mem_decides_where_fgd_falls_short),
    cmocka_unit_test(test_fgd_mem_name_round_trips),
    cmocka_unit_test(test_fgd_mem_caches_follow_commit_and_release),
    cmocka_unit_test(test_fgd_mem_replay_places_what_fits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
