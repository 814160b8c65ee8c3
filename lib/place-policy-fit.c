/* The classic node scores: best-fit and gpu-packing, as the FGD paper's baselines define
 * them (higher is better; scores are truncated to integers, which makes ties common, and
 * ties are then broken by the cluster's tie order). First-fit needs no score. */
#include "place-internal.h"

#define BEST_FIT_MAX_CPU 128000.0 /* the largest node's CPU-milli in the paper's traces */
#define BEST_FIT_MAX_GPU 8000.0   /* the largest node's GPU-milli */
#define MAX_SCORE 100

/* 100 × (1 − ½·cpu_after/max_cpu − ½·gpu_after/max_gpu): the node left with the least. The
 * operations follow the reference's order so that truncation lands on the same integers. */
int gs__place_score_best_fit(const struct place_node *nd, const struct gs_place_request *r)
{
  double cpu_after = (double) (nd->cpu_left - r->cpu_milli);
  double gpu_after = (double) (nd->gpu_left_sum - (int64_t) r->num_gpu * r->gpu_milli);
  double s = 0;
  s += cpu_after / BEST_FIT_MAX_CPU * 0.5;
  s += gpu_after / BEST_FIT_MAX_GPU * 0.5;
  return (int) ((1.0 - s) * MAX_SCORE);
}

static int imax(int a, int b)
{
  return a > b ? a : b;
}

/* Prefers, in order: sharing already used GPUs (the fuller the better), then whole GPUs on
 * a node already in use (the fewer the better), then an idle node (the smaller the better).
 * CPU-only requests score 0 everywhere, so only the tie order places them. */
int gs__place_score_gpu_packing(const struct place_node *nd, const struct gs_place_request *r)
{
  if (r->num_gpu == 0 || r->gpu_milli <= 0)
    return 0;
  if (nd->free_gpus == nd->gpus)
    return imax(MAX_SCORE / 3 - nd->free_gpus, nd->free_gpus);
  uint32_t use = gs__place_pick_tightest(nd, r->num_gpu, r->gpu_milli);
  int fresh = 0, free_pct = 0;
  for (int g = 0; g < nd->gpus; g++)
    if (use & (UINT32_C(1) << g)) {
      fresh += nd->left[g] == GS_PLACE_MILLI;
      free_pct += nd->left[g] * 100 / GS_PLACE_MILLI;
    }
  if (fresh > 0)
    return imax(MAX_SCORE / 2 - fresh, MAX_SCORE / 3);
  return imax(MAX_SCORE - free_pct / 10, MAX_SCORE / 2);
}
