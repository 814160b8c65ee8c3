/* The placement model: the cluster's nodes, what fits where, and committing a choice.
 * Policies (place-policy-*.c) score nodes; place-decide.c runs the choice; nothing here
 * does I/O. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place-internal.h"
#include "rng.h"

static const char *const policy_names[] = {
  [GS_PLACE_FIRST_FIT] = "first-fit",     [GS_PLACE_BEST_FIT] = "best-fit",
  [GS_PLACE_GPU_PACKING] = "gpu-packing", [GS_PLACE_FGD] = "fgd",
  [GS_PLACE_FGD_MEM] = "fgd-mem",         [GS_PLACE_FGD_MEM_TIE] = "fgd-mem-tie",
};

int gs_place_policy_from_name(const char *name, enum gs_place_policy *out)
{
  for (size_t i = 0; i < sizeof(policy_names) / sizeof(policy_names[0]); i++)
    if (name && strcmp(name, policy_names[i]) == 0) {
      *out = (enum gs_place_policy) i;
      return 0;
    }
  return -1;
}

const char *gs_place_policy_name(enum gs_place_policy p)
{
  if ((size_t) p < sizeof(policy_names) / sizeof(policy_names[0]))
    return policy_names[p];
  return "unknown";
}

/* Returns the model's index, adding it when new; -1 when the table is full. */
static int model_intern(gs_place_cluster_t *c, const char *model)
{
  for (int i = 0; i < c->n_models; i++)
    if (strcmp(c->models[i], model) == 0)
      return i;
  if (c->n_models == GS_PLACE_MAX_MODELS)
    return -1;
  c->models[c->n_models] = strdup(model);
  if (!c->models[c->n_models])
    return -2;
  return c->n_models++;
}

static int node_init(gs_place_cluster_t *c, struct place_node *nd,
                     const struct gs_place_node_spec *s, gs_error_t *err)
{
  if (s->gpus < 0 || s->gpus > GS_PLACE_MAX_GPUS)
    return gs_make_error(err, 0, "node '%s': %d GPUs (at most %d)", s->name ? s->name : "?",
                         s->gpus, GS_PLACE_MAX_GPUS);
  if (s->cpu_milli < 0 || s->mem_mib < 0)
    return gs_make_error(err, 0, "node '%s': negative capacity", s->name ? s->name : "?");
  nd->cpu_left = nd->cpu_cap = s->cpu_milli;
  nd->mem_left = s->mem_mib;
  nd->gpus = s->gpus;
  nd->model = -1;
  if (s->gpus > 0) {
    nd->model = model_intern(c, s->model ? s->model : "");
    if (nd->model == -1)
      return gs_make_error(err, 0, "more than %d GPU models", GS_PLACE_MAX_MODELS);
    if (nd->model < 0)
      return gs_make_error(err, ENOMEM, "node '%s'", s->name ? s->name : "?");
  }
  for (int g = 0; g < nd->gpus; g++)
    nd->left[g] = GS_PLACE_MILLI;
  nd->version = 1;
  gs__place_node_refresh(nd);
  c->gpu_capacity += (int64_t) nd->gpus * GS_PLACE_MILLI;
  return 0;
}

gs_place_cluster_t *gs_place_cluster_new(const struct gs_place_node_spec *nodes, size_t n,
                                         gs_error_t *err)
{
  if (n == 0 || n > INT32_MAX) {
    gs_make_error(err, 0, "a cluster needs 1 to %d nodes, not %zu", INT32_MAX, n);
    return NULL;
  }
  gs_place_cluster_t *c = calloc(1, sizeof(*c));
  if (c) {
    c->n = n;
    c->nodes = calloc(n, sizeof(*c->nodes));
    c->tie_order = calloc(n, sizeof(*c->tie_order));
  }
  if (!c || !c->nodes || !c->tie_order) {
    gs_make_error(err, ENOMEM, "placement cluster of %zu nodes", n);
    gs_place_cluster_free(c);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    c->tie_order[i] = (int) i;
    if (node_init(c, &c->nodes[i], &nodes[i], err) < 0) {
      gs_place_cluster_free(c);
      return NULL;
    }
  }
  return c;
}

void gs_place_cluster_free(gs_place_cluster_t *c)
{
  if (!c)
    return;
  for (int i = 0; i < c->n_models; i++)
    free(c->models[i]);
  for (size_t i = 0; i < c->n_shapes; i++)
    free(c->shapes[i].entries);
  free(c->shapes);
  gs__place_fgd_mem_free(c->fgd_mem);
  free(c->typical);
  free(c->tie_order);
  free(c->nodes);
  free(c);
}

size_t gs_place_cluster_size(const gs_place_cluster_t *c)
{
  return c->n;
}

uint32_t gs_place_model_mask(const gs_place_cluster_t *c, const char *spec)
{
  if (!spec || !*spec)
    return GS_PLACE_ANY_MODEL;
  uint32_t mask = 0;
  for (const char *p = spec;;) {
    size_t len = strcspn(p, "|");
    for (int i = 0; i < c->n_models; i++)
      if (strlen(c->models[i]) == len && memcmp(c->models[i], p, len) == 0)
        mask |= UINT32_C(1) << i;
    if (!p[len])
      break;
    p += len + 1;
  }
  return mask;
}

/* A sharing request takes part of one GPU; every other GPU request takes whole GPUs'
 * worth of gpu_milli on num_gpu distinct GPUs. */
struct place_cache_entry *gs__place_shape_room(const struct gs_place_cluster *c, void **shapes,
                                               size_t n, size_t elem)
{
  if (n == PLACE_MAX_SHAPES)
    return NULL;
  if ((n & (n - 1)) == 0) { /* grow at powers of two */
    size_t cap = n ? n * 2 : 16;
    void *p = realloc(*shapes, cap * elem);
    if (!p)
      return NULL;
    *shapes = p;
  }
  return calloc(c->n, sizeof(struct place_cache_entry));
}

bool gs__place_is_sharing(const struct gs_place_request *r)
{
  return r->num_gpu == 1 && r->gpu_milli < GS_PLACE_MILLI;
}

static int gpus_with_at_least(const struct place_node *nd, int milli)
{
  if (milli >= GS_PLACE_MILLI)
    return nd->free_gpus;
  int n = 0;
  for (int g = 0; g < nd->gpus; g++)
    n += nd->left[g] >= milli;
  return n;
}

/* Kubernetes' NodeResourcesFit (CPU and memory) plus the GPU share filter. */
bool gs__place_fits(const struct place_node *nd, const struct gs_place_request *r)
{
  if (nd->cpu_left < r->cpu_milli || nd->mem_left < r->mem_mib)
    return false;
  if (r->num_gpu == 0)
    return true;
  if (nd->model < 0 || !(r->model_mask & (UINT32_C(1) << nd->model)))
    return false;
  if (gs__place_is_sharing(r))
    return nd->max_left >= r->gpu_milli;
  return gpus_with_at_least(nd, r->gpu_milli) >= r->num_gpu;
}

/* The num_gpu GPUs with the smallest leftover that still hold gpu_milli, lowest index
 * first among equals: what the reference simulator's NodeResource.Sub takes. Returns 0
 * when there are not enough. */
uint32_t gs__place_pick_tightest(const struct place_node *nd, int num_gpu, int gpu_milli)
{
  uint32_t mask = 0;
  for (int k = 0; k < num_gpu; k++) {
    int best = -1;
    for (int g = 0; g < nd->gpus; g++)
      if (!(mask & (UINT32_C(1) << g)) && nd->left[g] >= gpu_milli &&
          (best < 0 || nd->left[g] < nd->left[best]))
        best = g;
    if (best < 0)
      return 0;
    mask |= UINT32_C(1) << best;
  }
  return mask;
}

/* Recomputes the GPU summaries after a change to left[]. */
void gs__place_node_refresh(struct place_node *nd)
{
  nd->gpu_left_sum = nd->free_gpus = nd->max_left = 0;
  for (int g = 0; g < nd->gpus; g++) {
    nd->gpu_left_sum += nd->left[g];
    nd->free_gpus += nd->left[g] == GS_PLACE_MILLI;
    if (nd->left[g] > nd->max_left)
      nd->max_left = nd->left[g];
  }
}

void gs_place_commit(gs_place_cluster_t *c, const struct gs_place_request *r,
                     const struct gs_place_choice *ch)
{
  struct place_node *nd = &c->nodes[ch->node];
  nd->cpu_left -= r->cpu_milli;
  nd->mem_left -= r->mem_mib;
  for (int g = 0; g < nd->gpus; g++)
    if (ch->gpu_mask & (UINT32_C(1) << g)) {
      nd->left[g] = (int16_t) (nd->left[g] - r->gpu_milli);
      c->gpu_allocated += r->gpu_milli;
    }
  gs__place_node_refresh(nd);
  nd->version++;
  nd->frag = gs__place_fgd_frag(c, nd->model, nd->cpu_left, nd->left, nd->gpus);
}

/* The exact inverse of gs_place_commit: the node's summaries, its version (so cached scores
 * go stale) and its fragment are recomputed the same way, so a commit then a release leaves
 * the cluster as it was. */
void gs_place_release(gs_place_cluster_t *c, const struct gs_place_request *r,
                      const struct gs_place_choice *ch)
{
  struct place_node *nd = &c->nodes[ch->node];
  nd->cpu_left += r->cpu_milli;
  nd->mem_left += r->mem_mib;
  for (int g = 0; g < nd->gpus; g++)
    if (ch->gpu_mask & (UINT32_C(1) << g)) {
      nd->left[g] = (int16_t) (nd->left[g] + r->gpu_milli);
      c->gpu_allocated -= r->gpu_milli;
    }
  gs__place_node_refresh(nd);
  nd->version++;
  nd->frag = gs__place_fgd_frag(c, nd->model, nd->cpu_left, nd->left, nd->gpus);
}

void gs_place_stats(const gs_place_cluster_t *c, struct gs_place_stats *out)
{
  out->gpu_milli_capacity = c->gpu_capacity;
  out->gpu_milli_allocated = c->gpu_allocated;
  out->frag_milli = 0;
  for (size_t i = 0; i < c->n; i++)
    out->frag_milli += c->nodes[i].frag;
}

int gs_place_gpu_left(const gs_place_cluster_t *c, int node, int gpu)
{
  if (node < 0 || (size_t) node >= c->n || gpu < 0 || gpu >= c->nodes[node].gpus)
    return -1;
  return c->nodes[node].left[gpu];
}

int64_t gs_place_cpu_left(const gs_place_cluster_t *c, int node)
{
  if (node < 0 || (size_t) node >= c->n)
    return -1;
  return c->nodes[node].cpu_left;
}

void gs_place_set_tie_seed(gs_place_cluster_t *c, uint64_t seed)
{
  uint64_t s = seed ^ UINT64_C(0x7469652d6f726472); /* distinct from the replay's stream */
  for (size_t i = 0; i < c->n; i++)
    c->tie_order[i] = (int) i;
  for (size_t i = c->n - 1; i > 0; i--) {
    size_t j = (size_t) (gs__rng_next(&s) % (i + 1));
    int t = c->tie_order[i];
    c->tie_order[i] = c->tie_order[j];
    c->tie_order[j] = t;
  }
}
