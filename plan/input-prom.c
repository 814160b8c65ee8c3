/* dcgm-exporter / Prometheus exposition text as `gpuslice plan` input. Two metrics are
 * read: DCGM_FI_DEV_GPU_UTIL (%) and DCGM_FI_DEV_FB_USED (MiB); every other line is
 * skipped. A file may hold several scrapes one after another (`curl .../metrics >> f` in a
 * loop). A sample's own timestamp (milliseconds, as the format has it) is used when
 * present; otherwise all samples of one scrape share the scrape's number as their time.
 * A new scrape starts at a "# HELP" or "# TYPE" line of a metric already described in the
 * current one, or, in files without such lines, at a series already seen in it.
 *
 * The workload is [namespace/]pod[/container] from the pod labels (dcgm-exporter's
 * pod/namespace/container, or exported_* once Prometheus has relabelled them); without a
 * pod, the GPU itself: [Hostname/]UUID. The GPU ([Hostname/]UUID, else gpu index) becomes
 * the workload's "gpu" label, so workloads on one GPU count it once today; namespace
 * becomes "namespace"; every other label is kept as it is. */
#include "plan-internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROM_MAX_HELP 64

struct prom_series {
  char *name;
  struct gs__plan_prom_labels l;
  double value, t_ms;
  bool has_t;
};

struct prom_state {
  const char *path;
  size_t no;
  double scrape; /* the current scrape's number, the time of samples without their own */
  char *help[PROM_MAX_HELP];
  int nhelp;
  bool saw_help;
  struct gs_plan_data *d; /* where the samples go */
};

/* Unescapes a quoted label value in place; p points after the opening quote. Returns the
 * character after the closing quote, or NULL. */
static char *label_value(char *p, char **out)
{
  char *w = p;
  *out = p;
  for (; *p && *p != '"'; p++) {
    if (*p == '\\' && p[1]) {
      p++;
      *w++ = *p == 'n' ? '\n' : *p;
    } else {
      *w++ = *p;
    }
  }
  if (*p != '"')
    return NULL;
  *w = '\0';
  return p + 1;
}

/* Parses {k="v",...}; p points after '{'. Returns the character after '}', or NULL. */
static char *parse_labels(char *p, struct prom_series *s)
{
  while (*p && *p != '}') {
    p += strspn(p, " \t,");
    if (*p == '}')
      break;
    char *k = p;
    p += strcspn(p, "= \t");
    char *end = p;
    p += strspn(p, " \t");
    if (*p != '=' || s->l.n == GS__PLAN_PROM_MAX_LABELS)
      return NULL;
    *end = '\0';
    p++;
    p += strspn(p, " \t");
    char *v;
    if (*p != '"' || !(p = label_value(p + 1, &v)))
      return NULL;
    s->l.val[s->l.n] = v;
    s->l.key[s->l.n++] = k;
  }
  return *p == '}' ? p + 1 : NULL;
}

static int parse_series(char *line, struct prom_series *s)
{
  memset(s, 0, sizeof(*s));
  s->name = line;
  char *p = line + strcspn(line, "{ \t");
  if (*p == '{') {
    *p = '\0';
    if (!(p = parse_labels(p + 1, s)))
      return -1;
  } else if (*p) {
    *p++ = '\0';
  }
  p += strspn(p, " \t");
  char *v = p, *ts = p + strcspn(p, " \t");
  if (*ts) {
    *ts++ = '\0';
    ts += strspn(ts, " \t");
  }
  if (gs__plan_parse_number(v, &s->value) < 0)
    return -1;
  s->has_t = *ts && gs__plan_parse_number(ts, &s->t_ms) == 0;
  return *ts && !s->has_t ? -1 : 0;
}

static const char *label(const struct gs__plan_prom_labels *s, const char *k)
{
  char exported[64];
  snprintf(exported, sizeof(exported), "exported_%s", k);
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->key[i], k) == 0 && s->val[i][0])
      return s->val[i];
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->key[i], exported) == 0 && s->val[i][0])
      return s->val[i];
  return NULL;
}

/* "[a/]b[/c]" from the parts present; b is required. */
static void join3(char *out, size_t len, const char *a, const char *b, const char *c)
{
  snprintf(out, len, "%s%s%s%s%s", a ? a : "", a ? "/" : "", b, c ? "/" : "", c ? c : "");
}

static int identity(const struct gs__plan_prom_labels *s, char *name, size_t nlen, char *gpu,
                    size_t glen)
{
  const char *host = label(s, "Hostname"), *uuid = label(s, "UUID"), *idx = label(s, "gpu");
  const char *pod = label(s, "pod");
  if (!uuid && !idx && !pod)
    return -1;
  join3(gpu, glen, host, uuid ? uuid : idx ? idx : "?", NULL);
  if (pod)
    join3(name, nlen, label(s, "namespace"), pod, label(s, "container"));
  else
    snprintf(name, nlen, "%s", gpu);
  return 0;
}

static int keep_labels(const struct gs__plan_prom_labels *s, struct gs_plan_workload *w,
                       const char *gpu, gs_error_t *err)
{
  const char *ns = label(s, "namespace");
  if (gs_plan_workload_set_label(w, "gpu", gpu, err) < 0 ||
      (ns && gs_plan_workload_set_label(w, "namespace", ns, err) < 0))
    return -1;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->key[i], "gpu") != 0 &&
        gs_plan_workload_set_label(w, s->key[i], s->val[i], err) < 0)
      return -1;
  return 0;
}

/* In files without HELP lines: has this workload a value of this metric in this scrape? */
static bool seen_in_scrape(const struct gs_plan_workload *w, double t, bool memory)
{
  for (size_t i = w->n; i > 0 && w->s[i - 1].t == t; i--)
    if (!isnan(memory ? w->s[i - 1].mem_bytes : w->s[i - 1].util_pct))
      return true;
  return false;
}

struct gs_plan_workload *gs__plan_prom_workload(struct gs_plan_data *d,
                                                const struct gs__plan_prom_labels *l, bool memory,
                                                double value, const char *where, gs_error_t *err)
{
  char name[512], gpu[256];
  if (identity(l, name, sizeof(name), gpu, sizeof(gpu)) < 0)
    return gs_make_error(err, 0,
                         "%s: series has no pod, UUID or gpu label to name its "
                         "workload",
                         where),
           NULL;
  if (value < 0 || (!memory && value > 100))
    return gs_make_error(err, 0, "%s: %s", where,
                         memory ? "DCGM_FI_DEV_FB_USED below 0"
                                : "DCGM_FI_DEV_GPU_UTIL outside 0..100"),
           NULL;
  struct gs_plan_workload *w = gs_plan_data_workload(d, name, err);
  if (!w || keep_labels(l, w, gpu, err) < 0)
    return NULL;
  return w;
}

static int add_sample(struct prom_state *st, const struct prom_series *s, bool memory,
                      struct gs_plan_data *d, gs_error_t *err)
{
  char where[600];
  snprintf(where, sizeof(where), "%s:%zu", st->path, st->no);
  struct gs_plan_workload *w = gs__plan_prom_workload(d, &s->l, memory, s->value, where, err);
  if (!w)
    return -1;
  if (!s->has_t && !st->saw_help && seen_in_scrape(w, st->scrape, memory))
    st->scrape++;
  double t = s->has_t ? s->t_ms / 1000.0 : st->scrape;
  double util = memory ? (double) NAN : s->value,
         mem = memory ? s->value * 1048576.0 : (double) NAN;
  return gs_plan_workload_add(w, t, util, mem, err);
}

/* "# HELP name ..." or "# TYPE name ...": a metric described twice starts a new scrape. */
static void comment(struct prom_state *st, char *line)
{
  if (strncmp(line, "# HELP ", 7) != 0 && strncmp(line, "# TYPE ", 7) != 0)
    return;
  char *name = line + 7;
  name[strcspn(name, " \t")] = '\0';
  st->saw_help = true;
  if (strncmp(line, "# TYPE ", 7) == 0)
    return;
  for (int i = 0; i < st->nhelp; i++)
    if (strcmp(st->help[i], name) == 0) {
      for (int j = 0; j < st->nhelp; j++)
        free(st->help[j]);
      st->nhelp = 0;
      st->scrape++;
      break;
    }
  if (st->nhelp < PROM_MAX_HELP && (st->help[st->nhelp] = strdup(name)))
    st->nhelp++;
}

static int prom_line(struct prom_state *st, char *line, struct gs_plan_data *d, gs_error_t *err)
{
  line += strspn(line, " \t");
  if (*line == '#') {
    comment(st, line);
    return 0;
  }
  if (!*line)
    return 0;
  bool util = strncmp(line, "DCGM_FI_DEV_GPU_UTIL", 20) == 0 && strchr("{ \t", line[20]);
  bool mem = strncmp(line, "DCGM_FI_DEV_FB_USED", 19) == 0 && strchr("{ \t", line[19]);
  if (!util && !mem)
    return 0;
  struct prom_series s;
  if (parse_series(line, &s) < 0)
    return gs_make_error(err, 0,
                         "%s:%zu: malformed sample line (want name{labels} value "
                         "[timestamp])",
                         st->path, st->no);
  return add_sample(st, &s, mem, d, err);
}

static int prom_each(void *ctx, char *line, size_t no, gs_error_t *err)
{
  struct prom_state *st = ctx;
  st->no = no;
  return prom_line(st, line, st->d, err);
}

int gs__plan_read_prom(FILE *f, const char *path, struct gs_plan_data *d, gs_error_t *err)
{
  struct prom_state st = { .path = path, .d = d };
  int r = gs__plan_each_line(f, path, prom_each, &st, err);
  for (int i = 0; i < st.nhelp; i++)
    free(st.help[i]);
  return r;
}
