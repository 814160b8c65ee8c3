/* Private to the plan library (plan/): what its files share and its users do not see.
 * The readers, one file per input format (input-csv.c, input-prom.c, input-promjson.c,
 * input-genai.c), fill the planner's data set; input.c opens files (plain or gzip),
 * recognizes the format from the content and dispatches. The writers are output.c (table,
 * JSON), report-html.c (the HTML page) and report-svg.c (its charts). */
#ifndef GS_PLAN_INTERNAL_H
#define GS_PLAN_INTERNAL_H

#include <stdio.h>

#include <gpuslice/plan-io.h>

/* The readers; f is positioned at the start of the file. */
int gs__plan_read_csv(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err);
int gs__plan_read_prom(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err);
int gs__plan_read_promjson(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err);
int gs__plan_read_genai(FILE *f, const char *path, bool memory, struct gs_plan_data *d,
                        gs_error_t *err);

/* Labels of one Prometheus series, shared by the text and JSON readers. */
#define GS__PLAN_PROM_MAX_LABELS 48
struct gs__plan_prom_labels {
  int n;
  const char *key[GS__PLAN_PROM_MAX_LABELS], *val[GS__PLAN_PROM_MAX_LABELS];
};
/* The workload a DCGM series belongs to (see input-prom.c), with its labels kept; checks
 * the value's range. where ("FILE:LINE") starts error messages. */
struct gs_plan_workload *gs__plan_prom_workload(struct gs_plan_data *d,
                                                const struct gs__plan_prom_labels *l, bool memory,
                                                double value, const char *where, gs_error_t *err);

/* Calls fn for each line of f, without its line end, numbered from 1; stops at the first
 * fn that returns < 0. A NUL byte in a line is an error ("FILE:LINE: NUL byte in line"). */
typedef int (*gs__plan_line_fn)(void *ctx, char *line, size_t no, gs_error_t *err);
int gs__plan_each_line(FILE *f, const char *path, gs__plan_line_fn fn, void *ctx, gs_error_t *err);

/* Parses a whole string as a finite number; 0 or -1. */
int gs__plan_parse_number(const char *s, double *out);

/* Counts per mechanism (indexed by enum gs_plan_mechanism) and idle workloads. */
void gs__plan_count(const struct gs_plan_run *p, int by_mech[5], int *idle);

/* The charts of the report, each one <svg> element. */
void gs__plan_svg_gpus(FILE *f, const struct gs_plan_run *p);
void gs__plan_svg_waterfall(FILE *f, const struct gs_plan_run *p);
void gs__plan_svg_util(FILE *f, const struct gs_plan_run *p);
void gs__plan_svg_mig(FILE *f, const struct gs_plan_run *p);
/* "$12,345" (or "$1.2M", "$45k" when shorter). */
void gs__plan_money(char *out, size_t len, double v, bool shorter);
/* Writes s with &, <, >, " and ' escaped. */
void gs__plan_html_escape(FILE *f, const char *s);
/* The colour of each mechanism in the report. */
const char *gs__plan_mech_colour(enum gs_plan_mechanism m);

#endif
