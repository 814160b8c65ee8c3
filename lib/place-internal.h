/* Internal state of the placement model, shared by place-*.c only. A node keeps per-node
 * summaries (idle GPU-milli, fully idle GPUs, the largest leftover) that commits update
 * incrementally, so that checking whether a request fits is a few comparisons. */
#ifndef GS_PLACE_INTERNAL_H
#define GS_PLACE_INTERNAL_H

#include <stdbool.h>

#include <gpuslice/place.h>

struct place_node {
  int64_t cpu_left, mem_left;
  int64_t cpu_cap;
  int gpus;
  int model;        /* index into the cluster's models; -1 when the node has no GPUs */
  int gpu_left_sum; /* idle GPU-milli on the node */
  int free_gpus;    /* GPUs with all GPU_MILLI idle */
  int max_left;     /* the largest leftover on one GPU */
  uint32_t version; /* bumped on every commit: invalidates cached scores */
  double frag;      /* F_n(M), FGD's fragment measure of the node as it is now */
  int16_t left[GS_PLACE_MAX_GPUS];
};

/* One typical shape of FGD's target workload, with its popularity. */
struct place_typical {
  int64_t cpu_milli;
  int num_gpu, gpu_milli;
  uint32_t model_mask;
  double p;
  int64_t mem_mib; /* the least memory a request of this shape asked for; FGD ignores it */
};

/* A node's FGD score for one request shape, valid while node->version == version. */
struct place_cache_entry {
  uint32_t version;
  int16_t score;
  int16_t gpu; /* the GPU chosen for a sharing request, -1 otherwise */
};

struct place_shape {
  int64_t cpu_milli;
  int num_gpu, gpu_milli;
  struct place_cache_entry *entries; /* one per node */
};

#define PLACE_MAX_SHAPES 4096

/* Room for one more cache column: grows *shapes (n of them, each elem bytes) at powers of two
 * and gives the new column's entries, one per node of c. NULL when there are PLACE_MAX_SHAPES
 * already or no memory; *shapes is the array to keep either way. */
struct place_cache_entry *gs__place_shape_room(const struct gs_place_cluster *c, void **shapes,
                                               size_t n, size_t elem);

struct gs_place_cluster {
  size_t n;
  struct place_node *nodes;
  int *tie_order;
  int n_models;
  char *models[GS_PLACE_MAX_MODELS];
  int64_t gpu_capacity, gpu_allocated;
  struct place_typical *typical;
  size_t n_typical;
  struct place_shape *shapes;
  size_t n_shapes;
  struct place_shape *cur_shape; /* FGD's cache column for the request being decided */
  struct place_fgd_mem *fgd_mem; /* fgd-mem's caches, made on its first decision */
};

/* place-model.c */
bool gs__place_fits(const struct place_node *nd, const struct gs_place_request *r);
bool gs__place_is_sharing(const struct gs_place_request *r);
uint32_t gs__place_pick_tightest(const struct place_node *nd, int num_gpu, int gpu_milli);
void gs__place_node_refresh(struct place_node *nd);

/* place-policy-fit.c */
int gs__place_score_best_fit(const struct place_node *nd, const struct gs_place_request *r);
int gs__place_score_gpu_packing(const struct place_node *nd, const struct gs_place_request *r);

/* place-policy-fgd.c */
double gs__place_fgd_frag(const gs_place_cluster_t *c, int model, int64_t cpu_left,
                          const int16_t *left, int gpus);
int gs__place_fgd_score(gs_place_cluster_t *c, int node, const struct gs_place_request *r,
                        int *gpu);
int gs__place_fgd_sigmoid_score(double frag_before, double frag_after);
void gs__place_fgd_prepare(gs_place_cluster_t *c, const struct gs_place_request *r);

/* place-replay.c: the replay's checked options and empty cluster, its arrival order (indices
 * into pods) and its copies of the pods with gpu_spec bound, shared with the replay with
 * departures (place-churn.c). */
gs_place_cluster_t *gs__place_replay_cluster(const struct gs_place_node_spec *nodes, size_t n_nodes,
                                             size_t n_pods, const struct gs_place_replay_opts *opts,
                                             gs_error_t *err);
size_t *gs__place_arrivals(const struct gs_place_request *pods, size_t n, int64_t target,
                           uint64_t seed, size_t *out_n);
struct gs_place_request *gs__place_bind_pods(gs_place_cluster_t *c,
                                             const struct gs_place_request *pods, size_t n);

/* place-policy-fgd-mem.c */
void gs__place_fgd_mem_prepare(gs_place_cluster_t *c, const struct gs_place_request *r);
/* fit_breaks_ties: fgd-mem-tie, where a sharing request's tightest GPU only breaks ties
 * between equal FGD scores instead of coming first. */
int gs__place_fgd_mem_score(gs_place_cluster_t *c, int node, const struct gs_place_request *r,
                            int *gpu, bool fit_breaks_ties);
void gs__place_fgd_mem_free(struct place_fgd_mem *m);

/* place-decide.c: a policy's per-request preparation and its score of one node that fits
 * (gpu: the GPU it chose, or -1 where the policy leaves that to gs__place_pick_tightest). */
void gs__place_prepare(gs_place_cluster_t *c, enum gs_place_policy p,
                       const struct gs_place_request *r);
int gs__place_score_node(gs_place_cluster_t *c, enum gs_place_policy p, int i,
                         const struct gs_place_request *r, int *gpu);

#endif
