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

#include "cli-daemon-client.h"
#include "tenant-json.h"

#define REGISTER_TIMEOUT_MS 5000L

/* Whether the tenant registered: the connection itself is not kept open while the command
 * runs (it would hold a connection's buffers in the daemon for every tenant). */
static bool registered;

/* The registration (tenant-json.h, the body the daemon reads with the same module). */
static json_t *request_body(const struct run_tenant *t)
{
  char dir[PATH_MAX];
  struct tenant_json_reg reg = {
    .name = t->name,
    .pid = (long) getpid(),
    .state_dir = realpath(t->dir, dir) ? dir : t->dir,
    .labels = t->labels,
    .gpu = t->gpu,
    .lim = {
      .vram_bytes = t->vram_set && !t->vram_ppm ? t->vram_bytes : GS_LIMIT_NONE,
      .vram_ppm = t->vram_set ? (uint32_t) t->vram_ppm : 0,
      .compute_ppm = t->compute_ppm,
      .policy = t->compute_policy,
      .priority = t->priority,
    },
  };
  return tenant_json_reg(&reg);
}

int run_register(const struct run_tenant *t, gs_error_t *err)
{
  gs_error_t e = NULL;
  json_t *body = request_body(t);
  struct daemon_client *client = daemon_client_new(NULL, &e);
  if (client)
    daemon_client_set_timeout(client, REGISTER_TIMEOUT_MS);
  int rc = client ? daemon_client_request(client, "POST", "/v1/tenants", body, NULL, NULL, &e)
                  : DAEMON_ERR;
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
    GS_LOG(GS_LOG_WARN, "run: tell the daemon tenant '%s' ended: %s", t->name,
           e ? e->msg : "no client");
    gs_error_release(&e);
  }
  daemon_client_free(client);
}
