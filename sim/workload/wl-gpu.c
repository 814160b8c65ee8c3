/* The one device a run works on: its context, its stream and the sim_busy kernel. The
 * stream is non-blocking so that it can be captured into a graph. */
#include "wl.h"

#include <stdio.h>

struct wl_gpu wl_gpu;

static int gpu_kernels(void)
{
  WL_TRY(wl_cu.cuModuleLoadData(&wl_gpu.mod, wl_kernels_ptx), "cuModuleLoadData");
  WL_TRY(wl_cu.cuModuleGetFunction(&wl_gpu.busy, wl_gpu.mod, "sim_busy"),
         "cuModuleGetFunction sim_busy");
  return 0;
}

int wl_gpu_open(int ordinal, bool kernels)
{
  int count = 0;
  char what[64];

  wl_gpu.ordinal = ordinal;
  WL_TRY(wl_cu.cuInit(0), "cuInit");
  WL_TRY(wl_cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal >= count)
    return wl_fail("--device %d: only %d device(s)", ordinal, count);
  snprintf(what, sizeof(what), "cuDeviceGet %d", ordinal);
  WL_TRY(wl_cu.cuDeviceGet(&wl_gpu.dev, ordinal), what);
  WL_TRY(wl_cu.cuCtxCreate_v4(&wl_gpu.ctx, NULL, 0, wl_gpu.dev), "cuCtxCreate_v4");
  WL_TRY(wl_cu.cuStreamCreate(&wl_gpu.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return kernels ? gpu_kernels() : 0;
}

void wl_gpu_close(void)
{
  if (wl_gpu.mod)
    wl_cu.cuModuleUnload(wl_gpu.mod);
  if (wl_gpu.stream)
    wl_cu.cuStreamDestroy_v2(wl_gpu.stream);
  if (wl_gpu.ctx)
    wl_cu.cuCtxDestroy_v2(wl_gpu.ctx);
  wl_gpu = (struct wl_gpu){ 0 };
}

int wl_timer_init(struct wl_timer *t)
{
  WL_TRY(wl_cu.cuEventCreate(&t->start, CU_EVENT_DEFAULT), "cuEventCreate");
  WL_TRY(wl_cu.cuEventCreate(&t->end, CU_EVENT_DEFAULT), "cuEventCreate");
  return 0;
}

void wl_timer_fini(struct wl_timer *t)
{
  if (t->start)
    wl_cu.cuEventDestroy_v2(t->start);
  if (t->end)
    wl_cu.cuEventDestroy_v2(t->end);
  t->start = t->end = NULL;
}

int wl_timer_ms(const struct wl_timer *t, double *ms)
{
  float f = 0;
  WL_TRY(wl_cu.cuEventSynchronize(t->end), "cuEventSynchronize");
  WL_TRY(wl_cu.cuEventElapsedTime_v2(&f, t->start, t->end), "cuEventElapsedTime_v2");
  *ms = (double) f;
  return 0;
}
