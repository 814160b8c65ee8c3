/* gpuslice's entry point: global options, then dispatch to one verb. Each verb lives in its
 * own file (run.c, demo.c, ...) and parses its own options. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/version.h>

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

struct main_opts {
  bool version;
};

static const struct gs_opt main_entries[] = {
  GS_OPT_HELP_ENTRY,
  /* Acts when met, as --help does, so that `gpuslice --version --bogus` prints the version. */
  { .name = "version", .letter = 'V', .kind = GS_OPT_FLAG, .offset = offsetof(struct main_opts, version),
    .flags = GS_OPT_STOP, .help = "Show the version and exit" },
};

const struct gs_opt_table cli_main_table = {
  .synopsis = "[--help] [--version] COMMAND [ARGS...]",
  .summary = "Share one GPU among many workloads",
  .intro = "Share one GPU among many workloads, each held to its memory and compute share.\n",
  .outro = "Run 'gpuslice COMMAND --help' for the options of a command.\n"
           "\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n"
           "'gpuslice run' exits with its command's status instead.\n",
  .opts = main_entries,
  .nopts = GS_OPT_COUNT(main_entries),
};

/* gpuslice's own --help: the table's, with the commands after its prose. */
static void usage(FILE *f)
{
  struct gs_opt_table t = cli_main_table;
  _cleanup_free_ char *intro = NULL;
  xasprintf(&intro, "%s\nCommands:\n", t.intro);
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
    char *more = NULL;
    xasprintf(&more, "%s  %-8s %s\n", intro, verbs[i].name, verbs[i].summary);
    free(intro);
    intro = more;
  }
  t.intro = intro;
  gs_opt_help(&t, f);
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
  struct main_opts o = { 0 };
  gs_error_t err = NULL;
  int next = 0, r;

  gs_log_init_from_env();
  r = gs_opt_parse(&cli_main_table, &o, argc, argv, &next, &err);
  if (r == GS_OPT_HELP_ASKED) {
    usage(stdout);
    return CLI_OK;
  }
  if (r < 0) {
    cli_usage_error(NULL, "%s", err->msg);
    gs_error_release(&err);
    return CLI_USAGE;
  }
  if (o.version) {
    printf("gpuslice %s\n", GS_VERSION);
    return CLI_OK;
  }
  if (next >= argc)
    return cli_usage_error(NULL, "missing command (see gpuslice --help)");
  if (strcmp(argv[next], "__docs") == 0)
    return cli_docs(argc - next, argv + next);
  const struct verb *v = find_verb(argv[next]);
  if (!v)
    return cli_usage_error(argv[next], "unknown command (see gpuslice --help)");
  argc -= next;
  argv += next;
  optind = 0; /* glibc: start the verb's getopt afresh, from argv[1] */
  return v->fn(argc, argv);
}
