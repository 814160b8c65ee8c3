/* Placement: choosing a node (and the GPUs on it) for each request in a cluster of
 * GPU nodes, with pluggable policies: first-fit, best-fit, gpu-packing, FGD
 * (fragmentation gradient descent, Weng et al., ATC'23) and fgd-mem (FGD that also counts
 * memory in the fragment; docs/placement.md).
 *
 * The cluster is a plain in-memory model: no I/O, no clocks, libc only, because the core
 * library is also linked into the interposer. Reading traces lives in gs-trace-openb.h;
 * printing lives in the CLI (`gpuslice pack`). Queues with quotas, priority, preemption
 * and gangs are a layer on top: gs-place-queue.h. */
#ifndef GS_PLACE_H
#define GS_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include <gpuslice/error.h>

#define GS_PLACE_MAX_GPUS 16   /* GPUs per node */
#define GS_PLACE_MAX_MODELS 32 /* distinct GPU models per cluster: one bit each in a mask */
#define GS_PLACE_MILLI 1000    /* one whole GPU, in GPU-milli */
#define GS_PLACE_ANY_MODEL UINT32_MAX

struct gs_place_node_spec {
  const char *name;
  int64_t cpu_milli;
  int64_t mem_mib;
  int gpus;          /* 0..GS_PLACE_MAX_GPUS */
  const char *model; /* GPU model, e.g. "V100M16"; may be "" for a CPU-only node */
};

struct gs_place_request {
  const char *name; /* for messages only; may be NULL */
  int64_t cpu_milli;
  int64_t mem_mib;
  int num_gpu;          /* 0..GS_PLACE_MAX_GPUS */
  int gpu_milli;        /* per GPU: 1..1000 when num_gpu > 0, else 0 */
  const char *gpu_spec; /* allowed models, "A|B"; NULL or "" for any */
  uint32_t model_mask;  /* gpu_spec bound to a cluster by gs_place_model_mask() */
  /* Read by the scheduler layer (gs-place-queue.h); the policies ignore them. labels is
   * not read yet. */
  const char *queue;
  int priority;
  const char *const *labels; /* NULL-terminated "key=value" strings, or NULL */
};

enum gs_place_policy {
  GS_PLACE_FIRST_FIT,
  GS_PLACE_BEST_FIT,
  GS_PLACE_GPU_PACKING,
  GS_PLACE_FGD,
  /* FGD whose fragment also counts memory, with ties broken toward packing where that is
   * safe: CPU-only requests onto nodes with the least idle GPU, a sharing request onto the
   * tightest of its node's equally scored GPUs (docs/placement.md). */
  GS_PLACE_FGD_MEM,
  /* fgd-mem whose sharing requests go by FGD's score first, the tightest GPU breaking its
   * ties, instead of by the tightest GPU first: what sharing-heavy traces need
   * (docs/placement.md). */
  GS_PLACE_FGD_MEM_TIE,
};

struct gs_place_choice {
  int node;          /* index into the node specs given to gs_place_cluster_new */
  uint32_t gpu_mask; /* the GPUs of that node that get gpu_milli each */
  int score;         /* the policy's score for this node (0 for first-fit) */
};

struct gs_place_stats {
  int64_t gpu_milli_capacity;
  int64_t gpu_milli_allocated;
  double frag_milli; /* idle GPU-milli that the workload's typical requests cannot use */
};

typedef struct gs_place_cluster gs_place_cluster_t;

/* Returns 0 and the policy for "first-fit", "best-fit", "gpu-packing", "fgd", "fgd-mem" or
 * "fgd-mem-tie"; -1 else. */
int gs_place_policy_from_name(const char *name, enum gs_place_policy *out);
const char *gs_place_policy_name(enum gs_place_policy p);

/* A cluster of empty nodes. Copies what it needs from nodes. NULL and *err on failure
 * (no nodes, a node with too many GPUs, too many models, no memory). */
gs_place_cluster_t *gs_place_cluster_new(const struct gs_place_node_spec *nodes, size_t n,
                                         gs_error_t *err);
void gs_place_cluster_free(gs_place_cluster_t *c);
size_t gs_place_cluster_size(const gs_place_cluster_t *c);

/* The mask of this cluster's models named in spec ("A|B"); GS_PLACE_ANY_MODEL for NULL or
 * "". Names the cluster lacks add nothing, so a mask of 0 fits nowhere. */
uint32_t gs_place_model_mask(const gs_place_cluster_t *c, const char *spec);

/* FGD's target workload: the requests' shapes, grouped and weighted by popularity, the most
 * common kept until they cover `coverage` (0..1] of the requests. Each request's model_mask
 * must already be bound. Also defines what gs_place_stats counts as fragment. */
int gs_place_set_workload(gs_place_cluster_t *c, const struct gs_place_request *reqs, size_t n,
                          double coverage, gs_error_t *err);

/* Ties between equally scored nodes go to the earliest node in an order shuffled by seed.
 * Without a call the order is the nodes' own. */
void gs_place_set_tie_seed(gs_place_cluster_t *c, uint64_t seed);

/* Chooses a node for r without changing the cluster. Returns 1 and fills *out, or 0 when
 * the request fits nowhere. r->model_mask must be bound to this cluster. */
int gs_place_decide(gs_place_cluster_t *c, enum gs_place_policy p, const struct gs_place_request *r,
                    struct gs_place_choice *out);
/* Takes r's resources on the chosen node. The choice must come from gs_place_decide on the
 * cluster's current state. */
void gs_place_commit(gs_place_cluster_t *c, const struct gs_place_request *r,
                     const struct gs_place_choice *ch);

void gs_place_stats(const gs_place_cluster_t *c, struct gs_place_stats *out);
/* Idle GPU-milli of one GPU, for tests and reports; -1 when out of range. */
int gs_place_gpu_left(const gs_place_cluster_t *c, int node, int gpu);
int64_t gs_place_cpu_left(const gs_place_cluster_t *c, int node);

/* The paper's evaluation: sort pods by name, shuffle with seed, append pods sampled with
 * replacement until the next one would take the arrived GPU request past inflate x capacity
 * (or keep a shuffled prefix when the trace is already over it), and place them one by
 * one with no departures. */
struct gs_place_replay_opts {
  enum gs_place_policy policy;
  double inflate; /* > 0; the paper uses 1.3 */
  uint64_t seed;
  double coverage; /* FGD's typical-pod coverage; 0 means the paper's 0.95 */
};

struct gs_place_replay_result {
  double gpu_alloc_ratio; /* allocated GPU-milli / capacity at the end */
  double frag_ratio;      /* fragment GPU-milli / idle GPU-milli at the end (0 if none idle) */
  size_t pods_placed;
  size_t pods_failed;
  size_t decisions; /* pods_placed + pods_failed */
};

/* The pods' model_mask fields are ignored: the replay binds gpu_spec itself. */
int gs_place_replay(const struct gs_place_node_spec *nodes, size_t n_nodes,
                    const struct gs_place_request *pods, size_t n_pods,
                    const struct gs_place_replay_opts *opts, struct gs_place_replay_result *out,
                    gs_error_t *err);

/* The replay with departures (`gpuslice pack --departures`, docs/placement.md): arrivals
 * made as gs_place_replay makes them but to 3 × inflate × capacity, one per time step,
 * each pod leaving after its lifetime.
 * A lifetime is life_s[i] (seconds; the trace's deletion − creation) where >= 0, else
 * drawn from an exponential distribution with the mean of the known ones (1 if none
 * is known; life_s may be NULL). Lifetimes are scaled to time steps so that the pods that
 * would still run at the last arrival, were there room for all, ask for opts->inflate ×
 * capacity: the replay's "arrived load" with departures. */
struct gs_place_churn_result {
  double gpu_alloc_ratio;  /* allocated / capacity after the last arrival */
  double mean_alloc_ratio; /* mean allocated / capacity at each arrival of the second half */
  double frag_ratio;       /* fragment / idle GPU-milli after the last arrival */
  double failed_share;     /* pods that fit nowhere / arrivals, in the second half */
  double life_known;       /* share of arrivals whose lifetime came from the trace */
  size_t pods_placed, pods_failed, departures, decisions;
};

int gs_place_replay_churn(const struct gs_place_node_spec *nodes, size_t n_nodes,
                          const struct gs_place_request *pods, const int64_t *life_s, size_t n_pods,
                          const struct gs_place_replay_opts *opts,
                          struct gs_place_churn_result *out, gs_error_t *err);

/* Gives back what gs_place_commit took for r on ch's node: r and ch must be those of an
 * earlier commit on this cluster that has not been released yet. */
void gs_place_release(gs_place_cluster_t *c, const struct gs_place_request *r,
                      const struct gs_place_choice *ch);

/* Node by node (place-node.c): for a scheduler that asks about each node itself, as
 * kube-scheduler's Filter and Score do, instead of one gs_place_decide over the cluster.
 * Each answers for the cluster as it is now. */

/* Returns 1 when r fits node (CPU, memory, the GPU model and a GPU share on each of r's
 * GPUs, as gs_place_decide counts them), 0 when it does not, -1 when node is out of range.
 * With 0 and buf, writes why in one line ("no GPU has 500 milli idle: the most is 375"). */
int gs_place_node_fits(const gs_place_cluster_t *c, int node, const struct gs_place_request *r,
                       char *buf, size_t len);

/* The policy's score of node for r (higher is better; the score gs_place_decide compares)
 * and the GPUs r would take there. Returns 1 and fills *out, 0 when r does not fit node.
 * Scoring many nodes for one request: call gs_place_node_prepare once first. */
void gs_place_node_prepare(gs_place_cluster_t *c, enum gs_place_policy p,
                           const struct gs_place_request *r);
int gs_place_node_score(gs_place_cluster_t *c, enum gs_place_policy p, int node,
                        const struct gs_place_request *r, struct gs_place_choice *out);

/* Where node stands in the tie order (0: first), so a caller breaking ties itself breaks
 * them as gs_place_decide; -1 when out of range. */
int gs_place_node_tie_rank(const gs_place_cluster_t *c, int node);

/* Takes gpu_milli on each GPU of mask on node, as gs_place_commit, for work the caller
 * found already running there (a pod bound before the scheduler started). Returns 0, or -1
 * when it would not fit (the cluster unchanged). */
int gs_place_node_take(gs_place_cluster_t *c, const struct gs_place_request *r,
                       const struct gs_place_choice *ch);

/* The replay's arrival order (place-arrivals.c), for a replay run elsewhere (the Kubernetes
 * replay submits these pods as Pods, in this order): what gs_place_replay places with the
 * same pods, seed and inflate over a cluster of gpu_capacity_milli. *order is malloc'd,
 * indices into pods. Returns 0, or -1 and *err. */
int gs_place_replay_arrivals(const struct gs_place_request *pods, size_t n_pods,
                             int64_t gpu_capacity_milli, double inflate, uint64_t seed,
                             size_t **order, size_t *n_order, gs_error_t *err);

#endif
