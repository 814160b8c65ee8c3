/* Launching sim_busy in each of the ways a program can: cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, and a graph captured from plain launches and replayed with
 * cuGraphLaunch. One thread in one block is enough: the kernel only watches the clock. */
#include "wl.h"

static CUresult launch_one(enum wl_launch how, uint64_t us)
{
  void *args[] = { &us };
  CUlaunchConfig cfg = {
    .gridDimX = 1,
    .gridDimY = 1,
    .gridDimZ = 1,
    .blockDimX = 1,
    .blockDimY = 1,
    .blockDimZ = 1,
    .hStream = wl_gpu.stream,
  };

  switch (how) {
  case WL_LAUNCH_EX: return wl_cu.cuLaunchKernelEx(&cfg, wl_gpu.busy, args, NULL);
  case WL_LAUNCH_COOP:
    return wl_cu.cuLaunchCooperativeKernel(wl_gpu.busy, 1, 1, 1, 1, 1, 1, 0, wl_gpu.stream, args);
  case WL_LAUNCH_PLAIN:
  case WL_LAUNCH_GRAPH: break;
  }
  return wl_cu.cuLaunchKernel(wl_gpu.busy, 1, 1, 1, 1, 1, 1, 0, wl_gpu.stream, args, NULL);
}

/* Captures `k` plain launches into w->graph and instantiates it. */
static int graph_build(struct wl_work *w, unsigned k)
{
  WL_TRY(wl_cu.cuStreamBeginCapture_v2(wl_gpu.stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
         "cuStreamBeginCapture_v2");
  CUresult rc = CUDA_SUCCESS;
  for (unsigned i = 0; i < k && rc == CUDA_SUCCESS; i++)
    rc = launch_one(WL_LAUNCH_PLAIN, w->us);
  /* Capture must be ended even after a failed launch, or the stream stays unusable. */
  CUresult end = wl_cu.cuStreamEndCapture(wl_gpu.stream, &w->graph);
  if (rc != CUDA_SUCCESS)
    return wl_cuda_fail("cuLaunchKernel (capturing)", rc);
  WL_TRY(end, "cuStreamEndCapture");
  WL_TRY(wl_cu.cuGraphInstantiateWithFlags(&w->exec, w->graph, 0), "cuGraphInstantiateWithFlags");
  return 0;
}

int wl_work_init(struct wl_work *w, enum wl_launch how, uint64_t us, unsigned graph_kernels)
{
  *w = (struct wl_work){ .how = how, .us = us, .per_step = 1 };
  if (how == WL_LAUNCH_GRAPH) {
    w->per_step = graph_kernels;
    if (graph_build(w, graph_kernels) < 0)
      return -1;
  }
  WL_TRY(launch_one(how == WL_LAUNCH_GRAPH ? WL_LAUNCH_PLAIN : how, 0), "warm-up launch");
  WL_TRY(wl_cu.cuStreamSynchronize(wl_gpu.stream), "cuStreamSynchronize");
  return 0;
}

CUresult wl_work_launch(const struct wl_work *w)
{
  if (w->how == WL_LAUNCH_GRAPH)
    return wl_cu.cuGraphLaunch(w->exec, wl_gpu.stream);
  return launch_one(w->how, w->us);
}

void wl_work_fini(struct wl_work *w)
{
  if (w->exec)
    wl_cu.cuGraphExecDestroy(w->exec);
  if (w->graph)
    wl_cu.cuGraphDestroy(w->graph);
  w->exec = NULL;
  w->graph = NULL;
}

const char *wl_launch_name(enum wl_launch how)
{
  static const char *const names[] = { "plain", "ex", "coop", "graph" };
  return names[how];
}
