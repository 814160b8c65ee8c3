/* Internal to `gpuslice usage`: the --cost part (usage-cost.c). */
#ifndef GS_CLI_USAGE_COST_H
#define GS_CLI_USAGE_COST_H

#include <jansson.h>

#include "cli.h"

struct usage_cost_opts {
  const char *socket;
  const char *prices; /* a price CSV, or NULL for the built-in table */
  const char *model;  /* a GPU model, or NULL for the node's first GPU */
};

/* Adds "cost" to every row of the daemon's usage reply and to the reply itself. Returns the
 * exit status, having printed one line on failure. */
int usage_cost_add(json_t *reply, const struct usage_cost_opts *o);
/* The table of costs per group and the node's totals. */
void usage_cost_print(const json_t *reply, const char *by);

#endif
