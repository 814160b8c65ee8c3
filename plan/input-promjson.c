/* A Prometheus range-query export as `gpuslice plan` input:
 *   {"status":"success","data":{"resultType":"matrix","result":[
 *     {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","pod":..},"values":[[t,"v"],..]},..]}}
 * (what /api/v1/query_range returns). Each series must name its metric in __name__:
 * DCGM_FI_DEV_GPU_UTIL (%) or DCGM_FI_DEV_FB_USED (MiB); other metrics are skipped. Both
 * may be in one file or in two. Workloads are named from the labels as for the
 * exposition text (input-prom.c). */
#include "plan-internal.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int labels_of(json_t *metric, struct gs__plan_prom_labels *l)
{
  const char *k;
  json_t *v;
  l->n = 0;
  json_object_foreach(metric, k, v)
  {
    if (!json_is_string(v) || l->n == GS__PLAN_PROM_MAX_LABELS)
      continue;
    l->key[l->n] = k;
    l->val[l->n++] = json_string_value(v);
  }
  return 0;
}

/* One [t, "v"] pair; -1 when malformed. */
static int point(json_t *p, double *t, double *v)
{
  json_t *jt = json_array_get(p, 0), *jv = json_array_get(p, 1);
  if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_number(jt) || !json_is_string(jv))
    return -1;
  *t = json_number_value(jt);
  return gs__plan_parse_number(json_string_value(jv), v);
}

static int add_series(const char *path, size_t idx, json_t *series, struct gs_plan_data *d,
                      gs_error_t *err)
{
  json_t *metric = json_object_get(series, "metric"), *values = json_object_get(series, "values");
  const char *name = json_string_value(json_object_get(metric, "__name__"));
  if (!json_is_object(metric) || !json_is_array(values))
    return gs_make_error(err, 0, "%s: result %zu: want \"metric\" and \"values\"", path, idx);
  if (!name)
    return gs_make_error(err, 0,
                         "%s: result %zu: no __name__ (query the DCGM metric by name, "
                         "not an aggregation that drops it)",
                         path, idx);
  bool mem = strcmp(name, "DCGM_FI_DEV_FB_USED") == 0;
  if (!mem && strcmp(name, "DCGM_FI_DEV_GPU_UTIL") != 0)
    return 0;
  struct gs__plan_prom_labels l;
  labels_of(metric, &l);
  char where[600];
  snprintf(where, sizeof(where), "%s: result %zu", path, idx);
  size_t i;
  json_t *p;
  json_array_foreach(values, i, p)
  {
    double t, v;
    if (point(p, &t, &v) < 0)
      return gs_make_error(err, 0, "%s: value %zu: want [time, \"number\"]", where, i);
    struct gs_plan_workload *w = gs__plan_prom_workload(d, &l, mem, v, where, err);
    if (!w ||
        gs_plan_workload_add(w, t, mem ? (double) NAN : v, mem ? v * 1048576.0 : (double) NAN,
                             err) < 0)
      return -1;
  }
  return 0;
}

int gs__plan_read_promjson(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err)
{
  json_error_t jerr;
  json_t *root = json_loadf(f, 0, &jerr);
  if (!root)
    return gs_make_error(err, 0, "%s:%d: %s", path, jerr.line, jerr.text);
  json_t *data = json_object_get(root, "data");
  const char *status = json_string_value(json_object_get(root, "status"));
  const char *type = json_string_value(json_object_get(data, "resultType"));
  json_t *result = json_object_get(data, "result");
  int r = 0;
  if (!status || strcmp(status, "success") != 0)
    r = gs_make_error(err, 0, "%s: status is not \"success\"", path);
  else if (!type || strcmp(type, "matrix") != 0 || !json_is_array(result))
    r = gs_make_error(err, 0,
                      "%s: want data.resultType \"matrix\" with a result array "
                      "(a range query)",
                      path);
  size_t i;
  json_t *s;
  if (r == 0)
    json_array_foreach(result, i, s)
    {
      if ((r = add_series(path, i, s, d, err)) < 0)
        break;
    }
  json_decref(root);
  return r;
}
