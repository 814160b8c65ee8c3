/* `gpuslice set TENANT`: changes a tenant's limits live through the daemon
 * (PATCH /v1/tenants/NAME). The tenant's processes apply the new limits at their next
 * allocation or launch; a memory limit below current use makes further allocations fail until
 * use drops, and never kills. This file checks the values, sends them and prints the result. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-daemon-request.h"
#include "cli-table.h"

struct set_opts {
  const char *socket, *tenant, *vram;
  double compute;
  long long gpu;        /* -1: every GPU */
  int policy, priority; /* indexes in set_policies and set_priorities; -1: unchanged */
  bool have_compute, compute_none, vram_none, json;
};

static int set_compute(void *dst, const char *arg, gs_error_t *err)
{
  struct set_opts *o = dst;
  char *end;
  o->have_compute = true;
  if (strcmp(arg, "none") == 0) {
    o->compute_none = true;
    return 0;
  }
  errno = 0;
  double v = strtod(arg, &end);
  if (errno || end == arg || *end || !isfinite(v) || v <= 0 || v > 100)
    return gs_make_error(err, 0, "--compute '%s': want a percentage above 0 and at most 100", arg);
  /* The limit is held in millionths: anything smaller would arrive as 0, no limit at all. */
  if (v < GS_PCT_MIN)
    return gs_make_error(err, 0, "--compute '%s': below the smallest share, %g", arg, GS_PCT_MIN);
  o->compute = v;
  return 0;
}

static int set_vram(void *dst, const char *arg, gs_error_t *err)
{
  struct set_opts *o = dst;
  uint64_t bytes;
  o->vram = arg;
  if (strcmp(arg, "none") == 0) {
    o->vram_none = true;
    return 0;
  }
  /* Only the form is checked here: a percentage is of the GPU, which the daemon knows. */
  if (gs_parse_size(arg, UINT64_C(1) << 40, &bytes, err) < 0)
    return gs_error_prepend(err, "--vram");
  return 0;
}

static const char *const set_policies[] = { "cap", "share", NULL };
static const char *const set_priorities[] = { "high", "normal", "low", NULL };
#define OFF(f) offsetof(struct set_opts, f)
// clang-format off
static const struct gs_opt set_entries[] = {
  { .name = "vram", .arg = "SIZE|none", .kind = GS_OPT_CALL, .parse = set_vram,
    .help = "Device memory limit per GPU, as gpuslice run --vram takes it: 8G, 512MiB, 25% of the GPU; "
            "none lifts it" },
  { .name = "gpu", .arg = "N", .kind = GS_OPT_INT, .offset = OFF(gpu), .max = GS_LEDGER_MAX_GPUS - 1,
    .help = "Apply --vram to GPU N only (default: every GPU)" },
  { .name = "compute", .arg = "PCT|none", .kind = GS_OPT_CALL, .parse = set_compute,
    .help = "Compute limit, percent of the GPU's time (0.0001 to 100; decimals allowed, e.g. 12.5); "
            "none lifts it" },
  { .name = "compute-policy", .arg = "cap|share", .kind = GS_OPT_ENUM, .offset = OFF(policy),
    .choices = set_policies,
    .help = "cap (never more than PCT) or share (PCT when others want the GPU, more when it is idle)" },
  { .name = "priority", .arg = "high|normal|low", .kind = GS_OPT_ENUM, .offset = OFF(priority),
    .choices = set_priorities, .help = "The tenant's priority" },
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json),
    .help = "Print the tenant as JSON, as ps --json describes it (docs/cli.md)" },
  VERB_SOCKET_ENTRY(struct set_opts),
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_set_table = {
  .verb = "set",
  .synopsis = "set TENANT [--vram SIZE|none] [--gpu N] [--compute PCT|none] [OPTIONS]",
  .summary = "Change a running tenant's limits, live",
  .intro = "Changes a running tenant's limits, live: its processes apply them at their next\n"
           "allocation or kernel launch. A memory limit below what the tenant holds makes its\n"
           "further allocations fail until its use drops; nothing is killed. Only the options\n"
           "given change; options may follow TENANT.\n",
  .outro = "Exit status: 0 success, 1 failure (no daemon answers, unknown tenant, the daemon\n"
           "refuses), 2 usage error.\n",
  GS_OPT_ENTRIES(set_entries),
  .flags = GS_OPTS_PERMUTE,
};
// clang-format on

/* TENANT, and what the options must say together. */
static int check_args(int argc, char **argv, int next, struct set_opts *o)
{
  if (next >= argc)
    return cli_usage_error("set", "missing TENANT (see gpuslice set --help)");
  if (next + 1 < argc)
    return cli_no_operands("set", argc, argv, next + 1);
  o->tenant = argv[next];
  if (!*o->tenant)
    return cli_usage_error("set", "TENANT is empty");
  /* Any other name is the daemon's to answer (404), but one this long could be no tenant's
   * and would only make the request line too long for it. */
  if (strlen(o->tenant) >= GS_LEDGER_NAME_MAX)
    return cli_usage_error("set", "TENANT '%.*s...' is longer than any tenant name (%d characters)",
                           GS_LEDGER_NAME_MAX - 1, o->tenant, GS_LEDGER_NAME_MAX - 1);
  if (o->gpu >= 0 && !o->vram)
    return cli_usage_error("set", "--gpu applies to --vram: give --vram too");
  if (!o->vram && !o->have_compute && o->policy < 0 && o->priority < 0)
    return cli_usage_error("set",
                           "nothing to change: give --vram, --compute, --compute-policy "
                           "or --priority");
  return -1;
}

static int parse_args(int argc, char **argv, struct set_opts *o)
{
  int next, r = cli_parse(&cli_set_table, o, argc, argv, &next);
  return r >= 0 ? r : check_args(argc, argv, next, o);
}

static json_t *patch_body(const struct set_opts *o)
{
  json_t *body = json_object();
  if (o->vram)
    json_object_set_new(body, "vram", o->vram_none ? json_null() : json_string(o->vram));
  if (o->gpu >= 0)
    json_object_set_new(body, "gpu", json_integer((json_int_t) o->gpu));
  if (o->have_compute)
    json_object_set_new(body, "compute_pct", o->compute_none ? json_null() : json_real(o->compute));
  if (o->policy >= 0)
    json_object_set_new(body, "compute_policy", json_string(set_policies[o->policy]));
  if (o->priority >= 0)
    json_object_set_new(body, "priority", json_string(set_priorities[o->priority]));
  return body;
}

/* "alice: vram 8.0 GiB, compute 40% cap, priority normal" from the tenant the daemon returned. */
static void print_limits(const json_t *t)
{
  const json_t *lim = json_object_get(t, "limits");
  char vram[TABLE_CELL], pct[TABLE_CELL];
  const char *policy = jstr(lim, "compute_policy"), *prio = jstr(lim, "priority");
  printf("%s: vram %s, compute ", jstr(t, "name") ? jstr(t, "name") : "?",
         jhas_num(lim, "vram_bytes") ? fmt_bytes(vram, jnum(lim, "vram_bytes", 0)) : "unlimited");
  if (jhas_num(lim, "compute_pct"))
    printf("%s%% %s", fmt_number(pct, jnum(lim, "compute_pct", 0), 2), policy ? policy : "");
  else
    fputs("unlimited", stdout);
  printf(", priority %s\n", prio ? prio : "normal");
}

int cli_set(int argc, char **argv)
{
  struct set_opts o = { .gpu = -1, .policy = -1, .priority = -1 };
  int r = parse_args(argc, argv, &o);
  if (r >= 0)
    return r;
  _cleanup_free_ char *name = daemon_client_escape(o.tenant);
  _cleanup_free_ char *path = NULL;
  xasprintf(&path, "/v1/tenants/%s", name);
  _cleanup_json_ json_t *body = patch_body(&o);
  _cleanup_json_ json_t *reply = NULL;
  if ((r = verb_request("set", o.socket, "PATCH", path, body, &reply)) != CLI_OK)
    return r;
  if (o.json)
    return verb_print_json(reply);
  print_limits(reply);
  return CLI_OK;
}
