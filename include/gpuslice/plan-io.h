/* The one public header of the plan library (gpuslice_plan, plan/): what its users (the
 * CLI's `plan` verb, the fuzz target) include. It reads metrics files into the planner's
 * data set (the model, include/gpuslice/plan.h, included here) and writes what one run computed as
 * a table, a JSON document or an HTML report. Its own helpers are in plan-internal.h.
 *
 * Every error about a file's content names the file and line as "FILE:LINE: reason". */
#ifndef GS_PLAN_IO_H
#define GS_PLAN_IO_H

#include <stdio.h>

#include <gpuslice.h>
#include <gpuslice/plan.h>

enum gs_plan_input_format {
  GS_PLAN_IN_CSV,        /* timestamp,workload,gpu_util_pct,fb_used_bytes[,label=value...] */
  GS_PLAN_IN_PROM,       /* dcgm-exporter / Prometheus exposition text, one or more snapshots */
  GS_PLAN_IN_PROMJSON,   /* Prometheus range-query JSON (resultType matrix) */
  GS_PLAN_IN_GENAI_UTIL, /* Alibaba GenAI pod_gpu_duty_cycle_anon.csv */
  GS_PLAN_IN_GENAI_MEM,  /* Alibaba GenAI pod_gpu_memory_used_bytes_anon.csv */
};

/* "csv", "prometheus", ... as the JSON document names them; "?" for no format. */
const char *gs_plan_input_format_name(enum gs_plan_input_format f);

/* Reads one metrics file (gzip or plain) into d, telling its format from its content. */
int gs_plan_input_read(const char *path, struct gs_plan_data *d, enum gs_plan_input_format *fmt,
                       gs_error_t *err);
/* Reads f, positioned at the start of a file of format fmt, into d; path names it in
 * errors. For callers that know the format (or choose it, as the fuzz target does). */
int gs_plan_read(FILE *f, const char *path, enum gs_plan_input_format fmt, struct gs_plan_data *d,
                 gs_error_t *err);

struct gs_plan_input {
  const char *path;
  enum gs_plan_input_format format;
};

/* What one run of the planner computed, from its inputs to its fleet and price. */
struct gs_plan_run {
  struct gs_plan_input *inputs;
  int ninputs;
  struct gs_plan_data data;
  struct gs_plan_finish finish;
  struct gs_plan_rules rules;
  struct gs_plan_gpu gpu;
  struct gs_plan_stats *st; /* one per workload */
  struct gs_plan_rec *rec;  /* one per workload */
  struct gs_plan_fleet fleet;
  const struct gs_price *price;
  const char *price_table; /* the table's name, for the report */
};

/* The writers. The caller checks ferror(f) for write errors. */
void gs_plan_write_table(FILE *f, const struct gs_plan_run *p);
/* The JSON document; docs/planner.md lists its keys. Returns 0 or -1. */
int gs_plan_write_json(FILE *f, const struct gs_plan_run *p);
/* The self-contained HTML report (inline CSS and SVG). */
void gs_plan_write_html(FILE *f, const struct gs_plan_run *p);

#endif
