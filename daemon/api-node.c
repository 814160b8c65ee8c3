/* The node routes: GET /v1/health (also /health) and GET /v1/gpus, both from the last
 * sample. Every local user may read them: they say nothing about anyone's tenants. */
#include "api.h"

#include <unistd.h>

#include <gpuslice/version.h>

json_t *api_health_json(const struct daemon *d)
{
  return json_pack(
    "{s:s, s:s, s:i, s:f, s:i, s:i, s:I, s:I, s:f, s:f, s:f}", "status", "ok", "version",
    GS_VERSION, "pid", (int) getpid(), "uptime_s", daemon_uptime(d), "gpus", d->snap.ngpus,
    "tenants", d->reg.n, "samples_total", (json_int_t) d->health.samples_total,
    "sample_errors_total", (json_int_t) d->health.sample_errors_total, "last_sample_duration_s",
    d->health.last_sample_duration_s, "sample_seconds_total", d->health.sample_seconds_total,
    "nvml_seconds_total", d->health.nvml_seconds_total);
}

static int tenants_on(const struct daemon *d, int g)
{
  int n = 0;
  for (int i = 0; i < d->reg.n; i++)
    n += d->reg.v[i]->gpu[g].used_bytes > 0 || d->reg.v[i]->gpu[g].gpu_ns > 0;
  return n;
}

/* The GPU's MIG GPU instances, as the last sample read them. */
static json_t *mig_json(const struct gs_snap_gpu *g)
{
  json_t *a = json_array();
  for (int k = 0; k < g->nmig && k < GS_SNAP_MIG_MAX; k++)
    json_array_append_new(a,
                          json_pack("{s:s, s:i, s:s, s:I, s:I}", "profile", g->mig[k].profile,
                                    "gpu_instance_id", (int) g->mig[k].gi_id, "uuid",
                                    g->mig[k].uuid, "memory_total_bytes",
                                    (json_int_t) g->mig[k].fb_total_bytes, "memory_used_bytes",
                                    (json_int_t) g->mig[k].fb_used_bytes));
  return a;
}

static json_t *gpu_base_json(const struct daemon *d, const struct gs_snap_gpu *g)
{
  return json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:f, s:i, s:i, s:i, s:i, s:i}",
                   "index", g->index, "uuid", g->uuid, "name", g->model, "pci_bus_id",
                   g->pci_bus_id, "compute_capability", nvml_compute_capability(d->nvml, g->index),
                   "memory_total_bytes", (json_int_t) g->fb_total_bytes, "memory_used_bytes",
                   (json_int_t) g->fb_used_bytes, "utilization_pct", (int) g->util_pct, "power_w",
                   g->power_mw / 1000.0, "temperature_c", (int) g->temp_c, "sm_clock_mhz",
                   (int) g->sm_clock_mhz, "mem_clock_mhz", (int) g->mem_clock_mhz, "tenants",
                   tenants_on(d, g->index), "processes", nvml_process_count(d->nvml, g->index));
}

static json_t *gpu_json(const struct daemon *d, const struct gs_snap_gpu *g)
{
  json_t *j = gpu_base_json(d, g);
  json_object_set_new(j, "sharing", json_string(g->sharing));
  json_object_set_new(j, "mig_instances", mig_json(g));
  json_object_set_new(j, "mps", mps_gpu_json(d, g->index));
  return j;
}

int api_node_health(struct api_req *rq, struct api_reply *r)
{
  return api_ok(r, 200, api_health_json(rq->d));
}

int api_node_gpus(struct api_req *rq, struct api_reply *r)
{
  json_t *a = json_array();
  for (int i = 0; i < rq->d->snap.ngpus; i++)
    json_array_append_new(a, gpu_json(rq->d, &rq->d->snap.gpus[i]));
  return api_ok(r, 200, json_pack("{s:o}", "gpus", a));
}
