/* One sample, every interval: read every GPU through NVML and every tenant's ledger, adopt
 * tenants nobody registered, rebuild the node snapshot (include/gpuslice/snapshot.h) that the API and
 * /metrics serve, check NVML's accounting against the limits (verifier.c), write the interval
 * to the usage ledger in one transaction, and end the tenants whose owner has gone. */
#include "daemon.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "idle.h"
#include "suspend.h"

static bool touched(const struct tenant *t, int g)
{
  const struct tenant_gpu *tg = &t->gpu[g];
  return tg->used_bytes || tg->peak_bytes || tg->gpu_ns || tg->nvml_bytes || tg->vram_violations ||
    tg->compute_violations;
}

/* A tenant that has touched no GPU yet gets one row, for the GPU it is limited on or GPU 0. */
static int default_gpu(const struct tenant *t, int ngpus)
{
  for (int g = 0; g < ngpus; g++)
    if (atomic_load(&t->limits->limit_bytes[g]) != GS_LIMIT_NONE)
      return g;
  return 0;
}

bool tenant_gpu_row(const struct tenant *t, int g, int ngpus)
{
  if (g >= ngpus)
    return false;
  if (touched(t, g))
    return true;
  for (int k = 0; k < ngpus; k++)
    if (touched(t, k))
      return false;
  return g == default_gpu(t, ngpus);
}

static void snap_label(const char *key, const char *value, void *data)
{
  struct gs_snap_tenant *row = data;
  if (row->nlabels >= GS_SNAP_LABELS_MAX)
    return;
  struct gs_snap_label *l = &row->labels[row->nlabels++];
  snprintf(l->key, sizeof(l->key), "%s", key);
  snprintf(l->value, sizeof(l->value), "%s", value);
}

static void snap_suspension(struct gs_snap_tenant *row, const struct tenant *t, int g)
{
  const struct tenant_suspend *s = &t->sus;
  row->run_state = (int) suspend_state(t);
  row->suspensions = s->suspensions;
  row->suspended_bytes =
    row->run_state == GS_RUN_RUNNING ? 0 : atomic_load(&t->limits->suspended_bytes[g]);
  row->suspended_seconds = s->suspended_s;
  if (s->started_unix > 0)
    row->suspended_seconds += daemon_now_unix() - s->started_unix;
  row->resumes = s->resumes;
  row->resume_seconds = s->resume_s;
  row->resume_waits = s->asked.waits;
  row->resume_wait_seconds = (double) s->asked.wait_ns_total / 1e9;
}

static void snap_row(struct gs_snap_tenant *row, const struct tenant *t, int g)
{
  const struct tenant_gpu *tg = &t->gpu[g];
  uint32_t cppm = atomic_load(&t->limits->compute.limit_ppm);
  memset(row, 0, sizeof(*row));
  snprintf(row->name, sizeof(row->name), "%s", t->name);
  row->uid = t->uid;
  row->owner_pid = t->owner_pid;
  row->start_unix_ns = t->created_unix_ns;
  gs_labels_foreach(t->labels, snap_label, row);
  row->gpu = g;
  row->vram_used_bytes = tg->used_bytes;
  row->vram_limit_bytes = atomic_load(&t->limits->limit_bytes[g]);
  row->compute_share = tg->share_ppm / 1e6;
  row->compute_limit = cppm / 1e6;
  row->compute_policy = (int) atomic_load(&t->limits->compute.policy);
  row->priority = (int) atomic_load(&t->limits->compute.priority);
  row->gpu_ns = tg->gpu_ns;
  row->throttled_ns = tg->throttled_ns;
  row->vram_over_bytes = tg->vram_over_bytes;
  row->compute_over = tg->compute_over_ppm / 1e6;
  row->vram_violations = tg->vram_violations;
  row->compute_violations = tg->compute_violations;
  row->idle_seconds = t->idle.idle_s;
  snap_suspension(row, t, g);
}

static void snap_tenants(struct daemon *d)
{
  struct gs_snapshot *s = &d->snap;
  int rows = 0;
  for (int i = 0; i < d->reg.n; i++)
    for (int g = 0; g < s->ngpus; g++)
      rows += tenant_gpu_row(d->reg.v[i], g, s->ngpus);
  s->tenants = xrealloc(s->tenants, (size_t) (rows ? rows : 1) * sizeof(*s->tenants));
  s->ntenants = 0;
  for (int i = 0; i < d->reg.n; i++)
    for (int g = 0; g < s->ngpus; g++)
      if (tenant_gpu_row(d->reg.v[i], g, s->ngpus))
        snap_row(&s->tenants[s->ntenants++], d->reg.v[i], g);
}

int sampler_gpus(struct daemon *d)
{
  struct gs_snapshot *s = &d->snap;
  int errors = 0;
  gs_error_t err = NULL;
  if (!s->gpus) {
    s->ngpus = nvml_gpu_count(d->nvml);
    s->gpus = xcalloc((size_t) (s->ngpus ? s->ngpus : 1), sizeof(*s->gpus));
    /* dcgm-exporter takes the node's name from NODE_NAME (the pod's spec.nodeName in its
     * DaemonSet) before the host name; so do we, so that both exporters name a node alike. */
    const char *node = secure_getenv("NODE_NAME");
    if (node && node[0])
      snprintf(s->hostname, sizeof(s->hostname), "%s", node);
    else
      gethostname(s->hostname, sizeof(s->hostname) - 1);
    snprintf(s->driver_version, sizeof(s->driver_version), "%s", nvml_driver_version(d->nvml));
  }
  for (int g = 0; g < s->ngpus; g++) {
    if (nvml_sample(d->nvml, g, &s->gpus[g], &err) < 0) {
      GS_LOG(GS_LOG_WARN, "GPU %d: %s", g, err->msg);
      gs_error_release(&err);
      errors++;
      continue;
    }
    d->gpu_totals[g] = s->gpus[g].fb_total_bytes;
    sharing_text(sharing_of(&d->sharing, g), s->gpus[g].sharing, sizeof(s->gpus[g].sharing));
  }
  return errors;
}

void sampler_adopt(struct daemon *d)
{
  gs_error_t err = NULL;
  if (registry_adopt(&d->reg, d->gpu_totals, d->snap.ngpus) == 0)
    return;
  d->reg_changed = true;
  for (int i = 0; i < d->reg.n; i++) {
    if (d->reg.v[i]->db_id || usage_db_tenant(d->db, d->reg.v[i], &err) == 0)
      continue;
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", d->reg.v[i]->name, err->msg);
    gs_error_release(&err);
  }
  /* A tenant an earlier daemon left suspended stays so, and is watched. */
  for (int i = 0; i < d->reg.n; i++)
    if (!d->reg.v[i]->sus.known)
      suspend_adopted(d, d->reg.v[i]);
}

/* Counts tenant t's device time since it was last counted: what its gates measured, or, where
 * they measured nothing (open gates measure nothing: no tenant on the GPU needs turns), what
 * NVML's readings of its processes' utilization gave it meanwhile (verifier.c). The first
 * reading of a ledger is taken whole: it is what the tenant used before the daemon knew it. */
static void gpu_time_count(struct tenant *t)
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    struct tenant_gpu *tg = &t->gpu[g];
    uint64_t add = tg->gate_ns >= tg->gate_seen_ns ? tg->gate_ns - tg->gate_seen_ns : tg->gate_ns;
    if (!tg->gate_seen)
      add = tg->gate_ns > tg->gpu_ns ? tg->gate_ns - tg->gpu_ns : 0;
    else if (!add)
      add = tg->nvml_ns;
    tg->gpu_ns += add;
    tg->nvml_ns = 0;
    tg->gate_seen_ns = tg->gate_ns;
    tg->gate_seen = true;
  }
}

static void sampler_gpu_time(struct daemon *d)
{
  for (int i = 0; i < d->reg.n; i++)
    gpu_time_count(d->reg.v[i]);
}

void sampler_end_tenant(struct daemon *d, struct tenant *t, int exit_status)
{
  gs_error_t err = NULL;
  double now = daemon_now_unix();
  t->exit_status = exit_status;
  /* Its last moments since the last sample: its ledger read again and NVML's readings, so that
   * the final interval carries them. */
  if (!t->exited) {
    registry_sample_one(t);
    verifier_account(d);
    gpu_time_count(t);
  }
  if (usage_db_interval(d->db, &t, 1, d->snap.ngpus, d->gpu_totals, now, &err) < 0 ||
      usage_db_tenant_end(d->db, t, now, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  GS_LOG(GS_LOG_INFO, "tenant '%s' ended", t->name);
  suspend_forget(d, t);
  registry_remove(&d->reg, t);
  d->reg_changed = true;
}

static void end_exited(struct daemon *d)
{
  for (int i = d->reg.n - 1; i >= 0; i--)
    if (d->reg.v[i]->exited)
      sampler_end_tenant(d, d->reg.v[i], -1);
}

int sampler_run(struct daemon *d)
{
  double t0 = daemon_now_mono();
  gs_error_t err = NULL;
  int errors = sampler_gpus(d);
  d->health.nvml_seconds_total += daemon_now_mono() - t0;
  sampler_adopt(d);
  registry_sample(&d->reg);
  verifier_run(d);
  sampler_gpu_time(d);
  double now = daemon_now_unix();
  if (usage_db_interval(d->db, d->reg.v, d->reg.n, d->snap.ngpus, d->gpu_totals, now, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "%s", err->msg);
    gs_error_release(&err);
    errors++;
  }
  if (d->idle)
    idle_run(d);
  end_exited(d);
  snap_tenants(d);
  /* Registrations and ends free large buffers (ledger reads, request bodies); give the
   * memory back once they settle rather than keep the peak for the daemon's life. */
  if (d->reg_changed)
    malloc_trim(0);
  d->reg_changed = false;
  d->snap.taken_unix_ns = (uint64_t) (now * 1e9);
  d->health.samples_total++;
  d->health.sample_errors_total += errors > 0;
  d->health.last_sample_duration_s = daemon_now_mono() - t0;
  d->health.sample_seconds_total += d->health.last_sample_duration_s;
  d->health.last_sample_unix = now;
  return errors ? -1 : 0;
}

void sampler_release(struct daemon *d)
{
  free(d->snap.gpus);
  free(d->snap.tenants);
  verifier_release(d);
  memset(&d->snap, 0, sizeof(d->snap));
}
