/* Internal to `gpuslice plan` (plan.c): what one run computes, and the writers that show
 * it: plan-output.c (table, JSON), plan-report-html.c (the HTML page) and
 * plan-report-svg.c (its charts). */
#ifndef GS_CLI_PLAN_H
#define GS_CLI_PLAN_H

#include <stdio.h>

#include "gpuslice.h"
#include "gs-plan.h"
#include "plan-internal.h"

struct plan_input {
  const char *path;
  enum plan_input_format format;
};

struct plan_run {
  struct plan_input *inputs;
  int ninputs;
  struct gs_plan_data data;
  struct gs_plan_finish finish;
  struct gs_plan_rules rules;
  struct gs_plan_gpu gpu;
  struct gs_plan_stats *st;   /* one per workload */
  struct gs_plan_rec *rec;    /* one per workload */
  struct gs_plan_fleet fleet;
  const struct gs_price *price;
  const char *price_table;    /* the table's name, for the report */
};

/* Counts per mechanism (indexed by enum gs_plan_mechanism) and idle workloads. */
void plan_count(const struct plan_run *p, int by_mech[5], int *idle);

void plan_write_table(FILE *f, const struct plan_run *p);
/* The JSON document; docs/planner.md lists its keys. Returns 0 or -1. */
int plan_write_json(FILE *f, const struct plan_run *p);
void plan_write_html(FILE *f, const struct plan_run *p);

/* The charts of the report, each one <svg> element. */
void plan_svg_gpus(FILE *f, const struct plan_run *p);
void plan_svg_waterfall(FILE *f, const struct plan_run *p);
void plan_svg_util(FILE *f, const struct plan_run *p);
void plan_svg_mig(FILE *f, const struct plan_run *p);
/* "$12,345" (or "$1.2M", "$45k" when shorter). */
void plan_money(char *out, size_t len, double v, bool shorter);
/* Writes s with &, <, >, " and ' escaped. */
void plan_html_escape(FILE *f, const char *s);
/* The colour of each mechanism in the report. */
const char *plan_mech_colour(enum gs_plan_mechanism m);

#endif
