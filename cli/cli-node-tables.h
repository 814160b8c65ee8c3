/* The two tables of what runs on a node, built from the daemon's JSON: the tenants (ps.c) and
 * the GPUs (gpus.c). `top` shows both, so each verb's table builder is shared here. */
#ifndef GS_CLI_NODE_TABLES_H
#define GS_CLI_NODE_TABLES_H

#include <jansson.h>

#include "cli-table.h"

/* One row per tenant and GPU it uses (one row with "-" when it uses none yet), from the
 * "tenants" array of GET /v1/tenants. */
struct table *tenants_table(const json_t *tenants);
/* One row per GPU, from the "gpus" array of GET /v1/gpus. */
struct table *gpus_table(const json_t *gpus);

#endif
