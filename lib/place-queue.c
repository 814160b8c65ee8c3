/* Queues and the pods the scheduler runs: each queue's guarantee and weight, the usage it
 * has in and over quota, and adding, evicting and finishing pods with the accounting kept
 * in step with the cluster. Choosing victims is place-preempt.c; submissions and their
 * reasons are place-gang.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place-queue-internal.h"

int64_t gs__place_pod_milli(const struct gs_place_request *r)
{
  return (int64_t) r->num_gpu * r->gpu_milli;
}

int gs__place_queue_find(const gs_place_sched_t *s, const char *name)
{
  if (!name || !*name)
    name = PLACE_DEFAULT_QUEUE;
  for (size_t i = 0; i < s->n_queues; i++)
    if (strcmp(s->queues[i].name, name) == 0)
      return (int) i;
  return -1;
}

int gs__place_queues_init(gs_place_sched_t *s, const struct gs_place_queue_spec *q, size_t n,
                          gs_error_t *err)
{
  s->queues = calloc(n + 1, sizeof(*s->queues));
  if (!s->queues)
    return gs_make_error(err, ENOMEM, "%zu queues", n);
  for (size_t i = 0; i <= n; i++) {
    const char *name = i < n ? q[i].name : PLACE_DEFAULT_QUEUE;
    if (i < n && (!name || !*name || strcmp(name, PLACE_DEFAULT_QUEUE) == 0))
      return gs_make_error(err, 0, "queue %zu: a queue needs a name other than '%s'", i,
                           PLACE_DEFAULT_QUEUE);
    if (i < n && (q[i].quota_milli < 0 || q[i].weight < 0))
      return gs_make_error(err, 0, "queue '%s': negative quota or weight", name);
    if (gs__place_queue_find(s, name) >= 0)
      return gs_make_error(err, 0, "queue '%s' given twice", name);
    s->queues[i].name = strdup(name);
    if (!s->queues[i].name)
      return gs_make_error(err, ENOMEM, "queue '%s'", name);
    s->queues[i].quota = i < n ? q[i].quota_milli : 0;
    s->queues[i].weight = i < n ? q[i].weight : 1;
    s->n_queues = i + 1;
  }
  return 0;
}

static int names_init(gs_place_sched_t *s, const struct gs_place_node_spec *nodes, size_t n,
                      gs_error_t *err)
{
  s->node_names = calloc(n, sizeof(*s->node_names));
  if (!s->node_names)
    return gs_make_error(err, ENOMEM, "%zu node names", n);
  for (size_t i = 0; i < n; i++) {
    s->node_names[i] = strdup(nodes[i].name ? nodes[i].name : "?");
    if (!s->node_names[i])
      return gs_make_error(err, ENOMEM, "node names");
  }
  return 0;
}

gs_place_sched_t *gs_place_sched_new(const struct gs_place_node_spec *nodes, size_t n_nodes,
                                     enum gs_place_policy p,
                                     const struct gs_place_queue_spec *queues, size_t n_queues,
                                     gs_error_t *err)
{
  gs_place_sched_t *s = calloc(1, sizeof(*s));
  if (!s) {
    gs_make_error(err, ENOMEM, "scheduler");
    return NULL;
  }
  s->policy = p;
  s->next_id = 1;
  s->c = gs_place_cluster_new(nodes, n_nodes, err);
  if (!s->c || names_init(s, nodes, n_nodes, err) < 0 ||
      gs__place_queues_init(s, queues, n_queues, err) < 0) {
    gs_place_sched_free(s);
    return NULL;
  }
  return s;
}

void gs_place_sched_free(gs_place_sched_t *s)
{
  if (!s)
    return;
  if (s->node_names)
    for (size_t i = 0; i < gs_place_cluster_size(s->c); i++)
      free(s->node_names[i]);
  free(s->node_names);
  gs__place_queues_free(s);
  free(s->pods);
  gs_place_cluster_free(s->c);
  free(s);
}

void gs__place_queues_free(gs_place_sched_t *s)
{
  for (size_t i = 0; i < s->n_queues; i++)
    free(s->queues[i].name);
  free(s->queues);
  s->queues = NULL;
  s->n_queues = 0;
}

gs_place_cluster_t *gs_place_sched_cluster(gs_place_sched_t *s)
{
  return s->c;
}

/* Room for `more` pods, so that a submission under way never fails half done. */
int gs__place_pods_reserve(gs_place_sched_t *s, size_t more)
{
  if (s->n_pods + more <= s->cap_pods)
    return 0;
  size_t cap = s->cap_pods ? s->cap_pods : 16;
  while (cap < s->n_pods + more)
    cap *= 2;
  void *p = realloc(s->pods, cap * sizeof(*s->pods));
  if (!p)
    return -1;
  s->pods = p;
  s->cap_pods = cap;
  return 0;
}

static void usage_add(struct place_queue *q, const struct place_pod *pod, int sign)
{
  int64_t m = sign * gs__place_pod_milli(&pod->r);
  if (pod->in_quota)
    q->in_use += m;
  else
    q->over_use += m;
  q->pods = (size_t) ((int64_t) q->pods + sign);
}

/* Lists r, already on the cluster at ch, with its queue's usage. Room must be reserved.
 * Returns its index. */
size_t gs__place_pod_list(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                          const struct gs_place_choice *ch, bool in_quota)
{
  struct place_pod *pod = &s->pods[s->n_pods];
  *pod = (struct place_pod){
    .id = s->next_id++, .r = *r, .queue = queue, .ch = *ch, .in_quota = in_quota
  };
  pod->r.name = pod->r.queue = NULL;
  pod->r.labels = NULL;
  const char *name = r->name ? r->name : "?";
  size_t len = strnlen(name, GS_PLACE_NAME_MAX - 1);
  memcpy(pod->name, name, len);
  pod->name[len] = '\0';
  usage_add(&s->queues[queue], pod, 1);
  return s->n_pods++;
}

/* Commits r on the cluster and lists it. Room must be reserved. Returns its index. */
size_t gs__place_pod_add(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                         const struct gs_place_choice *ch, bool in_quota)
{
  gs_place_commit(s->c, r, ch);
  return gs__place_pod_list(s, r, queue, ch, in_quota);
}

/* Undoes the last gs__place_pod_add; ids are not reused. */
void gs__place_pod_drop_last(gs_place_sched_t *s)
{
  struct place_pod *pod = &s->pods[--s->n_pods];
  gs_place_release(s->c, &pod->r, &pod->ch);
  usage_add(&s->queues[pod->queue], pod, -1);
}

void gs__place_pod_evict(gs_place_sched_t *s, size_t i)
{
  struct place_pod *pod = &s->pods[i];
  gs_place_release(s->c, &pod->r, &pod->ch);
  usage_add(&s->queues[pod->queue], pod, -1);
  pod->evicting = true;
}

/* Puts an evicted pod back where it was: valid once the pods added since are dropped,
 * since the node then holds at most what it held with the pod on it. */
void gs__place_pod_unevict(gs_place_sched_t *s, size_t i)
{
  struct place_pod *pod = &s->pods[i];
  gs_place_commit(s->c, &pod->r, &pod->ch);
  usage_add(&s->queues[pod->queue], pod, 1);
  pod->evicting = false;
}

void gs__place_pods_purge_evicted(gs_place_sched_t *s)
{
  size_t k = 0;
  for (size_t i = 0; i < s->n_pods; i++)
    if (!s->pods[i].evicting)
      s->pods[k++] = s->pods[i];
  s->n_pods = k;
}

/* After a queue's in-quota usage drops, its over-quota pods that now fit in the guarantee
 * become in quota: highest priority first, then the oldest. */
static void promote(gs_place_sched_t *s, int queue)
{
  struct place_queue *q = &s->queues[queue];
  for (;;) {
    struct place_pod *best = NULL;
    for (size_t i = 0; i < s->n_pods; i++) {
      struct place_pod *p = &s->pods[i];
      if (p->queue != queue || p->in_quota || q->in_use + gs__place_pod_milli(&p->r) > q->quota)
        continue;
      if (!best || p->r.priority > best->r.priority)
        best = p;
    }
    if (!best)
      return;
    usage_add(q, best, -1);
    best->in_quota = true;
    usage_add(q, best, 1);
  }
}

int gs_place_sched_finish(gs_place_sched_t *s, uint64_t id)
{
  for (size_t i = 0; i < s->n_pods; i++) {
    struct place_pod *pod = &s->pods[i];
    if (pod->id != id)
      continue;
    int queue = pod->queue;
    bool was_in = pod->in_quota;
    gs_place_release(s->c, &pod->r, &pod->ch);
    usage_add(&s->queues[queue], pod, -1);
    memmove(pod, pod + 1, (s->n_pods - i - 1) * sizeof(*pod));
    s->n_pods--;
    if (was_in)
      promote(s, queue);
    return 0;
  }
  return -1;
}

int gs_place_sched_queue_usage(const gs_place_sched_t *s, const char *queue,
                               struct gs_place_queue_usage *out)
{
  int i = gs__place_queue_find(s, queue);
  if (i < 0)
    return -1;
  const struct place_queue *q = &s->queues[i];
  *out = (struct gs_place_queue_usage){ q->quota, q->in_use, q->over_use, q->pods };
  return 0;
}
