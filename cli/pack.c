/* `gpuslice pack`: replays an openb trace (Alibaba's GPU cluster trace) through one
 * placement policy, the way the FGD paper evaluates schedulers, and reports how much of
 * the cluster's GPU capacity ended up allocated. The placement itself is in lib/place-*.c;
 * this file only parses options, loads the CSVs, times the replay and prints. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs-place.h"
#include "gs-trace-openb.h"

static const char pack_usage[] =
  "Usage: gpuslice pack --nodes NODES.csv --pods PODS.csv --policy NAME [OPTIONS]\n"
  "\n"
  "Replays an openb trace: the pods, sorted by name and shuffled with --seed, then pods\n"
  "drawn with replacement until the arrived GPU request reaches --inflate times the\n"
  "cluster's GPU capacity, are placed one by one with no departures.\n"
  "\n"
  "Options:\n"
  "  --nodes FILE            Node list: sn,cpu_milli,memory_mib,gpu,model\n"
  "  --pods FILE             Pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli,...\n"
  "  --policy NAME           first-fit, best-fit, gpu-packing, fgd or fgd-mem\n"
  "  --inflate X             Arrived GPU request as a multiple of capacity (default 1.3)\n"
  "  --seed N                Shuffle, sampling and tie-break seed (default 42)\n"
  "  --format table|json     Output format (default table)\n"
  "  -h, --help              Show this help and exit\n"
  "\n"
  "Reports gpu_alloc_ratio (allocated GPU-milli / capacity), frag_ratio (idle GPU-milli\n"
  "that FGD's typical pods cannot use / idle GPU-milli), pods_placed, pods_failed and\n"
  "decisions_per_s.\n"
  "\n"
  "Exit status: 0 success, 1 failure, 2 usage error (including a malformed trace).\n";

struct pack_opts {
  const char *nodes, *pods;
  enum gs_place_policy policy;
  bool have_policy, json;
  double inflate;
  unsigned long long seed;
};

static int parse_inflate(const char *arg, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(arg, &end);
  if (errno || end == arg || *end || !isfinite(v) || v <= 0)
    return cli_usage_error("pack", "--inflate '%s': want a number > 0", arg);
  *out = v;
  return -1;
}

static int parse_seed(const char *arg, unsigned long long *out)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (errno || end == arg || *end || arg[0] == '-')
    return cli_usage_error("pack", "--seed '%s': want a non-negative integer", arg);
  *out = v;
  return -1;
}

/* Applies one option. Returns -1 to go on, or an exit status. */
static int pack_option(struct pack_opts *o, int c, char **argv)
{
  switch (c) {
  case 'h':
    fputs(pack_usage, stdout);
    return CLI_OK;
  case 'n':
    o->nodes = optarg;
    return -1;
  case 'p':
    o->pods = optarg;
    return -1;
  case 'P':
    if (gs_place_policy_from_name(optarg, &o->policy) < 0)
      return cli_usage_error("pack", "--policy '%s': unknown policy (first-fit, best-fit, "
                             "gpu-packing, fgd, fgd-mem)", optarg);
    o->have_policy = true;
    return -1;
  case 'i':
    return parse_inflate(optarg, &o->inflate);
  case 's':
    return parse_seed(optarg, &o->seed);
  case 'f':
    if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0)
      return cli_usage_error("pack", "--format '%s': want table or json", optarg);
    o->json = strcmp(optarg, "json") == 0;
    return -1;
  default:
    return cli_bad_option("pack", argv, c);
  }
}

static int parse_args(int argc, char **argv, struct pack_opts *o)
{
  static const struct option opts[] = {
    { "nodes", required_argument, NULL, 'n' },  { "pods", required_argument, NULL, 'p' },
    { "policy", required_argument, NULL, 'P' }, { "inflate", required_argument, NULL, 'i' },
    { "seed", required_argument, NULL, 's' },   { "format", required_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
  };
  int c, r;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1)
    if ((r = pack_option(o, c, argv)) >= 0)
      return r;
  if (optind < argc)
    return cli_usage_error("pack", "'%s': unexpected argument (see gpuslice pack --help)",
                           argv[optind]);
  if (!o->nodes || !o->pods || !o->have_policy)
    return cli_usage_error("pack", "--%s is required (see gpuslice pack --help)",
                           !o->nodes ? "nodes" : !o->pods ? "pods" : "policy");
  return -1;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void print_result(const struct pack_opts *o, const struct gs_place_replay_result *r,
                         double per_s)
{
  if (!o->json) {
    printf("policy           %s\n"
           "gpu_alloc_ratio  %.4f\n"
           "frag_ratio       %.4f\n"
           "pods_placed      %zu\n"
           "pods_failed      %zu\n"
           "decisions_per_s  %.0f\n",
           gs_place_policy_name(o->policy), r->gpu_alloc_ratio, r->frag_ratio, r->pods_placed,
           r->pods_failed, per_s);
    return;
  }
  json_t *j = json_pack("{s:f, s:f, s:I, s:I, s:f}", "gpu_alloc_ratio", r->gpu_alloc_ratio,
                        "frag_ratio", r->frag_ratio, "pods_placed", (json_int_t) r->pods_placed,
                        "pods_failed", (json_int_t) r->pods_failed, "decisions_per_s", per_s);
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  if (s)
    puts(s);
  free(s);
  json_decref(j);
}

static int replay(const struct pack_opts *o, const struct gs_openb_nodes *nodes,
                  const struct gs_openb_pods *pods)
{
  gs_error_t err = NULL;
  struct gs_place_replay_opts ro = { .policy = o->policy, .inflate = o->inflate,
                                     .seed = o->seed };
  struct gs_place_replay_result res;
  double t0 = now_s();
  if (gs_place_replay(nodes->nodes, nodes->n, pods->pods, pods->n, &ro, &res, &err) < 0)
    return cli_fail("pack", &err);
  double dt = now_s() - t0;
  print_result(o, &res, dt > 0 ? (double) res.decisions / dt : 0);
  return CLI_OK;
}

/* A trace the reader refuses is bad input, so it is a usage error (exit 2). */
static int trace_error(gs_error_t *err)
{
  cli_usage_error("pack", "%s", (*err)->msg);
  gs_error_release(err);
  return CLI_USAGE;
}

int cli_pack(int argc, char **argv)
{
  struct pack_opts o = { .inflate = 1.3, .seed = 42 };
  int r = parse_args(argc, argv, &o);
  if (r >= 0)
    return r;
  gs_error_t err = NULL;
  struct gs_openb_nodes nodes = { 0 };
  struct gs_openb_pods pods = { 0 };
  if (gs_openb_load_nodes(o.nodes, &nodes, &err) < 0)
    return trace_error(&err);
  if (gs_openb_load_pods(o.pods, &pods, &err) < 0) {
    gs_openb_nodes_release(&nodes);
    return trace_error(&err);
  }
  r = replay(&o, &nodes, &pods);
  gs_openb_pods_release(&pods);
  gs_openb_nodes_release(&nodes);
  return r;
}
