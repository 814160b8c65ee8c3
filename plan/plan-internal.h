/* Internal to `gpuslice plan`: the metric readers. One file per input format
 * (plan-input-csv.c, plan-input-prom.c, plan-input-promjson.c, plan-input-genai.c) fills
 * the planner's data set (lib/gs-plan.h); plan-input.c opens files (plain or gzip),
 * recognizes the format from the content and dispatches.
 *
 * Every error about the content names the file and line as "FILE:LINE: reason". */
#ifndef GS_CLI_PLAN_INPUT_H
#define GS_CLI_PLAN_INPUT_H

#include <stdio.h>

#include "gpuslice.h"
#include "gs-plan.h"

enum plan_input_format {
  PLAN_IN_CSV,        /* timestamp,workload,gpu_util_pct,fb_used_bytes[,label=value...] */
  PLAN_IN_PROM,       /* dcgm-exporter / Prometheus exposition text, one or more snapshots */
  PLAN_IN_PROMJSON,   /* Prometheus range-query JSON (resultType matrix) */
  PLAN_IN_GENAI_UTIL, /* Alibaba GenAI pod_gpu_duty_cycle_anon.csv */
  PLAN_IN_GENAI_MEM,  /* Alibaba GenAI pod_gpu_memory_used_bytes_anon.csv */
};

const char *plan_input_format_name(enum plan_input_format f);

/* Reads one metrics file (gzip or plain) into d, whatever its format. */
int plan_input_read(const char *path, struct gs_plan_data *d, enum plan_input_format *fmt,
                    gs_error_t *err);

/* The readers; f is positioned at the start of the file. */
int plan_read_csv(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err);
int plan_read_prom(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err);
int plan_read_promjson(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err);
int plan_read_genai(FILE *f, const char *path, bool memory, struct gs_plan_data *d,
                    gs_error_t *err);

/* Labels of one Prometheus series, shared by the text and JSON readers. */
#define PLAN_PROM_MAX_LABELS 48
struct plan_prom_labels {
  int n;
  const char *key[PLAN_PROM_MAX_LABELS], *val[PLAN_PROM_MAX_LABELS];
};
/* The workload a DCGM series belongs to (see plan-input-prom.c), with its labels kept;
 * checks the value's range. where ("FILE:LINE") starts error messages. */
struct gs_plan_workload *plan_prom_workload(struct gs_plan_data *d,
                                           const struct plan_prom_labels *l, bool memory,
                                           double value, const char *where, gs_error_t *err);

/* Calls fn for each line of f, without its line end, numbered from 1; stops at the first
 * fn that returns < 0. A NUL byte in a line is an error ("FILE:LINE: NUL byte in line"). */
typedef int (*plan_line_fn)(void *ctx, char *line, size_t no, gs_error_t *err);
int plan_each_line(FILE *f, const char *path, plan_line_fn fn, void *ctx, gs_error_t *err);

/* Parses a whole string as a finite number; 0 or -1. */
int plan_parse_number(const char *s, double *out);
/* Removes a trailing "\n" or "\r\n"; returns the new length. */
size_t plan_chomp(char *line, size_t len);

#endif
