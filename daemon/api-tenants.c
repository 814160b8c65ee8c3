/* The tenant routes: list, show, register (`gpuslice run`), change limits live (`gpuslice
 * set`), end (run, when its command ends), and count served requests. A caller sees only
 * their own tenants unless admin (access.c); someone else's tenant answers 404, exactly as a
 * missing one does, so that names do not leak. api-routes.c maps methods and paths here. */
#include "api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void add_label(const char *key, const char *value, void *data)
{
  json_object_set_new(data, key, json_string(value));
}

static json_t *labels_json(const char *labels)
{
  json_t *o = json_object();
  gs_labels_foreach(labels, add_label, o);
  return o;
}

static json_t *limit_or_null(uint64_t bytes)
{
  return bytes == GS_LIMIT_NONE ? json_null() : json_integer((json_int_t) bytes);
}

/* The tenant-wide figures: the limit of the first GPU that has one. */
static json_t *limits_json(const struct gs_limits *lim)
{
  uint64_t vram = GS_LIMIT_NONE;
  uint32_t vppm = 0, cppm = atomic_load(&lim->compute.limit_ppm);
  for (int g = 0; g < GS_LEDGER_MAX_GPUS && vram == GS_LIMIT_NONE; g++) {
    vram = atomic_load(&lim->limit_bytes[g]);
    vppm = atomic_load(&lim->limit_ppm[g]);
  }
  return json_pack("{s:o, s:o, s:o, s:s, s:s}", "vram_bytes", limit_or_null(vram), "vram_pct",
                   vppm ? json_real(vppm / 10000.0) : json_null(), "compute_pct",
                   cppm ? json_real(cppm / 10000.0) : json_null(), "compute_policy",
                   gs_compute_policy_name(atomic_load(&lim->compute.policy)), "priority",
                   gs_priority_name(atomic_load(&lim->compute.priority)));
}

static json_t *gpus_json(const struct daemon *d, const struct tenant *t)
{
  json_t *a = json_array();
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    if (!tenant_gpu_row(t, g, d->snap.ngpus))
      continue;
    const struct tenant_gpu *tg = &t->gpu[g];
    json_array_append_new(
      a, json_pack("{s:i, s:I, s:o, s:I, s:f, s:f, s:f}", "index", g, "vram_used_bytes", (json_int_t) tg->used_bytes,
                   "vram_limit_bytes", limit_or_null(atomic_load(&t->limits->limit_bytes[g])), "vram_peak_bytes",
                   (json_int_t) tg->peak_bytes, "compute_share", tg->share_ppm / 1e6, "gpu_seconds",
                   tg->gpu_ns / 1e9, "throttled_seconds", tg->throttled_ns / 1e9));
  }
  return a;
}

json_t *api_tenant_json(const struct daemon *d, const struct tenant *t)
{
  return json_pack("{s:s, s:I, s:s, s:I, s:s, s:o, s:o, s:o, s:o, s:I}", "name", t->name, "uid", (json_int_t) t->uid,
                   "user", t->user, "pid", (json_int_t) t->owner_pid, "state", t->exited ? "exited" : "running",
                   "started_at", api_time_json((double) (t->created_unix_ns / 1000000000ULL)), "labels", labels_json(t->labels), "limits",
                   limits_json(t->limits), "gpus", gpus_json(d, t), "served_requests",
                   (json_int_t) t->served_requests);
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

/* A percentage in (0, 100] as millionths; -1 when bad. */
static long pct_ppm(const json_t *v)
{
  double pct = json_number_value(v);
  if (!json_is_number(v) || !(pct > 0) || pct > 100)
    return -1;
  return lround(pct * 10000.0);
}

static int enum_field(const json_t *body, const char *key, const char *const *names, int n, uint32_t *out,
                      bool *given, struct api_reply *r)
{
  const json_t *v = json_object_get(body, key);
  *given = v != NULL;
  if (!v)
    return 0;
  for (int i = 0; i < n && json_is_string(v); i++)
    if (strcmp(json_string_value(v), names[i]) == 0) {
      *out = (uint32_t) i;
      return 0;
    }
  return api_error(r, 400, "field '%s': want one of %s%s%s%s%s", key, names[0], n > 1 ? ", " : "",
                   n > 1 ? names[1] : "", n > 2 ? ", " : "", n > 2 ? names[2] : ""),
         -1;
}

static const char *const policies[] = { "share", "cap" };
static const char *const priorities[] = { "normal", "low", "high" }; /* enum gs_priority order */

static int compute_fields(const json_t *body, struct gs_ledger_compute *c, bool given[3], struct api_reply *r)
{
  uint32_t pol = GS_COMPUTE_SHARE, prio = GS_PRIO_NORMAL;
  const json_t *v = json_object_get(body, "compute_pct");
  long ppm = 0;
  given[0] = v != NULL;
  if (v && !json_is_null(v) && (ppm = pct_ppm(v)) < 0)
    return api_error(r, 400, "field 'compute_pct': want a number in (0, 100] or null"), -1;
  if (enum_field(body, "compute_policy", policies, 2, &pol, &given[1], r) < 0 ||
      enum_field(body, "priority", priorities, 3, &prio, &given[2], r) < 0)
    return -1;
  atomic_init(&c->limit_ppm, (uint32_t) ppm);
  atomic_init(&c->policy, pol);
  atomic_init(&c->priority, prio);
  atomic_init(&c->slice_ms, 0);
  return 0;
}

static int gpu_field(const json_t *body, int *gpu, struct api_reply *r)
{
  const json_t *v = json_object_get(body, "gpu");
  *gpu = -1;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= GS_LEDGER_MAX_GPUS)
    return api_error(r, 400, "field 'gpu': want a GPU index 0..%d or null", GS_LEDGER_MAX_GPUS - 1), -1;
  *gpu = (int) json_integer_value(v);
  return 0;
}

/* labels: an object of strings, keys as Prometheus label names; into "k=v" lines. */
static int labels_field(const json_t *body, char *out, size_t len, bool *given, struct api_reply *r)
{
  json_t *o = json_object_get(body, "labels");
  const char *k;
  json_t *v;
  size_t used = 0;
  *given = o && !json_is_null(o);
  if (!*given)
    return 0;
  if (!json_is_object(o))
    return api_error(r, 400, "field 'labels': want an object of strings"), -1;
  out[0] = '\0';
  json_object_foreach(o, k, v) {
    bool ok = json_is_string(v) && *k && strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                                           strlen(k) && !(k[0] >= '0' && k[0] <= '9') && !strchr(json_string_value(v), '\n');
    if (!ok)
      return api_error(r, 400, "field 'labels': '%s' is not a label name with a one-line string value", k), -1;
    int n = snprintf(out + used, len - used, "%s=%s\n", k, json_string_value(v));
    if (n < 0 || (size_t) n >= len - used)
      return api_error(r, 400, "field 'labels': more than %zu bytes", len - 1), -1;
    used += (size_t) n;
  }
  return 0;
}

/* vram_bytes / vram_pct of a registration, applied to gpu or every GPU. */
static int vram_fields(const json_t *body, int gpu, struct tenant_request *req, bool *given, struct api_reply *r)
{
  const json_t *b = json_object_get(body, "vram_bytes"), *p = json_object_get(body, "vram_pct");
  uint64_t bytes = GS_LIMIT_NONE;
  long ppm = 0;
  *given = b || p;
  if (b && !json_is_null(b)) {
    if (!json_is_integer(b) || json_integer_value(b) <= 0)
      return api_error(r, 400, "field 'vram_bytes': want a positive integer or null"), -1;
    bytes = (uint64_t) json_integer_value(b);
  }
  if (p && !json_is_null(p) && (ppm = pct_ppm(p)) < 0)
    return api_error(r, 400, "field 'vram_pct': want a number in (0, 100] or null"), -1;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    bool here = gpu < 0 || gpu == g;
    req->limit_ppm[g] = here ? (uint32_t) ppm : 0;
    req->limit_bytes[g] = here && !ppm ? bytes : GS_LIMIT_NONE;
  }
  return 0;
}

static int request_fields(const json_t *body, struct tenant_request *req, char *labels, size_t len,
                          struct api_reply *r)
{
  const json_t *name = json_object_get(body, "name"), *pid = json_object_get(body, "pid");
  const json_t *dir = json_object_get(body, "state_dir");
  bool vgiven, lgiven, cgiven[3];
  int gpu;
  if (!json_is_string(name) || !gs_ledger_name_valid(json_string_value(name)))
    return api_error(r, 400, "field 'name': want a tenant name (1-63 of A-Z a-z 0-9 . _ -)"), -1;
  if (pid && !json_is_null(pid) && (!json_is_integer(pid) || json_integer_value(pid) <= 0))
    return api_error(r, 400, "field 'pid': want a process id"), -1;
  if (dir && !json_is_null(dir) && (!json_is_string(dir) || json_string_value(dir)[0] != '/'))
    return api_error(r, 400, "field 'state_dir': want an absolute path"), -1;
  if (gpu_field(body, &gpu, r) < 0 || vram_fields(body, gpu, req, &vgiven, r) < 0 ||
      compute_fields(body, &req->compute, cgiven, r) < 0 || labels_field(body, labels, len, &lgiven, r) < 0)
    return -1;
  req->name = json_string_value(name);
  req->pid = json_is_integer(pid) ? (pid_t) json_integer_value(pid) : 0;
  req->ledger_dir = json_is_string(dir) ? json_string_value(dir) : NULL;
  req->labels = lgiven ? labels : NULL;
  req->limits_given = vgiven || cgiven[0] || cgiven[1] || cgiven[2];
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
  struct tenant *old = registry_find(&d->reg, req.name);
  if (old && !access_may_see(&rq->peer, old))
    return api_error(r, 409, "tenant '%s' is registered by another user", req.name);
  if (old) {
    /* The same tenant again (a retry, or one the daemon adopted first) is not a conflict. */
    registry_sample(&d->reg);
    if (!old->exited)
      return api_ok(r, 200, api_tenant_json(d, old));
    sampler_end_tenant(d, old, -1);
  }
  struct tenant *t = registry_add(&d->reg, &req, rq->peer.uid, rq->peer.admin, d->gpu_totals, d->snap.ngpus,
                                  &status, &err);
  if (!t) {
    api_error(r, (unsigned) status, "%s", err->msg);
    gs_error_release(&err);
    return 0;
  }
  if (usage_db_tenant(d->db, t, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  registry_sample(&d->reg);
  d->reg_changed = true;
  GS_LOG(GS_LOG_INFO, "tenant '%s' registered by uid %u", t->name, (unsigned) rq->peer.uid);
  return api_ok(r, 201, api_tenant_json(d, t));
}

/* PATCH: {"vram": "8G" | N | "25%" | null, "gpu": N, "compute_pct", "compute_policy", "priority"}. */
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
    api_error(r, 400, "field 'vram': %s", err ? err->msg : "want a size such as \"8G\", a number of bytes, or null");
    gs_error_release(&err);
    return -1;
  }
  if (pct)
    *ppm = (uint32_t) x;
  else
    *bytes = x;
  return 0;
}

/* The tenant rq->arg names, or NULL with a 404 in r: someone else's is as missing as one
 * that is not there, so that names do not leak. */
static struct tenant *named_tenant(struct api_req *rq, struct api_reply *r)
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
  struct tenant *t = named_tenant(rq, r);
  return t ? api_ok(r, 200, api_tenant_json(rq->d, t)) : 0;
}

int api_tenant_patch(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = named_tenant(rq, r);
  if (!t)
    return 0;
  struct gs_ledger_compute c;
  bool cgiven[3];
  uint64_t bytes;
  uint32_t ppm, cppm, pol, prio;
  int gpu;
  const json_t *vram = json_object_get(rq->body, "vram");
  if (!vram)
    vram = json_object_get(rq->body, "vram_bytes");
  if (gpu_field(rq->body, &gpu, r) < 0 || (vram && vram_patch(vram, &bytes, &ppm, r) < 0) ||
      compute_fields(rq->body, &c, cgiven, r) < 0)
    return 0;
  if (vram)
    registry_set_vram(t, gpu, bytes, ppm, rq->d->gpu_totals, rq->d->snap.ngpus);
  cppm = atomic_load(&c.limit_ppm);
  pol = atomic_load(&c.policy);
  prio = atomic_load(&c.priority);
  if (cgiven[0] || cgiven[1] || cgiven[2])
    registry_set_compute(t, cgiven[0] ? &cppm : NULL, cgiven[1] ? &pol : NULL, cgiven[2] ? &prio : NULL);
  GS_LOG(GS_LOG_INFO, "tenant '%s': limits changed by uid %u", t->name, (unsigned) rq->peer.uid);
  return api_ok(r, 200, api_tenant_json(rq->d, t));
}

int api_tenant_end(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = named_tenant(rq, r);
  if (!t)
    return 0;
  const char *exit_arg = rq->query(rq, "exit");
  char *end = NULL;
  long status = exit_arg ? strtol(exit_arg, &end, 10) : -1;
  if (exit_arg && (!*exit_arg || *end || status < 0 || status > 255))
    return api_error(r, 400, "query 'exit': want an exit status 0..255");
  registry_sample(&rq->d->reg);
  sampler_end_tenant(rq->d, t, (int) status);
  return api_ok(r, 204, NULL);
}

int api_tenant_served(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = named_tenant(rq, r);
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
