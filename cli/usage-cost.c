/* `gpuslice usage --cost`: puts a price on the daemon's usage report. Each group's used cost
 * is its GPU-seconds at the GPU's on-demand rate; its idle cost is what it held (its compute
 * share or memory limit, whichever is the larger part of the GPU) but did not use; what no
 * tenant held is the node's unallocated cost, shown apart. With served requests reported
 * (include/gpuslice/served.h), the cost per 1,000 requests is the used cost over them. The
 * reclaimed cost is what suspensions gave back: the report's reclaimed GPU-seconds at the rate.
 * The arithmetic is lib/cost.c's; this file fetches the model, looks up the rate, and adds
 * the figures to the reply. */
#include "usage-cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli-daemon-request.h"
#include <gpuslice/cost.h>
#include <gpuslice/price.h>

/* The model of the node's first GPU, as the daemon reports it. */
static int node_model(const char *socket, char *out, size_t len)
{
  _cleanup_json_ json_t *reply = NULL;
  int r = verb_request("usage", socket, "GET", "/v1/gpus", NULL, &reply);
  if (r != CLI_OK)
    return r;
  const char *name = jstr(json_array_get(json_object_get(reply, "gpus"), 0), "name");
  if (!name) {
    fprintf(stderr, "gpuslice: usage: the daemon reports no GPU; give --gpu-model\n");
    return CLI_FAILURE;
  }
  snprintf(out, len, "%s", name);
  return CLI_OK;
}

static int on_demand_rate(const struct usage_cost_opts *o, const char *model, double *rate,
                          char *canon, size_t len)
{
  gs_error_t err = NULL;
  struct gs_price_table *t = NULL;
  int rc = o->prices ? gs_price_table_load(o->prices, &t, &err) : gs_price_table_default(&t, &err);
  const struct gs_price *p = rc == 0 ? gs_price_find(t, model, &err) : NULL;
  if (p && !isfinite(p->on_demand))
    gs_make_error(&err, 0, "no on-demand price for '%s' in %s", p->model,
                  o->prices ? o->prices : "the built-in table");
  else if (p) {
    *rate = p->on_demand;
    snprintf(canon, len, "%s", p->model);
  }
  gs_price_table_free(t);
  return err ? cli_fail("usage", &err) : CLI_OK;
}

/* Dollars to 10 decimals: enough for a fraction of a cent per 1,000 requests, and no
 * binary noise such as 7.2000000000000002 in the JSON. */
static json_t *money(double x)
{
  return isfinite(x) ? json_real(gs_cost_round(x, 10)) : json_null();
}

static void add_row_costs(json_t *rows, const struct gs_cost_share *share, double rate)
{
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row)
  {
    double per_1k =
      gs_cost_per_1k(jnum(row, "gpu_seconds", 0), rate, jnum(row, "served_requests", 0));
    json_object_set_new(row, "cost",
                        json_pack("{s:o, s:o, s:o, s:o}", "used", money(share[i].used_cost), "idle",
                                  money(share[i].idle_cost), "total",
                                  money(share[i].used_cost + share[i].idle_cost), "per_1k_requests",
                                  money(per_1k)));
    /* A daemon from before the idle rules (#19) reports no reclaimed GPU-seconds. */
    if (json_object_get(row, "reclaimed_gpu_seconds"))
      json_object_set_new(json_object_get(row, "cost"), "reclaimed",
                          money(jnum(row, "reclaimed_gpu_seconds", 0) * rate / 3600.0));
  }
}

/* Attributes the rows' GPU-seconds at rate; capacity < 0 when the report is not the whole node's. */
static int attribute(json_t *reply, double rate, const char *model)
{
  gs_error_t err = NULL;
  json_t *rows = json_object_get(reply, "rows");
  size_t n = json_array_size(rows);
  struct gs_cost_usage *in = xcalloc(n + 1, sizeof(*in));
  struct gs_cost_share *share = xcalloc(n + 1, sizeof(*share));
  struct gs_cost_totals tot;
  double allocated = 0, reclaimed = 0, capacity = jnum(reply, "capacity_gpu_seconds", -1);
  bool has_reclaimed = false;
  for (size_t i = 0; i < n; i++) {
    in[i].used_gpu_seconds = jnum(json_array_get(rows, i), "gpu_seconds", 0);
    in[i].allocated_gpu_seconds = jnum(json_array_get(rows, i), "allocated_gpu_seconds", 0);
    allocated += fmax(in[i].allocated_gpu_seconds, in[i].used_gpu_seconds);
    reclaimed += jnum(json_array_get(rows, i), "reclaimed_gpu_seconds", 0);
    has_reclaimed |= json_object_get(json_array_get(rows, i), "reclaimed_gpu_seconds") != NULL;
  }
  int rc =
    gs_cost_attribute(in, (int) n, capacity >= 0 ? capacity : allocated, rate, share, &tot, &err);
  if (rc == 0) {
    add_row_costs(rows, share, rate);
    json_object_set_new(reply, "cost",
                        json_pack("{s:s, s:f, s:o, s:o, s:o, s:o}", "model", model,
                                  "price_per_gpu_hour", rate, "capacity",
                                  capacity >= 0 ? money(tot.capacity_cost) : json_null(), "used",
                                  money(tot.used_cost), "idle", money(tot.idle_cost), "unallocated",
                                  capacity >= 0 ? money(tot.unallocated_cost) : json_null()));
    if (has_reclaimed)
      json_object_set_new(json_object_get(reply, "cost"), "reclaimed",
                          money(reclaimed * rate / 3600.0));
  }
  free(in);
  free(share);
  return rc == 0 ? CLI_OK : cli_fail("usage", &err);
}

int usage_cost_add(json_t *reply, const struct usage_cost_opts *o)
{
  char model[96], canon[24];
  double rate = 0;
  int r = o->model ? (snprintf(model, sizeof(model), "%s", o->model), CLI_OK)
                   : node_model(o->socket, model, sizeof(model));
  if (r != CLI_OK || (r = on_demand_rate(o, model, &rate, canon, sizeof(canon))) != CLI_OK)
    return r;
  return attribute(reply, rate, canon);
}

static const char *dollars(char *buf, const json_t *v)
{
  if (!json_is_number(v))
    return "-";
  snprintf(buf, TABLE_CELL, "$%.4f", json_number_value(v));
  return buf;
}

void usage_cost_print(const json_t *reply, const char *by)
{
  const json_t *cost = json_object_get(reply, "cost"), *row;
  const char *headers[] = { by,     "GPU-HOURS", "HELD-HOURS",     "USED",
                            "IDLE", "TOTAL",     "PER-1K-REQUESTS" };
  struct table *t = table_new(7, "lrrrrrr", headers);
  size_t i;
  json_array_foreach(json_object_get(reply, "rows"), i, row)
  {
    char gh[TABLE_CELL], ah[TABLE_CELL], u[TABLE_CELL], d[TABLE_CELL], tot[TABLE_CELL],
      k[TABLE_CELL];
    const json_t *c = json_object_get(row, "cost");
    const char *cells[] = { jstr(row, "key"),
                            fmt_number(gh, jnum(row, "gpu_seconds", 0) / 3600, 3),
                            fmt_number(ah, jnum(row, "allocated_gpu_seconds", 0) / 3600, 3),
                            dollars(u, json_object_get(c, "used")),
                            dollars(d, json_object_get(c, "idle")),
                            dollars(tot, json_object_get(c, "total")),
                            dollars(k, json_object_get(c, "per_1k_requests")) };
    table_add(t, cells);
  }
  char cap[TABLE_CELL], used[TABLE_CELL], idle[TABLE_CELL], un[TABLE_CELL];
  printf("Cost at %s on demand, $%.4f per GPU-hour\n\n", jstr(cost, "model"),
         jnum(cost, "price_per_gpu_hour", 0));
  table_print(t, stdout);
  table_free(t);
  printf("\nNode: capacity %s = used %s + idle (held, unused) %s + unallocated %s\n",
         dollars(cap, json_object_get(cost, "capacity")),
         dollars(used, json_object_get(cost, "used")), dollars(idle, json_object_get(cost, "idle")),
         dollars(un, json_object_get(cost, "unallocated")));
  char rec[TABLE_CELL];
  if (json_object_get(cost, "reclaimed"))
    printf("Reclaimed by suspensions (idle rules, schedules, gpuslice suspend): %s\n",
           dollars(rec, json_object_get(cost, "reclaimed")));
  if (!json_is_number(json_object_get(cost, "capacity")))
    printf(
      "(capacity and unallocated cost need the whole node's report: root or the gpuslice group)\n");
}
