/* `gpuslice set TENANT`: changes a tenant's limits live through the daemon
 * (PATCH /v1/tenants/NAME). The tenant's processes apply the new limits at their next
 * allocation or launch; a memory limit below current use makes further allocations fail until
 * use drops, and never kills. This file checks the values, sends them and prints the result. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon-verb.h"
#include "table.h"

static const char set_usage[] =
  "Usage: gpuslice set TENANT [--vram SIZE|none] [--gpu N] [--compute PCT|none]\n"
  "                    [--compute-policy cap|share] [--priority high|normal|low]\n"
  "                    [--json] [--socket PATH]\n"
  "\n"
  "Changes a running tenant's limits, live: its processes apply them at their next\n"
  "allocation or kernel launch. A memory limit below what the tenant holds makes its\n"
  "further allocations fail until its use drops; nothing is killed.\n"
  "\n"
  "Options:\n"
  "  --vram SIZE|none         Device memory limit per GPU: 8G, 512MiB, 25% of the GPU;\n"
  "                           none lifts it\n"
  "  --gpu N                  Apply --vram to GPU N only (default: every GPU)\n"
  "  --compute PCT|none       Compute limit, percent of the GPU's time (0 < PCT <= 100;\n"
  "                           decimals allowed, e.g. 12.5); none lifts it\n"
  "  --compute-policy POLICY  cap (never more than PCT) or share (PCT when others\n"
  "                           want the GPU, more when it is idle)\n"
  "  --priority PRIORITY      high, normal or low\n"
  "  --json                   Print the tenant as JSON (keys in docs/cli.md)\n"
  "  --socket PATH            The daemon's socket (default: $GPUSLICE_SOCKET, else\n"
  "                           /run/gpuslice/gpuslice.sock for root)\n"
  "  -h, --help               Show this help and exit\n"
  "\n"
  "Exit status: 0 success, 1 failure (no daemon answers, unknown tenant, the daemon\n"
  "refuses), 2 usage error.\n";

struct set_opts {
  const char *socket, *tenant, *vram, *policy, *priority;
  double compute;
  int gpu;         /* -1: every GPU */
  bool have_compute, compute_none, vram_none, json;
};

static int parse_compute(const char *arg, struct set_opts *o)
{
  char *end;
  o->have_compute = true;
  if (strcmp(arg, "none") == 0) {
    o->compute_none = true;
    return -1;
  }
  errno = 0;
  double v = strtod(arg, &end);
  if (errno || end == arg || *end || !isfinite(v) || v <= 0 || v > 100)
    return cli_usage_error("set", "--compute '%s': want a percentage above 0 and at most 100",
                           arg);
  o->compute = v;
  return -1;
}

static int parse_gpu(const char *arg, struct set_opts *o)
{
  char *end;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno || end == arg || *end || v < 0 || v >= GS_LEDGER_MAX_GPUS)
    return cli_usage_error("set", "--gpu '%s': want a GPU index from 0 to %d", arg,
                           GS_LEDGER_MAX_GPUS - 1);
  o->gpu = (int) v;
  return -1;
}

static int parse_vram(const char *arg, struct set_opts *o)
{
  uint64_t bytes;
  gs_error_t err = NULL;
  o->vram = arg;
  if (strcmp(arg, "none") == 0) {
    o->vram_none = true;
    return -1;
  }
  /* Only the form is checked here: a percentage is of the GPU, which the daemon knows. */
  if (gs_parse_size(arg, UINT64_C(1) << 40, &bytes, &err) < 0) {
    cli_usage_error("set", "--vram: %s", err->msg);
    gs_error_release(&err);
    return CLI_USAGE;
  }
  return -1;
}

static int one_of(const char *opt, const char *arg, const char *a, const char *b, const char *c,
                  const char **out)
{
  if (strcmp(arg, a) != 0 && strcmp(arg, b) != 0 && (!c || strcmp(arg, c) != 0))
    return cli_usage_error("set", "%s '%s': want %s, %s%s%s", opt, arg, a, b, c ? " or " : "",
                           c ? c : "");
  *out = arg;
  return -1;
}

static int set_option(struct set_opts *o, int c, char **argv)
{
  switch (c) {
  case 'h':
    fputs(set_usage, stdout);
    return CLI_OK;
  case 'S': o->socket = optarg; return -1;
  case 'j': o->json = true; return -1;
  case 'v': return parse_vram(optarg, o);
  case 'c': return parse_compute(optarg, o);
  case 'g': return parse_gpu(optarg, o);
  case 'P': return one_of("--compute-policy", optarg, "cap", "share", NULL, &o->policy);
  case 'p': return one_of("--priority", optarg, "high", "normal", "low", &o->priority);
  default: return cli_bad_option("set", argv, c);
  }
}

static int parse_args(int argc, char **argv, struct set_opts *o)
{
  static const struct option opts[] = {
    { "vram", required_argument, NULL, 'v' },     { "compute", required_argument, NULL, 'c' },
    { "compute-policy", required_argument, NULL, 'P' },
    { "priority", required_argument, NULL, 'p' }, { "json", no_argument, NULL, 'j' },
    { "gpu", required_argument, NULL, 'g' },
    { "socket", required_argument, NULL, 'S' },   { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c, r;
  opterr = 0;
  /* No '+': options may follow the tenant's name. */
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1)
    if ((r = set_option(o, c, argv)) >= 0)
      return r;
  if (optind >= argc)
    return cli_usage_error("set", "missing TENANT (see gpuslice set --help)");
  if (optind + 1 < argc)
    return cli_usage_error("set", "'%s': unexpected argument (see gpuslice set --help)",
                           argv[optind + 1]);
  o->tenant = argv[optind];
  if (!*o->tenant)
    return cli_usage_error("set", "TENANT is empty");
  if (o->gpu >= 0 && !o->vram)
    return cli_usage_error("set", "--gpu applies to --vram: give --vram too");
  if (!o->vram && !o->have_compute && !o->policy && !o->priority)
    return cli_usage_error("set", "nothing to change: give --vram, --compute, --compute-policy "
                           "or --priority");
  return -1;
}

static json_t *patch_body(const struct set_opts *o)
{
  json_t *body = json_object();
  if (o->vram)
    json_object_set_new(body, "vram", o->vram_none ? json_null() : json_string(o->vram));
  if (o->gpu >= 0)
    json_object_set_new(body, "gpu", json_integer(o->gpu));
  if (o->have_compute)
    json_object_set_new(body, "compute_pct", o->compute_none ? json_null() : json_real(o->compute));
  if (o->policy)
    json_object_set_new(body, "compute_policy", json_string(o->policy));
  if (o->priority)
    json_object_set_new(body, "priority", json_string(o->priority));
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
  struct set_opts o = { .gpu = -1 };
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
