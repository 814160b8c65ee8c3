/* Error reporting and exit statuses shared by the verbs. The CLI prints each error as one
 * line, "gpuslice: <what>: <why>", and nothing else. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int cli_usage_error(const char *verb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  /* Usage errors quote what was typed: keep them one line whatever it held. */
  char *text = xvasprintf_line('?', fmt, ap);
  va_end(ap);
  fprintf(stderr, "gpuslice: %s%s%s\n", verb ? verb : "", verb ? ": " : "", text);
  free(text);
  return CLI_USAGE;
}

int cli_fail(const char *verb, gs_error_t *err)
{
  fprintf(stderr, "gpuslice: %s: %s\n", verb, *err ? (*err)->msg : "unknown error");
  gs_error_release(err);
  return CLI_FAILURE;
}

int cli_parse(const struct gs_opt_table *t, void *dst, int argc, char **argv, int *next)
{
  gs_error_t err = NULL;
  int r = gs_opt_defaults(t, dst, &err);
  if (r == 0)
    r = gs_opt_parse(t, dst, argc, argv, next, &err);
  if (r == GS_OPT_HELP_ASKED) {
    gs_opt_help(t, stdout);
    return CLI_OK;
  }
  if (r < 0) {
    cli_usage_error(t->verb, "%s", err->msg);
    gs_error_release(&err);
    return CLI_USAGE;
  }
  return -1;
}

int cli_no_operands(const char *verb, int argc, char **argv, int next)
{
  if (next < argc)
    return cli_usage_error(verb, "'%s': unexpected argument (see gpuslice %s --help)", argv[next],
                           verb);
  return -1;
}

int cli_parse_options(const struct gs_opt_table *t, void *dst, int argc, char **argv)
{
  int next, r = cli_parse(t, dst, argc, argv, &next);
  return r >= 0 ? r : cli_no_operands(t->verb, argc, argv, next);
}

int cli_tenant_operand(const char *verb, int argc, char **argv, int next, const char **tenant)
{
  if (next >= argc)
    return cli_usage_error(verb, "missing TENANT (see gpuslice %s --help)", verb);
  if (next + 1 < argc)
    return cli_no_operands(verb, argc, argv, next + 1);
  *tenant = argv[next];
  if (!**tenant)
    return cli_usage_error(verb, "TENANT is empty");
  if (strlen(*tenant) >= GS_LEDGER_NAME_MAX)
    return cli_usage_error(verb, "TENANT '%.*s...' is longer than any tenant name (%d characters)",
                           GS_LEDGER_NAME_MAX - 1, *tenant, GS_LEDGER_NAME_MAX - 1);
  return -1;
}

int cli_wait_status(int wstatus)
{
  if (WIFEXITED(wstatus))
    return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus))
    return 128 + WTERMSIG(wstatus);
  return CLI_FAILURE;
}
