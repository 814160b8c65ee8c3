/* The idle rules and schedules (docs/idle.md): read from JSON, the idle_rules file at start
 * and PUT /v1/idle/rules live, checked whole before any is used, and written back as JSON.
 * A mistake is one line naming the rule (or schedule) and the field:
 *   rule 'notebooks': field 'duration': want a duration such as 900, "30m" or "1h"
 * What the rules mean at each sample is idle.c's. */
#include "idle.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

static const char *const action_names[IDLE_NKINDS] = { "notify", "signal", "suspend", "stop",
                                                       "shrink" };

const char *idle_action_name(enum idle_action_kind k)
{
  return k < IDLE_NKINDS ? action_names[k] : "?";
}

/* Where a mistake is: "rule 'x'" or "schedule 'y'". */
struct where {
  const char *kind, *name;
};

static int bad(gs_error_t *err, const struct where *w, const char *field, const char *want)
{
  return gs_make_error(err, 0, "%s '%s': field '%s': want %s", w->kind, w->name, field, want);
}

/* 900, "900", "90s", "30m", "1h", "2d". */
static int duration_of(const json_t *v, double *out)
{
  if (json_is_number(v)) {
    *out = json_number_value(v);
    return *out >= 0 && isfinite(*out) ? 0 : -1;
  }
  if (!json_is_string(v))
    return -1;
  const char *s = json_string_value(v);
  char *end = NULL;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || errno || x < 0 || !isfinite(x))
    return -1;
  double unit = !*end       ? 1
    : strcmp(end, "s") == 0 ? 1
    : strcmp(end, "m") == 0 ? 60
    : strcmp(end, "h") == 0 ? 3600
    : strcmp(end, "d") == 0 ? 86400
                            : -1;
  if (unit < 0)
    return -1;
  *out = x * unit;
  return 0;
}

#define WANT_DURATION "a duration such as 900, \"30m\" or \"1h\""

static int opt_duration(const json_t *o, const char *key, double *out, const struct where *w,
                        gs_error_t *err)
{
  const json_t *v = json_object_get(o, key);
  if (v && duration_of(v, out) < 0)
    return bad(err, w, key, WANT_DURATION);
  return 0;
}

/* A selector: "k=v" items separated by ','; each key and value non-empty, no spaces. */
static bool selector_valid(const char *s)
{
  if (!*s)
    return true;
  _cleanup_free_ char *copy = xstrdup(s);
  char *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1] || strpbrk(item, " \t\n"))
      return false;
  }
  return s[strlen(s) - 1] != ',' && s[0] != ',' && !strstr(s, ",,");
}

static int opt_selector(const json_t *o, const char *key, char *out, size_t len,
                        const struct where *w, gs_error_t *err)
{
  const json_t *v = json_object_get(o, key);
  if (!v)
    return 0;
  if (!json_is_string(v) || strlen(json_string_value(v)) >= len ||
      !selector_valid(json_string_value(v)))
    return bad(err, w, key, "a label selector such as \"type=notebook,team=dev\"");
  snprintf(out, len, "%s", json_string_value(v));
  return 0;
}

static int signal_of(const json_t *v)
{
  static const struct {
    const char *name;
    int signo;
  } sigs[] = { { "SIGUSR1", SIGUSR1 }, { "SIGUSR2", SIGUSR2 }, { "SIGINT", SIGINT },
               { "SIGTERM", SIGTERM }, { "SIGHUP", SIGHUP },   { "SIGQUIT", SIGQUIT } };
  if (!json_is_string(v))
    return -1;
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
    if (strcmp(json_string_value(v), sigs[i].name) == 0)
      return sigs[i].signo;
  return -1;
}

static int parse_action(const json_t *o, struct idle_action *a, const struct where *w,
                        gs_error_t *err)
{
  const json_t *kind = json_object_get(o, "action");
  memset(a, 0, sizeof(*a));
  a->kind = IDLE_NKINDS;
  for (int k = 0; k < IDLE_NKINDS && json_is_string(kind); k++)
    if (strcmp(json_string_value(kind), action_names[k]) == 0)
      a->kind = (enum idle_action_kind) k;
  if (a->kind == IDLE_NKINDS)
    return bad(err, w, "actions[].action", "notify, signal, suspend, stop or shrink");
  a->signo = SIGUSR1;
  a->grace_s = 30;
  if (opt_duration(o, "after", &a->after_s, w, err) < 0 ||
      opt_duration(o, "grace", &a->grace_s, w, err) < 0)
    return gs_error_prepend(err, "%s", ""), -1;
  const json_t *url = json_object_get(o, "url");
  if (url &&
      (!json_is_string(url) || strlen(json_string_value(url)) >= sizeof(a->url) ||
       strncmp(json_string_value(url), "http", 4) != 0))
    return bad(err, w, "actions[].url", "an http:// or https:// URL");
  if (url)
    snprintf(a->url, sizeof(a->url), "%s", json_string_value(url));
  const json_t *sig = json_object_get(o, "signal");
  if (sig && (a->signo = signal_of(sig)) < 0)
    return bad(err, w, "actions[].signal", "SIGUSR1, SIGUSR2, SIGINT, SIGTERM, SIGHUP or SIGQUIT");
  return 0;
}

static int parse_actions(const json_t *o, struct idle_rule *r, const struct where *w,
                         gs_error_t *err)
{
  const json_t *v = json_object_get(o, "actions");
  if (!v) {
    r->actions[0] = (struct idle_action){ .kind = IDLE_NOTIFY, .signo = SIGUSR1, .grace_s = 30 };
    r->nactions = 1;
    return 0;
  }
  if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > IDLE_ACTIONS_MAX)
    return bad(err, w, "actions", "a list of 1 to 8 actions");
  size_t i;
  const json_t *a;
  json_array_foreach(v, i, a)
  {
    if (!json_is_object(a))
      return bad(err, w, "actions[]",
                 "an object such as {\"action\": \"suspend\", \"after\": \"1h\"}");
    if (parse_action(a, &r->actions[r->nactions++], w, err) < 0)
      return -1;
  }
  return 0;
}

static int parse_name(const json_t *o, char *out, size_t len, int index, struct where *w,
                      gs_error_t *err)
{
  const json_t *v = json_object_get(o, "name");
  snprintf(out, len, "#%d", index + 1);
  w->name = out;
  if (!v || !json_is_string(v) || !json_string_value(v)[0] || strlen(json_string_value(v)) >= len)
    return bad(err, w, "name", "a name of 1 to 63 characters");
  snprintf(out, len, "%s", json_string_value(v));
  return 0;
}

static int parse_limits(const json_t *o, struct idle_rule *r, const struct where *w,
                        gs_error_t *err)
{
  const json_t *th = json_object_get(o, "threshold");
  r->threshold = 0.01;
  if (th && (!json_is_number(th) || json_number_value(th) < 0 || json_number_value(th) > 1))
    return bad(err, w, "threshold", "a device-time fraction from 0 to 1, such as 0.01");
  if (th)
    r->threshold = json_number_value(th);
  if (!r->never && !json_object_get(o, "duration"))
    return bad(err, w, "duration", WANT_DURATION " (or \"never\": true)");
  if (opt_duration(o, "duration", &r->duration_s, w, err) < 0 ||
      opt_duration(o, "grace", &r->grace_s, w, err) < 0)
    return -1;
  const json_t *cpu = json_object_get(o, "cpu_exempt");
  if (cpu && (!json_is_number(cpu) || json_number_value(cpu) <= 0))
    return bad(err, w, "cpu_exempt", "CPU cores above 0, such as 0.5");
  r->cpu_exempt = cpu ? json_number_value(cpu) : 0;
  const json_t *req = json_object_get(o, "requests_exempt");
  if (req && !json_is_boolean(req))
    return bad(err, w, "requests_exempt", "true or false");
  r->requests_exempt = req && json_is_true(req);
  return 0;
}

static const char *const rule_keys[] = { "name",    "match",      "exempt",
                                         "never",   "threshold",  "duration",
                                         "grace",   "cpu_exempt", "requests_exempt",
                                         "actions", NULL };
static const char *const schedule_keys[] = { "name", "match", "tz", "windows", NULL };

/* A key the format does not have is a mistake, not something to ignore silently. */
static int unknown_key(json_t *o, const char *const *keys, const struct where *w, gs_error_t *err)
{
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v)
  {
    bool known = false;
    for (int i = 0; keys[i] && !known; i++)
      known = strcmp(keys[i], k) == 0;
    if (!known)
      return gs_make_error(err, 0, "%s '%s': field '%s': no such field", w->kind, w->name, k);
  }
  return 0;
}

static int parse_rule(json_t *o, int index, struct idle_rule *r, gs_error_t *err)
{
  struct where w = { "rule", NULL };
  memset(r, 0, sizeof(*r));
  if (!json_is_object(o))
    return gs_make_error(err, 0, "rule #%d: want an object", index + 1);
  if (parse_name(o, r->name, sizeof(r->name), index, &w, err) < 0 ||
      unknown_key(o, rule_keys, &w, err) < 0 ||
      opt_selector(o, "match", r->match, sizeof(r->match), &w, err) < 0 ||
      opt_selector(o, "exempt", r->exempt, sizeof(r->exempt), &w, err) < 0)
    return -1;
  const json_t *never = json_object_get(o, "never");
  if (never && !json_is_boolean(never))
    return bad(err, &w, "never", "true or false");
  r->never = never && json_is_true(never);
  if (parse_limits(o, r, &w, err) < 0)
    return -1;
  return r->never ? 0 : parse_actions(o, r, &w, err);
}

static int parse_schedule(json_t *o, int index, struct idle_schedule *s, gs_error_t *err)
{
  struct where w = { "schedule", NULL };
  memset(s, 0, sizeof(*s));
  if (!json_is_object(o))
    return gs_make_error(err, 0, "schedule #%d: want an object", index + 1);
  if (parse_name(o, s->name, sizeof(s->name), index, &w, err) < 0 ||
      unknown_key(o, schedule_keys, &w, err) < 0 ||
      opt_selector(o, "match", s->match, sizeof(s->match), &w, err) < 0)
    return -1;
  const json_t *tz = json_object_get(o, "tz");
  snprintf(s->tz, sizeof(s->tz), "UTC");
  if (tz &&
      (!json_is_string(tz) || strlen(json_string_value(tz)) >= sizeof(s->tz) ||
       !idle_tz_valid(json_string_value(tz))))
    return bad(err, &w, "tz", "a time zone of the tz database, such as \"Europe/Paris\"");
  if (tz)
    snprintf(s->tz, sizeof(s->tz), "%s", json_string_value(tz));
  const json_t *v = json_object_get(o, "windows");
  if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > IDLE_WINDOWS_MAX)
    return bad(err, &w, "windows", "a list of 1 to 8 windows such as \"Mon-Fri 18:00-08:00\"");
  size_t i;
  const json_t *x;
  json_array_foreach(v, i, x)
  {
    gs_error_t werr = NULL;
    if (!json_is_string(x) || idle_window_parse(json_string_value(x), &s->w[s->nw++], &werr) < 0) {
      int r = gs_make_error(err, 0, "schedule '%s': field 'windows': %s", s->name,
                            werr ? werr->msg : "want a string such as \"Mon-Fri 18:00-08:00\"");
      gs_error_release(&werr);
      return r;
    }
  }
  return 0;
}

static int parse_list(const json_t *j, const char *key, size_t max, gs_error_t *err)
{
  const json_t *v = json_object_get(j, key);
  if (v && (!json_is_array(v) || json_array_size(v) > max))
    return gs_make_error(err, 0, "field '%s': want a list of at most %zu", key, max);
  return v ? (int) json_array_size(v) : 0;
}

int idle_rules_parse(json_t *j, struct idle_rules *out, gs_error_t *err)
{
  struct idle_rules r = { 0 };
  if (!json_is_object(j))
    return gs_make_error(err, 0, "want an object with \"rules\" and \"schedules\"");
  const char *k;
  json_t *v;
  json_object_foreach(
    j, k, v) if (strcmp(k, "rules") != 0 &&
                 strcmp(k, "schedules") !=
                   0) return gs_make_error(err, 0,
                                           "field '%s': no such field (want rules, schedules)", k);
  int nr = parse_list(j, "rules", 256, err), ns = nr < 0 ? -1 : parse_list(j, "schedules", 64, err);
  if (nr < 0 || ns < 0)
    return -1;
  r.r = xcalloc((size_t) nr + 1, sizeof(*r.r));
  r.s = xcalloc((size_t) ns + 1, sizeof(*r.s));
  for (r.n = 0; r.n < nr; r.n++)
    if (parse_rule(json_array_get(json_object_get(j, "rules"), (size_t) r.n), r.n, &r.r[r.n], err) <
        0)
      goto fail;
  for (r.ns = 0; r.ns < ns; r.ns++)
    if (parse_schedule(json_array_get(json_object_get(j, "schedules"), (size_t) r.ns), r.ns,
                       &r.s[r.ns], err) < 0)
      goto fail;
  for (int a = 0; a < r.n; a++)
    for (int b = 0; b < a; b++)
      if (strcmp(r.r[a].name, r.r[b].name) == 0) {
        gs_make_error(err, 0, "rule '%s': field 'name': used twice", r.r[a].name);
        goto fail;
      }
  *out = r;
  return 0;
fail:
  idle_rules_release(&r);
  return -1;
}

int idle_rules_load(const char *path, struct idle_rules *out, gs_error_t *err)
{
  json_error_t jerr;
  json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!j)
    return gs_make_error(err, 0, "idle rules %s: %s (line %d)", path, jerr.text, jerr.line);
  int r = idle_rules_parse(j, out, err);
  json_decref(j);
  return r < 0 ? gs_error_prepend(err, "idle rules %s", path) : 0;
}

void idle_rules_release(struct idle_rules *r)
{
  free(r->r);
  free(r->s);
  memset(r, 0, sizeof(*r));
}

static json_t *action_json(const struct idle_action *a)
{
  json_t *j = json_pack("{s:s, s:f}", "action", idle_action_name(a->kind), "after", a->after_s);
  if (a->kind == IDLE_NOTIFY && a->url[0])
    json_object_set_new(j, "url", json_string(a->url));
  if (a->kind == IDLE_SIGNAL)
    json_object_set_new(j, "signal",
                        json_string(a->signo == SIGUSR1 ? "SIGUSR1" : sigabbrev_np(a->signo)));
  if (a->kind == IDLE_STOP)
    json_object_set_new(j, "grace", json_real(a->grace_s));
  return j;
}

static json_t *rule_json(const struct idle_rule *r)
{
  json_t *acts = json_array();
  for (int i = 0; i < r->nactions; i++)
    json_array_append_new(acts, action_json(&r->actions[i]));
  return json_pack("{s:s, s:s, s:s, s:b, s:f, s:f, s:f, s:f, s:b, s:o}", "name", r->name, "match",
                   r->match, "exempt", r->exempt, "never", r->never, "threshold", r->threshold,
                   "duration", r->duration_s, "grace", r->grace_s, "cpu_exempt", r->cpu_exempt,
                   "requests_exempt", r->requests_exempt, "actions", acts);
}

static const char *const day_names[7] = { "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun" };

static json_t *window_json(const struct idle_window *w)
{
  char days[64] = "", buf[96];
  for (int d = 0; d < 7; d++)
    if (w->days & (1u << d))
      snprintf(days + strlen(days), sizeof(days) - strlen(days), "%s%s", days[0] ? "," : "",
               day_names[d]);
  snprintf(buf, sizeof(buf), "%s %02d:%02d-%02d:%02d", days, w->start_min / 60, w->start_min % 60,
           w->end_min / 60 % 24, w->end_min % 60);
  return json_string(buf);
}

json_t *idle_rules_json(const struct idle_rules *r)
{
  json_t *rules = json_array(), *scheds = json_array();
  for (int i = 0; i < r->n; i++)
    json_array_append_new(rules, rule_json(&r->r[i]));
  for (int i = 0; i < r->ns; i++) {
    json_t *w = json_array();
    for (int k = 0; k < r->s[i].nw; k++)
      json_array_append_new(w, window_json(&r->s[i].w[k]));
    json_array_append_new(scheds,
                          json_pack("{s:s, s:s, s:s, s:o}", "name", r->s[i].name, "match",
                                    r->s[i].match, "tz", r->s[i].tz, "windows", w));
  }
  return json_pack("{s:o, s:o}", "rules", rules, "schedules", scheds);
}

/* Each "k=v" item of the selector must be one of the labels' lines. */
bool idle_selector_matches(const char *selector, const char *labels)
{
  const char *p = selector;
  while (*p) {
    size_t n = strcspn(p, ",");
    bool found = false;
    for (const char *l = labels; l && *l && !found;) {
      size_t m = strcspn(l, "\n");
      found = m == n && strncmp(l, p, n) == 0;
      l += m + (l[m] == '\n');
    }
    if (!found)
      return false;
    p += n + (p[n] == ',');
  }
  return true;
}
