/* Preemption: which running pods an in-quota request may evict, and which it does.
 *
 * Only over-quota pods are candidates (a queue has some only while it uses more than its
 * guarantee): of other queues at any priority, since an in-quota request reclaims its
 * guarantee, and of the request's own queue only at a lower priority. In-quota pods are
 * never candidates. Deciding for over-quota requests is the caller's: they never get here.
 *
 * For each node, the candidates on it are evicted tentatively in order (lowest priority,
 * then the queue furthest over its weighted share, then the newest) until the request
 * fits; then each victim is put back, latest first, if the request still fits without
 * evicting it. The node whose victims have the lowest top priority, then are the fewest,
 * then hold the least GPU-milli, wins; among equals, the node whose first victim comes
 * first in the eviction order (so weights and age count across nodes too). Tentative evictions
 * are gs_place_release and gs_place_commit pairs, which leave the cluster exactly as it
 * was. A per-node greedy choice, not a global optimum: it is what a person can follow. */
#include <stdlib.h>

#include "place-queue-internal.h"

static bool eligible(const struct place_pod *p, int node, const struct gs_place_request *r,
                     int queue)
{
  if (p->evicting || p->in_quota || p->ch.node != node)
    return false;
  return p->queue != queue || p->r.priority < r->priority;
}

/* Negative when pod a should go before pod b. */
static int victim_order(const gs_place_sched_t *s, const struct place_pod *a,
                        const struct place_pod *b)
{
  if (a->r.priority != b->r.priority)
    return a->r.priority < b->r.priority ? -1 : 1;
  const struct place_queue *qa = &s->queues[a->queue], *qb = &s->queues[b->queue];
  /* over_use / weight, compared without division; over-quota pods imply weight >= 1 */
  int64_t sa = qa->over_use * qb->weight, sb = qb->over_use * qa->weight;
  if (sa != sb)
    return sa > sb ? -1 : 1;
  return a->id > b->id ? -1 : 1;
}

/* The node's first `max` candidates in eviction order (an insertion sort: they are few). */
static size_t candidates(const gs_place_sched_t *s, int node, const struct gs_place_request *r,
                         int queue, size_t *out, size_t max)
{
  size_t n = 0;
  for (size_t i = 0; i < s->n_pods; i++) {
    if (!eligible(&s->pods[i], node, r, queue))
      continue;
    if (n == max && victim_order(s, &s->pods[i], &s->pods[out[n - 1]]) > 0)
      continue; /* full, and it would come last: keep the list as it is */
    size_t k = n < max ? n++ : n - 1;
    while (k > 0 && victim_order(s, &s->pods[i], &s->pods[out[k - 1]]) < 0) {
      out[k] = out[k - 1];
      k--;
    }
    out[k] = i;
  }
  return n;
}

/* Whether r fits on node now. Only node changes while its victims are sought, and r fitted
 * nowhere before, so this is also whether r fits anywhere. */
static bool fits_now(gs_place_sched_t *s, int node, const struct gs_place_request *r)
{
  return gs_place_node_fits(s->c, node, r, NULL, 0) == 1;
}

static void off(gs_place_sched_t *s, size_t i)
{
  gs_place_release(s->c, &s->pods[i].r, &s->pods[i].ch);
}

static void on(gs_place_sched_t *s, size_t i)
{
  gs_place_commit(s->c, &s->pods[i].r, &s->pods[i].ch);
}

/* The fewest victims on `node`, from at most `max`, that let r fit; 0 when none do. The
 * cluster is as it was on return. */
int gs__place_victims_on(gs_place_sched_t *s, int node, const struct gs_place_request *r, int queue,
                         size_t max, struct place_victim_set *out)
{
  size_t cand[GS_PLACE_VICTIMS_MAX];
  size_t n = candidates(s, node, r, queue, cand, max), used = 0;
  while (used < n && !fits_now(s, node, r))
    off(s, cand[used++]);
  bool ok = fits_now(s, node, r);
  out->n = 0;
  for (size_t k = used; k-- > 0;) { /* put back those it can do without, latest first */
    on(s, cand[k]);
    if (ok && !fits_now(s, node, r)) {
      off(s, cand[k]);
      out->pods[out->n++] = cand[k];
    }
  }
  for (size_t k = 0; k < out->n; k++)
    on(s, out->pods[k]);
  if (!ok || out->n == 0)
    return 0;
  out->node = node;
  out->lead = out->pods[out->n - 1];
  out->top_priority = s->pods[out->pods[0]].r.priority;
  out->milli = 0;
  for (size_t k = 0; k < out->n; k++) {
    const struct place_pod *p = &s->pods[out->pods[k]];
    if (p->r.priority > out->top_priority)
      out->top_priority = p->r.priority;
    out->milli += gs__place_pod_milli(&p->r);
  }
  return 1;
}

bool gs__place_victims_better(const gs_place_sched_t *s, const struct place_victim_set *a,
                              const struct place_victim_set *b)
{
  if (a->top_priority != b->top_priority)
    return a->top_priority < b->top_priority;
  if (a->n != b->n)
    return a->n < b->n;
  if (a->milli != b->milli)
    return a->milli < b->milli;
  return victim_order(s, &s->pods[a->lead], &s->pods[b->lead]) < 0;
}

/* Evicts the chosen victims (listing them in t) and returns 1 with the choice for r,
 * not committed; 0 with nothing changed when no node can be freed for r. */
int gs__place_preempt(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                      struct place_txn *t, struct gs_place_choice *ch)
{
  size_t room = GS_PLACE_VICTIMS_MAX - t->n_victims;
  struct place_victim_set best = { .node = -1 }, cur;
  for (size_t i = 0; i < gs_place_cluster_size(s->c) && room > 0; i++)
    if (gs__place_victims_on(s, (int) i, r, queue, room, &cur) &&
        (best.node < 0 || gs__place_victims_better(s, &cur, &best)))
      best = cur;
  if (best.node < 0)
    return 0;
  for (size_t k = 0; k < best.n; k++) {
    gs__place_pod_evict(s, best.pods[k]);
    t->victims[t->n_victims++] = best.pods[k];
  }
  int ok = gs_place_decide(s->c, s->policy, r, ch);
  if (ok && ch->node == best.node)
    return 1;
  /* Cannot happen: only best.node changed, and r fits there now. Undo to stay safe. */
  for (size_t k = 0; k < best.n; k++)
    gs__place_pod_unevict(s, t->victims[--t->n_victims]);
  return 0;
}
