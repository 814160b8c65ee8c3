/* The tenant's JSON, for the CLI and the daemon both (see tenant-json.h): building the
 * registration, its labels and limits, and reading a registration with a one-line error
 * naming the first bad field. What the daemon does with a registration is api-tenants.c's
 * and registry.c's; nothing here knows the registry. */
#include <gpuslice/tenant-json.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gpuslice/limits.h>

static const char *const policies[] = { "share", "cap" }; /* enum gs_compute_policy order */
static const char *const priorities[] = { "normal", "low", "high" }; /* enum gs_priority order */

static void add_label(const char *key, const char *value, void *data)
{
  json_object_set_new(data, key, json_string(value));
}

json_t *tenant_json_labels(const char *labels)
{
  json_t *o = json_object();
  gs_labels_foreach(labels, add_label, o);
  return o;
}

static json_t *ppm_pct_or_null(uint32_t ppm)
{
  return ppm ? json_real(ppm / 10000.0) : json_null();
}

json_t *tenant_json_limits(const struct tenant_json_limits *lim)
{
  return json_pack(
    "{s:o, s:o, s:o, s:s, s:s}", "vram_bytes",
    lim->vram_bytes == GS_LIMIT_NONE ? json_null() : json_integer((json_int_t) lim->vram_bytes),
    "vram_pct", ppm_pct_or_null(lim->vram_ppm), "compute_pct", ppm_pct_or_null(lim->compute_ppm),
    "compute_policy", gs_compute_policy_name(lim->policy), "priority",
    gs_priority_name(lim->priority));
}

json_t *tenant_json_reg(const struct tenant_json_reg *reg)
{
  json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:o}", "name", reg->name, "pid",
                        reg->pid > 0 ? json_integer(reg->pid) : json_null(), "state_dir",
                        reg->state_dir ? json_string(reg->state_dir) : json_null(), "labels",
                        reg->labels ? tenant_json_labels(reg->labels) : json_null(), "gpu",
                        reg->gpu >= 0 ? json_integer(reg->gpu) : json_null());
  json_t *lim = tenant_json_limits(&reg->lim);
  json_object_update(o, lim);
  json_decref(lim);
  return o;
}

/* ---- reading ---- */

/* A percentage in [GS_PCT_MIN, 100] as millionths, into *ppm; field names it in the error.
 * A smaller one would round to 0 ppm, which means no limit: it is refused, never widened. */
static int pct_ppm(const json_t *v, const char *field, long *ppm, gs_error_t *err)
{
  double pct = json_number_value(v);
  if (!json_is_number(v) || !(pct > 0) || pct > 100)
    return gs_make_error(err, 0, "field '%s': want a number in (0, 100] or null", field);
  if (pct < GS_PCT_MIN)
    return gs_make_error(err, 0, "field '%s': %g is below the smallest allowed, %g", field, pct,
                         GS_PCT_MIN);
  *ppm = lround(pct * 10000.0);
  return 0;
}

static int enum_field(const json_t *body, const char *key, const char *const *names, int n,
                      uint32_t *out, bool *given, gs_error_t *err)
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
  return gs_make_error(err, 0, "field '%s': want one of %s%s%s%s%s", key, names[0],
                       n > 1 ? ", " : "", n > 1 ? names[1] : "", n > 2 ? ", " : "",
                       n > 2 ? names[2] : "");
}

int tenant_json_read_compute(const json_t *body, struct tenant_json_limits *lim, bool given[3],
                             gs_error_t *err)
{
  const json_t *v = json_object_get(body, "compute_pct");
  long ppm = 0;
  lim->policy = GS_COMPUTE_SHARE;
  lim->priority = GS_PRIO_NORMAL;
  given[0] = v != NULL;
  if (v && !json_is_null(v) && pct_ppm(v, "compute_pct", &ppm, err) < 0)
    return -1;
  lim->compute_ppm = (uint32_t) ppm;
  if (enum_field(body, "compute_policy", policies, 2, &lim->policy, &given[1], err) < 0 ||
      enum_field(body, "priority", priorities, 3, &lim->priority, &given[2], err) < 0)
    return -1;
  return 0;
}

int tenant_json_read_gpu(const json_t *body, int *gpu, gs_error_t *err)
{
  const json_t *v = json_object_get(body, "gpu");
  *gpu = -1;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) >= GS_LEDGER_MAX_GPUS)
    return gs_make_error(err, 0, "field 'gpu': want a GPU index 0..%d or null",
                         GS_LEDGER_MAX_GPUS - 1);
  *gpu = (int) json_integer_value(v);
  return 0;
}

static bool label_ok(const char *k, const json_t *v)
{
  static const char name_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
  return json_is_string(v) && *k && strspn(k, name_chars) == strlen(k) &&
    !(k[0] >= '0' && k[0] <= '9') && !strchr(json_string_value(v), '\n');
}

/* labels: an object of strings, keys as Prometheus label names; into "k=v" lines. */
int tenant_json_read_labels(const json_t *body, char *out, size_t len, bool *given,
                            gs_error_t *err)
{
  json_t *o = json_object_get(body, "labels");
  const char *k;
  json_t *v;
  size_t used = 0;
  *given = o && !json_is_null(o);
  if (!*given)
    return 0;
  if (!json_is_object(o))
    return gs_make_error(err, 0, "field 'labels': want an object of strings");
  out[0] = '\0';
  json_object_foreach(o, k, v)
  {
    if (!label_ok(k, v))
      return gs_make_error(
        err, 0, "field 'labels': '%s' is not a label name with a one-line string value", k);
    int n = snprintf(out + used, len - used, "%s=%s\n", k, json_string_value(v));
    if (n < 0 || (size_t) n >= len - used)
      return gs_make_error(err, 0, "field 'labels': more than %zu bytes", len - 1);
    used += (size_t) n;
  }
  return 0;
}

/* vram_bytes and vram_pct; a percentage wins over bytes when both are there. */
static int read_vram(const json_t *body, struct tenant_json_limits *lim, bool *given,
                     gs_error_t *err)
{
  const json_t *b = json_object_get(body, "vram_bytes"), *p = json_object_get(body, "vram_pct");
  long ppm = 0;
  *given = b || p;
  lim->vram_bytes = GS_LIMIT_NONE;
  if (b && !json_is_null(b)) {
    if (!json_is_integer(b) || json_integer_value(b) <= 0)
      return gs_make_error(err, 0, "field 'vram_bytes': want a positive integer or null");
    lim->vram_bytes = (uint64_t) json_integer_value(b);
  }
  if (p && !json_is_null(p) && pct_ppm(p, "vram_pct", &ppm, err) < 0)
    return -1;
  lim->vram_ppm = (uint32_t) ppm;
  if (ppm)
    lim->vram_bytes = GS_LIMIT_NONE;
  return 0;
}

/* name, pid, state_dir and held. */
static int read_identity(const json_t *body, struct tenant_json_reg *reg, gs_error_t *err)
{
  const json_t *name = json_object_get(body, "name"), *pid = json_object_get(body, "pid");
  const json_t *dir = json_object_get(body, "state_dir"), *held = json_object_get(body, "held");
  if (held && !json_is_boolean(held))
    return gs_make_error(err, 0, "field 'held': want true or false");
  if (!json_is_string(name) || !gs_ledger_name_valid(json_string_value(name)))
    return gs_make_error(err, 0, "field 'name': want a tenant name (1-63 of A-Z a-z 0-9 . _ -)");
  if (pid && !json_is_null(pid) && (!json_is_integer(pid) || json_integer_value(pid) <= 0))
    return gs_make_error(err, 0, "field 'pid': want a process id");
  if (dir && !json_is_null(dir) && (!json_is_string(dir) || json_string_value(dir)[0] != '/'))
    return gs_make_error(err, 0, "field 'state_dir': want an absolute path");
  reg->name = json_string_value(name);
  reg->pid = json_is_integer(pid) ? (long) json_integer_value(pid) : 0;
  reg->state_dir = json_is_string(dir) ? json_string_value(dir) : NULL;
  reg->held = json_is_true(held);
  return 0;
}

int tenant_json_read_reg(const json_t *body, struct tenant_json_reg *reg, char *labels, size_t len,
                         gs_error_t *err)
{
  bool lgiven;
  memset(reg, 0, sizeof(*reg));
  if (read_identity(body, reg, err) < 0 || tenant_json_read_gpu(body, &reg->gpu, err) < 0 ||
      read_vram(body, &reg->lim, &reg->vram_given, err) < 0 ||
      tenant_json_read_compute(body, &reg->lim, reg->compute_given, err) < 0 ||
      tenant_json_read_labels(body, labels, len, &lgiven, err) < 0)
    return -1;
  reg->labels = lgiven ? labels : NULL;
  return 0;
}
