/* `gpuslice run` and the node daemon: the tenant registers when a daemon answers, which makes
 * the daemon the authority for its limits, and unregisters when its command ends. With no
 * daemon, run works alone exactly as before. */
#ifndef GS_CLI_RUN_REGISTER_H
#define GS_CLI_RUN_REGISTER_H

#include "run-tenant.h"

/* Registers t (POST /v1/tenants). Returns 0 when registered or when no daemon answers, -1
 * with err when a daemon refused (the tenant must not start unregistered then). */
int run_register(const struct run_tenant *t, gs_error_t *err);
/* When the registered tenant is an MPS client (its --gpu is in mps mode: "mps" in the tenant's
 * JSON), sets its command's MPS environment: the GPU's pipe and log directories, its active
 * thread percentage and pinned device memory limit (run-mps.c). */
void run_mps_env(const char *name);
/* Tells the daemon the tenant has ended with exit_status (DELETE), if it was registered. */
void run_unregister(const struct run_tenant *t, int exit_status);

#endif
