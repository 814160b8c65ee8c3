/* Registering run's tenant with the node daemon (see run-register.h). The request carries the
 * limits run was given and where the tenant's ledger lives; the daemon checks that the ledger
 * is the caller's (SO_PEERCRED), writes its limits file, and from then on holds the limits.
 * Registration happens before the command starts, so every process of the tenant maps the
 * daemon's limits when it attaches. */
#include "run-register.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon-client.h"
#include "gs-limits.h"

#define REGISTER_TIMEOUT_MS 5000L

/* Whether the tenant registered: the connection itself is not kept open while the command
 * runs (it would hold a connection's buffers in the daemon for every tenant). */
static bool registered;

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

static json_t *request_body(const struct run_tenant *t)
{
  char dir[PATH_MAX];
  bool bytes = t->vram_set && !t->vram_ppm;
  bool pct = t->vram_set && t->vram_ppm;
  return json_pack("{s:s, s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:s, s:s}", "name", t->name, "pid", (int) getpid(),
                   "state_dir", realpath(t->dir, dir) ? dir : t->dir, "labels", labels_json(t->labels), "vram_bytes",
                   bytes ? json_integer((json_int_t) t->vram_bytes) : json_null(), "vram_pct",
                   pct ? json_real((double) t->vram_ppm / 10000.0) : json_null(), "gpu",
                   t->gpu >= 0 ? json_integer(t->gpu) : json_null(), "compute_pct",
                   t->compute_ppm ? json_real(t->compute_ppm / 10000.0) : json_null(), "compute_policy",
                   gs_compute_policy_name(t->compute_policy), "priority", gs_priority_name(t->priority));
}

int run_register(const struct run_tenant *t, gs_error_t *err)
{
  gs_error_t e = NULL;
  json_t *body = request_body(t);
  struct daemon_client *client = daemon_client_new(NULL, &e);
  if (client)
    daemon_client_set_timeout(client, REGISTER_TIMEOUT_MS);
  int rc = client ? daemon_client_request(client, "POST", "/v1/tenants", body, NULL, NULL, &e) : DAEMON_ERR;
  json_decref(body);
  daemon_client_free(client);
  registered = rc == 0;
  if (rc == 0)
    return 0;
  if (rc == DAEMON_REFUSED) {
    gs_make_error(err, 0, "register with the daemon: %s", e->msg);
    gs_error_release(&e);
    return -1;
  }
  /* No daemon (or none that works): the tenant runs alone, held by its own ledger. */
  GS_LOG(GS_LOG_DEBUG, "run: not registered: %s", e ? e->msg : "no client");
  gs_error_release(&e);
  return 0;
}

void run_unregister(const struct run_tenant *t, int exit_status)
{
  gs_error_t e = NULL;
  _cleanup_free_ char *name = NULL, *path = NULL;
  if (!registered)
    return;
  registered = false;
  struct daemon_client *client = daemon_client_new(NULL, &e);
  name = daemon_client_escape(t->name);
  xasprintf(&path, "/v1/tenants/%s?exit=%d", name, exit_status & 0xff);
  if (client)
    daemon_client_set_timeout(client, REGISTER_TIMEOUT_MS);
  if (!client || daemon_client_request(client, "DELETE", path, NULL, NULL, NULL, &e) != 0) {
    GS_LOG(GS_LOG_WARN, "run: tell the daemon tenant '%s' ended: %s", t->name, e ? e->msg : "no client");
    gs_error_release(&e);
  }
  daemon_client_free(client);
}
