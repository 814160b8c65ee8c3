/* The idle actions (docs/idle.md), each configurable per rule, in the order a rule lists them:
 *   notify   a POST of a JSON body (idle_notify_body) to the rule's webhook, and the log
 *   signal   a signal (SIGUSR1 unless given) to each process of the tenant, so a job can
 *            checkpoint; never to its owner (`gpuslice run`, whose default for it is to end)
 *   suspend  suspend.c's suspend: its memory to host memory, freed on the GPU
 *   stop     SIGTERM to its processes and owner, SIGKILL after the action's grace
 *   shrink   its memory limits lowered live to what it holds (rounded up to a MiB), its
 *            compute limit to what it used (at least 1%)
 * Each is recorded, with its numbers and its error, in the usage ledger's idle_actions. In a
 * dry run (idle_mode dry-run) nothing is done: what would be is recorded and logged. */
#include "idle.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api.h"
#include "daemon.h"
#include "suspend.h"

#define WEBHOOK_TIMEOUT_MS 2000L
/* After a webhook fails, the hooks due in the next WEBHOOK_BACKOFF_S are not tried (each is
 * recorded as failed): a hook that is down must not hold the daemon 2 s per idle tenant. */
#define WEBHOOK_BACKOFF_S 30.0

static double webhook_down_until; /* monotonic seconds */

void idle_record(struct daemon *d, struct tenant *t, const char *what, const struct idle_why *why,
                 bool dry, const char *error)
{
  char reason[256];
  gs_error_t err = NULL;
  snprintf(reason, sizeof(reason),
           "idle %.0f s: device time %.4f of the GPU under %.4f, %.2f CPU cores, %llu bytes held",
           why->idle_s, why->fraction, why->threshold, why->cpu,
           (unsigned long long) why->vram_bytes);
  struct usage_idle_action a = { .at = idle_clock_now(),
                                 .rule = why->rule,
                                 .action = what,
                                 .dry_run = dry,
                                 .idle_s = why->idle_s,
                                 .fraction = why->fraction,
                                 .threshold = why->threshold,
                                 .cpu = why->cpu,
                                 .vram_bytes = why->vram_bytes,
                                 .reason = reason,
                                 .error = error };
  if (usage_db_idle_action(d->db, t, &a, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  GS_LOG(GS_LOG_INFO, "tenant '%s': rule '%s': %s%s: %s%s%s", t->name, why->rule,
         dry ? "would " : "", what, reason, error[0] ? ": failed: " : "", error);
}

static void label_json(const char *key, const char *value, void *data)
{
  json_object_set_new(data, key, json_string(value));
}

json_t *idle_notify_body(const struct daemon *d, const struct tenant *t, const struct idle_why *why)
{
  json_t *labels = json_object();
  gs_labels_foreach(t->labels, label_json, labels);
  return json_pack("{s:s, s:s, s:s, s:I, s:s, s:o, s:s, s:b, s:f, s:f, s:f, s:f, s:I, s:o}",
                   "event", "idle", "node", d->snap.hostname, "tenant", t->name, "uid",
                   (json_int_t) t->uid, "user", t->user, "labels", labels, "rule", why->rule,
                   "dry_run", !idle_acting(d), "idle_seconds", why->idle_s, "device_time_fraction",
                   why->fraction, "threshold", why->threshold, "cpu_cores", why->cpu, "vram_bytes",
                   (json_int_t) why->vram_bytes, "at", api_time_json(idle_clock_now()));
}

/* POSTs body to url, waiting at most WEBHOOK_TIMEOUT_MS: the daemon's one thread waits, so a
 * slow hook costs a sample's lateness, never a lost sample. */
static int webhook(const char *url, json_t *body, char *error, size_t len)
{
  _cleanup_free_ char *text = json_dumps(body, JSON_COMPACT);
  CURL *c = curl_easy_init();
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  long code = 0;
  CURLcode rc = CURLE_FAILED_INIT;
  if (c && h) {
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, WEBHOOK_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  }
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK)
    snprintf(error, len, "webhook %.200s: %s", url, curl_easy_strerror(rc));
  else if (code < 200 || code > 299)
    snprintf(error, len, "webhook %.200s: HTTP %ld", url, code);
  return rc == CURLE_OK && code >= 200 && code <= 299 ? 0 : -1;
}

static bool send_to(const struct watched_proc *w, int sig)
{
  if (w->pidfd >= 0)
    return syscall(SYS_pidfd_send_signal, w->pidfd, sig, NULL, 0) == 0;
  return proc_watch_alive(w) && kill(w->pid, sig) == 0;
}

/* Signals the tenant's processes (and its owner too when owner): how many got it. */
static int signal_all(struct tenant *t, int sig, bool owner)
{
  int n = 0;
  tenant_live_procs(t, 0);
  for (int i = 0; i < t->nprocs; i++)
    n += send_to(&t->procs[i], sig);
  if (owner && t->owner_state == OWNER_WATCHED)
    n += send_to(&t->owner, sig);
  else if (owner && t->owner_pid > 0 && !t->held && kill(t->owner_pid, sig) == 0)
    n++;
  return n;
}

static void shrink(struct daemon *d, struct tenant *t)
{
  for (int g = 0; g < d->snap.ngpus; g++) {
    uint64_t used =
      t->gpu[g].used_bytes > t->gpu[g].nvml_bytes ? t->gpu[g].used_bytes : t->gpu[g].nvml_bytes;
    uint64_t lim = atomic_load(&t->limits->limit_bytes[g]);
    uint64_t want = (used + (1u << 20) - 1) & ~(uint64_t) ((1u << 20) - 1);
    if (want < (1u << 20))
      want = 1u << 20;
    if (lim == GS_LIMIT_NONE || want < lim)
      registry_set_vram(t, g, want, 0, d->gpu_totals, d->snap.ngpus);
  }
  uint32_t ppm = (uint32_t) (t->idle.fraction * 1e6) + 1;
  if (ppm < 10000)
    ppm = 10000;
  if (ppm < atomic_load(&t->limits->compute.limit_ppm) ||
      !atomic_load(&t->limits->compute.limit_ppm))
    registry_set_compute(t, &ppm, NULL, NULL);
}

static int perform(struct daemon *d, struct tenant *t, const struct idle_action *a,
                   const struct idle_why *why, char *error, size_t len)
{
  int status;
  gs_error_t err = NULL;
  switch (a->kind) {
  case IDLE_NOTIFY: {
    if (!a->url[0])
      return 0;
    double mono = daemon_now_mono();
    if (mono < webhook_down_until)
      return snprintf(error, len, "webhook not tried: a webhook failed %.0f s ago",
                      mono - (webhook_down_until - WEBHOOK_BACKOFF_S)),
             -1;
    json_t *body = idle_notify_body(d, t, why);
    int r = webhook(a->url, body, error, len);
    json_decref(body);
    if (r < 0)
      webhook_down_until = daemon_now_mono() + WEBHOOK_BACKOFF_S;
    return r;
  }
  case IDLE_SIGNAL:
    if (signal_all(t, a->signo, false) == 0)
      return snprintf(error, len, "no process of the tenant to signal"), -1;
    return 0;
  case IDLE_SUSPEND:
    if (suspend_state(t) != GS_RUN_RUNNING)
      return 0;
    if (suspend_tenant(d, t, 0, &status, &err) < 0) {
      snprintf(error, len, "%s", err->msg);
      gs_error_release(&err);
      return -1;
    }
    return 0;
  case IDLE_STOP:
    if (signal_all(t, SIGTERM, true) == 0)
      return snprintf(error, len, "no process of the tenant to stop"), -1;
    t->idle.kill_mono = daemon_now_mono() + a->grace_s;
    return 0;
  case IDLE_SHRINK: shrink(d, t); return 0;
  default: return 0;
  }
}

int idle_act(struct daemon *d, struct tenant *t, const struct idle_action *a,
             const struct idle_why *why, bool dry, char *did, size_t len)
{
  char error[384] = "";
  const char *name = idle_action_name(a->kind);
  int r = dry ? 0 : perform(d, t, a, why, error, sizeof(error));
  idle_record(d, t, name, why, dry, error);
  idle_count(d, why->rule, a->kind, dry);
  snprintf(did, len, "%s%s (rule %s)%s%s", dry ? "would " : "", name, why->rule,
           error[0] ? ": failed: " : "", error);
  return r;
}

void idle_stop_step(struct daemon *d, struct tenant *t, double mono)
{
  (void) d;
  if (t->idle.kill_mono <= 0 || mono < t->idle.kill_mono)
    return;
  t->idle.kill_mono = 0;
  int n = signal_all(t, SIGKILL, true);
  if (n)
    GS_LOG(GS_LOG_INFO, "tenant '%s': stop: SIGKILL to %d process(es) after the grace", t->name, n);
}
