/* Registering a tenant with the node daemon, for the programs that make tenants: `gpuslice
 * run` (cli/run-register.c) and the Slurm plugin in slurmstepd (integrations/slurm). The
 * registration is POST /v1/tenants (docs/daemon.md) with the tenant's limits and where its
 * ledger lives; the daemon checks that the ledger is the caller's (SO_PEERCRED), writes its
 * limits file and from then on holds the limits. The end is DELETE /v1/tenants/<name> with the
 * exit status.
 *
 * One request per call, through the daemon client (gpuslice/daemon-client.h: libcurl over the
 * daemon's Unix socket), with the body gpuslice/tenant-json.h builds and the daemon reads.
 * Part of gpuslice_client (client/), which the CLI, the daemon and the Slurm plugin link. */
#ifndef GS_DAEMON_REGISTER_H
#define GS_DAEMON_REGISTER_H

#include <stdint.h>

#include <gpuslice/error.h>

/* What gs_daemon_register returns when nothing usable answers at the socket (none there, a
 * refused or timed-out connection, an unsafe socket directory, a reply that is not the API's):
 * the tenant then runs alone, held by its own ledger. *err says why. */
#define GS_DAEMON_ABSENT 1

struct gs_daemon_reg {
  const char *name;
  long pid;              /* the tenant's owner; 0: the caller */
  const char *state_dir; /* where its ledger lives (absolute); NULL: the daemon's state dir */
  const char *labels;    /* "k=v" lines; NULL: the ledger's */
  int gpu;               /* the GPU the vram limit is for; -1: every GPU */
  uint64_t vram_bytes;   /* GS_LIMIT_NONE: none */
  uint32_t vram_ppm;     /* millionths of each GPU's memory; 0: none */
  uint32_t compute_ppm;  /* millionths of each GPU's time; 0: none */
  uint32_t compute_policy, priority; /* enum gs_compute_policy, enum gs_priority */
};

/* Registers reg with the daemon at socket, giving up after timeout_ms. Returns 0 when it is
 * registered, GS_DAEMON_ABSENT when no daemon answered, or -1 when the daemon refused it
 * (its {"error": ...} text in *err): a tenant must not start unregistered then. */
int gs_daemon_register(const char *socket, const struct gs_daemon_reg *reg, long timeout_ms,
                       gs_error_t *err);
/* Tells the daemon at socket that tenant name ended with exit_status (its low 8 bits).
 * 0, or -1 with *err. */
int gs_daemon_unregister(const char *socket, const char *name, int exit_status, long timeout_ms,
                         gs_error_t *err);

#endif
