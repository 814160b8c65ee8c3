/* Finding idle tenants and acting on them (docs/idle.md). Private to daemon/.
 *
 *   idle-rules.c     the rules and schedules: parsed from JSON (the idle_rules file, PUT
 *                    /v1/idle/rules), checked, and written back as JSON
 *   idle.c           the detector: each sample, each tenant's device time, memory, CPU time and
 *                    served requests; its idle time, the rule that applies, what is due
 *   idle-actions.c   the actions: notify (webhook), signal, suspend, stop, shrink; the ledger row
 *   idle-schedule.c  the schedules: windows in a time zone during which a tenant is suspended
 *   idle-clock.c     the clock the detector and the schedules read (a test-only fake one) */
#ifndef GS_DAEMON_IDLE_H
#define GS_DAEMON_IDLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <gpuslice.h>

struct daemon;
struct tenant;

enum idle_action_kind {
  IDLE_NOTIFY,
  IDLE_SIGNAL,
  IDLE_SUSPEND,
  IDLE_STOP,
  IDLE_SHRINK,
  IDLE_NKINDS
};

#define IDLE_ACTIONS_MAX 8
#define IDLE_WINDOWS_MAX 8
#define IDLE_NAME_MAX 64
#define IDLE_SELECTOR_MAX 256

struct idle_action {
  enum idle_action_kind kind;
  double after_s; /* idle time past the rule's duration at which it is due */
  char url[512];  /* notify: the webhook ("" : the log only) */
  int signo;      /* signal: SIGUSR1 unless given */
  double grace_s; /* stop: SIGTERM, then SIGKILL this long after */
};

struct idle_rule {
  char name[IDLE_NAME_MAX];
  char match[IDLE_SELECTOR_MAX];  /* "k=v,k2=v2"; "" matches every tenant */
  char exempt[IDLE_SELECTOR_MAX]; /* tenants this matches are never acted on; "" none */
  bool never;                     /* matched tenants are never idle */
  double threshold;               /* device-time fraction under which a tenant is idle */
  double duration_s;              /* idle this long before the first action is due */
  double grace_s;                 /* after a tenant is first seen, nothing is due */
  double cpu_exempt;    /* >0: CPU use of its processes, in cores, that counts as activity */
  bool requests_exempt; /* a served-requests counter that moves counts as activity */
  struct idle_action actions[IDLE_ACTIONS_MAX];
  int nactions;
};

/* A weekly window: days (bit 0 Monday .. bit 6 Sunday), from start_min to end_min (minutes of
 * the day); end_min <= start_min runs past midnight into the next day. */
struct idle_window {
  uint8_t days;
  int start_min, end_min;
};

struct idle_schedule {
  char name[IDLE_NAME_MAX];
  char match[IDLE_SELECTOR_MAX];
  char tz[64];
  struct idle_window w[IDLE_WINDOWS_MAX];
  int nw;
};

struct idle_rules {
  struct idle_rule *r;
  int n;
  struct idle_schedule *s;
  int ns;
};

/* ---- idle-rules.c ---- */
/* Parses {"rules": [...], "schedules": [...]}. Returns 0, or -1 with err one line naming the
 * rule (or schedule) and the field. */
int idle_rules_parse(json_t *j, struct idle_rules *out, gs_error_t *err);
int idle_rules_load(const char *path, struct idle_rules *out, gs_error_t *err);
void idle_rules_release(struct idle_rules *r);
json_t *idle_rules_json(const struct idle_rules *r);
const char *idle_action_name(enum idle_action_kind k);
/* Whether labels ("k=v" lines) satisfy selector ("k=v,k2=v2"; "" always). */
bool idle_selector_matches(const char *selector, const char *labels);

/* ---- idle-schedule.c ---- */
/* Parses one window, "Mon-Fri 18:00-08:00", "Sat-Sun" (all day), "daily 12:00-13:00". */
int idle_window_parse(const char *text, struct idle_window *w, gs_error_t *err);
/* Whether unix time now falls in one of s's windows, in s's time zone. */
bool idle_schedule_active(const struct idle_schedule *s, double now);
/* Whether tz names a time zone this machine has (tzdata). */
bool idle_tz_valid(const char *tz);
/* Each sample: suspends the tenants a window covers, resumes those it no longer does. */
void idle_schedule_run(struct daemon *d, double now);

/* ---- idle-clock.c ---- */
/* Unix seconds: the real clock, or GPUSLICE_TEST_CLOCK_FILE's number when set (tests only). */
double idle_clock_now(void);

/* ---- idle.c ---- */
struct idle_state;
int idle_init(struct daemon *d, gs_error_t *err);
void idle_release(struct daemon *d);
/* Replaces the rules (PUT /v1/idle/rules): the tenants' episodes start again. */
void idle_set_rules(struct daemon *d, struct idle_rules *r);
const struct idle_rules *idle_rules_of(const struct daemon *d);
bool idle_acting(const struct daemon *d); /* idle_mode act, not a dry run */
/* Each sample, after the tenants' device time was counted. */
void idle_run(struct daemon *d);
/* Each tenant as GET /v1/idle shows it. */
json_t *idle_tenant_json(const struct daemon *d, const struct tenant *t);
/* GPU indexes no tenant holds memory on. */
json_t *idle_empty_gpus_json(const struct daemon *d);
/* The idle metrics, Prometheus text, appended to *text. */
void idle_metrics_append(const struct daemon *d, char **text, size_t *len);
/* Counts an action done (or, in a dry run, due) for /metrics. */
void idle_count(struct daemon *d, const char *rule, enum idle_action_kind k, bool dry);

/* ---- idle-actions.c ---- */
struct idle_why {
  const char *rule;
  double idle_s, fraction, threshold, cpu;
  uint64_t vram_bytes;
};
/* Does (or, dry, only records) action a on t; records it in the ledger and the log. Writes what
 * happened into did (a short phrase). Returns 0, or -1 when the action failed (recorded too). */
int idle_act(struct daemon *d, struct tenant *t, const struct idle_action *a,
             const struct idle_why *why, bool dry, char *did, size_t len);
/* Records what (an action's name, "resume") in the ledger and the counters; error "" when it
 * went well. */
void idle_record(struct daemon *d, struct tenant *t, const char *what, const struct idle_why *why,
                 bool dry, const char *error);
/* A stop's SIGKILL when its grace is over. */
void idle_stop_step(struct daemon *d, struct tenant *t, double mono);
/* The JSON body the webhook gets (docs/idle.md). */
json_t *idle_notify_body(const struct daemon *d, const struct tenant *t,
                         const struct idle_why *why);

#endif
