/* Trace variants (gs-trace-variant.h): how the FGD paper's artifact derives its
 * sharing-heavy, GPU-spec-heavy and multi-GPU-heavy pod lists from the default trace,
 * measured on its published files (docs/placement.md) and rewritten here. Every draw comes
 * from one seeded stream, so a variant is a pure function of (base, variant, seed).
 * Reading and writing CSVs lives in trace-openb.c; nothing here does I/O. */
#include <gpuslice/trace-variant.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define MAX_DRAWS 64 /* tries for a GPU-spec constraint that fits the pod somewhere */

static const struct {
  const char *prefix;
  enum gs_variant_kind kind;
  int max;
} kinds[] = {
  { "gpushare", GS_VARIANT_GPUSHARE, 100 },
  { "gpuspec", GS_VARIANT_GPUSPEC, 100 },
  { "multigpu", GS_VARIANT_MULTIGPU, 99 },
};

int gs_trace_variant_parse(const char *name, struct gs_trace_variant *out, gs_error_t *err)
{
  for (size_t k = 0; name && k < sizeof(kinds) / sizeof(kinds[0]); k++) {
    size_t len = strlen(kinds[k].prefix);
    const char *d = name + len;
    if (strncmp(name, kinds[k].prefix, len) != 0 || !*d || strlen(d) > 3 ||
        strspn(d, "0123456789") != strlen(d))
      continue;
    int pct = atoi(d);
    if (pct > kinds[k].max)
      break;
    *out = (struct gs_trace_variant){ kinds[k].kind, pct };
    return 0;
  }
  return gs_make_error(err, 0,
                       "unknown trace variant '%s' (gpushareNN or gpuspecNN with NN 0..100, "
                       "multigpuNN with NN 0..99)",
                       name ? name : "");
}

static bool is_sharing(const struct gs_place_request *r)
{
  return r->num_gpu == 1 && r->gpu_milli < GS_PLACE_MILLI;
}

static int64_t gpu_request(const struct gs_place_request *r)
{
  return (int64_t) r->num_gpu * r->gpu_milli;
}

/* The list being built: pods copied from base, each with its own strings. */
struct builder {
  struct gs_openb_pods l;
  size_t cap;
  const struct gs_openb_pods *base;
};

static int add(struct builder *b, size_t from, gs_error_t *err)
{
  if (b->l.n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    struct gs_place_request *p = realloc(b->l.pods, cap * sizeof(*p));
    if (p)
      b->l.pods = p;
    int64_t *life = p ? realloc(b->l.life_s, cap * sizeof(*life)) : NULL;
    if (!life)
      return gs_make_error(err, ENOMEM, "trace variant of %zu pods", cap);
    b->l.life_s = life;
    b->cap = cap;
  }
  const struct gs_place_request *r = &b->base->pods[from];
  struct gs_place_request *d = &b->l.pods[b->l.n];
  *d = *r;
  d->name = strdup(r->name ? r->name : "");
  d->gpu_spec = r->gpu_spec ? strdup(r->gpu_spec) : NULL;
  b->l.life_s[b->l.n] = b->base->life_s ? b->base->life_s[from] : -1;
  b->l.n++; /* counted before the check so that release frees what was copied */
  if (!d->name || (r->gpu_spec && !d->gpu_spec))
    return gs_make_error(err, ENOMEM, "trace variant");
  return 0;
}

/* Indices of base's pods for which keep() holds. */
static size_t *select_pods(const struct gs_openb_pods *base,
                           bool (*keep)(const struct gs_place_request *), size_t *n)
{
  size_t *a = malloc((base->n + 1) * sizeof(*a));
  *n = 0;
  for (size_t i = 0; a && i < base->n; i++)
    if (keep(&base->pods[i]))
      a[(*n)++] = i;
  return a;
}

/* Adds k pods drawn from idx[0..n): a random subset when k <= n, else draws with
 * replacement, which is what the artifact's files show for each class of pod. */
static int draw(struct builder *b, size_t *idx, size_t n, size_t k, uint64_t *s, gs_error_t *err)
{
  if (k <= n) {
    for (size_t i = 0; i < k; i++) { /* a partial Fisher-Yates shuffle */
      size_t j = i + gs__rng_below(s, n - i), t = idx[i];
      idx[i] = idx[j];
      idx[j] = t;
      if (add(b, idx[i], err) < 0)
        return -1;
    }
    return 0;
  }
  for (size_t i = 0; i < k; i++)
    if (add(b, idx[gs__rng_below(s, n)], err) < 0)
      return -1;
  return 0;
}

static double mean_request(const struct gs_openb_pods *base, const size_t *idx, size_t n)
{
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += (double) gpu_request(&base->pods[idx[i]]);
  return n ? sum / (double) n : 0;
}

static bool cpu_only(const struct gs_place_request *r)
{
  return r->num_gpu == 0;
}

static bool whole_gpus(const struct gs_place_request *r)
{
  return r->num_gpu > 0 && !is_sharing(r);
}

static bool any_gpu(const struct gs_place_request *r)
{
  return r->num_gpu > 0;
}

static bool multi_gpu(const struct gs_place_request *r)
{
  return r->num_gpu > 1;
}

/* Renames the pods openb-pod-0000... after shuffling them, so that no name tells which
 * pod was drawn twice; the replay sorts by name and shuffles again with its own seed. */
static int rename_shuffled(struct builder *b, uint64_t *s, gs_error_t *err)
{
  for (size_t i = b->l.n; i > 1; i--) {
    size_t j = gs__rng_below(s, i);
    struct gs_place_request t = b->l.pods[i - 1];
    b->l.pods[i - 1] = b->l.pods[j];
    b->l.pods[j] = t;
    int64_t lt = b->l.life_s[i - 1];
    b->l.life_s[i - 1] = b->l.life_s[j];
    b->l.life_s[j] = lt;
  }
  for (size_t i = 0; i < b->l.n; i++) {
    char name[32];
    snprintf(name, sizeof(name), "openb-pod-%04zu", i);
    char *p = strdup(name);
    if (!p)
      return gs_make_error(err, ENOMEM, "trace variant");
    free((void *) (uintptr_t) b->l.pods[i].name);
    b->l.pods[i].name = p;
  }
  return 0;
}

/* gpushareNN: x whole-GPU pods and G − x sharing pods, G the base's GPU pods, with x
 * such that sharing pods ask for NN% of the GPU request at the classes' mean requests. */
static int make_gpushare(struct builder *b, int pct, uint64_t *s, gs_error_t *err)
{
  size_t n_cpu, n_share, n_whole;
  size_t *cpu = select_pods(b->base, cpu_only, &n_cpu);
  size_t *share = select_pods(b->base, is_sharing, &n_share);
  size_t *whole = select_pods(b->base, whole_gpus, &n_whole);
  int r = -1;
  if (!cpu || !share || !whole) {
    gs_make_error(err, ENOMEM, "trace variant");
    goto out;
  }
  if (n_share == 0 && pct > 0) {
    gs_make_error(err, 0, "gpushare%d: the pod list has no GPU-sharing pods to draw from", pct);
    goto out;
  }
  if (n_whole == 0 && pct < 100) {
    gs_make_error(err, 0, "gpushare%d: the pod list has no whole-GPU pods to draw from", pct);
    goto out;
  }
  double f = pct / 100.0, ms = mean_request(b->base, share, n_share) * (1 - f),
         mw = mean_request(b->base, whole, n_whole) * f;
  size_t g = n_share + n_whole;
  size_t x = ms + mw > 0 ? (size_t) ((double) g * ms / (ms + mw) + 0.5) : g;
  if (draw(b, cpu, n_cpu, n_cpu, s, err) < 0 || draw(b, whole, n_whole, x, s, err) < 0 ||
      draw(b, share, n_share, g - x, s, err) < 0)
    goto out;
  r = rename_shuffled(b, s, err);
out:
  free(cpu);
  free(share);
  free(whole);
  return r;
}

/* The GPU-model constraints of the artifact's gpuspec traces, by how often each occurs
 * there (its gpuspec33 file; a duplicated model in one spec merged). */
static const struct {
  const char *spec;
  int weight;
} spec_mix[] = {
  { "T4", 1291 },
  { "G2", 331 },
  { "P100", 279 },
  { "V100M16|V100M32", 163 },
  { "P100|V100M16|V100M32", 103 },
  { "G3", 86 },
  { "G2|P100|T4|V100M16|V100M32", 39 },
  { "P100|T4|V100M16|V100M32", 33 },
  { "A10|G2|T4|V100M16|V100M32", 24 },
  { "V100M32", 20 },
  { "A10|T4", 6 },
  { "P100|V100M16", 4 },
  { "A10|G2|P100|T4|V100M16|V100M32", 3 },
  { "T4|V100M16|V100M32", 3 },
  { "V100M16", 3 },
};

static const char *draw_spec(uint64_t *s)
{
  int total = 0;
  for (size_t i = 0; i < sizeof(spec_mix) / sizeof(spec_mix[0]); i++)
    total += spec_mix[i].weight;
  int k = (int) gs__rng_below(s, (size_t) total);
  for (size_t i = 0;; i++) {
    if (k < spec_mix[i].weight)
      return spec_mix[i].spec;
    k -= spec_mix[i].weight;
  }
}

/* Whether spec ("A|B") names the model of a node that could hold r alone. */
static bool spec_fits(const char *spec, const struct gs_openb_nodes *nodes,
                      const struct gs_place_request *r)
{
  for (size_t i = 0; i < nodes->n; i++) {
    const struct gs_place_node_spec *nd = &nodes->nodes[i];
    if (nd->gpus < r->num_gpu || nd->cpu_milli < r->cpu_milli || nd->mem_mib < r->mem_mib ||
        !nd->model || !*nd->model)
      continue;
    size_t len = strlen(nd->model);
    for (const char *p = spec; (p = strstr(p, nd->model)) != NULL; p += len)
      if ((p == spec || p[-1] == '|') && (p[len] == '|' || !p[len]))
        return true;
  }
  return false;
}

/* gpuspecNN: round(NN% of the GPU pods), chosen at random, get a constraint that fits. */
static int make_gpuspec(struct builder *b, const struct gs_openb_nodes *nodes, int pct, uint64_t *s,
                        gs_error_t *err)
{
  for (size_t i = 0; i < b->base->n; i++)
    if (add(b, i, err) < 0)
      return -1;
  size_t n_gpu;
  size_t *gpu = select_pods(b->base, any_gpu, &n_gpu);
  if (!gpu)
    return gs_make_error(err, ENOMEM, "trace variant");
  size_t k = (size_t) ((double) n_gpu * pct / 100.0 + 0.5);
  for (size_t i = 0; i < k; i++) {
    size_t j = i + gs__rng_below(s, n_gpu - i), t = gpu[i];
    gpu[i] = gpu[j];
    gpu[j] = t;
    struct gs_place_request *r = &b->l.pods[gpu[i]];
    for (int tries = 0; tries < MAX_DRAWS; tries++) {
      const char *spec = draw_spec(s);
      if (!spec_fits(spec, nodes, r))
        continue;
      char *p = strdup(spec);
      if (!p) {
        free(gpu);
        return gs_make_error(err, ENOMEM, "trace variant");
      }
      free((void *) (uintptr_t) r->gpu_spec);
      r->gpu_spec = p;
      break;
    }
  }
  free(gpu);
  return 0;
}

/* multigpuNN: the base, then multi-GPU pods drawn with replacement until they ask for
 * NN% of the GPU request; the new pods are named on from the base's count. */
static int make_multigpu(struct builder *b, int pct, uint64_t *s, gs_error_t *err)
{
  size_t n_multi;
  size_t *multi = select_pods(b->base, multi_gpu, &n_multi);
  if (!multi)
    return gs_make_error(err, ENOMEM, "trace variant");
  int r = 0;
  int64_t total = 0, part = 0;
  for (size_t i = 0; i < b->base->n && r == 0; i++) {
    total += gpu_request(&b->base->pods[i]);
    part += multi_gpu(&b->base->pods[i]) ? gpu_request(&b->base->pods[i]) : 0;
    r = add(b, i, err);
  }
  if (r == 0 && n_multi == 0 && pct > 0)
    r = gs_make_error(err, 0, "multigpu%d: the pod list has no multi-GPU pods to draw from", pct);
  while (r == 0 && part * 100 < (int64_t) pct * total) {
    size_t from = multi[gs__rng_below(s, n_multi)];
    if ((r = add(b, from, err)) < 0)
      break;
    char name[32];
    snprintf(name, sizeof(name), "openb-pod-%04zu", b->l.n - 1);
    char *p = strdup(name);
    if (!p)
      r = gs_make_error(err, ENOMEM, "trace variant");
    else {
      free((void *) (uintptr_t) b->l.pods[b->l.n - 1].name);
      b->l.pods[b->l.n - 1].name = p;
    }
    total += gpu_request(&b->base->pods[from]);
    part += gpu_request(&b->base->pods[from]);
  }
  free(multi);
  return r;
}

int gs_trace_variant_make(const struct gs_openb_pods *base, const struct gs_openb_nodes *nodes,
                          const struct gs_trace_variant *v, uint64_t seed,
                          struct gs_openb_pods *out, gs_error_t *err)
{
  struct builder b = { .base = base };
  uint64_t s = seed ^ UINT64_C(0x76617269616e7473); /* distinct from the replay's stream */
  int r;
  if (base->n == 0)
    return gs_make_error(err, 0, "trace variant: no pods to derive it from");
  switch (v->kind) {
  case GS_VARIANT_GPUSHARE: r = make_gpushare(&b, v->percent, &s, err); break;
  case GS_VARIANT_GPUSPEC: r = make_gpuspec(&b, nodes, v->percent, &s, err); break;
  case GS_VARIANT_MULTIGPU: r = make_multigpu(&b, v->percent, &s, err); break;
  default: r = gs_make_error(err, 0, "trace variant: unknown kind %d", (int) v->kind);
  }
  if (r < 0) {
    gs_openb_pods_release(&b.l);
    return -1;
  }
  *out = b.l;
  return 0;
}
