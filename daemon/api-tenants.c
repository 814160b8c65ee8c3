/* The tenant routes: list, show, register (`gpuslice run`), change limits live (`gpuslice
 * set`), end (run, when its command ends), and count served requests. A caller sees only
 * their own tenants unless admin (access.c); someone else's tenant answers 404, exactly as a
 * missing one does, so that names do not leak. The memory and compute limits an admin sets
 * are a ceiling that the tenant's owner may lower but not raise. api-routes.c maps methods
 * and paths here. */
#include "api.h"

#include <stdlib.h>
#include <string.h>

#include <gpuslice/tenant-json.h>

/* The tenant-wide figures: the limit of the first GPU that has one. */
static json_t *limits_json(const struct gs_limits *lim)
{
  struct tenant_json_limits l = { .vram_bytes = GS_LIMIT_NONE };
  for (int g = 0; g < GS_LEDGER_MAX_GPUS && l.vram_bytes == GS_LIMIT_NONE; g++) {
    l.vram_bytes = atomic_load(&lim->limit_bytes[g]);
    l.vram_ppm = atomic_load(&lim->limit_ppm[g]);
  }
  l.compute_ppm = atomic_load(&lim->compute.limit_ppm);
  l.policy = atomic_load(&lim->compute.policy);
  l.priority = atomic_load(&lim->compute.priority);
  return tenant_json_limits(&l);
}

static json_t *limit_or_null(uint64_t bytes)
{
  return bytes == GS_LIMIT_NONE ? json_null() : json_integer((json_int_t) bytes);
}

/* What the verifier found (verifier.c): null while NVML's accounting is within the limits. */
static json_t *violation_json(const struct tenant_gpu *tg)
{
  if (!tg->vram_over_bytes && !tg->compute_over_ppm)
    return json_null();
  return json_pack("{s:I, s:I, s:f, s:I, s:I}", "nvml_vram_bytes", (json_int_t) tg->nvml_bytes,
                   "vram_over_bytes", (json_int_t) tg->vram_over_bytes, "compute_over_pct",
                   tg->compute_over_ppm / 1e4, "vram_violations", (json_int_t) tg->vram_violations,
                   "compute_violations", (json_int_t) tg->compute_violations);
}

static json_t *gpus_json(const struct daemon *d, const struct tenant *t)
{
  json_t *a = json_array();
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    if (!tenant_gpu_row(t, g, d->snap.ngpus))
      continue;
    const struct tenant_gpu *tg = &t->gpu[g];
    json_array_append_new(
      a,
      json_pack("{s:i, s:I, s:o, s:I, s:f, s:f, s:f, s:o}", "index", g, "vram_used_bytes",
                (json_int_t) tg->used_bytes, "vram_limit_bytes",
                limit_or_null(atomic_load(&t->limits->limit_bytes[g])), "vram_peak_bytes",
                (json_int_t) tg->peak_bytes, "compute_share", tg->share_ppm / 1e6, "gpu_seconds",
                tg->gpu_ns / 1e9, "throttled_seconds", tg->throttled_ns / 1e9, "violation",
                violation_json(tg)));
  }
  return a;
}

/* The tenant's suspension (docs/suspend.md): its figures, and why the last suspend or resume
 * failed. */
static json_t *suspension_json(const struct tenant *t)
{
  const struct tenant_suspend *s = &t->sus;
  uint64_t bytes = 0;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    bytes += atomic_load(&t->limits->suspended_bytes[g]);
  double total = s->suspended_s + (s->started_unix > 0 ? daemon_now_unix() - s->started_unix : 0);
  json_t *j =
    json_pack("{s:o, s:I, s:I, s:f, s:I}", "suspended_at",
              s->started_unix > 0 ? api_time_json(s->started_unix) : json_null(), "suspended_bytes",
              (json_int_t) bytes, "suspensions", (json_int_t) s->suspensions, "suspended_seconds",
              total, "resumes", (json_int_t) s->resumes);
  json_object_set_new(j, "last_suspend_seconds",
                      s->suspensions ? json_real(s->suspend_s) : json_null());
  json_object_set_new(j, "last_resume_seconds", s->resumes ? json_real(s->resume_s) : json_null());
  json_object_set_new(j, "resume_waits", json_integer((json_int_t) s->asked.waits));
  json_object_set_new(j, "resume_wait_seconds", json_real((double) s->asked.wait_ns_total / 1e9));
  json_object_set_new(j, "error", s->error[0] ? json_string(s->error) : json_null());
  return j;
}

static json_t *tenant_base_json(const struct daemon *d, const struct tenant *t)
{
  const char *state = t->exited ? "exited" : gs_run_state_name(atomic_load(&t->limits->run_state));
  return json_pack(
    "{s:s, s:I, s:s, s:I, s:s, s:o, s:o, s:o, s:o, s:I, s:o}", "name", t->name, "uid",
    (json_int_t) t->uid, "user", t->user, "pid", (json_int_t) t->owner_pid, "state", state,
    "started_at", api_time_json((double) (t->created_unix_ns / 1000000000ULL)), "labels",
    tenant_json_labels(t->labels), "limits", limits_json(t->limits), "gpus", gpus_json(d, t),
    "served_requests", (json_int_t) t->served_requests, "suspension", suspension_json(t));
}

/* T; "mps" only for an MPS client (mps.c). */
json_t *api_tenant_json(const struct daemon *d, const struct tenant *t)
{
  json_t *j = tenant_base_json(d, t), *mps = mps_tenant_json(d, t);
  if (mps)
    json_object_set_new(j, "mps", mps);
  return j;
}

int api_tenants_list(struct api_req *rq, struct api_reply *r)
{
  json_t *a = json_array();
  for (int i = 0; i < rq->d->reg.n; i++)
    if (access_may_see(&rq->peer, rq->d->reg.v[i]))
      json_array_append_new(a, api_tenant_json(rq->d, rq->d->reg.v[i]));
  return api_ok(r, 200, json_pack("{s:o}", "tenants", a));
}

/* ---- reading request fields ---- */

/* A 400 with err's message; returns -1. */
static int bad_request(struct api_reply *r, gs_error_t *err)
{
  api_error(r, 400, "%s", (*err)->msg);
  gs_error_release(err);
  return -1;
}

/* A registration (tenant-json.c reads it) as the registry takes it: the vram limit on its GPU,
 * or on every GPU. */
static void request_from_reg(const struct tenant_json_reg *reg, struct tenant_request *req)
{
  req->name = reg->name;
  req->pid = (pid_t) reg->pid;
  req->ledger_dir = reg->state_dir;
  req->held = reg->held;
  req->labels = reg->labels;
  req->compute_given = reg->compute_given[0] || reg->compute_given[1] || reg->compute_given[2];
  req->limits_given = reg->vram_given || req->compute_given;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    bool here = reg->gpu < 0 || reg->gpu == g;
    req->limit_ppm[g] = here ? reg->lim.vram_ppm : 0;
    req->limit_bytes[g] = here ? reg->lim.vram_bytes : GS_LIMIT_NONE;
  }
  atomic_init(&req->compute.limit_ppm, reg->lim.compute_ppm);
  atomic_init(&req->compute.policy, reg->lim.policy);
  atomic_init(&req->compute.priority, reg->lim.priority);
  atomic_init(&req->compute.slice_ms, 0);
}

static int request_fields(const json_t *body, struct tenant_request *req, char *labels, size_t len,
                          struct api_reply *r)
{
  struct tenant_json_reg reg;
  gs_error_t err = NULL;
  if (tenant_json_read_reg(body, &reg, labels, len, &err) < 0)
    return bad_request(r, &err);
  request_from_reg(&reg, req);
  return 0;
}

/* ---- the routes ---- */

int api_tenants_register(struct api_req *rq, struct api_reply *r)
{
  struct daemon *d = rq->d;
  struct tenant_request req = { 0 };
  char labels[GS_LEDGER_LABELS_MAX];
  gs_error_t err = NULL;
  int status;
  if (request_fields(rq->body, &req, labels, sizeof(labels), r) < 0)
    return 0;
  if (req.held && !rq->peer.admin)
    return api_error(r, 403, "field 'held': only an admin registers a held tenant");
  if (req.held && !req.ledger_dir)
    return api_error(r, 400, "field 'held': a held tenant needs 'state_dir'");
  struct tenant *old = registry_find(&d->reg, req.name);
  if (old && !access_may_see(&rq->peer, old))
    return api_error(r, 409, "tenant '%s' is registered by another user", req.name);
  if (old) {
    /* The same tenant again (a retry, or one the daemon adopted first) is not a conflict;
     * another ledger under a live tenant's name is, whoever asks: root too would otherwise
     * be handed that tenant, and end it when its own command ends. */
    registry_sample(&d->reg);
    if (!old->exited && !registry_same_tenant(&d->reg, old, &req))
      return old->uid != rq->peer.uid
        ? api_error(r, 409, "tenant '%s' is registered by another user", req.name)
        : api_error(r, 409, "tenant '%s' is already running", req.name);
    if (!old->exited)
      return api_ok(r, 200, api_tenant_json(d, old));
    sampler_end_tenant(d, old, -1);
  }
  struct tenant *t = registry_add(&d->reg, &req, rq->peer.uid, rq->peer.admin, d->gpu_totals,
                                  d->snap.ngpus, &status, &err);
  if (!t) {
    api_error(r, (unsigned) status, "%s", err->msg);
    gs_error_release(&err);
    return 0;
  }
  /* An admin registering someone else's tenant sets its limits as an admin's PATCH does. */
  if (rq->peer.admin && rq->peer.uid != t->uid && req.limits_given)
    registry_set_ceiling(t, -1);
  if (rq->peer.admin && rq->peer.uid != t->uid && req.compute_given)
    registry_set_compute_ceiling(t);
  if (usage_db_tenant(d->db, t, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  registry_sample(&d->reg);
  d->reg_changed = true;
  GS_LOG(GS_LOG_INFO, "tenant '%s' registered by uid %u", t->name, (unsigned) rq->peer.uid);
  int gpu = -1;
  if (tenant_json_read_gpu(rq->body, &gpu, &err) < 0) /* read before: cannot fail */
    gs_error_release(&err);
  mps_tenant_added(d, t, gpu);
  return api_ok(r, 201, api_tenant_json(d, t));
}

/* PATCH: {"vram": "8G" | N | "25%" | null, "gpu": N, "compute_pct", "compute_policy", "priority",
 * "labels" (admins only)}. */
static int vram_patch(const json_t *v, uint64_t *bytes, uint32_t *ppm, struct api_reply *r)
{
  gs_error_t err = NULL;
  uint64_t x = 0;
  *bytes = GS_LIMIT_NONE;
  *ppm = 0;
  if (json_is_null(v))
    return 0;
  if (json_is_integer(v) && json_integer_value(v) > 0) {
    *bytes = (uint64_t) json_integer_value(v);
    return 0;
  }
  const char *s = json_is_string(v) ? json_string_value(v) : "";
  size_t n = strlen(s);
  bool pct = n && s[n - 1] == '%';
  if (!json_is_string(v) || gs_parse_size(s, pct ? 1000000 : 0, &x, &err) < 0) {
    api_error(r, 400, "field 'vram': %s",
              err ? err->msg : "want a size such as \"8G\", a number of bytes, or null");
    gs_error_release(&err);
    return -1;
  }
  if (pct)
    *ppm = (uint32_t) x;
  else
    *bytes = x;
  return 0;
}

struct tenant *api_named_tenant(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = registry_find(&rq->d->reg, rq->arg);
  if (!t || !access_may_see(&rq->peer, t)) {
    api_error(r, 404, "no tenant '%s'", rq->arg);
    return NULL;
  }
  return t;
}

int api_tenant_show(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = api_named_tenant(rq, r);
  return t ? api_ok(r, 200, api_tenant_json(rq->d, t)) : 0;
}

/* What an admin set is a ceiling: the tenant's owner may lower a limit, never raise it past
 * that, nor lift it. True, with a 403 in r, when the change would. */
static bool vram_over_ceiling(struct api_req *rq, const struct tenant *t, int gpu, uint64_t bytes,
                              uint32_t ppm, struct api_reply *r)
{
  int g = registry_vram_above_ceiling(t, gpu, bytes, ppm, rq->d->gpu_totals, rq->d->snap.ngpus);
  if (g < 0)
    return false;
  uint64_t c = atomic_load(&t->limits->ceiling_bytes[g]);
  if (c % (1 << 20) == 0)
    api_error(
      r, 403,
      "tenant '%s': GPU %d's memory limit may not go above the ceiling an admin set, %llu MiB",
      t->name, g, (unsigned long long) (c >> 20));
  else
    api_error(
      r, 403,
      "tenant '%s': GPU %d's memory limit may not go above the ceiling an admin set, %llu bytes",
      t->name, g, (unsigned long long) c);
  return true;
}

/* As vram_over_ceiling, for the compute limits given (not NULL): a share above the admin's
 * or none, share where the admin set cap, a priority above the admin's. */
static bool compute_over_ceiling(const struct tenant *t, const uint32_t *ppm,
                                 const uint32_t *policy, const uint32_t *priority,
                                 struct api_reply *r)
{
  const struct gs_limits *lim = t->limits;
  switch (registry_compute_above_ceiling(t, ppm, policy, priority)) {
  case GS_COMPUTE_FIELD_PPM:
    api_error(r, 403,
              "tenant '%s': the compute limit may not go above the ceiling an admin set, %g%%",
              t->name, atomic_load(&lim->ceiling_compute_ppm) / 1e4);
    return true;
  case GS_COMPUTE_FIELD_POLICY:
    api_error(r, 403,
              "tenant '%s': the compute policy may not go above the ceiling an admin set, %s",
              t->name, gs_compute_policy_name(atomic_load(&lim->ceiling_policy)));
    return true;
  case GS_COMPUTE_FIELD_PRIORITY:
    api_error(r, 403, "tenant '%s': the priority may not go above the ceiling an admin set, %s",
              t->name, gs_priority_name(atomic_load(&lim->ceiling_priority)));
    return true;
  default: return false;
  }
}

int api_tenant_patch(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = api_named_tenant(rq, r);
  if (!t)
    return 0;
  struct tenant_json_limits c;
  bool cgiven[3];
  uint64_t bytes;
  uint32_t ppm;
  int gpu;
  gs_error_t err = NULL;
  const json_t *vram = json_object_get(rq->body, "vram");
  if (!vram)
    vram = json_object_get(rq->body, "vram_bytes");
  if (tenant_json_read_gpu(rq->body, &gpu, &err) < 0)
    return bad_request(r, &err), 0;
  if (vram && vram_patch(vram, &bytes, &ppm, r) < 0)
    return 0;
  if (tenant_json_read_compute(rq->body, &c, cgiven, &err) < 0)
    return bad_request(r, &err), 0;
  const uint32_t *cppm = cgiven[0] ? &c.compute_ppm : NULL;
  const uint32_t *cpolicy = cgiven[1] ? &c.policy : NULL;
  const uint32_t *cprio = cgiven[2] ? &c.priority : NULL;
  bool compute = cppm || cpolicy || cprio;
  char labels[GS_LEDGER_LABELS_MAX];
  bool lgiven;
  if (tenant_json_read_labels(rq->body, labels, sizeof(labels), &lgiven, &err) < 0 ||
      (lgiven && gs_labels_check_utf8(labels, &err) < 0))
    return bad_request(r, &err), 0;
  /* Labels decide whose usage it is (`gpuslice usage --by label:team`): an admin's to say. */
  if (lgiven && !rq->peer.admin)
    return api_error(r, 403, "field 'labels': only an admin changes a tenant's labels");
  /* Every check comes before any change: a refused PATCH changes nothing. */
  if (vram && !rq->peer.admin && vram_over_ceiling(rq, t, gpu, bytes, ppm, r))
    return 0;
  if (compute && !rq->peer.admin && compute_over_ceiling(t, cppm, cpolicy, cprio, r))
    return 0;
  if (vram)
    registry_set_vram(t, gpu, bytes, ppm, rq->d->gpu_totals, rq->d->snap.ngpus);
  if (vram && rq->peer.admin)
    registry_set_ceiling(t, gpu);
  if (compute)
    registry_set_compute(t, cppm, cpolicy, cprio);
  if (compute && rq->peer.admin)
    registry_set_compute_ceiling(t);
  if (lgiven) {
    registry_set_labels(t, labels);
    if (usage_db_tenant_labels(rq->d->db, t, &err) < 0) {
      GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
      gs_error_release(&err);
    }
    rq->d->reg_changed = true;
  }
  GS_LOG(GS_LOG_INFO, "tenant '%s': %s changed by uid %u", t->name,
         lgiven && !vram && !compute ? "labels" : "limits", (unsigned) rq->peer.uid);
  return api_ok(r, 200, api_tenant_json(rq->d, t));
}

int api_tenant_end(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = api_named_tenant(rq, r);
  if (!t)
    return 0;
  const char *exit_arg = rq->query(rq, "exit");
  char *end = NULL;
  long status = exit_arg ? strtol(exit_arg, &end, 10) : -1;
  if (exit_arg && (!*exit_arg || *end || status < 0 || status > 255))
    return api_error(r, 400, "query 'exit': want an exit status 0..255");
  /* Ending a registration ends the daemon's hold on the tenant (its limits file, its
   * accounting): not while the tenant's processes run, or a tenant could end it itself and
   * then raise its limits in its ledger. It ends when they have, as any tenant does. */
  registry_sample(&rq->d->reg);
  int live = t->exited ? 0 : tenant_live_procs(t, rq->peer.pid);
  if (live > 0)
    return api_error(r, 409, "tenant '%s' still has %d running process%s: it ends when they do",
                     t->name, live, live == 1 ? "" : "es");
  sampler_end_tenant(rq->d, t, (int) status);
  return api_ok(r, 204, NULL);
}

int api_tenant_served(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = api_named_tenant(rq, r);
  const json_t *n = json_object_get(rq->body, "requests");
  gs_error_t err = NULL;
  if (!t)
    return 0;
  if (!json_is_integer(n) || json_integer_value(n) < 0)
    return api_error(r, 400, "field 'requests': want a count >= 0");
  t->served_requests += (uint64_t) json_integer_value(n);
  if (usage_db_served(rq->d->db, t, (uint64_t) json_integer_value(n), &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  return api_ok(r, 204, NULL);
}
