/* Replaying a trace the way the FGD paper evaluates schedulers: inflate the arrivals to a
 * target share of the cluster's GPU capacity, then place them one at a time with no
 * departures and report how much of the GPU capacity ended up allocated. No I/O here: the
 * CLI reads the trace and times the replay. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place-internal.h"
#include "rng.h"

#define DEFAULT_COVERAGE 0.95 /* the paper keeps the shapes that cover 95% of pods */

struct named {
  const char *name;
  size_t index;
};

static int cmp_by_name(const void *a, const void *b)
{
  const struct named *x = a, *y = b;
  int d = strcmp(x->name, y->name);
  return d ? d : (x->index > y->index) - (x->index < y->index);
}

/* Fills a[0..n) with the pods' indices in name order. Returns -1 without memory. */
static int sorted_by_name(size_t *a, const struct gs_place_request *pods, size_t n)
{
  struct named *t = malloc(n * sizeof(*t));
  if (!t)
    return -1;
  for (size_t i = 0; i < n; i++)
    t[i] = (struct named){ pods[i].name ? pods[i].name : "", i };
  qsort(t, n, sizeof(*t), cmp_by_name);
  for (size_t i = 0; i < n; i++)
    a[i] = t[i].index;
  free(t);
  return 0;
}

static int64_t gpu_request(const struct gs_place_request *r)
{
  return (int64_t) r->num_gpu * r->gpu_milli;
}

/* The arrival order, as indices into pods: the pods sorted by name and shuffled, then
 * pods drawn with replacement until the next one would pass the target GPU request; when
 * the trace alone is past it, the shuffled prefix that stays within it. */
size_t *gs__place_arrivals(const struct gs_place_request *pods, size_t n, int64_t target,
                           uint64_t seed, size_t *out_n)
{
  size_t cap = n * 2 + 16, len = n;
  size_t *a = malloc(cap * sizeof(*a));
  if (!a)
    return NULL;
  if (sorted_by_name(a, pods, n) < 0) {
    free(a);
    return NULL;
  }
  uint64_t s = seed;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = gs__rng_below(&s, i + 1), t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (sum + gpu_request(&pods[a[i]]) > target) {
      *out_n = i;
      return a;
    }
    sum += gpu_request(&pods[a[i]]);
  }
  for (;;) {
    size_t k = gs__rng_below(&s, n);
    if (sum + gpu_request(&pods[k]) > target)
      break;
    sum += gpu_request(&pods[k]);
    if (len == cap) {
      size_t *p = realloc(a, (cap *= 2) * sizeof(*a));
      if (!p) {
        free(a);
        return NULL;
      }
      a = p;
    }
    a[len++] = k;
  }
  *out_n = len;
  return a;
}

/* Copies of the pods with gpu_spec bound to the cluster's models. */
gs_place_cluster_t *gs__place_replay_cluster(const struct gs_place_node_spec *nodes, size_t n_nodes,
                                             size_t n_pods, const struct gs_place_replay_opts *opts,
                                             gs_error_t *err)
{
  if (!(opts->inflate > 0)) {
    gs_make_error(err, 0, "inflate %g is not > 0", opts->inflate);
    return NULL;
  }
  if (n_pods == 0) {
    gs_make_error(err, 0, "no pods to replay");
    return NULL;
  }
  return gs_place_cluster_new(nodes, n_nodes, err);
}

struct gs_place_request *gs__place_bind_pods(gs_place_cluster_t *c,
                                             const struct gs_place_request *pods, size_t n)
{
  struct gs_place_request *b = malloc(n * sizeof(*b));
  if (!b)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    b[i] = pods[i];
    b[i].model_mask = gs_place_model_mask(c, pods[i].gpu_spec);
  }
  return b;
}

static void run(gs_place_cluster_t *c, const struct gs_place_request *pods, const size_t *order,
                size_t n, enum gs_place_policy p, struct gs_place_replay_result *out)
{
  for (size_t i = 0; i < n; i++) {
    const struct gs_place_request *r = &pods[order[i]];
    struct gs_place_choice ch;
    if (gs_place_decide(c, p, r, &ch)) {
      gs_place_commit(c, r, &ch);
      out->pods_placed++;
    } else {
      out->pods_failed++;
    }
  }
  out->decisions = n;
  struct gs_place_stats st;
  gs_place_stats(c, &st);
  int64_t idle = st.gpu_milli_capacity - st.gpu_milli_allocated;
  out->gpu_alloc_ratio =
    st.gpu_milli_capacity ? (double) st.gpu_milli_allocated / (double) st.gpu_milli_capacity : 0;
  out->frag_ratio = idle > 0 ? st.frag_milli / (double) idle : 0;
}

int gs_place_replay(const struct gs_place_node_spec *nodes, size_t n_nodes,
                    const struct gs_place_request *pods, size_t n_pods,
                    const struct gs_place_replay_opts *opts, struct gs_place_replay_result *out,
                    gs_error_t *err)
{
  gs_place_cluster_t *c = gs__place_replay_cluster(nodes, n_nodes, n_pods, opts, err);
  if (!c)
    return -1;
  int ret = -1;
  size_t n_order = 0, *order = NULL;
  struct gs_place_request *bound = gs__place_bind_pods(c, pods, n_pods);
  if (!bound) {
    gs_make_error(err, ENOMEM, "replay of %zu pods", n_pods);
    goto out;
  }
  double coverage = opts->coverage > 0 ? opts->coverage : DEFAULT_COVERAGE;
  if (gs_place_set_workload(c, bound, n_pods, coverage, err) < 0)
    goto out;
  gs_place_set_tie_seed(c, opts->seed);
  int64_t target = (int64_t) (opts->inflate * (double) c->gpu_capacity);
  order = gs__place_arrivals(bound, n_pods, target, opts->seed, &n_order);
  if (!order) {
    gs_make_error(err, ENOMEM, "replay arrivals");
    goto out;
  }
  memset(out, 0, sizeof(*out));
  run(c, bound, order, n_order, opts->policy, out);
  ret = 0;
out:
  free(order);
  free(bound);
  gs_place_cluster_free(c);
  return ret;
}
