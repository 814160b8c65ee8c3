/* FGD, fragmentation gradient descent (Weng et al., "Beware of Fragmentation", ATC'23):
 * place each request where it grows the cluster's GPU fragmentation the least.
 *
 * F_n(M), the fragment of node n for the target workload M, is Σ_m p_m·F_n(m): for a
 * typical request m that cannot run on n (wrong model, not enough CPU, not enough GPUs
 * that hold its per-GPU share) every idle GPU-milli of n is fragment; otherwise only the
 * idle milli on GPUs too small for m is. CPU-only typical requests count all of a node's
 * idle GPU as fragment, as the reference simulator does (memory plays no part in F).
 * The score is sigmoid((F_before − F_after)/1000)·100, truncated, as in the reference.
 *
 * Speed: each node caches its own F_n, updated on commit, and its score per request shape,
 * valid until the node next changes; a sharing request is scored once per distinct
 * leftover on the node rather than once per GPU, since equal leftovers score the same. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place-internal.h"

double gs__place_fgd_frag(const gs_place_cluster_t *c, int model, int64_t cpu_left,
                          const int16_t *left, int gpus)
{
  int total = 0;
  for (int g = 0; g < gpus; g++)
    total += left[g];
  if (total == 0)
    return 0;
  double f = 0;
  for (size_t k = 0; k < c->n_typical; k++) {
    const struct place_typical *m = &c->typical[k];
    int frag = total;
    if (m->num_gpu > 0 && model >= 0 && (m->model_mask & (UINT32_C(1) << model)) &&
        cpu_left >= m->cpu_milli) {
      int fit = 0, small = 0;
      for (int g = 0; g < gpus; g++) {
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

/* logit(k/100) for k = 1..99: sigmoid(x)·100 truncates to the number of these that x
 * reaches, which spares the core library a dependency on libm's exp(). */
static const double logit_pct[99] = {
  -4.5951198501345898,  -3.8918202981106269,
  -3.4760986898352733,  -3.1780538303479458,
  -2.9444389791664407,  -2.7515353130419489,
  -2.5866893440979424,  -2.4423470353692043,
  -2.3136349291806306,  -2.1972245773362196,
  -2.0907410969337694,  -1.9924301646902063,
  -1.900958761193047,   -1.8152899666382492,
  -1.7346010553881064,  -1.6582280766035324,
  -1.5856272637403819,  -1.5163474893680884,
  -1.4500101755059984,  -1.3862943611198906,
  -1.3249254147435987,  -1.2656663733312759,
  -1.2083112059245342,  -1.1526795099383855,
  -1.0986122886681098,  -1.0459685551826876,
  -0.99462257514406216, -0.9444616088408514,
  -0.89538404705484131, -0.84729786038720367,
  -0.80011930011211319, -0.7537718023763802,
  -0.70818505792448583, -0.66329421741026418,
  -0.61903920840622351, -0.5753641449035618,
  -0.53221681374730823, -0.48954822531870579,
  -0.44731221804366478, -0.40546510810816444,
  -0.36396537720141159, -0.32277339226305102,
  -0.28185115214098772, -0.2411620568168881,
  -0.20067069546215111, -0.16034265007517937,
  -0.12014431184206321, -0.08004270767353637,
  -0.04000533461369913, 0,
  0.040005334613699206, 0.080042707673536356,
  0.12014431184206321,  0.16034265007517948,
  0.20067069546215124,  0.24116205681688804,
  0.28185115214098766,  0.32277339226305102,
  0.36396537720141159,  0.40546510810816438,
  0.44731221804366483,  0.48954822531870579,
  0.53221681374730823,  0.5753641449035618,
  0.61903920840622351,  0.66329421741026418,
  0.70818505792448583,  0.7537718023763802,
  0.80011930011211307,  0.84729786038720367,
  0.89538404705484131,  0.94446160884085151,
  0.99462257514406205,  1.0459685551826878,
  1.0986122886681098,   1.1526795099383853,
  1.2083112059245342,   1.2656663733312759,
  1.3249254147435985,   1.3862943611198906,
  1.4500101755059984,   1.5163474893680884,
  1.5856272637403819,   1.6582280766035324,
  1.7346010553881064,   1.8152899666382492,
  1.900958761193047,    1.9924301646902061,
  2.0907410969337694,   2.1972245773362196,
  2.3136349291806306,   2.4423470353692043,
  2.5866893440979428,   2.7515353130419489,
  2.9444389791664403,   3.1780538303479458,
  3.4760986898352733,   3.8918202981106265,
  4.5951198501345898,
};

int gs__place_fgd_sigmoid_score(double frag_before, double frag_after)
{
  double x = (frag_before - frag_after) / 1000.0;
  if (x > 36.7) /* 1 + exp(-x) rounds to 1 in double precision */
    return 100;
  int lo = 0, hi = 99; /* count of thresholds <= x, by bisection */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (logit_pct[mid] <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static double frag_after(const gs_place_cluster_t *c, const struct place_node *nd,
                         const struct gs_place_request *r, uint32_t mask)
{
  int16_t left[GS_PLACE_MAX_GPUS];
  memcpy(left, nd->left, sizeof(left));
  for (int g = 0; g < nd->gpus; g++)
    if (mask & (UINT32_C(1) << g))
      left[g] = (int16_t) (left[g] - r->gpu_milli);
  return gs__place_fgd_frag(c, nd->model, nd->cpu_left - r->cpu_milli, left, nd->gpus);
}

/* A sharing request: score each GPU that holds it and keep the first best. */
static int score_sharing(const gs_place_cluster_t *c, const struct place_node *nd,
                         const struct gs_place_request *r, int *gpu)
{
  int best = -1;
  *gpu = -1;
  for (int g = 0; g < nd->gpus; g++) {
    if (nd->left[g] < r->gpu_milli)
      continue;
    bool seen = false;
    for (int h = 0; h < g && !seen; h++)
      seen = nd->left[h] == nd->left[g];
    if (seen) /* an equal leftover earlier scored the same and wins the tie */
      continue;
    int s = gs__place_fgd_sigmoid_score(nd->frag, frag_after(c, nd, r, UINT32_C(1) << g));
    if (*gpu < 0 || s > best) {
      best = s;
      *gpu = g;
    }
  }
  return best;
}

static int score_uncached(const gs_place_cluster_t *c, const struct place_node *nd,
                          const struct gs_place_request *r, int *gpu)
{
  if (gs__place_is_sharing(r))
    return score_sharing(c, nd, r, gpu);
  *gpu = -1;
  uint32_t mask = r->num_gpu ? gs__place_pick_tightest(nd, r->num_gpu, r->gpu_milli) : 0;
  return gs__place_fgd_sigmoid_score(nd->frag, frag_after(c, nd, r, mask));
}

/* The cache column for r's shape, created on first use; NULL when there are too many
 * shapes or no memory, and scoring then goes uncached. */
static struct place_shape *shape_for(gs_place_cluster_t *c, const struct gs_place_request *r)
{
  for (size_t i = c->n_shapes; i-- > 0;) {
    struct place_shape *s = &c->shapes[i];
    if (s->cpu_milli == r->cpu_milli && s->num_gpu == r->num_gpu && s->gpu_milli == r->gpu_milli)
      return s;
  }
  void *shapes = c->shapes;
  struct place_cache_entry *e = gs__place_shape_room(c, &shapes, c->n_shapes, sizeof(*c->shapes));
  c->shapes = shapes;
  if (!e)
    return NULL;
  struct place_shape *s = &c->shapes[c->n_shapes++];
  *s = (struct place_shape){ r->cpu_milli, r->num_gpu, r->gpu_milli, e };
  return s;
}

void gs__place_fgd_prepare(gs_place_cluster_t *c, const struct gs_place_request *r)
{
  c->cur_shape = shape_for(c, r);
}

int gs__place_fgd_score(gs_place_cluster_t *c, int node, const struct gs_place_request *r, int *gpu)
{
  const struct place_node *nd = &c->nodes[node];
  struct place_cache_entry *e = c->cur_shape ? &c->cur_shape->entries[node] : NULL;
  if (e && e->version == nd->version) {
    *gpu = e->gpu;
    return e->score;
  }
  int s = score_uncached(c, nd, r, gpu);
  if (e)
    *e = (struct place_cache_entry){ nd->version, (int16_t) s, (int16_t) *gpu };
  return s;
}

struct shape_count {
  struct place_typical t;
  size_t count;
};

static int cmp_shape(const void *a, const void *b)
{
  const struct place_typical *x = &((const struct shape_count *) a)->t;
  const struct place_typical *y = &((const struct shape_count *) b)->t;
  if (x->cpu_milli != y->cpu_milli)
    return x->cpu_milli < y->cpu_milli ? -1 : 1;
  if (x->gpu_milli != y->gpu_milli)
    return x->gpu_milli < y->gpu_milli ? -1 : 1;
  if (x->num_gpu != y->num_gpu)
    return x->num_gpu < y->num_gpu ? -1 : 1;
  if (x->model_mask != y->model_mask)
    return x->model_mask < y->model_mask ? -1 : 1;
  return 0;
}

/* Most popular first; among equals, the reference's reversed order (larger shapes first). */
static int cmp_popularity(const void *a, const void *b)
{
  const struct shape_count *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return -cmp_shape(a, b);
}

/* Groups reqs into distinct shapes, counted. Returns the number of groups. */
static size_t group_shapes(struct shape_count *sc, const struct gs_place_request *reqs, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    const struct gs_place_request *r = &reqs[i];
    sc[i] =
      (struct shape_count){ { r->cpu_milli, r->num_gpu, r->num_gpu ? r->gpu_milli : 0,
                              r->num_gpu ? r->model_mask : GS_PLACE_ANY_MODEL, 0, r->mem_mib },
                            1 };
  }
  qsort(sc, n, sizeof(*sc), cmp_shape);
  size_t groups = 0;
  for (size_t i = 0; i < n; i++) {
    if (groups > 0 && cmp_shape(&sc[groups - 1], &sc[i]) == 0) {
      struct place_typical *t = &sc[groups - 1].t;
      sc[groups - 1].count++;
      if (sc[i].t.mem_mib < t->mem_mib)
        t->mem_mib = sc[i].t.mem_mib;
    } else {
      sc[groups++] = sc[i];
    }
  }
  return groups;
}

static void refresh_all(gs_place_cluster_t *c)
{
  for (size_t i = 0; i < c->n; i++) {
    struct place_node *nd = &c->nodes[i];
    nd->version++; /* cached scores were for the old workload */
    nd->frag = gs__place_fgd_frag(c, nd->model, nd->cpu_left, nd->left, nd->gpus);
  }
}

int gs_place_set_workload(gs_place_cluster_t *c, const struct gs_place_request *reqs, size_t n,
                          double coverage, gs_error_t *err)
{
  if (n == 0)
    return gs_make_error(err, 0, "FGD's workload needs at least one request");
  if (!(coverage > 0 && coverage <= 1))
    return gs_make_error(err, 0, "typical-request coverage %g is not in (0, 1]", coverage);
  struct shape_count *sc = malloc(n * sizeof(*sc));
  if (!sc)
    return gs_make_error(err, ENOMEM, "FGD workload of %zu requests", n);
  size_t groups = group_shapes(sc, reqs, n);
  qsort(sc, groups, sizeof(*sc), cmp_popularity);
  size_t kept = 0, covered = 0;
  while (kept < groups && (double) covered < coverage * (double) n)
    covered += sc[kept++].count;
  struct place_typical *t = malloc(kept * sizeof(*t));
  if (!t) {
    free(sc);
    return gs_make_error(err, ENOMEM, "FGD workload of %zu shapes", kept);
  }
  for (size_t i = 0; i < kept; i++) {
    t[i] = sc[i].t;
    t[i].p = (double) sc[i].count / (double) covered; /* renormalised over what is kept */
  }
  free(sc);
  free(c->typical);
  c->typical = t;
  c->n_typical = kept;
  refresh_all(c);
  return 0;
}
