/* Choosing a node: one pass over the nodes in the cluster's tie order, keeping the first
 * node with the highest score. The pass costs a few comparisons per node that does not fit
 * and one score per node that does; FGD's scores are cached per node and request shape
 * (place-policy-fgd.c), so a pass costs little more than for the cheap policies. */
#include "place-internal.h"

/* Which GPUs a request takes on a node once the node is chosen (FGD picks its own). */
static uint32_t default_gpus(const struct place_node *nd, const struct gs_place_request *r)
{
  if (r->num_gpu == 0)
    return 0;
  return gs__place_pick_tightest(nd, r->num_gpu, r->gpu_milli);
}

static int first_fit(gs_place_cluster_t *c, const struct gs_place_request *r,
                     struct gs_place_choice *out)
{
  for (size_t i = 0; i < c->n; i++) {
    const struct place_node *nd = &c->nodes[i];
    if (!gs__place_fits(nd, r))
      continue;
    out->node = (int) i;
    out->score = 0;
    out->gpu_mask = default_gpus(nd, r);
    return 1;
  }
  return 0;
}

int gs__place_score_node(gs_place_cluster_t *c, enum gs_place_policy p, int i,
                         const struct gs_place_request *r, int *gpu)
{
  *gpu = -1;
  switch (p) {
  case GS_PLACE_BEST_FIT: return gs__place_score_best_fit(&c->nodes[i], r);
  case GS_PLACE_GPU_PACKING: return gs__place_score_gpu_packing(&c->nodes[i], r);
  case GS_PLACE_FGD: return gs__place_fgd_score(c, i, r, gpu);
  case GS_PLACE_FGD_MEM: return gs__place_fgd_mem_score(c, i, r, gpu, false);
  case GS_PLACE_FGD_MEM_TIE: return gs__place_fgd_mem_score(c, i, r, gpu, true);
  case GS_PLACE_FIRST_FIT: break;
  }
  return 0;
}

void gs__place_prepare(gs_place_cluster_t *c, enum gs_place_policy p,
                       const struct gs_place_request *r)
{
  if (p == GS_PLACE_FGD)
    gs__place_fgd_prepare(c, r);
  if (p == GS_PLACE_FGD_MEM || p == GS_PLACE_FGD_MEM_TIE)
    gs__place_fgd_mem_prepare(c, r);
}

int gs_place_decide(gs_place_cluster_t *c, enum gs_place_policy p, const struct gs_place_request *r,
                    struct gs_place_choice *out)
{
  if (p == GS_PLACE_FIRST_FIT)
    return first_fit(c, r, out);
  int best = -1, best_score = 0, best_gpu = -1;
  gs__place_prepare(c, p, r);
  for (size_t k = 0; k < c->n; k++) {
    int i = c->tie_order[k], gpu;
    if (!gs__place_fits(&c->nodes[i], r))
      continue;
    int s = gs__place_score_node(c, p, i, r, &gpu);
    if (best < 0 || s > best_score) {
      best = i;
      best_score = s;
      best_gpu = gpu;
    }
  }
  if (best < 0)
    return 0;
  out->node = best;
  out->score = best_score;
  out->gpu_mask = best_gpu >= 0 ? UINT32_C(1) << best_gpu : default_gpus(&c->nodes[best], r);
  return 1;
}
