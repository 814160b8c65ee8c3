/* Preemption for a caller that keeps its own cluster (the kube-scheduler plugin): the
 * scheduler's rules (place-queue.c's quota standing, place-preempt.c's victims) run over a
 * scheduler borrowed for one question, whose pods are the caller's and whose cluster is
 * the caller's. Nothing is committed: the answer is the victims and their node. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "place-queue-internal.h"

static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t len, const char *fmt, ...)
{
  if (!buf || len == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
}

/* The queue of a request; one the scheduler does not know is "default". */
static int queue_of(const gs_place_sched_t *s, const struct gs_place_request *r)
{
  int q = gs__place_queue_find(s, r->queue);
  return q >= 0 ? q : gs__place_queue_find(s, NULL);
}

/* Lists the caller's pods in admission order, each in quota while its queue's guarantee
 * holds it, as gs_place_sched_submit tags them. */
static int borrow(gs_place_sched_t *s, const struct gs_place_running *pods, size_t n,
                  gs_error_t *err)
{
  if (gs__place_pods_reserve(s, n) < 0)
    return gs_make_error(err, ENOMEM, "%zu pods", n);
  for (size_t i = 0; i < n; i++) {
    int q = queue_of(s, &pods[i].r);
    const struct place_queue *pq = &s->queues[q];
    bool in_quota = pq->in_use + gs__place_pod_milli(&pods[i].r) <= pq->quota;
    gs__place_pod_list(s, &pods[i].r, q, &pods[i].choice, in_quota);
  }
  return 0;
}

static int choose(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                  const bool *allowed, struct place_victim_set *best)
{
  struct place_victim_set cur;
  best->node = -1;
  for (size_t i = 0; i < gs_place_cluster_size(s->c); i++)
    if ((!allowed || allowed[i]) &&
        gs__place_victims_on(s, (int) i, r, queue, GS_PLACE_VICTIMS_MAX, &cur) &&
        (best->node < 0 || gs__place_victims_better(s, &cur, best)))
      *best = cur;
  return best->node >= 0;
}

static int answer(gs_place_sched_t *s, const struct gs_place_request *r, const bool *allowed,
                  size_t *victims, int *node, char *reason, size_t len)
{
  int queue = queue_of(s, r);
  const struct place_queue *q = &s->queues[queue];
  int64_t milli = gs__place_pod_milli(r);
  if (q->in_use + milli > q->quota) {
    say(reason, len, "over quota: queue %s %lld+%lld > %lld milli, and over quota never preempts",
        q->name, (long long) q->in_use, (long long) milli, (long long) q->quota);
    return 0;
  }
  struct place_victim_set best;
  if (!choose(s, r, queue, allowed, &best)) {
    say(reason, len,
        "in quota (queue %s %lld+%lld <= %lld milli), but no node fits it without "
        "in-quota pods or pods of its queue at its priority or above",
        q->name, (long long) q->in_use, (long long) milli, (long long) q->quota);
    return 0;
  }
  for (size_t k = 0; k < best.n; k++)
    victims[k] = best.pods[k];
  *node = best.node;
  say(reason, len, "in quota (queue %s %lld+%lld <= %lld milli): %zu over-quota pod%s to preempt",
      q->name, (long long) q->in_use, (long long) milli, (long long) q->quota, best.n,
      best.n == 1 ? "" : "s");
  return (int) best.n;
}

int gs_place_victims(gs_place_cluster_t *c, const struct gs_place_queue_spec *queues,
                     size_t n_queues, const struct gs_place_running *pods, size_t n_pods,
                     const struct gs_place_request *r, const bool *allowed, size_t *victims,
                     int *node, char *reason, size_t reason_len, gs_error_t *err)
{
  gs_place_sched_t s = { .c = c, .policy = GS_PLACE_FIRST_FIT, .next_id = 1 };
  say(reason, reason_len, "%s", "");
  int rc = gs__place_queues_init(&s, queues, n_queues, err);
  if (rc == 0)
    rc = borrow(&s, pods, n_pods, err);
  if (rc == 0)
    rc = answer(&s, r, allowed, victims, node, reason, reason_len);
  gs__place_queues_free(&s);
  free(s.pods);
  return rc;
}
