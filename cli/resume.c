/* `gpuslice resume TENANT`: brings a suspended tenant's GPU memory back, at the same addresses,
 * and lets its processes run (POST /v1/tenants/NAME/resume). When suspended memory was lent to
 * others (the daemon's oversubscribe setting) the daemon may wait for room: this verb waits with
 * it, and prints the daemon's one line when the room did not come back in time (the tenant then
 * stays suspended, its memory safe in host memory). */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli-daemon-request.h"

#define POLL_NS 100000000L /* 100 ms between looks at a resume that waits for room */
#define WAIT_MAX_S 3700.0  /* the daemon's longest resume_timeout, and some */

struct resume_opts {
  const char *socket;
  bool json;
};

#define OFF(f) offsetof(struct resume_opts, f)
// clang-format off
static const struct gs_opt resume_entries[] = {
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json),
    .help = "Print the tenant as JSON, as ps --json describes it (docs/cli.md)" },
  VERB_SOCKET_ENTRY(struct resume_opts),
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_resume_table = {
  .verb = "resume",
  .synopsis = "resume TENANT [--json] [--socket PATH]",
  .summary = "Bring a suspended tenant's GPU memory back and let it run",
  .intro = "Resumes a suspended tenant: the driver copies its memory back to the GPU at the same\n"
           "addresses, and its processes' waiting CUDA calls go on. When its memory was lent to\n"
           "others meanwhile (the daemon's oversubscribe setting), the resume waits until the room\n"
           "is back, at most the daemon's resume_timeout; then it fails with one line naming the\n"
           "tenant and the bytes missing, and the tenant stays suspended, nothing lost.\n",
  .outro = "Exit status: 0 running, 1 failure (no daemon answers, unknown tenant, not suspended, no\n"
           "room in time), 2 usage error.\n",
  GS_OPT_ENTRIES(resume_entries),
  .flags = GS_OPTS_PERMUTE,
};
// clang-format on

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Follows a resume that waits for room until the tenant runs or the daemon gives up. */
static int follow(const char *socket, const char *tenant_path, json_t **reply)
{
  double t0 = now_s();
  for (;;) {
    const char *state = jstr(*reply, "state");
    if (!state || strcmp(state, "resuming") != 0)
      break;
    if (now_s() - t0 > WAIT_MAX_S) {
      fprintf(stderr, "gpuslice: resume: tenant '%s' still resuming after %.0f s\n",
              jstr(*reply, "name"), WAIT_MAX_S);
      return CLI_FAILURE;
    }
    nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
    json_decref(*reply);
    *reply = NULL;
    int r = verb_request("resume", socket, "GET", tenant_path, NULL, reply);
    if (r != CLI_OK)
      return r;
  }
  const char *state = jstr(*reply, "state");
  if (state && strcmp(state, "running") == 0)
    return CLI_OK;
  const char *why = jstr(json_object_get(*reply, "suspension"), "error");
  fprintf(stderr, "gpuslice: resume: %s\n", why ? why : "the tenant was not resumed");
  return CLI_FAILURE;
}

int cli_resume(int argc, char **argv)
{
  struct resume_opts o = { 0 };
  const char *tenant = NULL;
  int next, r = cli_parse(&cli_resume_table, &o, argc, argv, &next);
  if (r >= 0 || (r = cli_tenant_operand("resume", argc, argv, next, &tenant)) >= 0)
    return r;
  _cleanup_free_ char *name = daemon_client_escape(tenant);
  _cleanup_free_ char *path = NULL, *tenant_path = NULL;
  xasprintf(&path, "/v1/tenants/%s/resume", name);
  xasprintf(&tenant_path, "/v1/tenants/%s", name);
  _cleanup_json_ json_t *body = json_object(), *reply = NULL;
  if ((r = verb_request_waiting("resume", o.socket, "POST", path, body, 120000, &reply, NULL)) !=
        CLI_OK ||
      (r = follow(o.socket, tenant_path, &reply)) != CLI_OK)
    return r;
  if (o.json)
    return verb_print_json(reply);
  const json_t *s = json_object_get(reply, "suspension");
  printf("%s: running, resumed in %.3f s\n", jstr(reply, "name") ? jstr(reply, "name") : tenant,
         jnum(s, "last_resume_seconds", 0));
  return CLI_OK;
}
