/* Registering a tenant with the node daemon (include/gpuslice/daemon-register.h), through the
 * daemon client (libcurl, daemon-client.c) with the body tenant-json.c builds, the one the
 * daemon reads back with the same module. */
#include <gpuslice/daemon-register.h>

#include <stdio.h>
#include <stdlib.h>

#include <gpuslice/daemon-client.h>
#include <gpuslice/tenant-json.h>
#include <gpuslice/tenant-ledger.h>
#include <gpuslice/xalloc.h>

static json_t *reg_body(const struct gs_daemon_reg *reg)
{
  struct tenant_json_reg r = {
    .name = reg->name,
    .pid = reg->pid,
    .state_dir = reg->state_dir,
    .labels = reg->labels,
    .gpu = reg->gpu,
    .lim = {
      .vram_bytes = reg->vram_bytes,
      .vram_ppm = reg->vram_ppm,
      .compute_ppm = reg->compute_ppm,
      .policy = reg->compute_policy,
      .priority = reg->priority,
    },
  };
  return tenant_json_reg(&r);
}

/* One request to the daemon at socket: 0, or a DAEMON_* code (daemon-client.h) with *err. */
static int request(const char *socket, const char *method, const char *path, const json_t *body,
                   long timeout_ms, gs_error_t *err)
{
  struct daemon_client *c = daemon_client_new(socket, err);
  if (!c)
    return DAEMON_NO_ANSWER;
  daemon_client_set_timeout(c, timeout_ms);
  int rc = daemon_client_request(c, method, path, body, NULL, NULL, err);
  daemon_client_free(c);
  return rc;
}

int gs_daemon_register(const char *socket, const struct gs_daemon_reg *reg, long timeout_ms,
                       gs_error_t *err)
{
  gs_error_t e = NULL;
  json_t *body = reg_body(reg);
  int rc = request(socket, "POST", "/v1/tenants", body, timeout_ms, &e);
  json_decref(body);
  if (rc == 0)
    return 0;
  if (rc == DAEMON_REFUSED) {
    gs_make_error(err, 0, "register with the daemon: %s", e->msg);
    gs_error_release(&e);
    return -1;
  }
  if (err) {
    gs_error_release(err);
    *err = e;
  } else {
    gs_error_release(&e);
  }
  return GS_DAEMON_ABSENT;
}

int gs_daemon_unregister(const char *socket, const char *name, int exit_status, long timeout_ms,
                         gs_error_t *err)
{
  _cleanup_free_ char *escaped = daemon_client_escape(name), *path = NULL;
  xasprintf(&path, "/v1/tenants/%s?exit=%d", escaped, exit_status & 0xff);
  return request(socket, "DELETE", path, NULL, timeout_ms, err) == 0 ? 0 : -1;
}
