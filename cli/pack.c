/* `gpuslice pack`: replays an openb trace (Alibaba's GPU cluster trace) through one
 * placement policy, the way the FGD paper evaluates schedulers, and reports how much of
 * the cluster's GPU capacity ended up allocated. The placement itself is in lib/place-*.c;
 * this file only parses options, loads the CSVs, times the replay and prints. */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuslice/place.h>
#include <gpuslice/trace-openb.h>

struct pack_opts {
  const char *nodes, *pods;
  enum gs_place_policy policy;
  bool have_policy;
  int format; /* the index in pack_formats: 0 table, 1 json */
  double inflate;
  long long seed;
};

static int set_policy(void *dst, const char *arg, gs_error_t *err)
{
  struct pack_opts *o = dst;
  enum gs_place_policy p;
  if (gs_place_policy_from_name(arg, &p) < 0)
    return gs_make_error(
      err, 0, "--policy '%s': unknown policy (first-fit, best-fit, gpu-packing, fgd, fgd-mem)",
      arg);
  o->policy = p;
  o->have_policy = true;
  return 0;
}

static const char *const pack_formats[] = { "table", "json", NULL };
#define OFF(f) offsetof(struct pack_opts, f)
// clang-format off
static const struct gs_opt pack_entries[] = {
  { .name = "nodes", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(nodes),
    .help = "Node list: sn,cpu_milli,memory_mib,gpu,model" },
  { .name = "pods", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(pods),
    .help = "Pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,... (the 5-column form too)" },
  { .name = "policy", .arg = "NAME", .kind = GS_OPT_CALL, .parse = set_policy,
    .help = "first-fit, best-fit, gpu-packing, fgd or fgd-mem" },
  { .name = "inflate", .arg = "X", .kind = GS_OPT_DOUBLE, .offset = OFF(inflate), .def = "1.3", .max = 1e9,
    .flags = GS_OPT_ABOVE_MIN, .want = "a number > 0", .help = "Arrived GPU request as a multiple of capacity" },
  { .name = "seed", .arg = "N", .kind = GS_OPT_INT, .offset = OFF(seed), .def = "42", .max = 9.2e18,
    .want = "a non-negative integer", .help = "Shuffle, sampling and tie-break seed" },
  { .name = "format", .arg = "table|json", .kind = GS_OPT_ENUM, .offset = OFF(format), .choices = pack_formats,
    .def = "table", .help = "Output format" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_pack_table = {
  .verb = "pack",
  .synopsis = "pack --nodes NODES.csv --pods PODS.csv --policy NAME [OPTIONS]",
  .summary = "Replay a GPU cluster trace through a placement policy",
  .intro = "Replays an openb trace: the pods, sorted by name and shuffled with --seed, then pods\n"
           "drawn with replacement until the arrived GPU request reaches --inflate times the\n"
           "cluster's GPU capacity, are placed one by one with no departures.\n",
  .outro = "Reports gpu_alloc_ratio (allocated GPU-milli / capacity), frag_ratio (idle GPU-milli\n"
           "that FGD's typical pods cannot use / idle GPU-milli), pods_placed, pods_failed and\n"
           "decisions_per_s.\n"
           "\n"
           "Exit status: 0 success, 1 failure, 2 usage error (including a malformed trace).\n",
  GS_OPT_ENTRIES(pack_entries),
};
// clang-format on

static int parse_args(int argc, char **argv, struct pack_opts *o)
{
  int r = cli_parse_options(&cli_pack_table, o, argc, argv);
  if (r >= 0)
    return r;
  if (!o->nodes || !o->pods || !o->have_policy)
    return cli_usage_error("pack", "--%s is required (see gpuslice pack --help)",
                           !o->nodes    ? "nodes"
                             : !o->pods ? "pods"
                                        : "policy");
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
  if (o->format == 0) {
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
  struct gs_place_replay_opts ro = { .policy = o->policy,
                                     .inflate = o->inflate,
                                     .seed = (unsigned long long) o->seed };
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
  struct pack_opts o = { 0 };
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
