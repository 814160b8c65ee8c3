/* Registering run's tenant with the node daemon (see run-register.h), through the library's
 * client (include/gpuslice/daemon-register.h), which the Slurm plugin uses too. The request
 * carries the limits run was given and where the tenant's ledger lives; the daemon checks that
 * the ledger is the caller's (SO_PEERCRED), writes its limits file, and from then on holds the
 * limits. Registration happens before the command starts, so every process of the tenant maps
 * the daemon's limits when it attaches. */
#include "run-register.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuslice/daemon-register.h>

#include <gpuslice/daemon-client.h>

#define REGISTER_TIMEOUT_MS 5000L

/* Whether the tenant registered: the connection itself is not kept open while the command
 * runs (it would hold a connection's buffers in the daemon for every tenant). */
static bool registered;

int run_register(const struct run_tenant *t, gs_error_t *err)
{
  gs_error_t e = NULL;
  char dir[PATH_MAX];
  struct gs_daemon_reg reg = {
    .name = t->name,
    .pid = (long) getpid(),
    .state_dir = realpath(t->dir, dir) ? dir : t->dir,
    .labels = t->labels,
    .gpu = t->gpu,
    .vram_bytes = t->vram_set && !t->vram_ppm ? t->vram_bytes : GS_LIMIT_NONE,
    .vram_ppm = t->vram_set ? (uint32_t) t->vram_ppm : 0,
    .compute_ppm = t->compute_ppm,
    .compute_policy = t->compute_policy,
    .priority = t->priority,
  };
  int rc = gs_daemon_register(daemon_client_socket(NULL), &reg, REGISTER_TIMEOUT_MS, &e);
  registered = rc == 0;
  if (registered)
    run_mps_env(t->name);
  if (rc < 0) {
    gs_make_error(err, 0, "%s", e->msg);
    gs_error_release(&e);
    return -1;
  }
  /* No daemon (or none that works): the tenant runs alone, held by its own ledger. */
  if (rc == GS_DAEMON_ABSENT)
    GS_LOG(GS_LOG_DEBUG, "run: not registered: %s", e->msg);
  gs_error_release(&e);
  return 0;
}

void run_unregister(const struct run_tenant *t, int exit_status)
{
  gs_error_t e = NULL;
  if (!registered)
    return;
  registered = false;
  if (gs_daemon_unregister(daemon_client_socket(NULL), t->name, exit_status, REGISTER_TIMEOUT_MS,
                           &e) < 0) {
    GS_LOG(GS_LOG_WARN, "run: tell the daemon tenant '%s' ended: %s", t->name, e->msg);
    gs_error_release(&e);
  }
}
