/* The scheduler on top of placement (lib/place-queue.c, place-preempt.c, place-gang.c) and
 * gs_place_release. Quota, preemption and gang scenarios are one table: each case is a
 * small cluster, its queues and a sequence of submissions (or finishes), each with the
 * expected placement (node and GPU mask per member) or a substring of the rejection's
 * reason, and the expected victims. Every rejection is also checked to leave the cluster's
 * stats, every GPU's leftover and every queue's usage exactly as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/place-queue.h>

#define MAX_NODES 4
#define MAX_QUEUES 4
#define MAX_STEPS 8
#define MAX_MEMBERS 4
#define MAX_PODS 32

struct pod {
  const char *name, *queue;
  int priority, num_gpu, gpu_milli;
};

struct where {
  int node;
  uint32_t mask;
};

/* One submission (a gang when it has more than one pod), or a finish when `finish` is set. */
struct step {
  const char *finish;           /* the name of a placed pod that ends before this step */
  struct pod pods[MAX_MEMBERS]; /* up to the first without a name */
  int placed;                   /* 1 or 0 */
  struct where at[MAX_MEMBERS]; /* where each member lands, when placed */
  const char *reason;           /* a substring of the reason */
  const char *victims;          /* the victims' names, comma-separated, in the outcome's order */
};

struct sched_case {
  const char *name;
  enum gs_place_policy policy;
  struct gs_place_node_spec nodes[MAX_NODES];
  struct gs_place_queue_spec queues[MAX_QUEUES];
  struct step steps[MAX_STEPS];
};

#define N2                           \
  { "n0", 32000, 65536, 2, "V100" }, \
  {                                  \
    "n1", 32000, 65536, 2, "V100"    \
  }
#define N3                        \
  N2,                             \
  {                               \
    "n2", 32000, 65536, 2, "V100" \
  }

static const struct sched_case cases[] = {
  {
    .name = "in-quota placement counts against the guarantee",
    .nodes = { N2 },
    .queues = { { "team-a", 2000, 1 } },
    .steps = {
      { .pods = { { "a1", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } },
        .reason = "placed 'a1' on n0 GPU 0 by first-fit (in quota: team-a 1000/2000 milli)" },
      { .pods = { { "a2", "team-a", 0, 1, 500 } }, .placed = 1, .at = { { 0, 0x2 } },
        .reason = "(in quota: team-a 1500/2000 milli)" },
      { .pods = { { "a3", "team-a", 0, 1, 500 } }, .placed = 1, .at = { { 0, 0x2 } },
        .reason = "on n0 GPU 1 by first-fit (in quota: team-a 2000/2000 milli)" },
    },
  },
  {
    .name = "over quota borrows idle capacity but never preempts",
    .nodes = { N2 },
    .queues = { { "team-b", 1000, 1 } },
    .steps = {
      { .pods = { { "b1", "team-b", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } },
        .reason = "in quota: team-b 1000/1000" },
      { .pods = { { "b2", "team-b", 0, 2, 1000 } }, .placed = 1, .at = { { 1, 0x3 } },
        .reason = "over quota: team-b 3000/1000 milli, borrowing idle capacity" },
      { .pods = { { "b3", "team-b", 9, 1, 1000 } }, .placed = 1, .at = { { 0, 0x2 } },
        .reason = "over quota: team-b 4000/1000" },
      { .pods = { { "b4", "team-b", 9, 1, 1000 } }, .placed = 0,
        .reason = "over quota (team-b 1000+1000 > 1000 milli), so it may use idle capacity "
                  "only and never preempts" },
    },
  },
  {
    .name = "an in-quota request preempts an over-quota pod of another queue",
    .nodes = { N2 },
    .queues = { { "team-a", 2000, 1 }, { "team-b", 1000, 1 } },
    .steps = {
      { .pods = { { "b1", "team-b", 5, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } } },
      { .pods = { { "b2", "team-b", 5, 1, 1000 } }, .placed = 1, .at = { { 0, 0x2 } },
        .reason = "over quota" },
      { .pods = { { "b3", "team-b", 5, 1, 1000 } }, .placed = 1, .at = { { 1, 0x1 } } },
      { .pods = { { "b4", "team-b", 5, 1, 1000 } }, .placed = 1, .at = { { 1, 0x2 } } },
      /* A lower priority does not protect b's borrowed GPUs from a's guarantee; the newest
       * over-quota pod goes first. */
      { .pods = { { "a1", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x2 } },
        .victims = "b4",
        .reason = "placed 'a1' on n1 GPU 1 by first-fit (in quota: team-a 1000/2000 milli); "
                  "preempted 'b4' (team-b, priority 5, over quota) on n1 GPU 1" },
      { .pods = { { "a2", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x1 } },
        .victims = "b3" },
      /* a is at its quota: over quota now, so no more preemption. */
      { .pods = { { "a3", "team-a", 0, 1, 1000 } }, .placed = 0,
        .reason = "over quota (team-a 2000+1000 > 2000 milli)" },
    },
  },
  {
    .name = "in-quota work is never preempted",
    .nodes = { N2 },
    .queues = { { "team-a", 4000, 1 }, { "team-b", 4000, 1 } },
    .steps = {
      { .pods = { { "b1", "team-b", 0, 2, 1000 } }, .placed = 1, .at = { { 0, 0x3 } } },
      { .pods = { { "b2", "team-b", 0, 2, 1000 } }, .placed = 1, .at = { { 1, 0x3 } } },
      { .pods = { { "a1", "team-a", 100, 1, 1000 } }, .placed = 0,
        .reason = "rejected: 'a1' (1 GPU x 1000 milli, 1000 CPU-milli) fits no node; in quota "
                  "(team-a 0+1000 <= 4000 milli), but no node frees enough" },
      { .pods = { { "a1", "team-a", 100, 1, 1000 } }, .placed = 0,
        .reason = "in-quota pods are never preempted" },
    },
  },
  {
    .name = "victims go lowest priority first, wherever they run",
    .nodes = { N2 },
    .queues = { { "team-a", 4000, 1 } },
    .steps = {
      { .pods = { { "mid", "", 2, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } },
        .reason = "over quota: default 1000/0 milli" },
      { .pods = { { "hi", "", 5, 1, 1000 } }, .placed = 1, .at = { { 0, 0x2 } } },
      { .pods = { { "lo", "", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x1 } } },
      { .pods = { { "hi2", "", 5, 1, 1000 } }, .placed = 1, .at = { { 1, 0x2 } } },
      { .pods = { { "a1", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x1 } },
        .victims = "lo", .reason = "preempted 'lo' (default, priority 0, over quota)" },
      { .pods = { { "a2", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } },
        .victims = "mid" },
      /* Two whole GPUs: each node holds an in-quota pod of a, so nothing can be freed. */
      { .pods = { { "a3", "team-a", 0, 2, 1000 } }, .placed = 0,
        .reason = "in-quota pods are never preempted" },
      /* One GPU: the two priority-5 pods tie; the newer goes. */
      { .pods = { { "a4", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x2 } },
        .victims = "hi2" },
    },
  },
  {
    .name = "a whole node is freed by preempting the fewest pods",
    .nodes = { N2 },
    .queues = { { "team-a", 4000, 1 } },
    .steps = {
      { .pods = { { "x1", "", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } } },
      { .pods = { { "x2", "", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x2 } } },
      { .pods = { { "y", "", 0, 2, 1000 } }, .placed = 1, .at = { { 1, 0x3 } } },
      { .pods = { { "a1", "team-a", 0, 2, 1000 } }, .placed = 1, .at = { { 1, 0x3 } },
        .victims = "y" },
    },
  },
  {
    .name = "its own queue's over-quota work is preempted only at a lower priority",
    .nodes = { { "n0", 32000, 65536, 2, "V100" } },
    .queues = { { "team-a", 1000, 1 } },
    .steps = {
      { .pods = { { "big", "team-a", 3, 2, 1000 } }, .placed = 1, .at = { { 0, 0x3 } },
        .reason = "over quota: team-a 2000/1000" },
      { .pods = { { "same", "team-a", 3, 1, 1000 } }, .placed = 0,
        .reason = "of lower priority in its own" },
      { .pods = { { "urgent", "team-a", 4, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } },
        .victims = "big", .reason = "(in quota: team-a 1000/1000 milli); preempted 'big'" },
    },
  },
  {
    .name = "between queues at one priority, the one furthest over its weighted share loses",
    .nodes = { N2 },
    .queues = { { "team-a", 4000, 1 }, { "light", 0, 1 }, { "heavy", 0, 3 } },
    .steps = {
      { .pods = { { "l1", "light", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } } },
      { .pods = { { "h1", "heavy", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x2 } } },
      { .pods = { { "h2", "heavy", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x1 } } },
      { .pods = { { "h3", "heavy", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x2 } } },
      /* light: 1000 over / weight 1 = 1000; heavy: 3000 / 3 = 1000. Even: the newest, h3. */
      { .pods = { { "a1", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x2 } },
        .victims = "h3" },
      /* light 1000/1 > heavy 2000/3: light's pod goes, though older. */
      { .pods = { { "a2", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } },
        .victims = "l1" },
    },
  },
  {
    .name = "a queue of weight 0 never goes over quota",
    .nodes = { N2 },
    .queues = { { "strict", 1000, 0 } },
    .steps = {
      { .pods = { { "s1", "strict", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } } },
      { .pods = { { "s2", "strict", 0, 1, 1000 } }, .placed = 0,
        .reason = "rejected: queue strict has over-quota weight 0 and 1000+1000 > 1000 milli" },
      { .pods = { { "u", "nobody", 0, 1, 1000 } }, .placed = 0,
        .reason = "rejected: unknown queue 'nobody'" },
    },
  },
  {
    .name = "a finished in-quota pod lets an over-quota one into the guarantee",
    .nodes = { { "n0", 32000, 65536, 2, "V100" } },
    .queues = { { "team-a", 1000, 1 }, { "team-b", 1000, 1 }, { "team-c", 1000, 1 } },
    .steps = {
      { .pods = { { "b1", "team-b", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } } },
      { .pods = { { "b2", "team-b", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x2 } },
        .reason = "over quota" },
      { .finish = "b1" },
      { .pods = { { "a1", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } },
        .victims = "" },
      /* b2 is in quota now, so c's guarantee cannot reclaim it. */
      { .pods = { { "c1", "team-c", 0, 1, 1000 } }, .placed = 0,
        .reason = "in-quota pods are never preempted" },
    },
  },
  {
    .name = "a gang is placed whole",
    .nodes = { N3 },
    .queues = { { "team-a", 6000, 1 } },
    .steps = {
      { .pods = { { "w0", "team-a", 0, 2, 1000 }, { "w1", "team-a", 0, 2, 1000 },
                  { "w2", "team-a", 0, 2, 1000 } },
        .placed = 1, .at = { { 0, 0x3 }, { 1, 0x3 }, { 2, 0x3 } },
        .reason = "placed gang of 3 by first-fit (in quota: team-a 6000/6000 milli): 'w0' on n0 "
                  "GPUs 0,1; 'w1' on n1 GPUs 0,1; 'w2' on n2 GPUs 0,1" },
    },
  },
  {
    .name = "a gang that does not fit places nothing",
    .nodes = { N3 },
    .queues = { { "team-a", 6000, 1 }, { "team-b", 1000, 1 } },
    .steps = {
      { .pods = { { "b1", "team-b", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } } },
      { .pods = { { "w0", "team-a", 0, 2, 1000 }, { "w1", "team-a", 0, 2, 1000 },
                  { "w2", "team-a", 0, 2, 1000 } },
        .placed = 0,
        .reason = "rejected: gang of 3 (all or nothing): member 3 'w2' (2 GPUs x 1000 milli, "
                  "1000 CPU-milli) fits no node once 2 are placed (2 of 3 nodes could hold it "
                  "alone); in quota" },
      { .pods = { { "a1", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x2 } },
        .reason = "in quota: team-a 1000/6000" },
      { .pods = { { "w0", "team-a", 0, 2, 1000 }, { "w1", "team-a", 0, 2, 1000 } },
        .placed = 1, .at = { { 1, 0x3 }, { 2, 0x3 } } },
    },
  },
  {
    .name = "a failed gang puts back the pods it preempted",
    .nodes = { N3 },
    .queues = { { "team-a", 6000, 1 }, { "team-c", 2000, 1 } },
    .steps = {
      { .pods = { { "x", "", 0, 2, 1000 } }, .placed = 1, .at = { { 0, 0x3 } } },
      { .pods = { { "c1", "team-c", 0, 2, 1000 } }, .placed = 1, .at = { { 1, 0x3 } } },
      /* w0 takes idle n2, w1 preempts x on n0, w2 finds only in-quota c1: all undone. */
      { .pods = { { "w0", "team-a", 0, 2, 1000 }, { "w1", "team-a", 0, 2, 1000 },
                  { "w2", "team-a", 0, 2, 1000 } },
        .placed = 0, .reason = "nothing placed, nothing preempted" },
      { .pods = { { "w0", "team-a", 0, 2, 1000 }, { "w1", "team-a", 0, 2, 1000 } },
        .placed = 1, .at = { { 2, 0x3 }, { 0, 0x3 } }, .victims = "x",
        .reason = "'w1' on n0 GPUs 0,1; preempted 'x' (default, priority 0, over quota) on n0" },
    },
  },
  {
    .name = "an over-quota gang borrows idle capacity only",
    .nodes = { N2 },
    .queues = { { "team-a", 1000, 1 } },
    .steps = {
      { .pods = { { "x", "", 0, 1, 1000 } }, .placed = 1, .at = { { 0, 0x1 } } },
      { .pods = { { "w0", "team-a", 0, 2, 1000 }, { "w1", "team-a", 0, 2, 1000 } },
        .placed = 0, .reason = "fits no node once 1 is placed" },
      { .pods = { { "w0", "team-a", 0, 1, 1000 }, { "w1", "team-a", 0, 2, 1000 } },
        .placed = 1, .at = { { 0, 0x2 }, { 1, 0x3 } },
        .reason = "placed gang of 2 by first-fit (over quota: team-a 3000/1000 milli" },
    },
  },
  {
    .name = "best-fit places through the scheduler too",
    .policy = GS_PLACE_BEST_FIT,
    .nodes = { { "big", 96000, 393216, 8, "V100" }, { "small", 32000, 65536, 2, "V100" } },
    .queues = { { "team-a", 2000, 1 } },
    .steps = {
      { .pods = { { "a1", "team-a", 0, 1, 1000 } }, .placed = 1, .at = { { 1, 0x1 } },
        .reason = "placed 'a1' on small GPU 0 by best-fit" },
    },
  },
};

struct snapshot {
  struct gs_place_stats st;
  int left[MAX_NODES][GS_PLACE_MAX_GPUS];
  struct gs_place_queue_usage use[MAX_QUEUES + 1];
};

static size_t count_nodes(const struct sched_case *c)
{
  size_t n = 0;
  while (n < MAX_NODES && c->nodes[n].name)
    n++;
  return n;
}

static size_t count_queues(const struct sched_case *c)
{
  size_t n = 0;
  while (n < MAX_QUEUES && c->queues[n].name)
    n++;
  return n;
}

static void snap(gs_place_sched_t *s, const struct sched_case *c, struct snapshot *out)
{
  memset(out, 0, sizeof(*out));
  gs_place_cluster_t *cl = gs_place_sched_cluster(s);
  gs_place_stats(cl, &out->st);
  for (int i = 0; i < (int) count_nodes(c); i++)
    for (int g = 0; g < GS_PLACE_MAX_GPUS; g++)
      out->left[i][g] = gs_place_gpu_left(cl, i, g);
  size_t nq = count_queues(c);
  for (size_t q = 0; q < nq; q++)
    assert_int_equal(gs_place_sched_queue_usage(s, c->queues[q].name, &out->use[q]), 0);
  assert_int_equal(gs_place_sched_queue_usage(s, NULL, &out->use[nq]), 0);
}

static void assert_same(const struct snapshot *a, const struct snapshot *b)
{
  assert_int_equal(a->st.gpu_milli_allocated, b->st.gpu_milli_allocated);
  assert_true(a->st.frag_milli == b->st.frag_milli);
  assert_memory_equal(a->left, b->left, sizeof(a->left));
  assert_memory_equal(a->use, b->use, sizeof(a->use));
}

struct placed {
  char name[GS_PLACE_NAME_MAX];
  uint64_t id;
};

static uint64_t id_of(const struct placed *p, size_t n, const char *name)
{
  for (size_t i = n; i-- > 0;)
    if (strcmp(p[i].name, name) == 0)
      return p[i].id;
  fail_msg("no placed pod '%s'", name);
  return 0;
}

static void victims_string(const struct gs_place_outcome *o, char *buf, size_t len)
{
  buf[0] = '\0';
  for (size_t k = 0; k < o->n_victims; k++) {
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", k ? "," : "", o->victims[k].name);
  }
}

static size_t build(gs_place_sched_t *s, const struct step *st, struct gs_place_request *reqs)
{
  size_t n = 0;
  for (; n < MAX_MEMBERS && st->pods[n].name; n++) {
    const struct pod *p = &st->pods[n];
    reqs[n] = (struct gs_place_request){
      .name = p->name,
      .cpu_milli = 1000,
      .mem_mib = 1024,
      .num_gpu = p->num_gpu,
      .gpu_milli = p->gpu_milli,
      .queue = p->queue,
      .priority = p->priority,
      .model_mask = gs_place_model_mask(gs_place_sched_cluster(s), NULL),
    };
  }
  return n;
}

static void check_outcome(const struct sched_case *c, size_t k, const struct step *st,
                          const struct gs_place_outcome *o, int rc, size_t n)
{
  char victims[256];
  victims_string(o, victims, sizeof(victims));
  if (rc != st->placed)
    fail_msg("[%s] step %zu: returned %d, not %d: %s", c->name, k, rc, st->placed, o->reason);
  assert_int_equal(o->placed, st->placed == 1);
  if (st->reason && !strstr(o->reason, st->reason))
    fail_msg("[%s] step %zu: reason\n  '%s'\nlacks\n  '%s'", c->name, k, o->reason, st->reason);
  assert_string_equal(victims, st->victims ? st->victims : "");
  if (!st->placed)
    return;
  assert_int_equal(o->n, n);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(o->choices[i].node, st->at[i].node);
    assert_int_equal(o->choices[i].gpu_mask, st->at[i].mask);
  }
}

static void run_case(const struct sched_case *c)
{
  gs_error_t err = NULL;
  gs_place_sched_t *s =
    gs_place_sched_new(c->nodes, count_nodes(c), c->policy, c->queues, count_queues(c), &err);
  assert_non_null(s);
  struct placed placed[MAX_PODS];
  size_t n_placed = 0;
  for (size_t k = 0; k < MAX_STEPS; k++) {
    const struct step *st = &c->steps[k];
    if (st->finish) {
      assert_int_equal(gs_place_sched_finish(s, id_of(placed, n_placed, st->finish)), 0);
      continue;
    }
    struct gs_place_request reqs[MAX_MEMBERS];
    size_t n = build(s, st, reqs);
    if (n == 0)
      break;
    struct snapshot before, after;
    snap(s, c, &before);
    struct gs_place_outcome o;
    int rc = gs_place_sched_submit(s, reqs, n, &o, &err);
    check_outcome(c, k, st, &o, rc, n);
    snap(s, c, &after);
    if (rc == 0)
      assert_same(&before, &after);
    for (size_t i = 0; rc == 1 && i < n; i++) {
      assert_true(n_placed < MAX_PODS);
      snprintf(placed[n_placed].name, GS_PLACE_NAME_MAX, "%s", reqs[i].name);
      placed[n_placed++].id = o.ids[i];
    }
  }
  gs_place_sched_free(s);
}

static void test_scenarios_place_preempt_and_reject_as_tabled(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    run_case(&cases[i]);
}

static struct gs_place_request shape(int64_t cpu, int num, int milli)
{
  return (struct gs_place_request){ .name = "p",
                                    .cpu_milli = cpu,
                                    .mem_mib = 1024,
                                    .num_gpu = num,
                                    .gpu_milli = milli,
                                    .model_mask = GS_PLACE_ANY_MODEL };
}

static void snap_cluster(const gs_place_cluster_t *c, struct snapshot *out)
{
  memset(out, 0, sizeof(*out));
  gs_place_stats(c, &out->st);
  for (int i = 0; i < (int) gs_place_cluster_size(c); i++)
    for (int g = 0; g < GS_PLACE_MAX_GPUS; g++)
      out->left[i][g] = gs_place_gpu_left(c, i, g);
}

static void test_release_undoes_commit_exactly_for_every_policy(void **state)
{
  (void) state;
  static const struct gs_place_node_spec nodes[] = {
    { "a", 32000, 65536, 4, "T4" },
    { "b", 64000, 131072, 8, "V100" },
    { "c", 16000, 65536, 2, "V100" },
  };
  struct gs_place_request load[] = { shape(2000, 1, 300), shape(4000, 1, 1000),
                                     shape(8000, 2, 1000), shape(1000, 0, 0), shape(2000, 1, 500) };
  size_t n_load = sizeof(load) / sizeof(load[0]);
  /* Every policy the library names, so that a new policy's caches are covered too. */
  for (int p = 0; strcmp(gs_place_policy_name((enum gs_place_policy) p), "unknown") != 0; p++) {
    gs_error_t err = NULL;
    gs_place_cluster_t *c = gs_place_cluster_new(nodes, 3, &err);
    assert_non_null(c);
    assert_int_equal(gs_place_set_workload(c, load, n_load, 0.95, &err), 0);
    struct gs_place_choice ch[8];
    for (size_t i = 0; i < n_load; i++) { /* a few pods, so that frag is not trivial */
      assert_int_equal(gs_place_decide(c, (enum gs_place_policy) p, &load[i], &ch[i]), 1);
      gs_place_commit(c, &load[i], &ch[i]);
    }
    for (size_t i = 0; i < n_load; i++) {
      struct snapshot before, after;
      struct gs_place_choice d0, d1, x;
      snap_cluster(c, &before);
      assert_true(before.st.frag_milli > 0);
      assert_int_equal(gs_place_decide(c, (enum gs_place_policy) p, &load[i], &d0), 1);
      gs_place_commit(c, &load[i], &d0); /* cached FGD scores now stale for that node */
      (void) gs_place_decide(c, (enum gs_place_policy) p, &load[i], &x); /* caches scores */
      gs_place_release(c, &load[i], &d0);
      snap_cluster(c, &after);
      assert_same(&before, &after);
      assert_int_equal(gs_place_decide(c, (enum gs_place_policy) p, &load[i], &d1), 1);
      assert_int_equal(d1.node, d0.node);
      assert_int_equal(d1.gpu_mask, d0.gpu_mask);
      assert_int_equal(d1.score, d0.score);
    }
    /* Releasing a pod placed earlier, under others, and committing it again. */
    struct snapshot before, after;
    snap_cluster(c, &before);
    gs_place_release(c, &load[1], &ch[1]);
    gs_place_commit(c, &load[1], &ch[1]);
    snap_cluster(c, &after);
    assert_same(&before, &after);
    for (size_t i = n_load; i-- > 0;)
      gs_place_release(c, &load[i], &ch[i]);
    snap_cluster(c, &after);
    assert_int_equal(after.st.gpu_milli_allocated, 0);
    for (int n = 0; n < 3; n++)
      assert_int_equal(gs_place_cpu_left(c, n), nodes[n].cpu_milli);
    gs_place_cluster_free(c);
  }
}

static void test_submit_refuses_malformed_submissions(void **state)
{
  (void) state;
  static const struct gs_place_node_spec nodes[] = { N2 };
  static const struct gs_place_queue_spec queues[] = { { "a", 1000, 1 }, { "b", 1000, 1 } };
  gs_error_t err = NULL;
  gs_place_sched_t *s = gs_place_sched_new(nodes, 2, GS_PLACE_FIRST_FIT, queues, 2, &err);
  assert_non_null(s);
  struct gs_place_request r[2] = { shape(1000, 1, 1000), shape(1000, 1, 1000) };
  r[0].queue = "a";
  r[1].queue = "b";
  struct gs_place_outcome o;
  assert_int_equal(gs_place_sched_submit(s, r, 2, &o, &err), -1); /* a gang spans queues */
  assert_non_null(err);
  gs_error_release(&err);
  assert_int_equal(gs_place_sched_submit(s, r, 0, &o, &err), -1);
  gs_error_release(&err);
  r[0].gpu_milli = 1001;
  assert_int_equal(gs_place_sched_submit(s, r, 1, &o, &err), -1);
  gs_error_release(&err);
  assert_int_equal(gs_place_sched_finish(s, 12345), -1);
  struct gs_place_queue_usage u;
  assert_int_equal(gs_place_sched_queue_usage(s, "zzz", &u), -1);
  gs_place_sched_free(s);

  static const struct gs_place_queue_spec dup[] = { { "a", 1000, 1 }, { "a", 0, 1 } };
  assert_null(gs_place_sched_new(nodes, 2, GS_PLACE_FIRST_FIT, dup, 2, &err));
  gs_error_release(&err);
  static const struct gs_place_queue_spec reserved[] = { { "default", 1000, 1 } };
  assert_null(gs_place_sched_new(nodes, 2, GS_PLACE_FIRST_FIT, reserved, 1, &err));
  gs_error_release(&err);
  static const struct gs_place_queue_spec negative[] = { { "a", -1, 1 } };
  assert_null(gs_place_sched_new(nodes, 2, GS_PLACE_FIRST_FIT, negative, 1, &err));
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_scenarios_place_preempt_and_reject_as_tabled),
    cmocka_unit_test(test_release_undoes_commit_exactly_for_every_policy),
    cmocka_unit_test(test_submit_refuses_malformed_submissions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
