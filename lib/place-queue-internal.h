/* Internal state of the scheduler (gs-place-queue.h), shared by place-queue.c (queues,
 * pods, usage), place-preempt.c (victims) and place-gang.c (submissions) only. */
#ifndef GS_PLACE_QUEUE_INTERNAL_H
#define GS_PLACE_QUEUE_INTERNAL_H

#include <gpuslice/place-queue.h>
#include "place-internal.h"

struct place_queue {
  char *name;
  int64_t quota;
  int weight;
  int64_t in_use;   /* GPU-milli of its in-quota pods, <= quota */
  int64_t over_use; /* GPU-milli of its over-quota pods */
  size_t pods;
};

struct place_pod {
  uint64_t id;
  struct gs_place_request r; /* name, queue and labels cleared: the caller owns those */
  char name[GS_PLACE_NAME_MAX];
  int queue;
  struct gs_place_choice ch;
  bool in_quota;
  bool evicting; /* preempted by the submission in progress: off the cluster, still listed */
};

struct gs_place_sched {
  gs_place_cluster_t *c;
  enum gs_place_policy policy;
  char **node_names;
  struct place_queue *queues; /* the caller's, then "default" last */
  size_t n_queues;
  struct place_pod *pods; /* in the order they were placed */
  size_t n_pods, cap_pods;
  uint64_t next_id;
};

/* A submission in progress, so that a failure can put everything back: the pods it added
 * are those past pods_before; the pods it preempted are marked evicting and listed here. */
struct place_txn {
  size_t pods_before;
  size_t victims[GS_PLACE_VICTIMS_MAX];
  size_t n_victims;
};

/* place-queue.c */
#define PLACE_DEFAULT_QUEUE "default"
int gs__place_queue_find(const gs_place_sched_t *s, const char *name);
int gs__place_queues_init(gs_place_sched_t *s, const struct gs_place_queue_spec *q, size_t n,
                          gs_error_t *err);
void gs__place_queues_free(gs_place_sched_t *s);
size_t gs__place_pod_list(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                          const struct gs_place_choice *ch, bool in_quota);
int64_t gs__place_pod_milli(const struct gs_place_request *r);
int gs__place_pods_reserve(gs_place_sched_t *s, size_t more);
size_t gs__place_pod_add(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                         const struct gs_place_choice *ch, bool in_quota);
void gs__place_pod_drop_last(gs_place_sched_t *s);
void gs__place_pod_evict(gs_place_sched_t *s, size_t i);
void gs__place_pod_unevict(gs_place_sched_t *s, size_t i);
void gs__place_pods_purge_evicted(gs_place_sched_t *s);

/* place-preempt.c: the victims on one node for r, the better of two such sets, and the
 * submission's preemption over the whole cluster. */
struct place_victim_set {
  int node;
  size_t n;
  size_t pods[GS_PLACE_VICTIMS_MAX]; /* indices into the scheduler's pods */
  int top_priority;
  int64_t milli;
  size_t lead; /* the victim first in eviction order: breaks ties between nodes */
};
int gs__place_victims_on(gs_place_sched_t *s, int node, const struct gs_place_request *r, int queue,
                         size_t max, struct place_victim_set *out);
bool gs__place_victims_better(const gs_place_sched_t *s, const struct place_victim_set *a,
                              const struct place_victim_set *b);
int gs__place_preempt(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                      struct place_txn *t, struct gs_place_choice *ch);

#endif
