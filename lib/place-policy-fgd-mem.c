/* fgd-mem: FGD (place-policy-fgd.c) with three changes that the openb traces reward.
 *
 * 1. The fragment counts memory. FGD asks whether a typical request still fits a node by
 *    model, CPU and GPUs only, so it happily fills a node's memory and strands the GPUs
 *    behind it. Here a typical request m also needs the node's free memory to hold m's
 *    memory (the least that a request of m's shape asked for).
 * 2. A sharing request (one GPU, part of it) is packed by best fit at the GPU: it takes
 *    the GPU, in the whole cluster, whose leftover after it is the smallest, and FGD's
 *    score only breaks ties between GPUs of equal leftover. Leftovers that another
 *    sharing request can still fill stay roomy, and idle GPUs stay whole.
 * 3. Ties are broken toward packing only where packing is safe. Replacing FGD's random
 *    tie order by best-fit for every request loses points (GPU requests spread over equal
 *    nodes do better), but among nodes of equal score a CPU-only request goes to the one
 *    with the least idle GPU, where its CPU cannot strand GPUs, and a whole-GPU request
 *    avoids fully idle nodes of 4 or more GPUs, which FGD's typical requests (multi-GPU
 *    shapes are too rare to be typical) do not protect but 4- and 8-GPU requests need.
 *    Among the nodes left, GPU requests keep FGD's random tie order.
 *
 * fgd-mem-tie is the same policy with change 2 turned around: a sharing request goes by
 * FGD's score (with memory) first, and the tightest GPU breaks ties between equal scores
 * (term 0..800). On sharing-heavy traces packing every sharing request tightly first
 * leaves leftovers that FGD would have kept usable, and fgd-mem falls below FGD.
 *
 * Score: for a sharing request, (1000 − its GPU's leftover after it) × 1000 + FGD's score;
 * otherwise FGD's truncated sigmoid of the fragment change (0..100) × 1000 + the tie term
 * (0..800), so the tie term never outweighs a point of FGD's score. Nodes of equal total
 * still fall to the cluster's tie order. Speed, as for FGD: each node's fragment and its
 * score per request shape are cached until the node's version changes. */
#include <stdlib.h>
#include <string.h>

#include "place-internal.h"

#define SCORE_SCALE 1000 /* a point of FGD's score, in units of the tie term */

struct mem_frag {
  uint32_t version; /* the node's version when f was computed; 0 never matches */
  double f;
};

struct mem_shape {
  int64_t cpu_milli, mem_mib;
  int num_gpu, gpu_milli;
  struct place_cache_entry *entries; /* one per node */
};

struct place_fgd_mem {
  struct mem_frag *frag; /* one per node */
  struct mem_shape *shapes;
  size_t n_shapes;
  struct mem_shape *cur; /* the column of the request being decided; NULL: uncached */
};

/* Whether typical request m could run on a node with this much CPU and memory left;
 * the GPUs are counted by the caller. */
static bool typical_may_fit(const struct place_typical *m, int model, int64_t cpu_left,
                            int64_t mem_left)
{
  return m->num_gpu > 0 && model >= 0 && (m->model_mask & (UINT32_C(1) << model)) &&
    cpu_left >= m->cpu_milli && mem_left >= m->mem_mib;
}

/* F_n(M) as gs__place_fgd_frag defines it, with memory in the fit test. */
static double frag_of(const gs_place_cluster_t *c, const struct place_node *nd, int64_t cpu_left,
                      int64_t mem_left, const int16_t *left)
{
  int total = 0;
  for (int g = 0; g < nd->gpus; g++)
    total += left[g];
  if (total == 0)
    return 0;
  double f = 0;
  for (size_t k = 0; k < c->n_typical; k++) {
    const struct place_typical *m = &c->typical[k];
    int frag = total;
    if (typical_may_fit(m, nd->model, cpu_left, mem_left)) {
      int fit = 0, small = 0;
      for (int g = 0; g < nd->gpus; g++) {
        if (left[g] >= m->gpu_milli)
          fit++;
        else
          small += left[g];
      }
      if (fit >= m->num_gpu)
        frag = small;
    }
    f += m->p * frag;
  }
  return f;
}

static double node_frag(gs_place_cluster_t *c, int node)
{
  const struct place_node *nd = &c->nodes[node];
  struct mem_frag *e = c->fgd_mem ? &c->fgd_mem->frag[node] : NULL;
  if (e && e->version == nd->version)
    return e->f;
  double f = frag_of(c, nd, nd->cpu_left, nd->mem_left, nd->left);
  if (e)
    *e = (struct mem_frag){ nd->version, f };
  return f;
}

/* FGD's score for taking r's share from the GPUs in mask. */
static int score_mask(const gs_place_cluster_t *c, const struct place_node *nd, double before,
                      const struct gs_place_request *r, uint32_t mask)
{
  int16_t left[GS_PLACE_MAX_GPUS];
  memcpy(left, nd->left, sizeof(left));
  for (int g = 0; g < nd->gpus; g++)
    if (mask & (UINT32_C(1) << g))
      left[g] = (int16_t) (left[g] - r->gpu_milli);
  double after = frag_of(c, nd, nd->cpu_left - r->cpu_milli, nd->mem_left - r->mem_mib, left);
  return gs__place_fgd_sigmoid_score(before, after);
}

/* A sharing request: the tightest GPU that holds it (lowest index among equals, which
 * score the same), with FGD's score for taking it; -1 and no GPU when none holds it. */
static int score_sharing(const gs_place_cluster_t *c, const struct place_node *nd, double before,
                         const struct gs_place_request *r, int *gpu)
{
  *gpu = -1;
  for (int g = 0; g < nd->gpus; g++)
    if (nd->left[g] >= r->gpu_milli && (*gpu < 0 || nd->left[g] < nd->left[*gpu]))
      *gpu = g;
  return *gpu < 0 ? -1 : score_mask(c, nd, before, r, UINT32_C(1) << *gpu);
}

static int score_uncached(gs_place_cluster_t *c, int node, const struct gs_place_request *r,
                          int *gpu)
{
  const struct place_node *nd = &c->nodes[node];
  double before = node_frag(c, node);
  if (gs__place_is_sharing(r))
    return score_sharing(c, nd, before, r, gpu);
  *gpu = -1;
  uint32_t mask = r->num_gpu ? gs__place_pick_tightest(nd, r->num_gpu, r->gpu_milli) : 0;
  return score_mask(c, nd, before, r, mask);
}

/* The cache column for r's shape, made on first use; NULL when there are too many shapes
 * or no memory, and scoring then goes uncached. */
static struct mem_shape *shape_for(gs_place_cluster_t *c, struct place_fgd_mem *m,
                                   const struct gs_place_request *r)
{
  for (size_t i = m->n_shapes; i-- > 0;) {
    struct mem_shape *s = &m->shapes[i];
    if (s->cpu_milli == r->cpu_milli && s->mem_mib == r->mem_mib && s->num_gpu == r->num_gpu &&
        s->gpu_milli == r->gpu_milli)
      return s;
  }
  void *shapes = m->shapes;
  struct place_cache_entry *e = gs__place_shape_room(c, &shapes, m->n_shapes, sizeof(*m->shapes));
  m->shapes = shapes;
  if (!e)
    return NULL;
  struct mem_shape *s = &m->shapes[m->n_shapes++];
  *s = (struct mem_shape){ r->cpu_milli, r->mem_mib, r->num_gpu, r->gpu_milli, e };
  return s;
}

/* Makes the caches on the first decision. Without memory the policy still decides the
 * same way, only uncached. Every cached value is keyed by the node's version, which
 * commits, releases and gs_place_set_workload all bump, so none can go stale. */
void gs__place_fgd_mem_prepare(gs_place_cluster_t *c, const struct gs_place_request *r)
{
  if (!c->fgd_mem) {
    struct place_fgd_mem *m = calloc(1, sizeof(*m));
    if (m)
      m->frag = calloc(c->n, sizeof(*m->frag));
    if (!m || !m->frag) {
      free(m);
      return;
    }
    c->fgd_mem = m;
  }
  c->fgd_mem->cur = shape_for(c, c->fgd_mem, r);
}

/* The tie term: a CPU-only request prefers the node with the least idle GPU; a whole-GPU
 * request any node but a fully idle one of 4 or more GPUs. */
static int tie_term(const struct place_node *nd, const struct gs_place_request *r)
{
  if (r->num_gpu > 0)
    return nd->free_gpus == nd->gpus && nd->gpus >= 4 ? 0 : 800;
  return (GS_PLACE_MAX_GPUS * GS_PLACE_MILLI - nd->gpu_left_sum) / 20; /* 0..800 */
}

int gs__place_fgd_mem_score(gs_place_cluster_t *c, int node, const struct gs_place_request *r,
                            int *gpu, bool fit_breaks_ties)
{
  const struct place_node *nd = &c->nodes[node];
  struct mem_shape *col = c->fgd_mem ? c->fgd_mem->cur : NULL;
  struct place_cache_entry *e = col ? &col->entries[node] : NULL;
  int s;
  if (e && e->version == nd->version) {
    s = e->score;
    *gpu = e->gpu;
  } else {
    s = score_uncached(c, node, r, gpu);
    if (e)
      *e = (struct place_cache_entry){ nd->version, (int16_t) s, (int16_t) *gpu };
  }
  if (gs__place_is_sharing(r) && *gpu >= 0 && fit_breaks_ties) /* FGD's score, then best fit */
    return s * SCORE_SCALE + (GS_PLACE_MILLI - (nd->left[*gpu] - r->gpu_milli)) * 4 / 5;
  if (gs__place_is_sharing(r) && *gpu >= 0) /* best fit at the GPU first, then FGD's score */
    return (GS_PLACE_MILLI - (nd->left[*gpu] - r->gpu_milli)) * SCORE_SCALE + s;
  return s * SCORE_SCALE + tie_term(nd, r);
}

void gs__place_fgd_mem_free(struct place_fgd_mem *m)
{
  if (!m)
    return;
  for (size_t i = 0; i < m->n_shapes; i++)
    free(m->shapes[i].entries);
  free(m->shapes);
  free(m->frag);
  free(m);
}
