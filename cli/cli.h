/* Internal interface of the gpuslice CLI: one function per verb (one file each), and the
 * few helpers every verb shares for reporting errors and exit statuses.
 *
 * Exit statuses: 0 ok, 1 failure, 2 usage error. `run` exits with its command's status. */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <gpuslice.h>
#include <gpuslice/opt.h>

enum { CLI_OK = 0, CLI_FAILURE = 1, CLI_USAGE = 2 };

/* Each verb gets its own argv, argv[0] being the verb's name, and returns the exit status. */
int cli_run(int argc, char **argv);
int cli_demo(int argc, char **argv);
int cli_pack(int argc, char **argv);
int cli_daemon(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_ps(int argc, char **argv);
int cli_gpus(int argc, char **argv);
int cli_top(int argc, char **argv);
int cli_usage(int argc, char **argv);
int cli_set(int argc, char **argv);
int cli_mig(int argc, char **argv);
int cli_savings(int argc, char **argv);
int cli_prices(int argc, char **argv);
int cli_slurm(int argc, char **argv);
int cli_suspend(int argc, char **argv);
int cli_resume(int argc, char **argv);
int cli_idle(int argc, char **argv);

/* Prints "gpuslice: <verb>: <message>" (without "<verb>: " when verb is NULL) on stderr
 * and returns CLI_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "gpuslice: <verb>: <err->msg>" on stderr, releases err and returns CLI_FAILURE. */
int cli_fail(const char *verb, gs_error_t *err);

/* Sets t's defaults in dst, then parses argv's options into it. Returns -1 to go on, with
 * *next the first operand, or the exit status to return now: CLI_OK after printing --help,
 * CLI_USAGE after printing the error line. */
int cli_parse(const struct gs_opt_table *t, void *dst, int argc, char **argv, int *next);
/* For verbs that take no operands: -1 when argv[next] is the end, else the usage error. */
int cli_no_operands(const char *verb, int argc, char **argv, int next);
/* cli_parse, then cli_no_operands with t's verb: the whole parse of a verb that takes options
 * alone. Returns -1 to go on, or the exit status to return now. */
int cli_parse_options(const struct gs_opt_table *t, void *dst, int argc, char **argv);
/* The one operand of a verb about a tenant (suspend, resume): argv[next], as *tenant, when it
 * is there, alone, not empty and not longer than any tenant name. Returns -1 to go on, or the
 * exit status after printing the usage error. */
int cli_tenant_operand(const char *verb, int argc, char **argv, int next, const char **tenant);

/* Each verb's option table (in the verb's file; daemon's in daemon/config.c) and gpuslice's own. */
extern const struct gs_opt_table cli_main_table, cli_run_table, cli_demo_table, cli_pack_table,
  cli_plan_table, cli_ps_table, cli_gpus_table, cli_top_table, cli_usage_table, cli_set_table,
  cli_mig_table, cli_savings_table, cli_prices_table, cli_slurm_table, cli_suspend_table,
  cli_resume_table, cli_idle_table;

/* A verb: its table (which names it and gives its one-line summary) and its function. */
struct cli_verb {
  const struct gs_opt_table *table;
  int (*fn)(int argc, char **argv);
};
/* Every verb, in the order `gpuslice --help` and the docs list them (main.c). */
extern const struct cli_verb cli_verbs[];
extern const size_t cli_nverbs;

/* `gpuslice __docs`: the docs generated from the tables (docs.c). */
int cli_docs(int argc, char **argv);

/* The shell's reading of a wait status: the exit code, or 128 + the signal number. */
int cli_wait_status(int wstatus);

#endif
