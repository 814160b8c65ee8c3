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
#include <gpuslice/trace-variant.h>

struct pack_opts {
  const char *nodes, *pods;
  enum gs_place_policy policy;
  bool have_policy;
  int format; /* the index in pack_formats: 0 table, 1 json */
  double inflate;
  long long seed;
  struct gs_trace_variant variant;
  bool have_variant, departures;
  long long variant_seed;
  const char *write_pods;
};

static int set_policy(void *dst, const char *arg, gs_error_t *err)
{
  struct pack_opts *o = dst;
  enum gs_place_policy p;
  if (gs_place_policy_from_name(arg, &p) < 0)
    return gs_make_error(
      err, 0,
      "--policy '%s': unknown policy (first-fit, best-fit, gpu-packing, fgd, fgd-mem, "
      "fgd-mem-tie)",
      arg);
  o->policy = p;
  o->have_policy = true;
  return 0;
}

static int set_variant(void *dst, const char *arg, gs_error_t *err)
{
  struct pack_opts *o = dst;
  if (gs_trace_variant_parse(arg, &o->variant, err) < 0)
    return gs_error_prepend(err, "--variant");
  o->have_variant = true;
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
    .help = "first-fit, best-fit, gpu-packing, fgd, fgd-mem or fgd-mem-tie" },
  { .name = "inflate", .arg = "X", .kind = GS_OPT_DOUBLE, .offset = OFF(inflate), .def = "1.3", .max = 1e9,
    .flags = GS_OPT_ABOVE_MIN, .want = "a number > 0", .help = "Arrived GPU request as a multiple of capacity" },
  { .name = "seed", .arg = "N", .kind = GS_OPT_INT, .offset = OFF(seed), .def = "42", .max = 9.2e18,
    .want = "a non-negative integer", .help = "Shuffle, sampling and tie-break seed" },
  { .name = "variant", .arg = "NAME", .kind = GS_OPT_CALL, .parse = set_variant,
    .help = "Replay a variant of --pods instead: gpushareNN, gpuspecNN or multigpuNN (docs/placement.md)" },
  { .name = "variant-seed", .arg = "N", .kind = GS_OPT_INT, .offset = OFF(variant_seed), .def = "1", .max = 9.2e18,
    .want = "a non-negative integer", .help = "Seed of the --variant's draws" },
  { .name = "write-pods", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(write_pods),
    .help = "Write the pod list (the --variant's, if given) to FILE and replay nothing" },
  { .name = "departures", .kind = GS_OPT_FLAG, .offset = OFF(departures),
    .help = "Pods leave after their lifetime; --inflate is then the load running at the end" },
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
           "cluster's GPU capacity, are placed one by one with no departures (unless\n"
           "--departures). --variant replays a variant of the trace, as the FGD paper derives them.\n",
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
  if (!o->nodes || !o->pods || (!o->have_policy && !o->write_pods))
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

static void print_churn(const struct pack_opts *o, const struct gs_place_churn_result *r,
                        double per_s)
{
  if (o->format == 0) {
    printf("policy             %s\n"
           "gpu_alloc_ratio    %.4f\n"
           "mean_alloc_ratio   %.4f\n"
           "frag_ratio         %.4f\n"
           "failed_share       %.4f\n"
           "life_known         %.4f\n"
           "pods_placed        %zu\n"
           "pods_failed        %zu\n"
           "departures         %zu\n"
           "decisions_per_s    %.0f\n",
           gs_place_policy_name(o->policy), r->gpu_alloc_ratio, r->mean_alloc_ratio, r->frag_ratio,
           r->failed_share, r->life_known, r->pods_placed, r->pods_failed, r->departures, per_s);
    return;
  }
  json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f}", "gpu_alloc_ratio",
                        r->gpu_alloc_ratio, "mean_alloc_ratio", r->mean_alloc_ratio, "frag_ratio",
                        r->frag_ratio, "failed_share", r->failed_share, "life_known", r->life_known,
                        "pods_placed", (json_int_t) r->pods_placed, "pods_failed",
                        (json_int_t) r->pods_failed, "departures", (json_int_t) r->departures,
                        "decisions_per_s", per_s);
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  if (s)
    puts(s);
  free(s);
  json_decref(j);
}

static int replay_churn(const struct pack_opts *o, const struct gs_openb_nodes *nodes,
                        const struct gs_openb_pods *pods)
{
  gs_error_t err = NULL;
  struct gs_place_replay_opts ro = { .policy = o->policy,
                                     .inflate = o->inflate,
                                     .seed = (unsigned long long) o->seed };
  struct gs_place_churn_result res;
  double t0 = now_s();
  if (gs_place_replay_churn(nodes->nodes, nodes->n, pods->pods, pods->life_s, pods->n, &ro, &res,
                            &err) < 0)
    return cli_fail("pack", &err);
  double dt = now_s() - t0;
  print_churn(o, &res, dt > 0 ? (double) res.decisions / dt : 0);
  return CLI_OK;
}

static int write_pods(const char *path, const struct gs_openb_pods *pods)
{
  gs_error_t err = NULL;
  FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "we");
  if (!f) {
    gs_make_error(&err, errno, "open '%s'", path);
    return cli_fail("pack", &err);
  }
  int r = gs_openb_write_pods(f, pods, &err);
  if (f != stdout && fclose(f) != 0 && r == 0)
    r = gs_make_error(&err, errno, "close '%s'", path);
  return r < 0 ? cli_fail("pack", &err) : CLI_OK;
}

/* Replaces *pods by o's variant of it. A variant the pod list cannot give (no pods of the
 * kind it draws from) is bad input: exit 2. */
static int make_variant(const struct pack_opts *o, const struct gs_openb_nodes *nodes,
                        struct gs_openb_pods *pods)
{
  gs_error_t err = NULL;
  struct gs_openb_pods v;
  if (gs_trace_variant_make(pods, nodes, &o->variant, (unsigned long long) o->variant_seed, &v,
                            &err) < 0) {
    cli_usage_error("pack", "%s", err->msg);
    gs_error_release(&err);
    return CLI_USAGE;
  }
  gs_openb_pods_release(pods);
  *pods = v;
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
  r = o.have_variant ? make_variant(&o, &nodes, &pods) : CLI_OK;
  if (r == CLI_OK)
    r = o.write_pods ? write_pods(o.write_pods, &pods)
      : o.departures ? replay_churn(&o, &nodes, &pods)
                     : replay(&o, &nodes, &pods);
  gs_openb_pods_release(&pods);
  gs_openb_nodes_release(&nodes);
  return r;
}
