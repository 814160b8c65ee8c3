/* `gpuslice plan` as text: the table people read in a terminal and the JSON document
 * (keys listed in docs/planner.md, stable). The HTML report is report-html.c. */
#include "plan-internal.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

void gs__plan_count(const struct gs_plan_run *p, int by_mech[5], int *idle)
{
  memset(by_mech, 0, 5 * sizeof(*by_mech));
  *idle = 0;
  for (size_t i = 0; i < p->data.n; i++) {
    by_mech[p->rec[i].mech]++;
    *idle += p->rec[i].idle;
  }
}

/* "mig 1g.10gb", "fraction 9.0G/30%", "mps #0" ... */
static void plan_label(const struct gs_plan_rec *r, char *out, size_t len)
{
  const char *m = gs_plan_mechanism_name(r->mech);
  if (r->mech == GS_PLAN_MIG)
    snprintf(out, len, "%s %s", m, r->profile->name);
  else if (r->mech == GS_PLAN_FRACTION)
    snprintf(out, len, "%s %.1fG/%d%%", m, (double) r->vram_bytes / GIB, r->compute_pct);
  else if (r->mech == GS_PLAN_MPS)
    snprintf(out, len, "%s #%d", m, r->mps_group);
  else
    snprintf(out, len, "%s", m);
}

static void table_fleet(FILE *f, const struct gs_plan_run *p)
{
  const struct gs_plan_fleet *fl = &p->fleet;
  fprintf(f, "\nGPUs today %d, after %d (dedicated %d, MIG %d, shared %d)\n", fl->gpus_today,
          fl->gpus_after, fl->gpus_dedicated, fl->gpus_mig, fl->gpus_shared);
  for (int g = 0; g < fl->mig.ngpus; g++) {
    fprintf(f, "  MIG GPU %d:", g);
    for (int i = 0; i < fl->mig.n; i++)
      if (fl->mig.inst[i].gpu == g)
        fprintf(f, " %s@%d", fl->mig.inst[i].p->name, fl->mig.inst[i].start);
    fputc('\n', f);
  }
  fprintf(f, "Monthly cost (%s at $%.4f/GPU-hour on demand, %.0f h): $%.2f -> $%.2f\n",
          p->gpu.model, p->price->on_demand, GS_HOURS_PER_MONTH, fl->monthly_before,
          fl->monthly_after);
  for (int i = 0; i < fl->nsteps; i++)
    fprintf(f, "  %-60s $%.2f -> $%.2f\n", fl->steps[i].what, fl->steps[i].monthly_before,
            fl->steps[i].monthly_after);
}

void gs_plan_write_table(FILE *f, const struct gs_plan_run *p)
{
  int by[5], idle;
  gs__plan_count(p, by, &idle);
  fprintf(f,
          "%zu workloads on %s, headroom %.0f%%: %d dedicated, %d MIG, %d MPS, "
          "%d time-slice, %d fraction; %d idle\n\n",
          p->data.n, p->gpu.model, p->rules.headroom * 100, by[0], by[1], by[2], by[3], by[4],
          idle);
  fprintf(f, "%-32s %21s %21s %5s %-20s %s\n", "WORKLOAD", "UTIL% p50/p95/max",
          "MEM GiB p50/p95/max", "IDLE", "PLAN", "REASON");
  for (size_t i = 0; i < p->data.n; i++) {
    const struct gs_plan_stats *s = &p->st[i];
    char util[32], mem[32], plan[40];
    snprintf(util, sizeof(util), "%.1f/%.1f/%.1f", s->util_p50, s->util_p95, s->util_max);
    snprintf(mem, sizeof(mem), "%.1f/%.1f/%.1f", s->mem_p50 / GIB, s->mem_p95 / GIB,
             s->mem_max / GIB);
    plan_label(&p->rec[i], plan, sizeof(plan));
    fprintf(f, "%-32.32s %21s %21s %4.0f%%%s %-20s %s\n", p->data.w[i]->name, util, mem,
            s->idle_fraction * 100, p->rec[i].idle ? "!" : " ", plan, p->rec[i].reason);
  }
  table_fleet(f, p);
}

/* A number, or null when unknown. */
static json_t *num(double v)
{
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *workload_json(const struct gs_plan_run *p, size_t i)
{
  const struct gs_plan_stats *s = &p->st[i];
  const struct gs_plan_rec *r = &p->rec[i];
  return json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b, s:s, s:o, s:o, s:I, "
                   "s:i, s:i, s:s}",
                   "name", p->data.w[i]->name, "samples", (json_int_t) s->samples, "util_p50",
                   s->util_p50, "util_p95", s->util_p95, "util_max", s->util_max, "mem_p50_bytes",
                   s->mem_p50, "mem_p95_bytes", s->mem_p95, "mem_max_bytes", s->mem_max,
                   "idle_fraction", s->idle_fraction, "idle", r->idle, "mechanism",
                   gs_plan_mechanism_name(r->mech), "mig_profile",
                   r->profile ? json_string(r->profile->name) : json_null(), "mps_group",
                   r->mps_group >= 0 ? json_integer(r->mps_group) : json_null(), "vram_bytes",
                   (json_int_t) r->vram_bytes, "compute_pct", r->compute_pct, "share_milli",
                   r->share_milli, "reason", r->reason);
}

static json_t *mig_json(const struct gs_plan_fleet *fl)
{
  json_t *gpus = json_array();
  for (int g = 0; g < fl->mig.ngpus; g++) {
    json_t *inst = json_array();
    for (int i = 0; i < fl->mig.n; i++)
      if (fl->mig.inst[i].gpu == g) {
        char s[48];
        snprintf(s, sizeof(s), "%s@%d", fl->mig.inst[i].p->name, fl->mig.inst[i].start);
        json_array_append_new(inst, json_string(s));
      }
    json_array_append_new(gpus, json_pack("{s:i, s:o}", "gpu", g, "instances", inst));
  }
  return gpus;
}

static json_t *cost_json(const struct gs_plan_run *p)
{
  const struct gs_plan_fleet *fl = &p->fleet;
  json_t *steps = json_array();
  for (int i = 0; i < fl->nsteps; i++)
    json_array_append_new(steps,
                          json_pack("{s:s, s:f, s:f}", "what", fl->steps[i].what, "monthly_before",
                                    fl->steps[i].monthly_before, "monthly_after",
                                    fl->steps[i].monthly_after));
  double saving = fl->monthly_before > 0 ? 1.0 - fl->monthly_after / fl->monthly_before : 0;
  return json_pack("{s:{s:o, s:o, s:o}, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:o}",
                   "price_per_gpu_hour", "on_demand", num(p->price->on_demand), "spot",
                   num(p->price->spot), "commit_1y", num(p->price->commit_1y), "price_table",
                   p->price_table, "price_source", p->price->source, "price_as_of", p->price->as_of,
                   "hours_per_month", GS_HOURS_PER_MONTH, "monthly_before", fl->monthly_before,
                   "monthly_after", fl->monthly_after, "saving_fraction", saving, "spot_fraction",
                   fl->spot_fraction, "commit_fraction", fl->commit_fraction, "steps", steps);
}

static json_t *summary_json(const struct gs_plan_run *p)
{
  int by[5], idle;
  gs__plan_count(p, by, &idle);
  return json_pack("{s:I, s:i, s:{s:i, s:i, s:i, s:i, s:i}, s:I, s:I}", "workloads",
                   (json_int_t) p->data.n, "idle", idle, "by_mechanism", "dedicated", by[0], "mig",
                   by[1], "mps", by[2], "time-slice", by[3], "fraction", by[4], "samples_unjoined",
                   (json_int_t) p->finish.samples_unjoined, "workloads_dropped",
                   (json_int_t) p->finish.workloads_dropped);
}

static json_t *plan_json(const struct gs_plan_run *p)
{
  json_t *inputs = json_array(), *workloads = json_array();
  for (int i = 0; i < p->ninputs; i++)
    json_array_append_new(inputs,
                          json_pack("{s:s, s:s}", "path", p->inputs[i].path, "format",
                                    gs_plan_input_format_name(p->inputs[i].format)));
  for (size_t i = 0; i < p->data.n; i++)
    json_array_append_new(workloads, workload_json(p, i));
  const struct gs_plan_fleet *fl = &p->fleet;
  return json_pack("{s:s, s:f, s:o, s:o, s:o, s:{s:i, s:i, s:i, s:i, s:i, s:o}, s:o}", "gpu_model",
                   p->gpu.model, "headroom", p->rules.headroom, "inputs", inputs, "summary",
                   summary_json(p), "workloads", workloads, "fleet", "gpus_today", fl->gpus_today,
                   "gpus_after", fl->gpus_after, "gpus_dedicated", fl->gpus_dedicated, "gpus_mig",
                   fl->gpus_mig, "gpus_shared", fl->gpus_shared, "mig_layout", mig_json(fl), "cost",
                   cost_json(p));
}

int gs_plan_write_json(FILE *f, const struct gs_plan_run *p)
{
  json_t *j = plan_json(p);
  if (!j)
    return -1;
  int r = json_dumpf(j, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  fputc('\n', f);
  json_decref(j);
  return r;
}
