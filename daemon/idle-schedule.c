/* Schedules (docs/idle.md): weekly windows, in a time zone, during which the tenants a
 * schedule's selector matches are suspended; at a window's end they are resumed. A window is
 * "DAYS [HH:MM-HH:MM]": DAYS "daily", or days and ranges separated by ',' (Mon-Fri, Sat,Sun);
 * without times, the whole day. A window whose end is not after its start spans midnight and
 * covers, on each of its days, both the evening part and the morning part: "Mon-Fri
 * 18:00-08:00" holds Monday 00:00-08:00 and 18:00-24:00, ..., Friday 18:00-24:00; "Sat-Sun"
 * then covers the weekend, so the pair suspends from Friday 18:00 to Monday 08:00. */
#include "idle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "daemon.h"
#include "suspend.h"

static const char *const days3[7] = { "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun" };

static int day_of(const char *s, size_t n)
{
  for (int d = 0; d < 7; d++)
    if (n == 3 && strncasecmp(s, days3[d], 3) == 0)
      return d;
  return -1;
}

/* "Mon-Fri,Sun" into a mask; -1 when it is not one. */
static int days_parse(const char *s, size_t n)
{
  if ((n == 5 && strncasecmp(s, "daily", 5) == 0) || (n == 1 && s[0] == '*'))
    return 0x7f;
  int mask = 0;
  while (n > 0) {
    size_t item = 0;
    while (item < n && s[item] != ',')
      item++;
    int a = day_of(s, item < 3 ? item : 3), b = a;
    if (item == 7 && s[3] == '-')
      b = day_of(s + 4, 3);
    else if (item != 3)
      return -1;
    if (a < 0 || b < 0)
      return -1;
    for (int d = a;; d = (d + 1) % 7) {
      mask |= 1 << d;
      if (d == b)
        break;
    }
    s += item + (item < n);
    n -= item + (item < n);
  }
  return mask ? mask : -1;
}

static int hhmm(const char *s, int *min)
{
  int h, m, used = 0;
  if (sscanf(s, "%2d:%2d%n", &h, &m, &used) != 2 || used != 5 || h < 0 || h > 24 || m < 0 ||
      m > 59 || (h == 24 && m))
    return -1;
  *min = h * 60 + m;
  return 0;
}

int idle_window_parse(const char *text, struct idle_window *w, gs_error_t *err)
{
  const char *sp = strchr(text, ' ');
  size_t n = sp ? (size_t) (sp - text) : strlen(text);
  int mask = days_parse(text, n);
  memset(w, 0, sizeof(*w));
  if (mask < 0)
    return gs_make_error(err, 0, "'%s': want days such as Mon-Fri, Sat,Sun or daily", text);
  w->days = (uint8_t) mask;
  w->end_min = 24 * 60;
  if (!sp)
    return 0;
  while (*sp == ' ')
    sp++;
  if (strlen(sp) != 11 || sp[5] != '-' || hhmm(sp, &w->start_min) < 0 ||
      hhmm(sp + 6, &w->end_min) < 0 || w->start_min == w->end_min)
    return gs_make_error(err, 0, "'%s': want times HH:MM-HH:MM, start and end different", text);
  return 0;
}

bool idle_tz_valid(const char *tz)
{
  if (strcmp(tz, "UTC") == 0)
    return true;
  if (!tz[0] || tz[0] == '/' || strstr(tz, ".."))
    return false;
  const char *dir = secure_getenv("TZDIR");
  char path[512];
  struct stat st;
  snprintf(path, sizeof(path), "%s/%s", dir && dir[0] ? dir : "/usr/share/zoneinfo", tz);
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The local time of now in tz. The daemon has one thread: TZ is set for the call, then put
 * back. */
static void local_in(const char *tz, double now, struct tm *tm)
{
  const char *old = getenv("TZ");
  _cleanup_free_ char *saved = old ? xstrdup(old) : NULL;
  time_t t = (time_t) now;
  setenv("TZ", tz, 1);
  tzset();
  localtime_r(&t, tm);
  if (saved)
    setenv("TZ", saved, 1);
  else
    unsetenv("TZ");
  tzset();
}

static bool window_holds(const struct idle_window *w, int wday, int min)
{
  if (!(w->days & (1u << wday)))
    return false;
  if (w->start_min < w->end_min)
    return min >= w->start_min && min < w->end_min;
  return min >= w->start_min || min < w->end_min;
}

bool idle_schedule_active(const struct idle_schedule *s, double now)
{
  struct tm tm;
  local_in(s->tz, now, &tm);
  int wday = (tm.tm_wday + 6) % 7, min = tm.tm_hour * 60 + tm.tm_min;
  for (int i = 0; i < s->nw; i++)
    if (window_holds(&s->w[i], wday, min))
      return true;
  return false;
}

static const struct idle_schedule *schedule_for(const struct idle_rules *r, const struct tenant *t)
{
  for (int i = 0; i < r->ns; i++)
    if (idle_selector_matches(r->s[i].match, t->labels))
      return &r->s[i];
  return NULL;
}

static void sched_record(struct daemon *d, struct tenant *t, const struct idle_schedule *s,
                         const char *what, const char *result)
{
  char rule[96];
  snprintf(rule, sizeof(rule), "schedule:%s", s->name);
  struct idle_why why = { .rule = rule,
                          .idle_s = t->idle.idle_s,
                          .fraction = t->idle.fraction,
                          .cpu = t->idle.cpu,
                          .vram_bytes = t->idle.vram_bytes };
  idle_record(d, t, what, &why, !idle_acting(d), result);
  snprintf(t->idle.did, sizeof(t->idle.did), "%s%s (schedule %s)%s%s",
           idle_acting(d) ? "" : "would ", what, s->name, result[0] ? ": " : "", result);
}

static void sched_suspend(struct daemon *d, struct tenant *t, const struct idle_schedule *s)
{
  int status;
  gs_error_t err = NULL;
  snprintf(t->idle.sched, sizeof(t->idle.sched), "%s", s->name);
  if (!idle_acting(d)) {
    sched_record(d, t, s, "suspend", "");
    return;
  }
  if (suspend_tenant(d, t, 0, &status, &err) < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': schedule '%s': suspend: %s", t->name, s->name, err->msg);
    sched_record(d, t, s, "suspend", err->msg);
    gs_error_release(&err);
    return;
  }
  GS_LOG(GS_LOG_INFO, "tenant '%s' suspended by schedule '%s'", t->name, s->name);
  char rule[96];
  snprintf(rule, sizeof(rule), "schedule:%s", s->name);
  idle_count(d, rule, IDLE_SUSPEND, false);
  sched_record(d, t, s, "suspend", "");
}

static void sched_resume(struct daemon *d, struct tenant *t, const struct idle_schedule *s)
{
  int status;
  gs_error_t err = NULL;
  if (idle_acting(d) && suspend_state(t) != GS_RUN_RUNNING &&
      resume_tenant(d, t, "sched", &status, &err) < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': schedule '%s': resume: %s", t->name, s->name, err->msg);
    sched_record(d, t, s, "resume", err->msg);
    gs_error_release(&err);
  } else {
    GS_LOG(GS_LOG_INFO, "tenant '%s': schedule '%s' over: %s", t->name, s->name,
           idle_acting(d) ? "resumed" : "would resume");
    sched_record(d, t, s, "resume", "");
  }
  t->idle.sched[0] = '\0';
}

void idle_schedule_run(struct daemon *d, double now)
{
  const struct idle_rules *r = idle_rules_of(d);
  if (!r->ns)
    return;
  /* Each schedule's state once per sample: a time zone's rules are read at each switch of TZ. */
  _cleanup_free_ bool *active = xcalloc((size_t) r->ns, sizeof(*active));
  for (int k = 0; k < r->ns; k++)
    active[k] = idle_schedule_active(&r->s[k], now);
  for (int i = 0; i < d->reg.n; i++) {
    struct tenant *t = d->reg.v[i];
    const struct idle_schedule *s = schedule_for(r, t);
    bool on = s && active[s - r->s];
    if (on && !t->idle.sched[0])
      sched_suspend(d, t, s);
    else if (!on && t->idle.sched[0]) {
      struct idle_schedule gone = { 0 };
      snprintf(gone.name, sizeof(gone.name), "%s", t->idle.sched);
      sched_resume(d, t, s ? s : &gone);
    }
  }
}
