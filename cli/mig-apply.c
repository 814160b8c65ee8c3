/* `gpuslice mig apply --gpu N LAYOUT`: one GPU's MIG instances made those of LAYOUT through
 * NVML (lib/mig-apply.c's steps over lib/mig-nvml.c). Everything about the input is checked
 * before anything changes: the GPU has MIG, gpuslice knows its profiles, the layout fits it.
 * Then the users of what the change takes are found: without --drain they refuse it; with
 * it, the node is cordoned, they are stopped, the layout applied, and the node uncordoned in
 * an exit step that runs whatever happened. A failed apply is rolled back. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig-cli.h"

#define LAYOUT_MAX (64 * 1024)

/* The layout of `mig plan --json` (its one GPU's), or {"layout": "..."}. */
static int layout_from_json(const char *text, char *buf, size_t len, gs_error_t *err)
{
  json_error_t je;
  json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je), *l = json_object_get(j, "layout");
  int r = 0;
  if (!j)
    r = gs_make_error(err, 0, "LAYOUT: not JSON: %s (line %d)", je.text, je.line);
  else if (json_is_array(l) && json_array_size(l) == 1 && json_is_string(json_array_get(l, 0)))
    snprintf(buf, len, "%s", json_string_value(json_array_get(l, 0)));
  else if (json_is_string(l))
    snprintf(buf, len, "%s", json_string_value(l));
  else if (json_is_array(l))
    r = gs_make_error(err, 0, "LAYOUT: the plan has %zu GPUs' layouts; apply takes one GPU's",
                      json_array_size(l));
  else
    r = gs_make_error(err, 0, "LAYOUT: JSON without a \"layout\"");
  json_decref(j);
  return r;
}

/* LAYOUT as typed, from stdin for "-", from JSON when it is an object. */
static int layout_text(const char *arg, char *buf, size_t len, gs_error_t *err)
{
  char *in = NULL;
  if (strcmp(arg, "-") == 0) {
    in = calloc(1, LAYOUT_MAX + 1);
    size_t got = in ? fread(in, 1, LAYOUT_MAX, stdin) : 0;
    if (!in || got == LAYOUT_MAX) {
      free(in);
      return gs_make_error(err, 0, "LAYOUT: stdin holds more than %d bytes", LAYOUT_MAX);
    }
    arg = in;
  }
  int r = 0;
  if (arg[strspn(arg, " \t\n")] == '{')
    r = layout_from_json(arg, buf, len, err);
  else
    snprintf(buf, len, "%s", arg);
  free(in);
  return r;
}

/* The input, against the GPU: exit 2 for anything wrong with it, nothing changed. */
static int read_target(const struct mig_opts *o, const struct gs_mig_table *t,
                       const struct gs_mig_gpu *g, struct gs_mig_target *target)
{
  char text[4096];
  gs_error_t err = NULL;
  if (layout_text(o->layout, text, sizeof(text), &err) < 0)
    return mig_input_error(&err);
  if (!g->capable)
    return cli_usage_error("mig", "GPU %d (%s) has no MIG", o->gpu, g->name);
  if (!g->model[0] || gs_mig_profiles(t, g->model, &(size_t){ 0 }, &err) == NULL) {
    gs_error_release(&err);
    return cli_usage_error("mig", "GPU %d (%s): no MIG profiles for it in the table", o->gpu,
                           g->name);
  }
  if (gs_mig_layout_parse(t, g->model, text, target, &err) < 0) {
    gs_error_prepend(&err, "GPU %d", o->gpu);
    return mig_input_error(&err);
  }
  return -1;
}

static int refuse_in_use(const struct mig_opts *o, const struct mig_users *u)
{
  char who[1024];
  mig_users_text(u, who, sizeof(who));
  fprintf(stderr, "gpuslice: mig: GPU %d is in use by %s: stop them, or pass --drain\n", o->gpu,
          who);
  return CLI_FAILURE;
}

/* Stops the users, then reads the GPU and plans again: what is left to do. */
static int drain_users(const struct mig_opts *o, const struct gs_mig_ops *ops,
                       const struct gs_mig_target *target, struct gs_mig_gpu *g,
                       struct gs_mig_plan *plan, const struct mig_users *u)
{
  gs_error_t err = NULL;
  if (mig_stop_users(o, ops, plan, u, &err) < 0 || ops->read(ops->ctx, g, &err) < 0)
    return cli_fail("mig", &err);
  gs_mig_plan_steps(g, target, plan);
  return CLI_OK;
}

static int run_plan(const struct mig_opts *o, const struct gs_mig_ops *ops,
                    const struct gs_mig_gpu *g, const struct gs_mig_plan *plan)
{
  gs_error_t err = NULL;
  char was[512], is[512];
  struct gs_mig_gpu now;
  gs_mig_gpu_layout(g, was, sizeof(was));
  if (gs_mig_apply(ops, g, plan, &err) < 0) {
    gs_error_prepend(&err, "GPU %d", o->gpu);
    return cli_fail("mig", &err);
  }
  if (ops->read(ops->ctx, &now, &err) < 0)
    return cli_fail("mig", &err);
  gs_mig_gpu_layout(&now, is, sizeof(is));
  printf("GPU %d: %s (was %s)\n", o->gpu, is[0] ? is : "(none)", was[0] ? was : "(none)");
  return CLI_OK;
}

/* From the users found on: refuse, or drain and apply, the exit step always run. */
static int change(const struct mig_opts *o, const struct gs_mig_ops *ops,
                  const struct gs_mig_target *target, struct gs_mig_gpu *g,
                  struct gs_mig_plan *plan)
{
  struct mig_users u;
  struct mig_drain d = { 0 };
  mig_find_users(o, g, plan, &u);
  if ((u.ntenants || u.nothers) && !o->drain)
    return refuse_in_use(o, &u);
  if (o->drain)
    mig_cordon(o, &d);
  int r = CLI_OK;
  if (u.ntenants || u.nothers)
    r = drain_users(o, ops, target, g, plan, &u);
  if (r == CLI_OK)
    r = run_plan(o, ops, g, plan);
  mig_uncordon(&d); /* the exit step */
  return r;
}

int mig_apply(const struct mig_opts *o, const struct gs_mig_table *t)
{
  struct gs_mig_nvml *n;
  struct gs_mig_gpu g;
  struct gs_mig_target target;
  struct gs_mig_plan plan;
  struct gs_mig_ops ops;
  int r = mig_open_gpu(o, &n, &g);
  if (r != CLI_OK)
    return r;
  if ((r = read_target(o, t, &g, &target)) >= 0) {
    gs_mig_nvml_close(n);
    return r;
  }
  gs_mig_nvml_ops(n, o->gpu, &ops);
  gs_mig_plan_steps(&g, &target, &plan);
  if (plan.n == 0) {
    char is[512];
    gs_mig_gpu_layout(&g, is, sizeof(is));
    printf("GPU %d: %s already\n", o->gpu, is[0] ? is : "(none)");
    r = CLI_OK;
  } else {
    r = change(o, &ops, &target, &g, &plan);
  }
  gs_mig_nvml_close(n);
  return r;
}
