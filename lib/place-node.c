/* Node by node: the questions kube-scheduler's Filter and Score ask of each node, answered
 * by the same code as gs_place_decide (place-decide.c), so a scheduler plugin that scores
 * each node and takes the best makes the choice `gpuslice pack` makes. */
#include <stdio.h>

#include "place-internal.h"

static bool node_ok(const gs_place_cluster_t *c, int node)
{
  return node >= 0 && (size_t) node < c->n;
}

/* The one-line reason r does not fit nd, in the order gs__place_fits checks. */
static void why_not(const gs_place_cluster_t *c, const struct place_node *nd,
                    const struct gs_place_request *r, char *buf, size_t len)
{
  if (nd->cpu_left < r->cpu_milli) {
    snprintf(buf, len, "%lld CPU milli idle, %lld asked", (long long) nd->cpu_left,
             (long long) r->cpu_milli);
  } else if (nd->mem_left < r->mem_mib) {
    snprintf(buf, len, "%lld MiB of memory idle, %lld asked", (long long) nd->mem_left,
             (long long) r->mem_mib);
  } else if (nd->model < 0) {
    snprintf(buf, len, "no GPUs");
  } else if (!(r->model_mask & (UINT32_C(1) << nd->model))) {
    snprintf(buf, len, "GPU model %s, not %s", c->models[nd->model],
             r->gpu_spec ? r->gpu_spec : "?");
  } else if (gs__place_is_sharing(r)) {
    snprintf(buf, len, "no GPU has %d milli idle: the most is %d (of %d idle on the node)",
             r->gpu_milli, nd->max_left, nd->gpu_left_sum);
  } else {
    int n = 0;
    for (int g = 0; g < nd->gpus; g++)
      n += nd->left[g] >= r->gpu_milli;
    snprintf(buf, len, "%d GPUs with %d milli idle each asked, %d have it", r->num_gpu,
             r->gpu_milli, n);
  }
}

int gs_place_node_fits(const gs_place_cluster_t *c, int node, const struct gs_place_request *r,
                       char *buf, size_t len)
{
  if (!node_ok(c, node))
    return -1;
  const struct place_node *nd = &c->nodes[node];
  if (gs__place_fits(nd, r))
    return 1;
  if (buf && len > 0)
    why_not(c, nd, r, buf, len);
  return 0;
}

void gs_place_node_prepare(gs_place_cluster_t *c, enum gs_place_policy p,
                           const struct gs_place_request *r)
{
  gs__place_prepare(c, p, r);
}

int gs_place_node_score(gs_place_cluster_t *c, enum gs_place_policy p, int node,
                        const struct gs_place_request *r, struct gs_place_choice *out)
{
  if (!node_ok(c, node) || !gs__place_fits(&c->nodes[node], r))
    return 0;
  const struct place_node *nd = &c->nodes[node];
  int gpu;
  int score = gs__place_score_node(c, p, node, r, &gpu);
  out->node = node;
  out->score = score;
  if (gpu >= 0)
    out->gpu_mask = UINT32_C(1) << gpu;
  else
    out->gpu_mask = r->num_gpu > 0 ? gs__place_pick_tightest(nd, r->num_gpu, r->gpu_milli) : 0;
  return 1;
}

int gs_place_node_tie_rank(const gs_place_cluster_t *c, int node)
{
  if (!node_ok(c, node))
    return -1;
  for (size_t k = 0; k < c->n; k++)
    if (c->tie_order[k] == node)
      return (int) k;
  return -1;
}

int gs_place_node_take(gs_place_cluster_t *c, const struct gs_place_request *r,
                       const struct gs_place_choice *ch)
{
  if (!node_ok(c, ch->node))
    return -1;
  const struct place_node *nd = &c->nodes[ch->node];
  int taken = 0;
  for (int g = 0; g < GS_PLACE_MAX_GPUS; g++) {
    if (!(ch->gpu_mask & (UINT32_C(1) << g)))
      continue;
    if (g >= nd->gpus || nd->left[g] < r->gpu_milli)
      return -1;
    taken++;
  }
  if (taken != r->num_gpu)
    return -1;
  gs_place_commit(c, r, ch);
  return 0;
}
