/* The timed operations of gs-bench-interposer and the device they run on.
 *
 * Each sample times a batch of calls with one pair of clock reads and divides, so that the
 * clock's own cost (a vDSO call, ~20 ns) is spread over the batch. Whatever is not the call
 * being measured happens outside the timed region: stream synchronization between launch
 * batches, and setting up and tearing down the live allocations. The first samples of each
 * operation warm caches and the interposer's one-time setup and are dropped. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char wl_kernels_ptx[]; /* sim/workload/kernels-ptx.c: real PTX for sim_busy */

static struct {
  CUcontext ctx;
  CUdevice dev;
  CUstream stream;
  CUmodule mod;
  CUfunction busy;
} G;

uint64_t bench_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

int bench_cu_fail(const char *what, CUresult rc)
{
  const char *name = NULL;
  if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  fprintf(stderr, "gs-bench-interposer: %s: %s (%d)\n", what, name, (int) rc);
  return -1;
}

/* The primary context, as the CUDA runtime (and so PyTorch) uses it. */
int bench_gpu_open(void)
{
  BENCH_TRY(cuInit(0), "cuInit");
  BENCH_TRY(cuDeviceGet(&G.dev, 0), "cuDeviceGet 0");
  BENCH_TRY(cuDevicePrimaryCtxRetain(&G.ctx, G.dev), "cuDevicePrimaryCtxRetain");
  BENCH_TRY(cuCtxSetCurrent(G.ctx), "cuCtxSetCurrent");
  BENCH_TRY(cuStreamCreate(&G.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  BENCH_TRY(cuModuleLoadData(&G.mod, wl_kernels_ptx), "cuModuleLoadData");
  BENCH_TRY(cuModuleGetFunction(&G.busy, G.mod, "sim_busy"), "cuModuleGetFunction sim_busy");
  return 0;
}

void bench_gpu_close(void)
{
  if (G.mod)
    cuModuleUnload(G.mod);
  if (G.stream)
    cuStreamDestroy_v2(G.stream);
  if (G.ctx)
    cuDevicePrimaryCtxRelease_v2(G.dev);
  memset(&G, 0, sizeof(G));
}

void bench_gpu_handles(CUstream *stream, CUfunction *busy)
{
  *stream = G.stream;
  *busy = G.busy;
}

static unsigned warmup_for(unsigned rounds)
{
  return rounds / 10 + 2;
}

static unsigned warmup_rounds(const struct bench_opts *o)
{
  return warmup_for(o->rounds);
}

/* The process's mappings (lines of /proc/self/maps). The driver maps every allocation, and
 * vm.max_map_count (65530 by default) caps the mappings of a process: this shows how far
 * from it the live allocations took the process (adjacent mappings with the same flags merge). */
static long count_mappings(void)
{
  FILE *f = fopen("/proc/self/maps", "re");
  long n = 0;
  int c;
  if (!f)
    return -1;
  while ((c = getc(f)) != EOF)
    n += c == '\n';
  fclose(f);
  return n;
}

int bench_result_init(struct bench_result *r, const char *op, unsigned calls, unsigned n)
{
  snprintf(r->op, sizeof(r->op), "%s", op);
  r->calls_per_sample = calls;
  r->calls_total = (unsigned long long) calls * (n + warmup_for(n));
  r->nsamples = n;
  r->vmas = count_mappings();
  r->ns = calloc(n, sizeof(*r->ns));
  if (!r->ns) {
    fprintf(stderr, "gs-bench-interposer: %s: out of memory for %u samples\n", op, n);
    return -1;
  }
  return 0;
}

/* One sample: a batch of zero-length sim_busy kernels, the mean ns per launch in *ns. The
 * simulated device books an empty interval, so the stream never fills its 1024-launch push
 * buffer and no launch ever waits. A real GPU runs a one-thread kernel that returns at once.
 * `fn` is NULL for the linked cuLaunchKernel, which is then called the way a linked program
 * calls it (through the PLT). */
static int launch_batch(const struct bench_opts *o, launch_fn fn, double *ns)
{
  uint64_t us = 0;
  void *params[] = { &us };
  CUresult rc = CUDA_SUCCESS;
  uint64_t t0 = bench_now_ns();
  if (fn)
    for (unsigned i = 0; i < o->launch_batch && rc == CUDA_SUCCESS; i++)
      rc = fn(G.busy, 1, 1, 1, 1, 1, 1, 0, G.stream, params, NULL);
  else
    for (unsigned i = 0; i < o->launch_batch && rc == CUDA_SUCCESS; i++)
      rc = cuLaunchKernel(G.busy, 1, 1, 1, 1, 1, 1, 0, G.stream, params, NULL);
  uint64_t t1 = bench_now_ns();
  BENCH_TRY(rc, "cuLaunchKernel");
  BENCH_TRY(cuStreamSynchronize(G.stream), "cuStreamSynchronize");
  *ns = (double) (t1 - t0) / o->launch_batch;
  return 0;
}

static int launch_samples(const struct bench_opts *o, launch_fn fn, struct bench_result *r)
{
  unsigned warm = warmup_rounds(o);
  for (unsigned round = 0; round < warm + o->rounds; round++) {
    double ns;
    if (launch_batch(o, fn, &ns) < 0)
      return -1;
    if (round >= warm)
      r->ns[round - warm] = ns;
  }
  return 0;
}

/* Samples through the linked symbol (hook) and the driver's entry (drv) in turn, the first
 * of each round alternating, so that neither always runs on the caches the other left. */
int bench_launch_paired(const struct bench_opts *o, const struct bench_driver *d,
                        struct bench_result *hook, struct bench_result *drv)
{
  unsigned warm = warmup_rounds(o);
  if (bench_result_init(hook, "launch", o->launch_batch, o->rounds) < 0 ||
      bench_result_init(drv, "launch_driver", o->launch_batch, o->rounds) < 0)
    return -1;
  for (unsigned round = 0; round < warm + o->rounds; round++) {
    double ns[2];
    for (unsigned k = 0; k < 2; k++) {
      unsigned which = (round + k) & 1; /* 0: the hook, 1: the driver */
      if (launch_batch(o, which ? d->launch : NULL, &ns[which]) < 0)
        return -1;
    }
    if (round >= warm) {
      hook->ns[round - warm] = ns[0];
      drv->ns[round - warm] = ns[1];
    }
  }
  return 0;
}

int bench_launch(const struct bench_opts *o, struct bench_result *r)
{
  if (bench_result_init(r, "launch", o->launch_batch, o->rounds) < 0)
    return -1;
  return launch_samples(o, NULL, r);
}

/* The same launch through the pointer cuGetProcAddress_v2 hands out, which is how the CUDA
 * runtime finds it: gpuslice does not hook cuLaunchKernel, so this must be the driver's own. */
int bench_launch_procaddr(const struct bench_opts *o, struct bench_result *r)
{
  void *pfn = NULL;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  BENCH_TRY(
    cuGetProcAddress_v2("cuLaunchKernel", &pfn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
    "cuGetProcAddress_v2 cuLaunchKernel");
  if (!pfn || status != CU_GET_PROC_ADDRESS_SUCCESS) {
    fprintf(stderr, "gs-bench-interposer: cuGetProcAddress_v2 cuLaunchKernel: status %d\n",
            (int) status);
    return -1;
  }
  if (bench_result_init(r, "launch_procaddr", o->launch_batch, o->rounds) < 0)
    return -1;
  launch_fn fn;
  memcpy(&fn, &pfn, sizeof(fn)); /* object to function pointer, as dlsym's callers do */
  return launch_samples(o, fn, r);
}

static void free_live(CUdeviceptr *live, size_t n)
{
  for (size_t i = 0; i < n; i++)
    cuMemFree_v2(live[i]);
  free(live);
}

/* One sample: a batch of alloc+free pairs through alloc and free_ (NULL: the linked ones),
 * the mean ns per pair in *ns. */
static int pair_batch(const struct bench_opts *o, const struct bench_driver *d, double *ns)
{
  CUresult rc = CUDA_SUCCESS;
  uint64_t t0 = bench_now_ns();
  if (d)
    for (unsigned i = 0; i < o->pair_batch && rc == CUDA_SUCCESS; i++) {
      CUdeviceptr p;
      rc = d->alloc(&p, o->alloc_bytes);
      if (rc == CUDA_SUCCESS)
        rc = d->free_(p);
    }
  else
    for (unsigned i = 0; i < o->pair_batch && rc == CUDA_SUCCESS; i++) {
      CUdeviceptr p;
      rc = cuMemAlloc_v2(&p, o->alloc_bytes);
      if (rc == CUDA_SUCCESS)
        rc = cuMemFree_v2(p);
    }
  uint64_t t1 = bench_now_ns();
  BENCH_TRY(rc, "cuMemAlloc_v2/cuMemFree_v2 pair");
  *ns = (double) (t1 - t0) / o->pair_batch;
  return 0;
}

/* Through the linked symbols only (d NULL), or paired with the driver's entries in turn, as
 * bench_launch_paired does. */
static int pair_samples(const struct bench_opts *o, const struct bench_driver *d,
                        struct bench_result *hook, struct bench_result *drv)
{
  unsigned warm = warmup_rounds(o);
  for (unsigned round = 0; round < warm + o->rounds; round++) {
    double ns[2];
    for (unsigned k = 0; k < (d ? 2u : 1u); k++) {
      unsigned which = d ? (round + k) & 1 : 0; /* 0: the hook, 1: the driver */
      if (pair_batch(o, which ? d : NULL, &ns[which]) < 0)
        return -1;
    }
    if (round >= warm) {
      hook->ns[round - warm] = ns[0];
      if (d)
        drv->ns[round - warm] = ns[1];
    }
  }
  return 0;
}

/* An alloc+free pair while `live` other allocations are held: the interposer's pointer map
 * and the driver's allocation table both hold `live` entries while the pairs are timed. With
 * d, paired with the driver's own entries into drv. */
int bench_alloc_free(const struct bench_opts *o, size_t live, const struct bench_driver *d,
                     struct bench_result *r, struct bench_result *drv)
{
  char op[64], what[96];
  CUdeviceptr *held = calloc(live ? live : 1, sizeof(*held));
  if (!held) {
    fprintf(stderr, "gs-bench-interposer: out of memory for %zu live allocations\n", live);
    return -1;
  }
  for (size_t i = 0; i < live; i++) {
    CUresult rc = cuMemAlloc_v2(&held[i], o->alloc_bytes);
    if (rc != CUDA_SUCCESS) {
      snprintf(what, sizeof(what), "cuMemAlloc_v2 of live allocation %zu of %zu (%zu bytes each)",
               i + 1, live, o->alloc_bytes);
      free_live(held, i);
      return bench_cu_fail(what, rc);
    }
  }
  snprintf(op, sizeof(op), "alloc_free_live_%zu", live);
  int ret = bench_result_init(r, op, o->pair_batch, o->rounds);
  snprintf(op, sizeof(op), "alloc_free_live_%zu_driver", live);
  if (ret == 0 && d)
    ret = bench_result_init(drv, op, o->pair_batch, o->rounds);
  if (ret == 0)
    ret = pair_samples(o, d, r, drv);
  free_live(held, live);
  return ret;
}
