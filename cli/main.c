/* gpuslice's entry point: global options, then dispatch to one verb. Each verb lives in its
 * own file (run.c, demo.c, ...) and parses its own options. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "gs-version.h"

struct verb {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
};

static const struct verb verbs[] = {
  { "run", cli_run, "Run a command with the gpuslice interposer loaded" },
  { "demo", cli_demo, "Run three workloads side by side on one GPU and show what each got" },
  { "pack", cli_pack, "Replay a GPU cluster trace through a placement policy" },
  { "daemon", cli_daemon, "Run the node daemon: tenants, live limits, metrics and the usage ledger" },
  { "plan", cli_plan, "Plan GPU sharing from measured utilization and memory" },
  { "ps", cli_ps, "List the tenants the node daemon knows, with their use and limits" },
  { "gpus", cli_gpus, "List the node's GPUs as the daemon last sampled them" },
  { "top", cli_top, "Show GPUs and tenants live" },
  { "usage", cli_usage, "Report GPU time and memory used, by tenant, user or label" },
  { "set", cli_set, "Change a running tenant's limits, live" },
  { "mig", cli_mig, "Plan MIG layouts for memory demands; list a model's MIG profiles" },
  { "savings", cli_savings, "Show stacked savings: sharing, then spot, then commitments" },
  { "prices", cli_prices, "Show the GPU price table in effect, with sources and dates" },
};

static void usage(FILE *f)
{
  fputs("Usage: gpuslice [--help] [--version] COMMAND [ARGS...]\n"
        "\n"
        "Share one GPU among many workloads, each held to its memory and compute share.\n"
        "\n"
        "Commands:\n", f);
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
    fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
  fputs("\n"
        "Options:\n"
        "  -h, --help     Show this help and exit\n"
        "  -V, --version  Show the version and exit\n"
        "\n"
        "Run 'gpuslice COMMAND --help' for the options of a command.\n"
        "\n"
        "Exit status: 0 success, 1 failure, 2 usage error.\n"
        "'gpuslice run' exits with its command's status instead.\n", f);
}

static const struct verb *find_verb(const char *name)
{
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
    if (strcmp(verbs[i].name, name) == 0)
      return &verbs[i];
  return NULL;
}

int main(int argc, char **argv)
{
  static const struct option opts[] = {
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  int c;

  gs_log_init_from_env();
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:hV", opts, NULL)) != -1) {
    switch (c) {
    case 'h':
      usage(stdout);
      return CLI_OK;
    case 'V':
      printf("gpuslice %s\n", GS_VERSION);
      return CLI_OK;
    default:
      return cli_bad_option(NULL, argv, c);
    }
  }
  if (optind >= argc)
    return cli_usage_error(NULL, "missing command (see gpuslice --help)");
  const struct verb *v = find_verb(argv[optind]);
  if (!v)
    return cli_usage_error(argv[optind], "unknown command (see gpuslice --help)");
  argc -= optind;
  argv += optind;
  optind = 0; /* glibc: start the verb's getopt afresh, from argv[1] */
  return v->fn(argc, argv);
}
