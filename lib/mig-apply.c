/* Applying a MIG layout (see gpuslice/mig-apply.h): the steps from what a GPU holds to a
 * target, in NVIDIA's order, and running them through a backend with a rollback to the
 * layout the GPU started with when one fails. The backend does the driver's work (NVML's in
 * mig-nvml.c); nothing here knows the driver. */
#include <gpuslice/mig-apply.h>

#include <stdio.h>
#include <string.h>

static void add(struct gs_mig_plan *plan, enum gs_mig_step_kind kind, const char *profile,
                int start)
{
  struct gs_mig_step *s = &plan->step[plan->n++];
  memset(s, 0, sizeof(*s));
  s->kind = kind;
  s->start = start;
  snprintf(s->profile, sizeof(s->profile), "%s", profile ? profile : "");
}

static void add_ci(struct gs_mig_plan *plan, const char *profile, int start, int nci,
                   const int *slices)
{
  add(plan, GS_MIG_CREATE_CI, profile, start);
  struct gs_mig_step *s = &plan->step[plan->n - 1];
  s->nci = nci;
  memcpy(s->ci_slices, slices, (size_t) nci * sizeof(int));
}

/* The target's instance at the live one's placement with its profile, or NULL. */
static const struct gs_mig_instance *wanted(const struct gs_mig_target *t,
                                            const struct gs_mig_live *in)
{
  for (int i = 0; i < t->n; i++)
    if (t->inst[i].start == in->start && strcmp(t->inst[i].p->name, in->profile) == 0)
      return &t->inst[i];
  return NULL;
}

static bool held(const struct gs_mig_gpu *g, const struct gs_mig_instance *in)
{
  for (int i = 0; i < g->n; i++)
    if (g->inst[i].start == in->start && strcmp(g->inst[i].profile, in->p->name) == 0)
      return true;
  return false;
}

/* A kept GPU instance must hold one compute instance over all of it, as created here. */
static bool one_full_ci(const struct gs_mig_live *in, const struct gs_mig_instance *w)
{
  return in->nci == 1 && in->ci_slices[0] == w->p->compute_slices;
}

static void plan_off(const struct gs_mig_gpu *g, struct gs_mig_plan *plan)
{
  if (!g->mode)
    return;
  for (int i = 0; i < g->n; i++) {
    if (g->inst[i].nci)
      add(plan, GS_MIG_DESTROY_CI, g->inst[i].profile, g->inst[i].start);
    plan->taken[plan->ntaken++] = i;
  }
  for (int i = 0; i < g->n; i++)
    add(plan, GS_MIG_DESTROY_GI, g->inst[i].profile, g->inst[i].start);
  add(plan, GS_MIG_MODE_OFF, NULL, 0);
  plan->whole_gpu = true;
}

void gs_mig_plan_steps(const struct gs_mig_gpu *g, const struct gs_mig_target *target,
                       struct gs_mig_plan *plan)
{
  memset(plan, 0, sizeof(*plan));
  if (target->off) {
    plan_off(g, plan);
    return;
  }
  bool keep[GS_MIG_MAX_INSTANCES], reci[GS_MIG_MAX_INSTANCES];
  for (int i = 0; i < g->n; i++) {
    const struct gs_mig_instance *w = wanted(target, &g->inst[i]);
    keep[i] = w != NULL;
    reci[i] = w && !one_full_ci(&g->inst[i], w);
    if (!keep[i] || reci[i])
      plan->taken[plan->ntaken++] = i;
    if ((!keep[i] || reci[i]) && g->inst[i].nci)
      add(plan, GS_MIG_DESTROY_CI, g->inst[i].profile, g->inst[i].start);
  }
  for (int i = 0; i < g->n; i++)
    if (!keep[i])
      add(plan, GS_MIG_DESTROY_GI, g->inst[i].profile, g->inst[i].start);
  if (!g->mode) {
    add(plan, GS_MIG_MODE_ON, NULL, 0);
    plan->whole_gpu = true;
  }
  for (int i = 0; i < target->n; i++)
    if (!held(g, &target->inst[i]))
      add(plan, GS_MIG_CREATE_GI, target->inst[i].p->name, target->inst[i].start);
  for (int i = 0; i < target->n; i++) {
    const struct gs_mig_instance *w = &target->inst[i];
    bool redo = false;
    for (int k = 0; k < g->n; k++)
      redo |= reci[k] && g->inst[k].start == w->start;
    if (!held(g, w) || redo)
      add_ci(plan, w->p->name, w->start, 1, &w->p->compute_slices);
  }
}

int gs_mig_plan_pids(const struct gs_mig_gpu *g, const struct gs_mig_plan *plan, pid_t *out,
                     int cap)
{
  int n = 0;
  for (int k = 0; k < g->npids && n < cap && plan->whole_gpu; k++)
    out[n++] = g->pids[k];
  for (int t = 0; t < plan->ntaken; t++) {
    const struct gs_mig_live *in = &g->inst[plan->taken[t]];
    for (int k = 0; k < in->npids && n < cap; k++)
      out[n++] = in->pids[k];
  }
  return n;
}

void gs_mig_step_text(const struct gs_mig_step *s, char *buf, size_t len)
{
  switch (s->kind) {
  case GS_MIG_DESTROY_CI:
    snprintf(buf, len, "destroy the compute instances of %s@%d", s->profile, s->start);
    break;
  case GS_MIG_DESTROY_GI: snprintf(buf, len, "destroy %s@%d", s->profile, s->start); break;
  case GS_MIG_MODE_ON: snprintf(buf, len, "turn MIG mode on"); break;
  case GS_MIG_MODE_OFF: snprintf(buf, len, "turn MIG mode off"); break;
  case GS_MIG_CREATE_GI: snprintf(buf, len, "create %s@%d", s->profile, s->start); break;
  case GS_MIG_CREATE_CI:
    snprintf(buf, len, "create the compute instance of %s@%d", s->profile, s->start);
    break;
  }
}

/* ---- running, and rolling back ---- */

static const struct gs_mig_live *live_at(const struct gs_mig_gpu *g, int start)
{
  for (int i = 0; i < g->n; i++)
    if (g->inst[i].start == start)
      return &g->inst[i];
  return NULL;
}

/* The step that undoes s, given the GPU as it was before the apply. */
static struct gs_mig_step undo_of(const struct gs_mig_gpu *start, const struct gs_mig_step *s)
{
  struct gs_mig_step u = *s;
  const struct gs_mig_live *was = live_at(start, s->start);
  switch (s->kind) {
  case GS_MIG_DESTROY_CI:
    u.kind = GS_MIG_CREATE_CI;
    u.nci = was ? was->nci : 0;
    if (was)
      memcpy(u.ci_slices, was->ci_slices, sizeof(u.ci_slices));
    break;
  case GS_MIG_DESTROY_GI: u.kind = GS_MIG_CREATE_GI; break;
  case GS_MIG_MODE_ON: u.kind = GS_MIG_MODE_OFF; break;
  case GS_MIG_MODE_OFF: u.kind = GS_MIG_MODE_ON; break;
  case GS_MIG_CREATE_GI: u.kind = GS_MIG_DESTROY_GI; break;
  case GS_MIG_CREATE_CI: u.kind = GS_MIG_DESTROY_CI; break;
  }
  return u;
}

/* Undoes steps [0, done) newest first; a step that failed part way (a compute instance made
 * of several asked) is cleared first. Returns how many undo steps failed. */
static int roll_back(const struct gs_mig_ops *ops, const struct gs_mig_gpu *start,
                     const struct gs_mig_plan *plan, int done)
{
  gs_error_t e = NULL;
  int failed = 0;
  if (done < plan->n && plan->step[done].kind == GS_MIG_CREATE_CI) {
    struct gs_mig_step clear = undo_of(start, &plan->step[done]);
    ops->step(ops->ctx, &clear, &e); /* nothing made is fine too */
  }
  for (int i = done - 1; i >= 0; i--) {
    struct gs_mig_step u = undo_of(start, &plan->step[i]);
    if (u.kind == GS_MIG_CREATE_CI && u.nci == 0)
      continue;
    failed += ops->step(ops->ctx, &u, &e) < 0;
  }
  gs_error_release(&e);
  return failed;
}

/* After a rollback: the GPU's layout now, against the one it started with. */
static void check_rollback(const struct gs_mig_ops *ops, const struct gs_mig_gpu *start, int failed,
                           gs_error_t *err)
{
  struct gs_mig_gpu now;
  char was[512], is[512];
  gs_error_t e = NULL;
  gs_mig_gpu_layout(start, was, sizeof(was));
  if (ops->read(ops->ctx, &now, &e) < 0) {
    gs_error_prepend(err, "rolled back, but the GPU cannot be read again (%s)", e->msg);
  } else {
    gs_mig_gpu_layout(&now, is, sizeof(is));
    if (strcmp(was, is) == 0 && !failed)
      gs_error_prepend(err, "rolled back to '%s'", was);
    else
      gs_error_prepend(err, "rollback incomplete: the GPU has '%s', it had '%s'", is, was);
  }
  gs_error_release(&e);
}

int gs_mig_apply(const struct gs_mig_ops *ops, const struct gs_mig_gpu *start,
                 const struct gs_mig_plan *plan, gs_error_t *err)
{
  for (int i = 0; i < plan->n; i++) {
    char what[128];
    if (ops->step(ops->ctx, &plan->step[i], err) == 0)
      continue;
    gs_mig_step_text(&plan->step[i], what, sizeof(what));
    gs_error_prepend(err, "%s", what);
    int failed = roll_back(ops, start, plan, i);
    check_rollback(ops, start, failed, err);
    return -1;
  }
  return 0;
}
