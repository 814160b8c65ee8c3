/* The scheduler on top of the placement core (gs-place.h): queues with a guaranteed quota
 * and an over-quota weight, priority, preemption of over-quota work, and gangs placed all
 * or nothing. Every placement and every rejection comes with a reason a person can read.
 *
 * Like the placement core it is a plain in-memory model: no I/O, no clocks, libc only.
 * What runs where is the scheduler's own state; nothing here talks to a real cluster.
 *
 * The rules (docs/placement.md, "Queues, priority, preemption and gangs"):
 * - A queue's pods are in quota while their GPU-milli (num_gpu × gpu_milli) fits in the
 *   queue's guarantee; the rest are over quota. A pod is tagged when admitted, and an
 *   over-quota pod is promoted when a finished in-quota pod makes room for it.
 * - An in-quota request that fits nowhere may preempt over-quota pods: of other queues at
 *   any priority (the guarantee is reclaimed), of its own queue only at a lower priority.
 *   Victims are chosen lowest priority first, then from the queue furthest over its
 *   weighted share, then the fewest pods and the least GPU-milli. In-quota pods are never
 *   preempted.
 * - An over-quota request uses idle capacity only and never preempts; a queue of weight 0
 *   never goes over quota.
 * - A gang (n > 1 requests, one queue) is in quota when all of it fits in the guarantee;
 *   its members are placed one by one, and if one fails every member and every victim is
 *   put back as it was. */
#ifndef GS_PLACE_QUEUE_H
#define GS_PLACE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/error.h>
#include <gpuslice/place.h>

#define GS_PLACE_GANG_MAX 16    /* requests in one submission */
#define GS_PLACE_VICTIMS_MAX 32 /* pods one submission may preempt */
#define GS_PLACE_REASON_MAX 512 /* the reason, NUL included; longer ones end in "..." */
#define GS_PLACE_NAME_MAX 48    /* a pod's name as the scheduler keeps it */

struct gs_place_queue_spec {
  const char *name;
  int64_t quota_milli; /* guaranteed GPU-milli, >= 0 */
  int weight;          /* share of idle capacity beyond the quota, >= 0; 0: never over quota */
};

struct gs_place_victim {
  uint64_t id; /* the pod's id, as returned when it was placed */
  char name[GS_PLACE_NAME_MAX];
  const char *queue; /* owned by the scheduler */
  int priority;
  struct gs_place_choice choice; /* where it ran */
};

struct gs_place_outcome {
  bool placed;                     /* every request of the submission placed, or none */
  bool in_quota;                   /* the submission counted against its queue's guarantee */
  size_t n;                        /* requests placed: the submission's n, or 0 */
  uint64_t ids[GS_PLACE_GANG_MAX]; /* for gs_place_sched_finish */
  struct gs_place_choice choices[GS_PLACE_GANG_MAX];
  size_t n_victims; /* pods preempted to make room (0 when rejected) */
  struct gs_place_victim victims[GS_PLACE_VICTIMS_MAX];
  char reason[GS_PLACE_REASON_MAX];
};

struct gs_place_queue_usage {
  int64_t quota_milli;
  int64_t in_quota_milli;   /* <= quota_milli */
  int64_t over_quota_milli; /* borrowed beyond the guarantee, preemptible */
  size_t pods;
};

typedef struct gs_place_sched gs_place_sched_t;

/* A scheduler over a new cluster of these nodes (their names are copied for reasons),
 * placing with policy p. Requests name a queue of `queues`; a request with a NULL or ""
 * queue goes to the built-in queue "default", of quota 0 and weight 1, whose pods are
 * always over quota. NULL and *err on bad queues (duplicate, negative quota or weight,
 * a queue called "default") or no memory. */
gs_place_sched_t *gs_place_sched_new(const struct gs_place_node_spec *nodes, size_t n_nodes,
                                     enum gs_place_policy p,
                                     const struct gs_place_queue_spec *queues, size_t n_queues,
                                     gs_error_t *err);
void gs_place_sched_free(gs_place_sched_t *s);

/* The scheduler's cluster: to bind gpu_spec (gs_place_model_mask), set FGD's workload,
 * read stats. Commit or release on it only through the scheduler. */
gs_place_cluster_t *gs_place_sched_cluster(gs_place_sched_t *s);

/* Places reqs[0..n): one request when n == 1, a gang (all or nothing, one queue) when
 * n > 1. Each request's model_mask must be bound to the cluster. Returns 1 when placed,
 * 0 when rejected (the cluster and every queue as they were), both with out->reason
 * filled; -1 and *err when the submission is malformed (n is 0 or over
 * GS_PLACE_GANG_MAX, a gang spans queues, a bad shape) or memory runs out, with the
 * cluster unchanged. A request naming an unknown queue is rejected, not an error. */
int gs_place_sched_submit(gs_place_sched_t *s, const struct gs_place_request *reqs, size_t n,
                          struct gs_place_outcome *out, gs_error_t *err);

/* The pod `id` has finished: its resources go back, and over-quota pods of its queue that
 * now fit in the guarantee become in quota. Returns 0, or -1 for an unknown id. */
int gs_place_sched_finish(gs_place_sched_t *s, uint64_t id);

/* Returns 0 and the queue's usage ("" or NULL: the default queue); -1 when unknown. */
int gs_place_sched_queue_usage(const gs_place_sched_t *s, const char *queue,
                               struct gs_place_queue_usage *out);

/* One pod running on a cluster that the caller keeps (a kube-scheduler's model), for
 * gs_place_victims. */
struct gs_place_running {
  struct gs_place_request r;     /* as taken on the cluster; r.queue and r.priority count */
  struct gs_place_choice choice; /* its node and GPUs */
};

/* Victims by the rules above, on a cluster the caller keeps: which of pods[0..n_pods) (all
 * taken on c, in the order they were admitted) to evict so that r, of queue r->queue at
 * r->priority, fits. Each pod's standing is worked out from that order: a queue's pods are
 * in quota while their GPU-milli fits in its guarantee, the rest over; a pod of an unknown
 * queue goes to "default". Only nodes i with allowed[i] (NULL: all) are searched; the best
 * node wins as in a submission. Returns the number of victims, their indices into pods in
 * victims[0..GS_PLACE_VICTIMS_MAX) and the node in *node; 0 when r is over quota or no
 * node can be freed for it, with why in reason; -1 and *err on bad queues or no memory.
 * The cluster is as it was on return. */
int gs_place_victims(gs_place_cluster_t *c, const struct gs_place_queue_spec *queues,
                     size_t n_queues, const struct gs_place_running *pods, size_t n_pods,
                     const struct gs_place_request *r, const bool *allowed, size_t *victims,
                     int *node, char *reason, size_t reason_len, gs_error_t *err);

#endif
