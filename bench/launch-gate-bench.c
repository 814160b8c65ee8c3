/* gs-bench-launch-gate: how long a kernel launch takes, seen from the application, on each
 * path gpuslice's compute gate watches: cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel and cuGraphLaunch (a one-kernel graph). Like gs-bench-interposer
 * it links libcuda.so.1 with no RPATH, so the caller decides whether it runs on the driver
 * directly or as a tenant of `gpuslice run --compute ...`; bench/run-launch-gate.py runs it
 * both ways and reports what the gate adds to a launch it does not hold.
 *
 * Every launch is a zero-length sim_busy kernel: it books an empty interval, so the tenant
 * never uses its share, the gate never holds a launch, and the simulated push buffer never
 * fills. A sample is the mean cost of one call over a batch; the stream is synchronized
 * between batches, outside the timed region. The device setup and the error line are
 * bench-ops.c's, shared with gs-bench-interposer.
 *
 * Output: one JSON object, {"results": [{"op", "calls_per_sample", "samples_ns"}, ...]}. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

static const char usage[] =
  "Usage: gs-bench-launch-gate [--rounds N] [--batch N] [--quick]\n"
  "\n"
  "Times cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and cuGraphLaunch of a\n"
  "zero-length kernel on device 0 and prints every sample (ns per launch) as JSON.\n"
  "  --rounds N   timed samples per launch path (default 30)\n"
  "  --batch N    launches per sample (default 1000)\n"
  "  --quick      3 samples of 20 launches: checks that it runs, measures nothing\n";

static struct {
  CUstream stream;
  CUfunction busy;
  CUgraph graph;
  CUgraphExec exec;
  uint64_t zero;
  void *params[1];
  CUlaunchConfig cfg;
} L;

static CUresult launch_plain(void)
{
  return cuLaunchKernel(L.busy, 1, 1, 1, 1, 1, 1, 0, L.stream, L.params, NULL);
}

static CUresult launch_ex(void)
{
  return cuLaunchKernelEx(&L.cfg, L.busy, L.params, NULL);
}

static CUresult launch_coop(void)
{
  return cuLaunchCooperativeKernel(L.busy, 1, 1, 1, 1, 1, 1, 0, L.stream, L.params);
}

static CUresult launch_graph(void)
{
  return cuGraphLaunch(L.exec, L.stream);
}

static const struct {
  const char *op;
  CUresult (*launch)(void);
} paths[] = {
  { "launch_plain", launch_plain },
  { "launch_ex", launch_ex },
  { "launch_coop", launch_coop },
  { "launch_graph", launch_graph },
};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int setup(void)
{
  if (bench_gpu_open() < 0)
    return -1;
  bench_gpu_handles(&L.stream, &L.busy);
  L.params[0] = &L.zero;
  L.cfg = (CUlaunchConfig){ .gridDimX = 1,
                            .gridDimY = 1,
                            .gridDimZ = 1,
                            .blockDimX = 1,
                            .blockDimY = 1,
                            .blockDimZ = 1,
                            .hStream = L.stream };
  BENCH_TRY(cuStreamBeginCapture_v2(L.stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
            "cuStreamBeginCapture_v2");
  CUresult rc = launch_plain();
  CUresult end = cuStreamEndCapture(L.stream, &L.graph);
  BENCH_TRY(rc, "cuLaunchKernel (capturing)");
  BENCH_TRY(end, "cuStreamEndCapture");
  BENCH_TRY(cuGraphInstantiateWithFlags(&L.exec, L.graph, 0), "cuGraphInstantiateWithFlags");
  return 0;
}

static void teardown(void)
{
  if (L.exec)
    cuGraphExecDestroy(L.exec);
  if (L.graph)
    cuGraphDestroy(L.graph);
  bench_gpu_close();
}

/* Fills ns[0..rounds) with the mean ns per launch of each timed batch, after warm-up batches. */
static int samples(CUresult (*launch)(void), const char *op, unsigned rounds, unsigned batch,
                   double *ns)
{
  unsigned warm = rounds / 10 + 2;
  for (unsigned round = 0; round < warm + rounds; round++) {
    CUresult rc = CUDA_SUCCESS;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < batch && rc == CUDA_SUCCESS; i++)
      rc = launch();
    uint64_t t1 = now_ns();
    BENCH_TRY(rc, op);
    BENCH_TRY(cuStreamSynchronize(L.stream), "cuStreamSynchronize");
    if (round >= warm)
      ns[round - warm] = (double) (t1 - t0) / batch;
  }
  return 0;
}

static int run_all(unsigned rounds, unsigned batch)
{
  double *ns = calloc(rounds, sizeof(*ns));
  if (!ns) {
    fprintf(stderr, "gs-bench-launch-gate: out of memory for %u samples\n", rounds);
    return -1;
  }
  printf("{\n  \"results\": [\n");
  int rc = 0;
  for (size_t p = 0; p < NPATHS && rc == 0; p++) {
    rc = samples(paths[p].launch, paths[p].op, rounds, batch, ns);
    if (rc < 0)
      break;
    printf("    {\"op\": \"%s\", \"calls_per_sample\": %u, \"samples_ns\": [", paths[p].op, batch);
    for (unsigned i = 0; i < rounds; i++)
      printf("%s%.2f", i ? ", " : "", ns[i]);
    printf("]}%s\n", p + 1 == NPATHS ? "" : ",");
  }
  printf("  ]\n}\n");
  free(ns);
  return rc;
}

static int parse_count(const char *opt, const char *s, unsigned *out)
{
  char *end = NULL;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v == 0 || v > 1000000) {
    fprintf(stderr, "gs-bench-launch-gate: %s '%s': want a whole number in 1..1000000\n", opt, s);
    return -1;
  }
  *out = (unsigned) v;
  return 0;
}

/* Returns -1 to go on, or the exit status to return now. */
static int parse_options(int argc, char **argv, unsigned *rounds, unsigned *batch)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (strcmp(a, "--quick") == 0) {
      *rounds = 3;
      *batch = 20;
    } else if ((strcmp(a, "--rounds") == 0 || strcmp(a, "--batch") == 0) && i + 1 < argc) {
      if (parse_count(a, argv[i + 1], a[2] == 'r' ? rounds : batch) < 0)
        return 2;
      i++;
    } else {
      fprintf(stderr, "gs-bench-launch-gate: bad argument '%s' (see --help)\n", a);
      return 2;
    }
  }
  return -1;
}

int main(int argc, char **argv)
{
  unsigned rounds = 30, batch = 1000;
  int status = parse_options(argc, argv, &rounds, &batch);
  if (status >= 0)
    return status;
  bool ok = setup() == 0 && run_all(rounds, batch) == 0;
  teardown();
  return ok ? 0 : 1;
}
