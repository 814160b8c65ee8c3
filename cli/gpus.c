/* `gpuslice gpus`: the node's GPUs as the daemon last sampled them (GET /v1/gpus): memory,
 * utilization, power, temperature, clocks, how many tenants use each, and how it is shared
 * (the daemon's sharing setting: timeslice, mps, mig:<layout>). --json prints the
 * daemon's reply (docs/cli.md). The GPU table is shared with `top` (cli-node-tables.h). */
#include "cli.h"

#include <stdio.h>

#include "cli-daemon-request.h"
#include "cli-node-tables.h"

// clang-format off
const struct gs_opt_table cli_gpus_table = {
  .verb = "gpus",
  .synopsis = "gpus [--json] [--socket PATH]",
  .summary = "List the node's GPUs as the daemon last sampled them",
  .intro = "Lists the node's GPUs as the daemon last sampled them.\n",
  .outro = VERB_LIST_OUTRO,
  .opts = verb_list_entries,
  .nopts = VERB_LIST_NOPTS,
};
// clang-format on

static void add_gpu_row(struct table *t, const json_t *g)
{
  char idx[16], used[TABLE_CELL], total[TABLE_CELL], mem[2 * TABLE_CELL + 4], util[TABLE_CELL],
    power[TABLE_CELL], temp[TABLE_CELL], sm[TABLE_CELL], memclk[TABLE_CELL], tenants[16];
  snprintf(idx, sizeof(idx), "%.0f", jnum(g, "index", 0));
  snprintf(mem, sizeof(mem), "%s / %s", fmt_bytes(used, jnum(g, "memory_used_bytes", 0)),
           fmt_bytes(total, jnum(g, "memory_total_bytes", 0)));
  snprintf(util, sizeof(util), "%.0f%%", jnum(g, "utilization_pct", 0));
  snprintf(power, sizeof(power), "%.1f W", jnum(g, "power_w", 0));
  snprintf(temp, sizeof(temp), "%.0f C", jnum(g, "temperature_c", 0));
  snprintf(sm, sizeof(sm), "%.0f MHz", jnum(g, "sm_clock_mhz", 0));
  snprintf(memclk, sizeof(memclk), "%.0f MHz", jnum(g, "mem_clock_mhz", 0));
  snprintf(tenants, sizeof(tenants), "%.0f", jnum(g, "tenants", 0));
  const char *sharing = jstr(g, "sharing");
  const char *cells[] = { idx,
                          jstr(g, "name"),
                          jstr(g, "uuid"),
                          jstr(g, "pci_bus_id"),
                          mem,
                          util,
                          power,
                          temp,
                          sm,
                          memclk,
                          tenants,
                          sharing && *sharing ? sharing : "-" };
  table_add(t, cells);
}

struct table *gpus_table(const json_t *gpus)
{
  static const char *headers[] = { "GPU",   "NAME", "UUID",     "PCI",       "MEMORY",  "UTIL",
                                   "POWER", "TEMP", "SM-CLOCK", "MEM-CLOCK", "TENANTS", "SHARING" };
  struct table *t = table_new(12, "rlllrrrrrrrl", headers);
  size_t i;
  const json_t *g;
  json_array_foreach(gpus, i, g) add_gpu_row(t, g);
  return t;
}

int cli_gpus(int argc, char **argv)
{
  return verb_list(&cli_gpus_table, argc, argv, "/v1/gpus", "gpus", gpus_table);
}
