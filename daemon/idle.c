/* The idle detector (docs/idle.md). Each sample, for each tenant: its device time over the
 * interval as a fraction of the GPU (all its GPUs summed), the memory it holds, the CPU time of
 * its processes (only where its rule has a CPU exemption) and its served-requests counter.
 * A tenant is idle while its fraction stays under its rule's threshold and it holds memory;
 * idle_seconds counts from its last activity. CPU use above the rule's cpu_exempt, and a
 * counter that moved under requests_exempt, count as activity. A suspended tenant stays idle
 * (its time keeps counting) so that a later action (stop) can follow a suspend.
 *
 * The first rule whose selector matches applies. Nothing is due for a rule with never, a
 * tenant its exempt selector matches, or one within grace of when the daemon first saw it.
 * Action i is due at duration + after_i of idle time, done once per idle episode; activity
 * starts a new episode. In a dry run (the default) each is recorded as what would be done. */
#include "idle.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "suspend.h"

struct idle_counter {
  char rule[IDLE_NAME_MAX + 16];
  enum idle_action_kind kind;
  bool dry;
  uint64_t n;
};

struct idle_state {
  struct idle_rules rules;
  struct idle_counter *c;
  int nc, cap;
  long ticks; /* sysconf(_SC_CLK_TCK) */
};

int idle_init(struct daemon *d, gs_error_t *err)
{
  d->idle = xcalloc(1, sizeof(*d->idle));
  d->idle->ticks = sysconf(_SC_CLK_TCK);
  if (d->idle->ticks <= 0)
    d->idle->ticks = 100;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (d->cfg.idle_rules && d->cfg.idle_rules[0] &&
      idle_rules_load(d->cfg.idle_rules, &d->idle->rules, err) < 0)
    return -1;
  if (d->idle->rules.n || d->idle->rules.ns)
    GS_LOG(GS_LOG_INFO, "idle: %d rule(s), %d schedule(s), %s", d->idle->rules.n, d->idle->rules.ns,
           idle_acting(d) ? "acting" : "dry run");
  return 0;
}

void idle_release(struct daemon *d)
{
  if (!d->idle)
    return;
  idle_rules_release(&d->idle->rules);
  free(d->idle->c);
  free(d->idle);
  d->idle = NULL;
  curl_global_cleanup();
}

const struct idle_rules *idle_rules_of(const struct daemon *d)
{
  return &d->idle->rules;
}

bool idle_acting(const struct daemon *d)
{
  return d->cfg.idle_mode == IDLE_MODE_ACT;
}

void idle_set_rules(struct daemon *d, struct idle_rules *r)
{
  idle_rules_release(&d->idle->rules);
  d->idle->rules = *r;
  memset(r, 0, sizeof(*r));
}

void idle_count(struct daemon *d, const char *rule, enum idle_action_kind k, bool dry)
{
  struct idle_state *s = d->idle;
  for (int i = 0; i < s->nc; i++)
    if (s->c[i].kind == k && s->c[i].dry == dry && strcmp(s->c[i].rule, rule) == 0) {
      s->c[i].n++;
      return;
    }
  if (s->nc == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->c = xrealloc(s->c, (size_t) s->cap * sizeof(*s->c));
  }
  struct idle_counter *c = &s->c[s->nc++];
  snprintf(c->rule, sizeof(c->rule), "%s", rule);
  c->kind = k;
  c->dry = dry;
  c->n = 1;
}

/* utime + stime of pid, in clock ticks; 0 when it cannot be read. */
static uint64_t proc_cpu_ticks(pid_t pid)
{
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  unsigned long long ut = 0, st = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    return 0;
  return ut + st;
}

static uint64_t tenant_cpu_ticks(const struct tenant *t)
{
  uint64_t sum = t->owner_pid > 0 ? proc_cpu_ticks(t->owner_pid) : 0;
  for (int i = 0; i < t->nprocs; i++)
    if (t->procs[i].pid != t->owner_pid)
      sum += proc_cpu_ticks(t->procs[i].pid);
  return sum;
}

static const struct idle_rule *rule_for(const struct daemon *d, const struct tenant *t)
{
  const struct idle_rules *r = &d->idle->rules;
  for (int i = 0; i < r->n; i++)
    if (idle_selector_matches(r->r[i].match, t->labels))
      return &r->r[i];
  return NULL;
}

static void observe_totals(const struct tenant *t, uint64_t *gpu_ns, uint64_t *vram)
{
  *gpu_ns = *vram = 0;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    const struct tenant_gpu *tg = &t->gpu[g];
    *gpu_ns += tg->gpu_ns;
    *vram += tg->used_bytes > tg->nvml_bytes ? tg->used_bytes : tg->nvml_bytes;
    *vram += atomic_load(&t->limits->suspended_bytes[g]);
  }
}

/* What the tenant did over the last sample; whether it was active. */
static bool observe(struct daemon *d, struct tenant *t, const struct idle_rule *r, double now,
                    double mono, const char **why)
{
  struct tenant_idle *ti = &t->idle;
  uint64_t gpu_ns, vram, cpu = r && r->cpu_exempt > 0 ? tenant_cpu_ticks(t) : 0;
  observe_totals(t, &gpu_ns, &vram);
  double el = mono - ti->last_mono;
  bool first = !ti->seen;
  if (first) {
    ti->seen = true;
    ti->first_seen = ti->last_active = now;
  }
  ti->fraction = !first && el > 0 ? (double) (gpu_ns - ti->last_gpu_ns) / (el * 1e9) : 0;
  ti->cpu = !first && el > 0 && cpu >= ti->last_cpu_ticks
    ? (double) (cpu - ti->last_cpu_ticks) / (double) d->idle->ticks / el
    : 0;
  bool moved = !first && t->served_requests != ti->last_requests;
  ti->last_mono = mono;
  ti->last_gpu_ns = gpu_ns;
  ti->last_cpu_ticks = cpu;
  ti->last_requests = t->served_requests;
  ti->vram_bytes = vram;
  ti->holding = vram > 0;
  double threshold = r ? r->threshold : 0.01;
  bool suspended = suspend_state(t) != GS_RUN_RUNNING;
  *why = suspended                                       ? "suspended"
    : first                                              ? "active"
    : !ti->holding                                       ? "no-memory"
    : ti->fraction >= threshold                          ? "active"
    : r && r->cpu_exempt > 0 && ti->cpu >= r->cpu_exempt ? "busy-cpu"
    : r && r->requests_exempt && moved                   ? "serving"
                                                         : "idle";
  return !suspended && strcmp(*why, "idle") != 0;
}

/* Does the actions now due, in order; says what comes next in ti->would. */
static void escalate(struct daemon *d, struct tenant *t, const struct idle_rule *r)
{
  struct tenant_idle *ti = &t->idle;
  struct idle_why why = { .rule = r->name,
                          .idle_s = ti->idle_s,
                          .fraction = ti->fraction,
                          .threshold = r->threshold,
                          .cpu = ti->cpu,
                          .vram_bytes = ti->vram_bytes };
  bool dry = !idle_acting(d);
  snprintf(ti->would, sizeof(ti->would), "nothing more");
  for (int i = 0; i < r->nactions; i++) {
    const struct idle_action *a = &r->actions[i];
    if (ti->fired & (1u << i))
      continue;
    double due = r->duration_s + a->after_s;
    if (ti->idle_s < due) {
      snprintf(ti->would, sizeof(ti->would), "%s in %.0f s", idle_action_name(a->kind),
               due - ti->idle_s);
      return;
    }
    ti->fired |= 1u << i;
    idle_act(d, t, a, &why, dry, ti->did, sizeof(ti->did));
  }
}

static void decide(struct daemon *d, struct tenant *t, const struct idle_rule *r, double now,
                   bool active, const char *why)
{
  struct tenant_idle *ti = &t->idle;
  snprintf(ti->rule, sizeof(ti->rule), "%s", r ? r->name : "");
  snprintf(ti->state, sizeof(ti->state), "%s", why);
  if (!r) {
    snprintf(ti->would, sizeof(ti->would), "nothing: no rule");
  } else if (r->never) {
    snprintf(ti->state, sizeof(ti->state), "never");
    snprintf(ti->would, sizeof(ti->would), "nothing: rule says never");
  } else if (r->exempt[0] && idle_selector_matches(r->exempt, t->labels)) {
    snprintf(ti->state, sizeof(ti->state), "exempt");
    snprintf(ti->would, sizeof(ti->would), "nothing: exempt (%.60s)", r->exempt);
  } else if (now - ti->first_seen < r->grace_s) {
    snprintf(ti->state, sizeof(ti->state), "grace");
    snprintf(ti->would, sizeof(ti->would), "nothing: in grace for %.0f s more",
             r->grace_s - (now - ti->first_seen));
  } else if (active) {
    snprintf(ti->would, sizeof(ti->would), "nothing: %s", why);
  } else {
    escalate(d, t, r);
  }
}

void idle_run(struct daemon *d)
{
  double now = idle_clock_now(), mono = daemon_now_mono();
  for (int i = 0; i < d->reg.n; i++) {
    struct tenant *t = d->reg.v[i];
    const struct idle_rule *r = rule_for(d, t);
    const char *why;
    bool active = observe(d, t, r, now, mono, &why);
    if (active) {
      t->idle.last_active = now;
      t->idle.fired = 0;
    }
    t->idle.idle_s = active ? 0 : now - t->idle.last_active;
    decide(d, t, r, now, active, why);
    idle_stop_step(d, t, mono);
  }
  idle_schedule_run(d, now);
}

json_t *idle_tenant_json(const struct daemon *d, const struct tenant *t)
{
  const struct tenant_idle *ti = &t->idle;
  (void) d;
  return json_pack("{s:s, s:s, s:f, s:s, s:s, s:s, s:s, s:f, s:f, s:I, s:b, s:s*}", "name", t->name,
                   "user", t->user, "idle_seconds", ti->idle_s, "state", ti->state, "rule",
                   ti->rule, "would", ti->would, "did", ti->did, "device_time_fraction",
                   ti->fraction, "cpu_cores", ti->cpu, "vram_bytes", (json_int_t) ti->vram_bytes,
                   "holds_memory", ti->holding, "schedule", ti->sched[0] ? ti->sched : NULL);
}

static bool gpu_empty(const struct daemon *d, int g)
{
  for (int i = 0; i < d->reg.n; i++) {
    const struct tenant *t = d->reg.v[i];
    if (t->gpu[g].used_bytes || t->gpu[g].nvml_bytes || atomic_load(&t->limits->suspended_bytes[g]))
      return false;
  }
  return true;
}

json_t *idle_empty_gpus_json(const struct daemon *d)
{
  json_t *a = json_array();
  for (int g = 0; g < d->snap.ngpus; g++)
    if (gpu_empty(d, g))
      json_array_append_new(a, json_integer(g));
  return a;
}

/* A label value as Prometheus' text format escapes it. */
static void esc(char *out, size_t len, const char *s)
{
  size_t n = 0;
  for (; *s && n + 3 < len; s++) {
    if (*s == '\\' || *s == '"' || *s == '\n')
      out[n++] = '\\';
    out[n++] = *s == '\n' ? 'n' : *s;
  }
  out[n] = '\0';
}

static void put(char **text, size_t *len, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void put(char **text, size_t *len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *line = NULL;
  int n = vasprintf(&line, fmt, ap);
  va_end(ap);
  if (n < 0)
    abort();
  *text = xrealloc(*text, *len + (size_t) n + 1);
  memcpy(*text + *len, line, (size_t) n + 1);
  *len += (size_t) n;
  free(line);
}

/* The idle detector's series that are not a tenant's (gpuslice_tenant_idle_seconds is, with
 * every tenant label: lib/metrics-render.c). */
void idle_metrics_append(const struct daemon *d, char **text, size_t *len)
{
  char b[256];
  put(text, len,
      "# HELP gpuslice_idle_actions_total Idle actions done (dry_run=\"true\": due in a dry run, "
      "not done), by action and rule.\n"
      "# TYPE gpuslice_idle_actions_total counter\n");
  for (int i = 0; i < d->idle->nc; i++) {
    const struct idle_counter *c = &d->idle->c[i];
    esc(b, sizeof(b), c->rule);
    put(text, len, "gpuslice_idle_actions_total{action=\"%s\",rule=\"%s\",dry_run=\"%s\"} %llu\n",
        idle_action_name(c->kind), b, c->dry ? "true" : "false", (unsigned long long) c->n);
  }
  put(text, len,
      "# HELP gpuslice_gpu_empty 1 when no tenant holds memory on the GPU (for consolidation).\n"
      "# TYPE gpuslice_gpu_empty gauge\n");
  for (int g = 0; g < d->snap.ngpus; g++)
    put(text, len, "gpuslice_gpu_empty{gpu=\"%d\",UUID=\"%s\"} %d\n", g, d->snap.gpus[g].uuid,
        gpu_empty(d, g));
}
