/* The replay with departures (gs-place.h, gs_place_replay_churn): the paper's replay has
 * none, but a real cluster frees what finished pods held, and a policy that packs well
 * once may fragment what is freed. Arrivals are gs_place_replay's; pod k arrives at time
 * k and leaves at k + its lifetime in steps. A binary heap holds the running pods by end
 * time; everything that ends by an arrival's time is released before it is placed.
 * The arrivals are the paper's inflation taken to ARRIVAL_FACTOR × inflate × capacity (the
 * trace, shuffled, then pods drawn with replacement), since with departures the arrived
 * request no longer is what runs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place-internal.h"
#include "rng.h"

#define DEFAULT_COVERAGE 0.95
/* Arrivals ask for this many times the load that should be running at the end, so that
 * about two thirds of what arrives has left by then. */
#define ARRIVAL_FACTOR 3

struct running {
  double end;
  size_t pod; /* index into the bound pods */
  struct gs_place_choice ch;
};

struct heap {
  struct running *a;
  size_t n;
};

static void heap_swap(struct heap *h, size_t i, size_t j)
{
  struct running t = h->a[i];
  h->a[i] = h->a[j];
  h->a[j] = t;
}

static void heap_push(struct heap *h, struct running r)
{
  size_t i = h->n++;
  h->a[i] = r;
  while (i > 0 && h->a[(i - 1) / 2].end > h->a[i].end) {
    heap_swap(h, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static struct running heap_pop(struct heap *h)
{
  struct running top = h->a[0];
  h->a[0] = h->a[--h->n];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && h->a[l].end < h->a[m].end)
      m = l;
    if (r < h->n && h->a[r].end < h->a[m].end)
      m = r;
    if (m == i)
      break;
    heap_swap(h, i, m);
    i = m;
  }
  return top;
}

/* ln(x) for x > 0 without libm, which the core library does not link: x = m·2^e with m
 * in [1, 2), and ln(m) = 2·atanh((m − 1)/(m + 1)) by its series (|z| <= 1/3, so 30 terms
 * are far below double precision). */
static double ln(double x)
{
  int e = 0;
  while (x >= 2) {
    x /= 2;
    e++;
  }
  while (x < 1) {
    x *= 2;
    e--;
  }
  double z = (x - 1) / (x + 1), z2 = z * z, term = z, sum = 0;
  for (int k = 1; k < 60; k += 2) {
    sum += term / k;
    term *= z2;
  }
  return 2 * sum + e * 0.69314718055994530942;
}

/* An exponential draw with the given mean, by inversion. */
static double draw_exp(uint64_t *s, double mean)
{
  double u = ((double) (gs__rng_next(s) >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
  return -mean * ln(u);
}

/* Lifetimes, in seconds, of the arrivals: the trace's where known, else drawn. */
static double *lifetimes(const int64_t *life_s, size_t n_pods, const size_t *order, size_t n,
                         uint64_t seed, double *known_share)
{
  double *life = malloc((n + 1) * sizeof(*life)), sum = 0;
  size_t known = 0, in_trace = 0;
  if (!life)
    return NULL;
  for (size_t i = 0; life_s && i < n_pods; i++)
    if (life_s[i] >= 0) {
      sum += (double) life_s[i];
      in_trace++;
    }
  double mean = in_trace && sum > 0 ? sum / (double) in_trace : 1;
  uint64_t s = seed ^ UINT64_C(0x6c69666574696d65);
  for (size_t k = 0; k < n; k++) {
    int64_t l = life_s ? life_s[order[k]] : -1;
    known += l >= 0;
    life[k] = l >= 0 ? (double) l : draw_exp(&s, mean);
  }
  *known_share = n ? (double) known / (double) n : 0;
  return life;
}

static double alloc_ratio(const gs_place_cluster_t *c)
{
  return c->gpu_capacity ? (double) c->gpu_allocated / (double) c->gpu_capacity : 0;
}

/* Arrival k at time k: release what ended, then place. Fills out's counters. */
static void run(gs_place_cluster_t *c, const struct gs_place_request *pods, const size_t *order,
                const double *life, size_t n, double step, enum gs_place_policy p, struct heap *h,
                struct gs_place_churn_result *out)
{
  size_t half = n / 2, failed_late = 0;
  double alloc_sum = 0;
  for (size_t k = 0; k < n; k++) {
    while (h->n > 0 && h->a[0].end <= (double) k) {
      struct running r = heap_pop(h);
      gs_place_release(c, &pods[r.pod], &r.ch);
      out->departures++;
    }
    const struct gs_place_request *r = &pods[order[k]];
    struct gs_place_choice ch;
    if (gs_place_decide(c, p, r, &ch)) {
      gs_place_commit(c, r, &ch);
      heap_push(h, (struct running){ (double) k + life[k] / step, order[k], ch });
      out->pods_placed++;
    } else {
      out->pods_failed++;
      failed_late += k >= half;
    }
    if (k >= half)
      alloc_sum += alloc_ratio(c);
  }
  out->decisions = n;
  out->mean_alloc_ratio = n > half ? alloc_sum / (double) (n - half) : 0;
  out->failed_share = n > half ? (double) failed_late / (double) (n - half) : 0;
  out->gpu_alloc_ratio = alloc_ratio(c);
  struct gs_place_stats st;
  gs_place_stats(c, &st);
  int64_t idle = st.gpu_milli_capacity - st.gpu_milli_allocated;
  out->frag_ratio = idle > 0 ? st.frag_milli / (double) idle : 0;
}

/* The GPU request of the arrivals that would still run at the last arrival, were there
 * room for all, with a time step of step seconds. */
static double alive_at_end(const struct gs_place_request *pods, const size_t *order,
                           const double *life, size_t n, double step)
{
  double sum = 0;
  for (size_t k = 0; k < n; k++)
    if ((double) k + life[k] / step > (double) (n - 1))
      sum += (double) pods[order[k]].num_gpu * pods[order[k]].gpu_milli;
  return sum;
}

/* Seconds of lifetime per time step, chosen so that the pods still running at the last
 * arrival, were there room for all, ask for load GPU-milli: the paper's "arrived load"
 * with departures. Lifetimes are heavy-tailed (minutes to months), so a load from mean
 * lifetimes (Little's law) is never reached within one replay. Bisection on a log scale:
 * the request alive at the end only falls as the step grows. */
static double time_step(const struct gs_place_request *pods, const size_t *order,
                        const double *life, size_t n, double load)
{
  double lo = 1e-9, hi = 1e15;
  for (int i = 0; i < 200 && hi / lo > 1 + 1e-9; i++) {
    double mid = __builtin_sqrt(lo * hi);
    if (alive_at_end(pods, order, life, n, mid) > load)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

int gs_place_replay_churn(const struct gs_place_node_spec *nodes, size_t n_nodes,
                          const struct gs_place_request *pods, const int64_t *life_s, size_t n_pods,
                          const struct gs_place_replay_opts *opts,
                          struct gs_place_churn_result *out, gs_error_t *err)
{
  gs_place_cluster_t *c = gs__place_replay_cluster(nodes, n_nodes, n_pods, opts, err);
  if (!c)
    return -1;
  int ret = -1;
  size_t n = 0, *order = NULL;
  double *life = NULL;
  struct heap h = { 0 };
  struct gs_place_request *bound = gs__place_bind_pods(c, pods, n_pods);
  if (!bound) {
    gs_make_error(err, ENOMEM, "replay of %zu pods", n_pods);
    goto out;
  }
  if (gs_place_set_workload(c, bound, n_pods,
                            opts->coverage > 0 ? opts->coverage : DEFAULT_COVERAGE, err) < 0)
    goto out;
  gs_place_set_tie_seed(c, opts->seed);
  int64_t target = (int64_t) (opts->inflate * (double) c->gpu_capacity);
  memset(out, 0, sizeof(*out));
  order = gs__place_arrivals(bound, n_pods, target * ARRIVAL_FACTOR, opts->seed, &n);
  life = order ? lifetimes(life_s, n_pods, order, n, opts->seed, &out->life_known) : NULL;
  h.a = malloc((n + 1) * sizeof(*h.a));
  if (!order || !life || !h.a) {
    gs_make_error(err, ENOMEM, "replay arrivals");
    goto out;
  }
  double step = time_step(bound, order, life, n, (double) target);
  run(c, bound, order, life, n, step, opts->policy, &h, out);
  ret = 0;
out:
  free(h.a);
  free(life);
  free(order);
  free(bound);
  gs_place_cluster_free(c);
  return ret;
}
