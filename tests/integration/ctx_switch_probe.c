/* ctx_switch_probe: one thread launches sim_busy kernels on GPU 0 and GPU 1 in turn, changing
 * its current context between them each way the driver offers (cuCtxSetCurrent, and
 * cuCtxPushCurrent / cuCtxPopCurrent), for test_compute_fast_path.py. The interposer caches
 * the current GPU and its compute gate per thread; this is what must make it look again.
 * test_compute_fast_path.py compiles it against build/lib/sim with the workload's PTX.
 *
 *   ctx_switch_probe SECONDS KERNEL_US
 *
 * Each round: SetCurrent(GPU 1), a kernel there; Push(GPU 0), a kernel there; Pop (back on
 * GPU 1), a kernel there; SetCurrent(GPU 0), a kernel there; both streams synchronized. Prints
 * one JSON line: the kernels each GPU ran, each KERNEL_US long on the simulated device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gs-cuda.h"

extern const char wl_kernels_ptx[]; /* sim/workload/kernels-ptx.c */

struct gpu {
  CUcontext ctx;
  CUstream stream;
  CUfunction busy;
  unsigned long kernels;
};

static void die(const char *what, int rc)
{
  printf("{\"error\":\"%s\",\"rc\":%d}\n", what, rc);
  exit(1);
}

#define TRY(call)            \
  do {                       \
    CUresult rc_ = (call);   \
    if (rc_ != CUDA_SUCCESS) \
      die(#call, (int) rc_); \
  } while (0)

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void open_gpu(struct gpu *g, int ordinal)
{
  CUdevice dev;
  CUmodule mod;
  TRY(cuDeviceGet(&dev, ordinal));
  TRY(cuCtxCreate_v4(&g->ctx, NULL, 0, dev));
  TRY(cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING));
  TRY(cuModuleLoadData(&mod, wl_kernels_ptx));
  TRY(cuModuleGetFunction(&g->busy, mod, "sim_busy"));
}

/* One kernel on g, whose context must be current. */
static void launch(struct gpu *g, uint64_t us)
{
  void *params[] = { &us };
  TRY(cuLaunchKernel(g->busy, 1, 1, 1, 1, 1, 1, 0, g->stream, params, NULL));
  g->kernels++;
}

int main(int argc, char **argv)
{
  struct gpu g[2] = { 0 };
  CUcontext popped;
  if (argc != 3)
    die("usage: ctx_switch_probe SECONDS KERNEL_US", 2);
  double seconds = atof(argv[1]);
  uint64_t us = strtoull(argv[2], NULL, 10);
  TRY(cuInit(0));
  open_gpu(&g[0], 0);
  open_gpu(&g[1], 1);
  for (double end = now_s() + seconds; now_s() < end;) {
    TRY(cuCtxSetCurrent(g[1].ctx));
    launch(&g[1], us);
    TRY(cuCtxPushCurrent_v2(g[0].ctx));
    launch(&g[0], us);
    TRY(cuCtxPopCurrent_v2(&popped));
    launch(&g[1], us);
    TRY(cuCtxSetCurrent(g[0].ctx));
    launch(&g[0], us);
    TRY(cuStreamSynchronize(g[0].stream));
    TRY(cuCtxSetCurrent(g[1].ctx));
    TRY(cuStreamSynchronize(g[1].stream));
  }
  printf("{\"kernels\":[%lu,%lu],\"kernel_us\":%llu}\n", g[0].kernels, g[1].kernels,
         (unsigned long long) us);
  fflush(stdout);
  return 0;
}
