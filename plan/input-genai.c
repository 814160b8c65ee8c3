/* The Alibaba GenAI trace (cluster-trace-v2026-GenAI) as `gpuslice plan` input: two CSVs,
 *   pod_gpu_duty_cycle_anon.csv        value,timestamp_anon,container_ip   (utilization %)
 *   pod_gpu_memory_used_bytes_anon.csv timestamp_anon,value,container_ip   (bytes)
 * Each file adds one half of every sample (the other half NAN); the data set's join
 * (gs_plan_data_finish) pairs them on (container_ip, timestamp), so both files must be
 * given. The workload is the container_ip (an anonymized hash). */
#include "plan-internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/csv.h>

static int genai_line(char *line, const char *path, size_t no, bool memory, struct gs_plan_data *d,
                      gs_error_t *err)
{
  char *f[3];
  int n = gs_csv_split(line, GS_CSV_PLAIN, f, 3, err);
  if (n < 0)
    return gs_error_prepend(err, "%s:%zu", path, no);
  if (n != 3 || !f[2][0])
    return gs_make_error(err, 0, "%s:%zu: want 3 fields with a container_ip", path, no);
  double t, v;
  const char *ts = memory ? f[0] : f[1], *val = memory ? f[1] : f[0];
  if (gs__plan_parse_number(ts, &t) < 0)
    return gs_make_error(err, 0, "%s:%zu: timestamp_anon '%.60s' is not a number", path, no, ts);
  if (gs__plan_parse_number(val, &v) < 0 || v < 0 || (!memory && v > 100))
    return gs_make_error(err, 0, "%s:%zu: value '%.60s': want a number %s", path, no, val,
                         memory ? ">= 0" : "0..100");
  struct gs_plan_workload *w = gs_plan_data_workload(d, f[2], err);
  if (!w)
    return -1;
  return gs_plan_workload_add(w, t, memory ? (double) NAN : v, memory ? v : (double) NAN, err);
}

struct genai_ctx {
  const char *path;
  bool memory;
  struct gs_plan_data *d;
};

static int genai_each(void *ctx, char *line, size_t no, gs_error_t *err)
{
  struct genai_ctx *c = ctx;
  if (no == 1 || !line[0]) /* the header, which told the format */
    return 0;
  return genai_line(line, c->path, no, c->memory, c->d, err);
}

int gs__plan_read_genai(FILE *f, const char *path, bool memory, struct gs_plan_data *d,
                        gs_error_t *err)
{
  struct genai_ctx c = { path, memory, d };
  return gs__plan_each_line(f, path, genai_each, &c, err);
}
