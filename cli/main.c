/* gpuslice's entry point: global options, then dispatch to one verb. Each verb lives in its
 * own file (run.c, demo.c, ...) and parses its own options. */
#include "cli.h"
#include "daemon.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/version.h>

const struct cli_verb cli_verbs[] = {
  { &cli_run_table, cli_run },         { &cli_demo_table, cli_demo },
  { &cli_pack_table, cli_pack },       { &daemon_opt_table, cli_daemon },
  { &cli_plan_table, cli_plan },       { &cli_ps_table, cli_ps },
  { &cli_gpus_table, cli_gpus },       { &cli_top_table, cli_top },
  { &cli_usage_table, cli_usage },     { &cli_set_table, cli_set },
  { &cli_suspend_table, cli_suspend }, { &cli_resume_table, cli_resume },
  { &cli_idle_table, cli_idle },       { &cli_mig_table, cli_mig },
  { &cli_savings_table, cli_savings }, { &cli_prices_table, cli_prices },
  { &cli_slurm_table, cli_slurm },
};
const size_t cli_nverbs = sizeof(cli_verbs) / sizeof(cli_verbs[0]);

struct main_opts {
  bool version;
};

// clang-format off
static const struct gs_opt main_entries[] = {
  GS_OPT_HELP_ENTRY,
  /* Acts when met, as --help does, so that `gpuslice --version --bogus` prints the version. */
  { .name = "version", .letter = 'V', .kind = GS_OPT_FLAG, .offset = offsetof(struct main_opts, version),
    .flags = GS_OPT_STOP, .help = "Show the version and exit" },
};
// clang-format on

// clang-format off
const struct gs_opt_table cli_main_table = {
  .synopsis = "[--help] [--version] COMMAND [ARGS...]",
  .summary = "Share one GPU among many workloads",
  .intro = "Share one GPU among many workloads, each held to its memory and compute share.\n",
  .outro = "Run 'gpuslice COMMAND --help' for the options of a command.\n"
           "\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n"
           "'gpuslice run' exits with its command's status instead.\n",
  GS_OPT_ENTRIES(main_entries),
};
// clang-format on

/* gpuslice's own --help: the table's, with the commands after its prose. */
static void usage(FILE *f)
{
  struct gs_opt_table t = cli_main_table;
  _cleanup_free_ char *intro = NULL;
  xasprintf(&intro, "%s\nCommands:\n", t.intro);
  for (size_t i = 0; i < cli_nverbs; i++) {
    char *more = NULL;
    xasprintf(&more, "%s  %-8s %s\n", intro, cli_verbs[i].table->verb, cli_verbs[i].table->summary);
    free(intro);
    intro = more;
  }
  t.intro = intro;
  gs_opt_help(&t, f);
}

static const struct cli_verb *find_verb(const char *name)
{
  for (size_t i = 0; i < cli_nverbs; i++)
    if (strcmp(cli_verbs[i].table->verb, name) == 0)
      return &cli_verbs[i];
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
  const struct cli_verb *v = find_verb(argv[next]);
  if (!v)
    return cli_usage_error(argv[next], "unknown command (see gpuslice --help)");
  argc -= next;
  argv += next;
  optind = 0; /* glibc: start the verb's getopt afresh, from argv[1] */
  return v->fn(argc, argv);
}
