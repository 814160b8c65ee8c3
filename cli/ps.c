/* `gpuslice ps`: the tenants the daemon knows, with their memory and compute use and limits,
 * one row per tenant and GPU (GET /v1/tenants). --json prints the daemon's reply, whose keys
 * docs/cli.md documents. The tenant table is shared with `top` (cli-node-tables.h). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-daemon-request.h"
#include "cli-node-tables.h"

// clang-format off
const struct gs_opt_table cli_ps_table = {
  .verb = "ps",
  .synopsis = "ps [--json] [--socket PATH]",
  .summary = "List the tenants the node daemon knows, with their use and limits",
  .intro = "Lists the tenants the node daemon knows: a local user sees their own, root and the\n"
  "gpuslice group see all. One row per tenant and GPU it uses.\n",
  .outro = VERB_LIST_OUTRO,
  .opts = verb_list_entries,
  .nopts = VERB_LIST_NOPTS,
};
// clang-format on

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* "k=v,k2=v2", keys sorted, so that the column reads the same every time. */
static char *labels_cell(json_t *labels)
{
  size_t n = json_is_object(labels) ? json_object_size(labels) : 0;
  if (n == 0)
    return xstrdup("-");
  const char **keys = xcalloc(n, sizeof(*keys));
  const char *k;
  json_t *v;
  size_t i = 0;
  json_object_foreach(labels, k, v) keys[i++] = k;
  qsort(keys, n, sizeof(*keys), cmp_str);
  char *out = xstrdup("");
  for (i = 0; i < n; i++) {
    char *next = NULL;
    const char *val = json_string_value(json_object_get(labels, keys[i]));
    xasprintf(&next, "%s%s%s=%s", out, i ? "," : "", keys[i], val ? val : "");
    free(out);
    out = next;
  }
  free(keys);
  return out;
}

static const char *compute_limit_cell(char *buf, const json_t *limits)
{
  if (!jhas_num(limits, "compute_pct"))
    return "none";
  const char *policy = jstr(limits, "compute_policy");
  char num[TABLE_CELL];
  snprintf(buf, TABLE_CELL, "%s%%%s%s", fmt_number(num, jnum(limits, "compute_pct", 0), 2),
           policy ? " " : "", policy ? policy : "");
  return buf;
}

/* What the daemon's verifier found on this GPU: "vram +4.0 GiB", "compute +12%", both, or "-". */
static const char *violation_cell(char *buf, const json_t *g)
{
  const json_t *v = g ? json_object_get(g, "violation") : NULL;
  char bytes[TABLE_CELL], pct[TABLE_CELL];
  if (!json_is_object(v))
    return "-";
  double over = jnum(v, "vram_over_bytes", 0), cpct = jnum(v, "compute_over_pct", 0);
  snprintf(buf, TABLE_CELL, "%s%s%s%s%s%s", over > 0 ? "vram +" : "",
           over > 0 ? fmt_bytes(bytes, over) : "", over > 0 && cpct > 0 ? ", " : "",
           cpct > 0 ? "compute +" : "", cpct > 0 ? fmt_number(pct, cpct, 1) : "",
           cpct > 0 ? "%" : "");
  return buf;
}

static void add_tenant_row(struct table *t, const json_t *ten, const json_t *g, const char *labels)
{
  const json_t *limits = json_object_get(ten, "limits");
  char pid[24], gpu[16], used[TABLE_CELL], lim[TABLE_CELL], peak[TABLE_CELL], share[TABLE_CELL],
    clim[TABLE_CELL], gsec[TABLE_CELL], thr[TABLE_CELL], viol[TABLE_CELL];
  snprintf(pid, sizeof(pid), "%.0f", jnum(ten, "pid", 0));
  snprintf(gpu, sizeof(gpu), "%.0f", jnum(g, "index", 0));
  const char *cells[] = {
    jstr(ten, "name"),
    jstr(ten, "user"),
    pid,
    jstr(ten, "state"),
    g ? gpu : NULL,
    g ? fmt_bytes(used, jnum(g, "vram_used_bytes", 0)) : NULL,
    !g                                  ? NULL
      : jhas_num(g, "vram_limit_bytes") ? fmt_bytes(lim, jnum(g, "vram_limit_bytes", 0))
                                        : "none",
    g ? fmt_bytes(peak, jnum(g, "vram_peak_bytes", 0)) : NULL,
    g ? fmt_share(share, jnum(g, "compute_share", 0)) : NULL,
    compute_limit_cell(clim, limits),
    g ? fmt_seconds(gsec, jnum(g, "gpu_seconds", 0)) : NULL,
    g ? fmt_seconds(thr, jnum(g, "throttled_seconds", 0)) : NULL,
    violation_cell(viol, g),
    labels,
  };
  table_add(t, cells);
}

struct table *tenants_table(const json_t *tenants)
{
  static const char *headers[] = { "TENANT",    "USER",          "PID",        "STATE",
                                   "GPU",       "VRAM",          "VRAM-LIMIT", "PEAK",
                                   "COMPUTE",   "COMPUTE-LIMIT", "GPU-TIME",   "THROTTLED",
                                   "VIOLATION", "LABELS" };
  struct table *t = table_new(14, "llrllrrrrrrrll", headers);
  size_t i, j;
  const json_t *ten, *g;
  json_array_foreach(tenants, i, ten)
  {
    char *labels = labels_cell(json_object_get(ten, "labels"));
    const json_t *gpus = json_object_get(ten, "gpus");
    if (json_array_size(gpus) == 0)
      add_tenant_row(t, ten, NULL, labels);
    json_array_foreach(gpus, j, g) add_tenant_row(t, ten, g, labels);
    free(labels);
  }
  return t;
}

int cli_ps(int argc, char **argv)
{
  return verb_list(&cli_ps_table, argc, argv, "/v1/tenants", "tenants", tenants_table);
}
