/* `gpuslice plan`: reads per-workload utilization and memory series (CSV, dcgm-exporter or
 * Prometheus text, Prometheus range-query JSON, Alibaba GenAI CSVs), recommends a sharing
 * mechanism for each workload, packs the fleet and prices it before and after. The
 * planning is in lib/plan-*.c; this file parses options, loads the inputs and the tables,
 * and hands the result to a writer; the readers and writers are the plan library (plan/). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/plan-io.h>

#define DEFAULT_MODEL "h100-80gb"

enum plan_format { FMT_TABLE, FMT_JSON, FMT_HTML };

struct plan_opts {
  const char **metrics;
  int nmetrics;
  const char *prices, *model, *output;
  double headroom;
  int format; /* enum plan_format */
};

static void add_metrics(struct plan_opts *o, const char *path)
{
  o->metrics = xrealloc(o->metrics, (size_t) (o->nmetrics + 1) * sizeof(*o->metrics));
  o->metrics[o->nmetrics++] = path;
}

static int set_metrics(void *dst, const char *arg, gs_error_t *err)
{
  (void) err;
  add_metrics(dst, arg);
  return 0;
}

static const char *const plan_formats[] = { "table", "json", "html", NULL };
#define OFF(f) offsetof(struct plan_opts, f)
// clang-format off
static const struct gs_opt plan_entries[] = {
  { .name = "metrics", .arg = "FILE...", .kind = GS_OPT_CALL, .parse = set_metrics, .flags = GS_OPT_REPEAT,
    .help = "Metrics files (repeatable; more files may follow): plain CSV "
            "timestamp,workload,gpu_util_pct,fb_used_bytes[,label=value...], dcgm-exporter/Prometheus "
            "text, Prometheus range-query JSON, or the Alibaba GenAI CSVs. Told apart by content; .gz "
            "is read too" },
  { .name = "prices", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(prices),
    .help = "Price table CSV (default: the built-in table)" },
  { .name = "gpu-model", .arg = "M", .kind = GS_OPT_STRING, .offset = OFF(model),
    .help = "GPU model of the fleet, e.g. h100-80gb, a100-40gb, l4 (default: the modelName label of the "
            "input, else " DEFAULT_MODEL ")" },
  { .name = "headroom", .arg = "P", .kind = GS_OPT_PERCENT, .offset = OFF(headroom), .def = GS_PLAN_HEADROOM_TEXT,
    .max = 100, .want = "a percentage 0..100, e.g. 12%", .help = "Memory headroom over p95, in percent" },
  { .name = "format", .arg = "table|json|html", .kind = GS_OPT_ENUM, .offset = OFF(format), .choices = plan_formats,
    .def = "table", .help = "Output format" },
  { .name = "output", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(output),
    .help = "Write to FILE instead of standard output" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_plan_table = {
  .verb = "plan",
  .synopsis = "plan --metrics FILE... [OPTIONS]",
  .summary = "Plan GPU sharing from measured utilization and memory",
  .intro = "Plans how a fleet's GPU workloads could share GPUs, from their measured utilization\n"
           "and memory: for each workload p50/p95/max, the idle fraction, and dedicated, a MIG\n"
           "profile, MPS, time-slicing or a fraction (--vram, --compute) with the reason; for the\n"
           "fleet, the GPUs needed once packed against the GPUs used today, and the monthly cost\n"
           "before and after, with spot and commitment savings stacked.\n",
  .outro = "Rules, thresholds and the JSON keys: docs/planner.md.\n"
           "\n"
           "Exit status: 0 success, 1 failure (no usable samples, no price for the model), 2 usage\n"
           "error (including a malformed metrics file and an unknown GPU model).\n",
  GS_OPT_ENTRIES(plan_entries),
  .flags = GS_OPTS_PERMUTE, /* file names after --metrics FILE are more metrics files */
};
// clang-format on

static int parse_args(int argc, char **argv, struct plan_opts *o)
{
  int next, r = cli_parse(&cli_plan_table, o, argc, argv, &next);
  if (r >= 0)
    return r;
  if (o->nmetrics == 0)
    return cli_usage_error("plan", "--metrics is required (see gpuslice plan --help)");
  for (int i = next; i < argc; i++)
    add_metrics(o, argv[i]);
  return -1;
}

/* A malformed metrics file is bad input: a usage error (exit 2), as `pack` has it. */
static int input_error(gs_error_t *err)
{
  cli_usage_error("plan", "%s", (*err)->msg);
  gs_error_release(err);
  return CLI_USAGE;
}

static int load_inputs(const struct plan_opts *o, struct gs_plan_run *p)
{
  gs_error_t err = NULL;
  p->inputs = xcalloc((size_t) o->nmetrics, sizeof(*p->inputs));
  for (int i = 0; i < o->nmetrics; i++) {
    p->inputs[i].path = o->metrics[i];
    if (gs_plan_input_read(o->metrics[i], &p->data, &p->inputs[i].format, &err) < 0)
      return input_error(&err);
    p->ninputs++;
  }
  gs_plan_data_finish(&p->data, &p->finish);
  if (p->data.n > 0)
    return -1;
  if (p->finish.workloads_dropped > 0)
    fprintf(stderr,
            "gpuslice: plan: no workload has both utilization and memory samples "
            "at the same times (%zu workloads, e.g. '%.60s', have only one of them: give "
            "both series, e.g. both GenAI files)\n",
            p->finish.workloads_dropped, p->finish.dropped_example);
  else
    fprintf(stderr, "gpuslice: plan: no samples in the metrics given: nothing to plan\n");
  return CLI_FAILURE;
}

/* --gpu-model, else the first modelName label that names a known model, else the default. */
static const char *pick_model(const struct plan_opts *o, const struct gs_plan_data *d)
{
  if (o->model)
    return o->model;
  for (size_t i = 0; i < d->n; i++) {
    const char *m = gs_plan_workload_label(d->w[i], "modelName");
    char canon[24];
    gs_error_t err = NULL;
    if (m && gs_gpu_model_canon(m, canon, sizeof(canon), &err) == 0)
      return m;
    gs_error_release(&err);
  }
  return DEFAULT_MODEL;
}

static int load_tables(const struct plan_opts *o, struct gs_plan_run *p, struct gs_mig_table **mig,
                       struct gs_price_table **prices)
{
  gs_error_t err = NULL;
  if (gs_mig_table_default(mig, &err) < 0)
    return cli_fail("plan", &err);
  if (gs_plan_gpu_init(&p->gpu, pick_model(o, &p->data), *mig, &err) < 0)
    return input_error(&err);
  int r =
    o->prices ? gs_price_table_load(o->prices, prices, &err) : gs_price_table_default(prices, &err);
  if (r < 0)
    return o->prices ? input_error(&err) : cli_fail("plan", &err);
  p->price_table = gs_price_table_name(*prices);
  if (!(p->price = gs_price_find(*prices, p->gpu.model, &err)))
    return cli_fail("plan", &err);
  return -1;
}

static int compute(struct gs_plan_run *p)
{
  gs_error_t err = NULL;
  size_t n = p->data.n;
  p->st = xcalloc(n, sizeof(*p->st));
  p->rec = xcalloc(n, sizeof(*p->rec));
  for (size_t i = 0; i < n; i++)
    if (gs_plan_series_stats(p->data.w[i], &p->st[i], &err) < 0)
      return cli_fail("plan", &err);
  if (gs_plan_recommend(&p->data, p->st, &p->gpu, &p->rules, p->rec, &err) < 0)
    return cli_fail("plan", &err);
  struct gs_plan_fleet_opts fo = { .price = p->price, .commit_cover = GS_COST_COMMIT_SHARE };
  if (gs_plan_fleet(&p->data, p->rec, &p->gpu, &fo, &p->fleet, &err) < 0)
    return cli_fail("plan", &err);
  return -1;
}

static int write_out(const struct plan_opts *o, const struct gs_plan_run *p)
{
  FILE *f = o->output ? fopen(o->output, "w") : stdout;
  if (!f) {
    gs_error_t err = NULL;
    gs_make_error(&err, errno, "--output '%s'", o->output);
    return cli_fail("plan", &err);
  }
  int r = 0;
  if (o->format == FMT_JSON)
    r = gs_plan_write_json(f, p);
  else if (o->format == FMT_HTML)
    gs_plan_write_html(f, p);
  else
    gs_plan_write_table(f, p);
  bool bad = ferror(f) != 0;
  if ((o->output ? fclose(f) : fflush(f)) != 0 || bad || r < 0) {
    gs_error_t err = NULL;
    gs_make_error(&err, errno, "writing %s", o->output ? o->output : "standard output");
    return cli_fail("plan", &err);
  }
  return CLI_OK;
}

static void run_release(struct gs_plan_run *p)
{
  gs_plan_fleet_release(&p->fleet);
  gs_plan_data_release(&p->data);
  free(p->inputs);
  free(p->st);
  free(p->rec);
}

int cli_plan(int argc, char **argv)
{
  struct plan_opts o = { 0 };
  struct gs_plan_run p = { 0 };
  struct gs_mig_table *mig = NULL;
  struct gs_price_table *prices = NULL;
  int r = parse_args(argc, argv, &o);
  gs_plan_data_init(&p.data);
  gs_plan_rules_default(&p.rules);
  p.rules.headroom = o.headroom;
  if (r < 0 && (r = load_inputs(&o, &p)) < 0 && (r = load_tables(&o, &p, &mig, &prices)) < 0 &&
      (r = compute(&p)) < 0)
    r = write_out(&o, &p);
  run_release(&p);
  gs_price_table_free(prices);
  gs_mig_table_free(mig);
  free(o.metrics);
  return r;
}
