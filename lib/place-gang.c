/* Submissions: one request, or a gang placed all or nothing, with the reason for the
 * outcome. A submission is in quota when all of it fits in its queue's guarantee; each
 * member is then decided and committed in turn, an in-quota member that fits nowhere
 * preempting over-quota work (place-preempt.c). When a member fails, the members placed so
 * far are released and the pods preempted for them are put back, so a rejected submission
 * leaves the cluster and every queue exactly as they were. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "place-queue-internal.h"

struct reason {
  char *buf;
  size_t len;
};

static void say(struct reason *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to the reason; a reason too long for the buffer ends in "...". */
static void say(struct reason *w, const char *fmt, ...)
{
  if (w->len >= GS_PLACE_REASON_MAX - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(w->buf + w->len, GS_PLACE_REASON_MAX - w->len, fmt, ap);
  va_end(ap);
  if (k < 0)
    return;
  w->len += (size_t) k;
  if (w->len >= GS_PLACE_REASON_MAX - 1) {
    w->len = GS_PLACE_REASON_MAX - 1;
    memcpy(w->buf + w->len - 3, "...", 3);
  }
}

static const char *pod_name(const struct gs_place_request *r)
{
  return r->name ? r->name : "?";
}

static void say_shape(struct reason *w, const struct gs_place_request *r)
{
  if (r->num_gpu == 0)
    say(w, "(no GPU, %lld CPU-milli)", (long long) r->cpu_milli);
  else
    say(w, "(%d GPU%s x %d milli, %lld CPU-milli)", r->num_gpu, r->num_gpu > 1 ? "s" : "",
        r->gpu_milli, (long long) r->cpu_milli);
}

static void say_where(struct reason *w, const gs_place_sched_t *s, const struct gs_place_choice *ch)
{
  say(w, "on %s", s->node_names[ch->node]);
  if (!ch->gpu_mask) {
    say(w, " (no GPU)");
    return;
  }
  const char *sep = __builtin_popcount(ch->gpu_mask) > 1 ? " GPUs " : " GPU ";
  for (int g = 0; g < GS_PLACE_MAX_GPUS; g++)
    if (ch->gpu_mask & (UINT32_C(1) << g)) {
      say(w, "%s%d", sep, g);
      sep = ",";
    }
}

/* The queue after a placement, e.g. "in quota: team-a 2000/4000 milli". */
static void say_quota_after(struct reason *w, const struct place_queue *q, bool in_quota)
{
  if (in_quota)
    say(w, "in quota: %s %lld/%lld milli", q->name, (long long) q->in_use, (long long) q->quota);
  else
    say(w, "over quota: %s %lld/%lld milli, borrowing idle capacity, preemptible", q->name,
        (long long) (q->in_use + q->over_use), (long long) q->quota);
}

/* The quota reading before a submission, for a rejection. */
static void say_quota_before(struct reason *w, const struct place_queue *q, int64_t milli,
                             bool in_quota)
{
  if (in_quota)
    say(w,
        "in quota (%s %lld+%lld <= %lld milli), but no node frees enough by preempting "
        "over-quota pods of other queues or of lower priority in its own; in-quota pods "
        "are never preempted",
        q->name, (long long) q->in_use, (long long) milli, (long long) q->quota);
  else
    say(w,
        "over quota (%s %lld+%lld > %lld milli), so it may use idle capacity only and "
        "never preempts",
        q->name, (long long) q->in_use, (long long) milli, (long long) q->quota);
}

static int nodes_that_fit(const gs_place_sched_t *s, const struct gs_place_request *r)
{
  int k = 0;
  for (size_t i = 0; i < s->c->n; i++)
    k += gs__place_fits(&s->c->nodes[i], r);
  return k;
}

static bool same_queue(const char *a, const char *b)
{
  return strcmp(a && *a ? a : PLACE_DEFAULT_QUEUE, b && *b ? b : PLACE_DEFAULT_QUEUE) == 0;
}

static int check(const struct gs_place_request *reqs, size_t n, gs_error_t *err)
{
  if (n == 0 || n > GS_PLACE_GANG_MAX)
    return gs_make_error(err, 0, "a submission has 1 to %d requests, not %zu", GS_PLACE_GANG_MAX,
                         n);
  for (size_t i = 0; i < n; i++) {
    const struct gs_place_request *r = &reqs[i];
    bool bad_gpu = r->num_gpu < 0 || r->num_gpu > GS_PLACE_MAX_GPUS ||
      (r->num_gpu > 0 && (r->gpu_milli < 1 || r->gpu_milli > GS_PLACE_MILLI)) ||
      (r->num_gpu == 0 && r->gpu_milli != 0);
    if (bad_gpu || r->cpu_milli < 0 || r->mem_mib < 0)
      return gs_make_error(err, 0, "request '%s': bad shape", pod_name(r));
    if (!same_queue(r->queue, reqs[0].queue))
      return gs_make_error(err, 0, "gang spans queues '%s' and '%s'", r->queue ? r->queue : "",
                           reqs[0].queue ? reqs[0].queue : "");
  }
  return 0;
}

static void rollback(gs_place_sched_t *s, struct place_txn *t)
{
  while (s->n_pods > t->pods_before)
    gs__place_pod_drop_last(s);
  while (t->n_victims > 0)
    gs__place_pod_unevict(s, t->victims[--t->n_victims]);
}

/* Places reqs[i] in the transaction: idle capacity first, then preemption when in quota. */
static bool place_member(gs_place_sched_t *s, const struct gs_place_request *r, int queue,
                         bool in_quota, struct place_txn *t)
{
  struct gs_place_choice ch;
  if (gs_place_decide(s->c, s->policy, r, &ch) != 1 &&
      !(in_quota && gs__place_preempt(s, r, queue, t, &ch)))
    return false;
  gs__place_pod_add(s, r, queue, &ch, in_quota);
  return true;
}

static void fill_placed(gs_place_sched_t *s, const struct place_txn *t, size_t n,
                        struct gs_place_outcome *out)
{
  out->placed = true;
  out->n = n;
  for (size_t i = 0; i < n; i++) {
    const struct place_pod *p = &s->pods[t->pods_before + i];
    out->ids[i] = p->id;
    out->choices[i] = p->ch;
  }
  out->n_victims = t->n_victims;
  for (size_t k = 0; k < t->n_victims; k++) {
    const struct place_pod *p = &s->pods[t->victims[k]];
    struct gs_place_victim *v = &out->victims[k];
    v->id = p->id;
    memcpy(v->name, p->name, sizeof(v->name));
    v->queue = s->queues[p->queue].name;
    v->priority = p->r.priority;
    v->choice = p->ch;
  }
}

static void say_placed(const gs_place_sched_t *s, const struct gs_place_request *reqs,
                       const struct gs_place_outcome *out, int queue, struct reason *w)
{
  const char *policy = gs_place_policy_name(s->policy);
  if (out->n == 1) {
    say(w, "placed '%s' ", pod_name(&reqs[0]));
    say_where(w, s, &out->choices[0]);
    say(w, " by %s (", policy);
  } else {
    say(w, "placed gang of %zu by %s (", out->n, policy);
  }
  say_quota_after(w, &s->queues[queue], out->in_quota);
  say(w, ")");
  for (size_t i = 0; out->n > 1 && i < out->n; i++) {
    say(w, "%s'%s' ", i ? "; " : ": ", pod_name(&reqs[i]));
    say_where(w, s, &out->choices[i]);
  }
  for (size_t k = 0; k < out->n_victims; k++) {
    const struct gs_place_victim *v = &out->victims[k];
    say(w, "%s'%s' (%s, priority %d, over quota) ", k ? ", " : "; preempted ", v->name, v->queue,
        v->priority);
    say_where(w, s, &v->choice);
  }
}

static void say_rejected(const gs_place_sched_t *s, const struct gs_place_request *reqs, size_t n,
                         size_t failed, int queue, int64_t milli, bool in_quota, struct reason *w)
{
  const struct gs_place_request *r = &reqs[failed];
  if (n == 1) {
    say(w, "rejected: '%s' ", pod_name(r));
    say_shape(w, r);
    say(w, " fits no node; ");
  } else {
    say(w, "rejected: gang of %zu (all or nothing): member %zu '%s' ", n, failed + 1, pod_name(r));
    say_shape(w, r);
    say(w, " fits no node once %zu %s placed (%d of %zu nodes could hold it alone); ", failed,
        failed == 1 ? "is" : "are", nodes_that_fit(s, r), s->c->n);
  }
  say_quota_before(w, &s->queues[queue], milli, in_quota);
  if (n > 1)
    say(w, "; nothing placed, nothing preempted");
}

int gs_place_sched_submit(gs_place_sched_t *s, const struct gs_place_request *reqs, size_t n,
                          struct gs_place_outcome *out, gs_error_t *err)
{
  memset(out, 0, sizeof(*out));
  struct reason w = { out->reason, 0 };
  if (check(reqs, n, err) < 0)
    return -1;
  int queue = gs__place_queue_find(s, reqs[0].queue);
  if (queue < 0) {
    say(&w, "rejected: unknown queue '%s'", reqs[0].queue);
    return 0;
  }
  const struct place_queue *q = &s->queues[queue];
  int64_t milli = 0;
  for (size_t i = 0; i < n; i++)
    milli += gs__place_pod_milli(&reqs[i]);
  out->in_quota = q->in_use + milli <= q->quota;
  if (!out->in_quota && q->weight == 0) {
    say(&w, "rejected: queue %s has over-quota weight 0 and %lld+%lld > %lld milli", q->name,
        (long long) q->in_use, (long long) milli, (long long) q->quota);
    return 0;
  }
  if (gs__place_pods_reserve(s, n) < 0)
    return gs_make_error(err, ENOMEM, "submission of %zu", n);
  struct place_txn t = { .pods_before = s->n_pods };
  for (size_t i = 0; i < n; i++)
    if (!place_member(s, &reqs[i], queue, out->in_quota, &t)) {
      rollback(s, &t);
      say_rejected(s, reqs, n, i, queue, milli, out->in_quota, &w);
      return 0;
    }
  fill_placed(s, &t, n, out);
  gs__place_pods_purge_evicted(s);
  say_placed(s, reqs, out, queue, &w);
  return 1;
}
