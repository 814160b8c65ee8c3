/* gs-bench-interposer: how long the CUDA driver calls that gpuslice's interposer touches take,
 * seen from the application. It is linked against libcuda.so.1 with no RPATH, like
 * gpusim-workload, so the caller decides which driver it gets and whether libgpuslice.so is
 * preloaded; bench/run-interposer.py runs it both ways and reports the difference.
 *
 * Output: one JSON object on stdout with every sample of every operation, in ns per call.
 * Statistics, comparison and targets belong to the runner. This file holds the options and
 * the output; the operations are in bench-ops.c. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const char usage[] =
  "Usage: gs-bench-interposer [OPTIONS]\n"
  "\n"
  "Times cuLaunchKernel (linked, and through cuGetProcAddress_v2) and cuMemAlloc_v2+cuMemFree_v2\n"
  "pairs while other allocations are live, on device 0, and prints every sample as JSON.\n"
  "\n"
  "Options:\n"
  "  --rounds N        timed samples per operation (default 30)\n"
  "  --launch-batch N  launches per sample (default 1000)\n"
  "  --pair-batch N    alloc+free pairs per sample (default 200)\n"
  "  --bytes N         size of each allocation in bytes (default 4096)\n"
  "  --live L,L,...    live allocation counts to time the pair at (default 10,1000,100000)\n"
  "  --ops OPS         which to run: all (default), launch (both launches), pairs, or\n"
  "                    calibrate (this machine's locked add and TSC read, ns each)\n"
  "  --paired          also time the driver's own cuLaunchKernel and alloc+free pair, batch\n"
  "                    after batch with the linked ones in this process (ops *_driver)\n"
  "  --quick           a few small samples: checks that everything runs, measures nothing\n"
  "  -h, --help        show this help\n";

static int bad(const char *opt, const char *val, const char *why)
{
  fprintf(stderr, "gs-bench-interposer: %s '%s': %s\n", opt, val, why);
  return -1;
}

static int parse_count(const char *opt, const char *s, unsigned long long max,
                       unsigned long long *out)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v == 0 || v > max)
    return bad(opt, s, "want a whole number from 1");
  *out = v;
  return 0;
}

static int parse_live(const char *s, struct bench_opts *o)
{
  char buf[256];
  unsigned long long v;
  if (strlen(s) >= sizeof(buf))
    return bad("--live", s, "too long");
  strcpy(buf, s);
  o->nlive = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (o->nlive == sizeof(o->live) / sizeof(o->live[0]))
      return bad("--live", s, "at most 8 counts");
    if (parse_count("--live", tok, 10000000, &v) < 0)
      return -1;
    o->live[o->nlive++] = (size_t) v;
  }
  return o->nlive ? 0 : bad("--live", s, "empty list");
}

static int parse_ops(const char *s, struct bench_opts *o)
{
  if (strcmp(s, "all") == 0)
    o->ops = BENCH_OP_ALL;
  else if (strcmp(s, "launch") == 0)
    o->ops = BENCH_OP_LAUNCH | BENCH_OP_PROCADDR;
  else if (strcmp(s, "pairs") == 0)
    o->ops = BENCH_OP_PAIRS;
  else if (strcmp(s, "calibrate") == 0)
    o->ops = BENCH_OP_CALIBRATE;
  else
    return bad("--ops", s, "want all, launch, pairs or calibrate");
  return 0;
}

static void quick(struct bench_opts *o)
{
  o->rounds = 3;
  o->launch_batch = 20;
  o->pair_batch = 10;
  o->live[0] = 10;
  o->live[1] = 1000;
  o->nlive = 2;
}

/* Returns -1 to go on, or the exit status to return now. */
static int parse_options(int argc, char **argv, struct bench_opts *o)
{
  static const struct option opts[] = {
    { "rounds", required_argument, NULL, 'r' },
    { "launch-batch", required_argument, NULL, 'l' },
    { "pair-batch", required_argument, NULL, 'p' },
    { "bytes", required_argument, NULL, 'b' },
    { "live", required_argument, NULL, 'L' },
    { "ops", required_argument, NULL, 'o' },
    { "quick", no_argument, NULL, 'q' },
    { "paired", no_argument, NULL, 'P' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  unsigned long long v = 0;
  int c, rc = 0;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1 && rc == 0) {
    switch (c) {
    case 'r':
      rc = parse_count("--rounds", optarg, 100000, &v);
      o->rounds = (unsigned) v;
      break;
    case 'l':
      rc = parse_count("--launch-batch", optarg, 1000000, &v);
      o->launch_batch = (unsigned) v;
      break;
    case 'p':
      rc = parse_count("--pair-batch", optarg, 1000000, &v);
      o->pair_batch = (unsigned) v;
      break;
    case 'b':
      rc = parse_count("--bytes", optarg, 1ull << 40, &v);
      o->alloc_bytes = (size_t) v;
      break;
    case 'L': rc = parse_live(optarg, o); break;
    case 'o': rc = parse_ops(optarg, o); break;
    case 'q': quick(o); break;
    case 'P': o->paired = true; break;
    case 'h': fputs(usage, stdout); return 0;
    default: return 2;
    }
  }
  if (rc < 0)
    return 2;
  if (optind < argc) {
    fprintf(stderr, "gs-bench-interposer: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  return -1;
}

static void print_result(const struct bench_result *r, bool last)
{
  printf("    {\"op\": \"%s\", \"calls_per_sample\": %u, \"calls_total\": %llu, \"mappings\": %ld, "
         "\"samples_ns\": [",
         r->op, r->calls_per_sample, r->calls_total, r->vmas);
  for (unsigned i = 0; i < r->nsamples; i++)
    printf("%s%.2f", i ? ", " : "", r->ns[i]);
  printf("]}%s\n", last ? "" : ",");
}

static void print_results(const struct bench_opts *o, const struct bench_result *res, unsigned n)
{
  printf("{\n  \"alloc_bytes\": %zu,\n  \"results\": [\n", o->alloc_bytes);
  for (unsigned i = 0; i < n; i++)
    print_result(&res[i], i + 1 == n);
  printf("  ]\n}\n");
}

/* Runs every operation; n counts the results that hold samples to free. */
static int run_all(const struct bench_opts *o, struct bench_result *res, unsigned *n)
{
  struct bench_driver d;
  if (o->paired && bench_driver_entries(&d) < 0)
    return -1;
  if (o->ops & BENCH_OP_LAUNCH) {
    int rc =
      o->paired ? bench_launch_paired(o, &d, &res[*n], &res[*n + 1]) : bench_launch(o, &res[*n]);
    *n += o->paired ? 2 : 1;
    if (rc < 0)
      return -1;
  }
  if ((o->ops & BENCH_OP_PROCADDR) && bench_launch_procaddr(o, &res[(*n)++]) < 0)
    return -1;
  if (o->ops & BENCH_OP_CALIBRATE) {
    *n += 2;
    return bench_calibrate(o, &res[*n - 2], &res[*n - 1]);
  }
  for (unsigned i = 0; (o->ops & BENCH_OP_PAIRS) && i < o->nlive; i++) {
    int rc = bench_alloc_free(o, o->live[i], o->paired ? &d : NULL, &res[*n], &res[*n + 1]);
    *n += o->paired ? 2 : 1;
    if (rc < 0)
      return -1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  struct bench_opts o = { .rounds = 30,
                          .launch_batch = 1000,
                          .pair_batch = 200,
                          .alloc_bytes = 4096,
                          .live = { 10, 1000, 100000 },
                          .nlive = 3,
                          .ops = BENCH_OP_ALL };
  struct bench_result res[2 * (2 + sizeof(o.live) / sizeof(o.live[0]))] = { 0 };
  unsigned n = 0;
  int status = parse_options(argc, argv, &o);
  if (status >= 0)
    return status;
  bool ok = bench_gpu_open() == 0 && run_all(&o, res, &n) == 0;
  bench_gpu_close();
  if (ok)
    print_results(&o, res, n);
  for (unsigned i = 0; i < n; i++)
    free(res[i].ns);
  return ok ? 0 : 1;
}
