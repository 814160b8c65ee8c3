/* gs-bench-metrics: how long gs_metrics_render takes for a node of G GPUs and T tenants, next
 * to a baseline from the same run: the same bytes written by one plain snprintf per line.
 * bench/run-metrics.py drives it and reports.
 *
 *   gs-bench-metrics [--gpus G] [--tenants T] [--gpus-per-tenant K] [--labels L] [--iters N]
 *                    [--counters FILE]
 *   gs-bench-metrics --dump ...    print one rendered snapshot instead (for promtool)
 *
 * --counters renders the GPU fields of a dcgm-exporter counters file (bench/counters-7.csv is
 * the 7 fields of before issue #16) instead of the built-in default set of 25.
 *
 * Prints one JSON object: per-render median and p99 in ms for both, bytes and lines. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuslice.h>
#include <gpuslice/metrics.h>

struct opts {
  int gpus, tenants, per_tenant, labels, iters;
  bool dump;
  const char *counters; /* NULL: the built-in default set */
};

/* The GPU fields rendered: the default set, or --counters FILE's. */
static struct gs_metrics_fields fields;

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static void fill_gpu(struct gs_snap_gpu *g, int i)
{
  g->index = i;
  snprintf(g->uuid, sizeof(g->uuid), "GPU-%08x-1111-2222-3333-%012x", 0xabc00000u + (unsigned) i,
           (unsigned) i);
  snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "00000000:%02X:00.0", 0x18 + i);
  snprintf(g->device, sizeof(g->device), "nvidia%u", (unsigned) i & 0xffffu);
  snprintf(g->model, sizeof(g->model), "NVIDIA H100 80GB HBM3");
  g->fb_total_bytes = 80ull << 30;
  g->fb_used_bytes = (uint64_t) (i + 1) << 30;
  g->fb_free_bytes = g->fb_total_bytes - g->fb_used_bytes;
  g->util_pct = (unsigned) (10 * i % 100);
  g->power_mw = 70000u + 1234u * (unsigned) i;
  g->temp_c = 30u + (unsigned) i;
  g->sm_clock_mhz = 1980;
  g->mem_clock_mhz = 2619;
  /* The rest of dcgm-exporter's default set, as an H100 gives it. */
  g->have = ~0u;
  g->fb_reserved_bytes = 509ull << 20;
  g->fb_free_bytes -= g->fb_reserved_bytes;
  g->mem_util_pct = g->util_pct / 2;
  g->mem_temp_c = g->temp_c + 4;
  g->energy_mj = 1000000000ull + 7919ull * (unsigned) i;
  g->xid_last = i == 3 ? 79 : 0;
  g->nvlink_kib = 1ull << 30;
  g->prof_gr_active = g->util_pct / 100.0;
  g->prof_dram_active = g->prof_gr_active / 2;
  g->prof_tensor_active = 0.25;
  g->prof_pcie_tx_bps = 1.5e9;
  g->prof_pcie_rx_bps = 2.5e9;
}

static void fill_tenant(struct gs_snap_tenant *t, int n, int gpu, int nlabels)
{
  static const char *keys[] = {
    "team", "model", "env", "experiment", "cost-center", "owner.email"
  };
  snprintf(t->name, sizeof(t->name), "tenant-%04d", n);
  t->gpu = gpu;
  t->nlabels = nlabels < GS_SNAP_LABELS_MAX ? nlabels : GS_SNAP_LABELS_MAX;
  for (int i = 0; i < t->nlabels; i++) {
    snprintf(t->labels[i].key, sizeof(t->labels[i].key), "%s", keys[i % 6]);
    snprintf(t->labels[i].value, sizeof(t->labels[i].value), "value-%d-%d", n % 17, i);
  }
  t->vram_used_bytes = (uint64_t) (n + 1) * 12345678u;
  t->vram_limit_bytes = n % 4 ? 8ull << 30 : UINT64_MAX;
  t->compute_share = (double) (n % 100) / 250.0;
  t->compute_limit = n % 3 ? 0.25 : 0;
  t->gpu_ns = (uint64_t) n * 987654321u;
  t->throttled_ns = (uint64_t) n * 1234567u;
}

static struct gs_snapshot make_snapshot(const struct opts *o)
{
  struct gs_snapshot s = { .ngpus = o->gpus, .ntenants = o->tenants * o->per_tenant };
  snprintf(s.hostname, sizeof(s.hostname), "gpu-node-01.example.org");
  snprintf(s.driver_version, sizeof(s.driver_version), "550.54.15");
  s.gpus = xcalloc((size_t) s.ngpus, sizeof(*s.gpus));
  s.tenants = xcalloc((size_t) s.ntenants, sizeof(*s.tenants));
  for (int i = 0; i < s.ngpus; i++)
    fill_gpu(&s.gpus[i], i);
  for (int t = 0; t < o->tenants; t++)
    for (int k = 0; k < o->per_tenant; k++)
      fill_tenant(&s.tenants[t * o->per_tenant + k], t, (t + k) % o->gpus, o->labels);
  return s;
}

/* The baseline: the same bytes, written by one snprintf per line ("%.*s\n" of that line), so
 * that render / baseline is what formatting costs beyond writing the text at all. */
struct lines {
  const char **p;
  int *len;
  size_t n;
};

static struct lines split_lines(const char *text, size_t len)
{
  struct lines l = { 0 };
  for (size_t k = 0; k < len; k++)
    l.n += text[k] == '\n';
  l.p = xcalloc(l.n, sizeof(*l.p));
  l.len = xcalloc(l.n, sizeof(*l.len));
  const char *start = text;
  for (size_t i = 0; i < l.n; i++) {
    const char *nl = strchr(start, '\n');
    l.p[i] = start;
    l.len[i] = (int) (nl - start);
    start = nl + 1;
  }
  return l;
}

static size_t baseline_render(char *buf, size_t cap, const struct lines *l)
{
  size_t off = 0;
  for (size_t i = 0; i < l->n && off < cap; i++)
    off += (size_t) snprintf(buf + off, cap - off, "%.*s\n", l->len[i], l->p[i]);
  return off;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
  qsort(v, (size_t) n, sizeof(*v), cmp_double);
  int i = (int) (p * (n - 1) + 0.5);
  return v[i];
}

static char *render_or_die(const struct gs_snapshot *s, const struct gs_metrics_health *h,
                           size_t *len)
{
  char *out = NULL;
  gs_error_t err = NULL;
  if (gs_metrics_render_fields(s, &fields, h, &out, len, &err) < 0) {
    fprintf(stderr, "gs-bench-metrics: %s\n", err->msg);
    exit(1);
  }
  return out;
}

static void bench(const struct opts *o, const struct gs_snapshot *s,
                  const struct gs_metrics_health *h)
{
  double *t_render = xcalloc((size_t) o->iters, sizeof(double));
  double *t_base = xcalloc((size_t) o->iters, sizeof(double));
  size_t len = 0;
  char *first = render_or_die(s, h, &len);
  struct lines lines = split_lines(first, len);
  char *base = xmalloc(len + 1);
  for (int i = 0; i < o->iters; i++) {
    double t0 = now_ms();
    char *out = render_or_die(s, h, &len);
    t_render[i] = now_ms() - t0;
    free(out);
    t0 = now_ms();
    baseline_render(base, len + 1, &lines);
    t_base[i] = now_ms() - t0;
  }
  printf(
    "{\"fields\": %d, \"gpus\": %d, \"tenants\": %d, \"rows\": %d, \"labels\": %d, \"iters\": %d, "
    "\"bytes\": %zu, \"lines\": %zu, \"render_median_ms\": %.4f, \"render_p99_ms\": %.4f, "
    "\"baseline_median_ms\": %.4f, \"baseline_p99_ms\": %.4f}\n",
    fields.n, o->gpus, o->tenants, s->ntenants, o->labels, o->iters, len, lines.n,
    pct(t_render, o->iters, 0.5), pct(t_render, o->iters, 0.99), pct(t_base, o->iters, 0.5),
    pct(t_base, o->iters, 0.99));
  free(base);
  free(first);
  free(lines.p);
  free(lines.len);
  free(t_render);
  free(t_base);
}

static int run(const struct opts *o)
{
  struct gs_snapshot s = make_snapshot(o);
  struct gs_metrics_health h = { .uptime_s = 100,
                                 .samples_total = 100,
                                 .tenants = o->tenants,
                                 .gpus = o->gpus,
                                 .last_sample_duration_s = 0.002 };
  if (o->dump) {
    size_t len = 0;
    char *out = render_or_die(&s, &h, &len);
    fwrite(out, 1, len, stdout);
    free(out);
  } else {
    bench(o, &s, &h);
  }
  free(s.gpus);
  free(s.tenants);
  return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
  static const struct option lo[] = {
    { "gpus", required_argument, NULL, 'g' },
    { "tenants", required_argument, NULL, 't' },
    { "gpus-per-tenant", required_argument, NULL, 'k' },
    { "labels", required_argument, NULL, 'l' },
    { "iters", required_argument, NULL, 'n' },
    { "dump", no_argument, NULL, 'd' },
    { "counters", required_argument, NULL, 'c' },
    { NULL, 0, NULL, 0 },
  };
  int c;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 'g': o->gpus = atoi(optarg); break;
    case 't': o->tenants = atoi(optarg); break;
    case 'k': o->per_tenant = atoi(optarg); break;
    case 'l': o->labels = atoi(optarg); break;
    case 'n': o->iters = atoi(optarg); break;
    case 'd': o->dump = true; break;
    case 'c': o->counters = optarg; break;
    default: return -1;
    }
  }
  if (o->gpus < 1 || o->tenants < 0 || o->per_tenant < 1 || o->per_tenant > o->gpus ||
      o->labels < 0 || o->iters < 1)
    return -1;
  return 0;
}

int main(int argc, char **argv)
{
  struct opts o = { .gpus = 8, .tenants = 256, .per_tenant = 1, .labels = 4, .iters = 200 };
  if (parse(argc, argv, &o) < 0) {
    fprintf(stderr,
            "usage: gs-bench-metrics [--gpus G] [--tenants T] [--gpus-per-tenant K] "
            "[--labels L] [--iters N] [--counters FILE] [--dump]\n");
    return 2;
  }
  fields = *gs_metrics_fields_default();
  gs_error_t err = NULL;
  if (o.counters && gs_metrics_fields_load(o.counters, &fields, &err) < 0) {
    fprintf(stderr, "gs-bench-metrics: %s\n", err->msg);
    return 1;
  }
  return run(&o);
}
