/* gs_place_victims (lib/place-victims.c): the victims for a request on a cluster the caller
 * keeps, by the scheduler's rules. One table: each case is a cluster, its queues, the pods
 * running on it in admission order (taken where the case says), a request, and the
 * expected victims (names, in the answer's order) and node, or a substring of the reason
 * for none. Every case also checks that the cluster is left exactly as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/place-queue.h>

#define MAX_NODES 2
#define MAX_QUEUES 3
#define MAX_PODS 6

struct pod {
  const char *name, *queue;
  int priority, gpu_milli, node;
  uint32_t mask;
};

struct victims_case {
  const char *name;
  struct gs_place_queue_spec queues[MAX_QUEUES];
  struct pod pods[MAX_PODS]; /* up to the first without a name */
  struct pod req;
  bool only_node1;     /* allowed: node 1 only */
  const char *victims; /* comma-separated; NULL when none */
  int node;
  const char *reason;
};

#define QA       \
  {              \
    "a", 1000, 1 \
  }
#define QB    \
  {           \
    "b", 0, 1 \
  }
#define QC       \
  {              \
    "c", 1000, 1 \
  }

static const struct victims_case cases[] = {
  {
    .name =
      "an in-quota request evicts the newest over-quota pod of another queue, not in-quota pods",
    .queues = { QA, QB, QC },
    .pods = { { "b1", "b", 0, 1000, 0, 0x1 },
              { "b2", "b", 0, 600, 0, 0x2 },
              { "c0", "c", 0, 400, 0, 0x2 } },
    .req = { "a1", "a", 0, 400, 0, 0 },
    .victims = "b2",
    .node = 0,
    .reason = "in quota (queue a 0+400 <= 1000 milli): 1 over-quota pod to preempt",
  },
  {
    .name = "an over-quota request never preempts",
    .queues = { QA, QB, QC },
    .pods = { { "b1", "b", 0, 1000, 0, 0x1 }, { "b2", "b", 0, 1000, 0, 0x2 } },
    .req = { "b3", "b", 100, 400, 0, 0 },
    .reason = "over quota: queue b 0+400 > 0 milli, and over quota never preempts",
  },
  {
    .name = "in-quota pods are never victims",
    .queues = { { "a", 2000, 1 }, QC },
    .pods = { { "a1", "a", 0, 1000, 0, 0x1 }, { "a2", "a", 0, 1000, 0, 0x2 } },
    .req = { "c1", "c", 100, 400, 0, 0 },
    .reason = "in quota (queue c 0+400 <= 1000 milli), but no node fits it",
  },
  {
    .name = "its own queue's over-quota pods go only at a lower priority: higher",
    .queues = { QA, QB },
    .pods = { { "a0", "a", 0, 600, 0, 0x1 },
              { "a1", "a", 0, 1000, 0, 0x2 },
              { "b0", "b", 0, 400, 0, 0x1 } },
    .req = { "a2", "a", 5, 400, 0, 0 },
    .victims = "a1", /* a is further over its share (1000) than b (400) */
    .node = 0,
  },
  {
    .name = "its own queue's over-quota pods go only at a lower priority: equal",
    .queues = { QA, QB },
    .pods = { { "a0", "a", 0, 600, 0, 0x1 },
              { "a1", "a", 0, 1000, 0, 0x2 },
              { "b0", "b", 0, 400, 0, 0x1 } },
    .req = { "a2", "a", 0, 400, 0, 0 },
    .victims = "b0",
    .node = 0,
  },
  {
    .name = "a pod of an unknown queue is in the default queue: over quota, a victim",
    .queues = { QA },
    .pods = { { "x1", "elsewhere", 0, 1000, 0, 0x1 }, { "x2", NULL, 0, 1000, 0, 0x2 } },
    .req = { "a1", "a", 0, 1000, 0, 0 },
    .victims = "x2",
    .node = 0,
  },
  {
    .name = "only allowed nodes are searched",
    .queues = { QA, QB },
    .pods = { { "b0", "b", 0, 2000, 0, 0x3 }, { "b1", "b", 0, 2000, 1, 0x3 } },
    .req = { "a1", "a", 0, 1000, 0, 0 },
    .only_node1 = true,
    .victims = "b1",
    .node = 1,
  },
};

static const struct gs_place_node_spec nodes[MAX_NODES] = {
  { "n0", 32000, 65536, 2, "H100" },
  { "n1", 32000, 65536, 2, "H100" },
};

static struct gs_place_request request_of(const struct pod *p)
{
  int num_gpu = p->gpu_milli > 1000 ? 2 : 1;
  return (struct gs_place_request){ .name = p->name,
                                    .cpu_milli = 100,
                                    .mem_mib = 100,
                                    .num_gpu = num_gpu,
                                    .gpu_milli = num_gpu > 1 ? 1000 : p->gpu_milli,
                                    .model_mask = GS_PLACE_ANY_MODEL,
                                    .queue = p->queue,
                                    .priority = p->priority };
}

static void snapshot(const gs_place_cluster_t *c, int *left)
{
  for (int n = 0; n < MAX_NODES; n++)
    for (int g = 0; g < 2; g++)
      left[n * 2 + g] = gs_place_gpu_left(c, n, g);
}

static void check_case(const struct victims_case *k)
{
  gs_error_t err = NULL;
  gs_place_cluster_t *c = gs_place_cluster_new(nodes, MAX_NODES, &err);
  assert_non_null(c);
  struct gs_place_running pods[MAX_PODS];
  size_t n = 0, nq = 0;
  while (nq < MAX_QUEUES && k->queues[nq].name)
    nq++;
  for (; n < MAX_PODS && k->pods[n].name; n++) {
    pods[n].r = request_of(&k->pods[n]);
    pods[n].choice =
      (struct gs_place_choice){ .node = k->pods[n].node, .gpu_mask = k->pods[n].mask };
    assert_int_equal(gs_place_node_take(c, &pods[n].r, &pods[n].choice), 0);
  }
  int before[MAX_NODES * 2], after[MAX_NODES * 2];
  snapshot(c, before);
  struct gs_place_request r = request_of(&k->req);
  const bool node1[MAX_NODES] = { false, true };
  size_t victims[GS_PLACE_VICTIMS_MAX];
  int node = -1;
  char reason[GS_PLACE_REASON_MAX];
  int got = gs_place_victims(c, k->queues, nq, pods, n, &r, k->only_node1 ? node1 : NULL, victims,
                             &node, reason, sizeof(reason), &err);
  char names[256] = "";
  for (int i = 0; i < got; i++)
    snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? "," : "",
             k->pods[victims[i]].name);
  print_message("%s: %d victims '%s' on %d: %s\n", k->name, got, names, node, reason);
  assert_true(got >= 0);
  if (k->victims) {
    assert_string_equal(names, k->victims);
    assert_int_equal(node, k->node);
  } else {
    assert_int_equal(got, 0);
  }
  if (k->reason)
    assert_non_null(strstr(reason, k->reason));
  snapshot(c, after);
  assert_memory_equal(before, after, sizeof(before));
  gs_place_cluster_free(c);
}

static void test_victims_follow_the_scheduler_rules_as_tabled(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    check_case(&cases[i]);
}

static void test_bad_queues_are_an_error_naming_the_queue(void **state)
{
  (void) state;
  gs_error_t err = NULL;
  gs_place_cluster_t *c = gs_place_cluster_new(nodes, MAX_NODES, &err);
  assert_non_null(c);
  const struct gs_place_queue_spec bad[] = { { "a", -1, 1 } };
  struct gs_place_request r = request_of(&(struct pod){ "a1", "a", 0, 100, 0, 0 });
  size_t victims[GS_PLACE_VICTIMS_MAX];
  int node;
  assert_int_equal(gs_place_victims(c, bad, 1, NULL, 0, &r, NULL, victims, &node, NULL, 0, &err),
                   -1);
  assert_non_null(strstr(err->msg, "queue 'a': negative quota or weight"));
  gs_error_release(&err);
  gs_place_cluster_free(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_victims_follow_the_scheduler_rules_as_tabled),
    cmocka_unit_test(test_bad_queues_are_an_error_naming_the_queue),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
