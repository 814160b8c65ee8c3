/* `gpuslice mig show`: each GPU's MIG mode and instances as profile@start, read through NVML
 * (lib/mig-nvml.c). --json adds each instance's ids, compute instances, MIG device UUID and
 * processes (keys in docs/cli.md). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>

#include "cli-json.h"
#include "cli-table.h"
#include "mig-cli.h"

int mig_open_gpu(const struct mig_opts *o, struct gs_mig_nvml **n, struct gs_mig_gpu *g)
{
  gs_error_t err = NULL;
  if (gs_mig_nvml_open(n, &err) < 0)
    return cli_fail("mig", &err);
  int count = gs_mig_nvml_count(*n);
  if (o->gpu >= count) {
    gs_mig_nvml_close(*n);
    return cli_usage_error("mig", "--gpu %d: there %s %d GPU%s", o->gpu, count == 1 ? "is" : "are",
                           count, count == 1 ? "" : "s");
  }
  if (gs_mig_nvml_read(*n, o->gpu, g, &err) < 0) {
    gs_mig_nvml_close(*n);
    return cli_fail("mig", &err);
  }
  return CLI_OK;
}

static const char *mode_text(const struct gs_mig_gpu *g)
{
  if (!g->capable)
    return "n/a";
  if (g->mode != g->pending)
    return g->mode ? "on (off at reset)" : "off (on at reset)";
  return g->mode ? "on" : "off";
}

static json_t *pids_json(const pid_t *pids, int n)
{
  json_t *a = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_integer(pids[i]));
  return a;
}

static json_t *instance_json(const struct gs_mig_live *in)
{
  json_t *ci = json_array();
  for (int c = 0; c < in->nci; c++)
    json_array_append_new(ci, json_integer(in->ci_slices[c]));
  return json_pack("{s:s, s:i, s:i, s:i, s:o, s:s?, s:o}", "profile", in->profile, "start",
                   in->start, "size", in->size, "gpu_instance_id", (int) in->id,
                   "compute_instances", ci, "uuid", in->uuid[0] ? in->uuid : NULL, "processes",
                   pids_json(in->pids, in->npids));
}

static json_t *gpu_json(int index, const struct gs_mig_gpu *g)
{
  char layout[512];
  json_t *inst = json_array();
  for (int i = 0; i < g->n; i++)
    json_array_append_new(inst, instance_json(&g->inst[i]));
  gs_mig_gpu_layout(g, layout, sizeof(layout));
  return json_pack("{s:i, s:s, s:s, s:s?, s:s, s:o, s:o, s:o}", "index", index, "name", g->name,
                   "uuid", g->uuid, "model", g->model[0] ? g->model : NULL, "mig",
                   !g->capable ? "unsupported"
                     : g->mode ? "on"
                               : "off",
                   "pending", g->capable ? json_string(g->pending ? "on" : "off") : json_null(),
                   "layout", g->capable ? json_string(layout) : json_null(), "instances", inst);
}

static void add_row(struct table *t, int index, const struct gs_mig_gpu *g)
{
  char idx[16], layout[512];
  snprintf(idx, sizeof(idx), "%d", index);
  gs_mig_gpu_layout(g, layout, sizeof(layout));
  const char *row[] = { idx, g->name, mode_text(g),
                        g->capable && g->mode ? (g->n ? layout : "(none)") : "-" };
  table_add(t, row);
}

int mig_show(const struct mig_opts *o)
{
  static const char *const head[] = { "GPU", "NAME", "MIG", "INSTANCES" };
  struct gs_mig_nvml *n;
  gs_error_t err = NULL;
  int r = CLI_OK;
  if (gs_mig_nvml_open(&n, &err) < 0)
    return cli_fail("mig", &err);
  int count = gs_mig_nvml_count(n);
  if (o->gpu >= count) {
    gs_mig_nvml_close(n);
    return cli_usage_error("mig", "--gpu %d: there %s %d GPU%s", o->gpu, count == 1 ? "is" : "are",
                           count, count == 1 ? "" : "s");
  }
  struct table *t = table_new(4, "rlll", head);
  json_t *gpus = json_array();
  for (int i = 0; i < count && r == CLI_OK; i++) {
    struct gs_mig_gpu g;
    if (o->gpu >= 0 && i != o->gpu)
      continue;
    if (gs_mig_nvml_read(n, i, &g, &err) < 0) {
      r = cli_fail("mig", &err);
      break;
    }
    add_row(t, i, &g);
    json_array_append_new(gpus, gpu_json(i, &g));
  }
  if (r == CLI_OK && o->json)
    json_print_compact(json_pack("{s:O}", "gpus", gpus));
  else if (r == CLI_OK)
    table_print(t, stdout);
  json_decref(gpus);
  table_free(t);
  gs_mig_nvml_close(n);
  return r;
}
