/* `gpuslice suspend TENANT`: moves a tenant's GPU memory to host memory and frees the GPU for
 * others (POST /v1/tenants/NAME/suspend). The daemon locks every process of the tenant, waits
 * for its submitted work, and has the driver checkpoint them; the tenant's next CUDA call brings
 * it back (docs/suspend.md). A refusal (managed or IPC memory, MIG, work that does not finish
 * within the lock timeout, already suspended) is one line, and the tenant keeps running. */
#include "cli.h"

#include <stdio.h>

#include "cli-daemon-request.h"
#include "cli-table.h"

#define LOCK_TIMEOUT_MAX 600.0 /* seconds, the API's bound */

struct suspend_opts {
  const char *socket;
  double lock_timeout; /* seconds; 0: the daemon's lock_timeout setting */
  bool json;
};

#define OFF(f) offsetof(struct suspend_opts, f)
// clang-format off
static const struct gs_opt suspend_entries[] = {
  { .name = "lock-timeout", .arg = "SECONDS", .kind = GS_OPT_DOUBLE, .offset = OFF(lock_timeout),
    .min = 0.001, .max = LOCK_TIMEOUT_MAX, .want = "a number of seconds from 0.001 to 600",
    .help = "How long to wait for the tenant's submitted GPU work before giving up, the tenant left "
            "running (default: the daemon's lock_timeout setting)" },
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json),
    .help = "Print the tenant as JSON, as ps --json describes it (docs/cli.md)" },
  VERB_SOCKET_ENTRY(struct suspend_opts),
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_suspend_table = {
  .verb = "suspend",
  .synopsis = "suspend TENANT [--lock-timeout SECONDS] [--json] [--socket PATH]",
  .summary = "Move an idle tenant's GPU memory to host memory, freeing the GPU",
  .intro = "Suspends a tenant: the daemon locks each of its processes (their submitted GPU work\n"
           "finishes first, their new CUDA calls wait), and the driver moves their GPU memory to\n"
           "host memory and frees it on the GPU. The tenant's next CUDA call that needs the GPU\n"
           "resumes it, as 'gpuslice resume' does. Refused, with the reason, for a tenant that\n"
           "holds managed or IPC memory, runs on a MIG GPU, is already suspended, or whose work\n"
           "does not finish within the lock timeout: it then keeps running, untouched.\n",
  .outro = "Exit status: 0 suspended, 1 failure (no daemon answers, unknown tenant, refused), 2 usage\n"
           "error.\n",
  GS_OPT_ENTRIES(suspend_entries),
  .flags = GS_OPTS_PERMUTE,
};
// clang-format on

int cli_suspend(int argc, char **argv)
{
  struct suspend_opts o = { 0 };
  const char *tenant = NULL;
  int next, r = cli_parse(&cli_suspend_table, &o, argc, argv, &next);
  if (r >= 0 || (r = cli_tenant_operand("suspend", argc, argv, next, &tenant)) >= 0)
    return r;
  _cleanup_free_ char *name = daemon_client_escape(tenant);
  _cleanup_free_ char *path = NULL;
  xasprintf(&path, "/v1/tenants/%s/suspend", name);
  _cleanup_json_ json_t *body = json_object();
  if (o.lock_timeout > 0)
    json_object_set_new(body, "lock_timeout_ms",
                        json_integer((json_int_t) (o.lock_timeout * 1000.0 + 0.5)));
  _cleanup_json_ json_t *reply = NULL;
  /* The daemon answers once the lock has waited and the driver has copied. */
  long wait_ms =
    (long) ((o.lock_timeout > 0 ? o.lock_timeout : LOCK_TIMEOUT_MAX) * 1000.0) + 120000;
  if ((r = verb_request_waiting("suspend", o.socket, "POST", path, body, wait_ms, &reply, NULL)) !=
      CLI_OK)
    return r;
  if (o.json)
    return verb_print_json(reply);
  const json_t *s = json_object_get(reply, "suspension");
  char bytes[TABLE_CELL];
  printf("%s: suspended, %s moved off the GPU\n",
         jstr(reply, "name") ? jstr(reply, "name") : tenant,
         fmt_bytes(bytes, jnum(s, "suspended_bytes", 0)));
  return CLI_OK;
}
