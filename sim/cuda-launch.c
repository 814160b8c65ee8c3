/* Kernel launches. A launch computes the kernel's duration, then books the next free
 * interval on the device's timeline (shared by every process: one kernel at a time, in
 * arrival order) no earlier than the stream is ready, and returns at once: the stream's tail
 * moves to the interval's end. A kernel named sim_busy runs for the microseconds in its first
 * parameter (a uint64); any other for GPUSIM_DEFAULT_KERNEL_US (default 100).
 *
 * Like a real push buffer, a stream holds at most GSC_PUSHBUF unfinished kernels; one more
 * waits for the oldest to finish. */
#include "cuda-internal.h"

#include <stdio.h>
#include <string.h>

/* The kernel's first parameter, from either kernelParams or the packed `extra` buffer. */
static CUresult first_u64(void **params, void **extra, uint64_t *out)
{
  if (params) {
    if (!params[0])
      return CUDA_ERROR_INVALID_VALUE;
    memcpy(out, params[0], sizeof(*out));
    return CUDA_SUCCESS;
  }
  const void *buf = NULL;
  size_t size = 0;
  for (int i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
      size = *(const size_t *) extra[i + 1];
    else
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (!buf || size < sizeof(*out))
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(out, buf, sizeof(*out));
  return CUDA_SUCCESS;
}

CUresult gsc_kernel_duration(const struct CUfunc_st *f, void **params, void **extra, uint64_t *ns)
{
  if (params && extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (strcmp(f->name, "sim_busy") != 0) {
    *ns = gsc.default_kernel_ns;
    return CUDA_SUCCESS;
  }
  uint64_t us;
  GSC_TRY(first_u64(params, extra, &us));
  if (us > UINT64_MAX / 1000)
    return CUDA_ERROR_INVALID_VALUE;
  *ns = us * 1000;
  return CUDA_SUCCESS;
}

/* Forgets kernels that have finished; the ring is in end-time order. */
static void ring_drain(struct CUstream_st *s, uint64_t now)
{
  while (s->ring_count && s->ring[s->ring_head] <= now) {
    s->ring_head = (s->ring_head + 1) % GSC_PUSHBUF;
    s->ring_count--;
  }
}

static void ring_push(struct CUstream_st *s, uint64_t end)
{
  s->ring[(s->ring_head + s->ring_count) % GSC_PUSHBUF] = end;
  s->ring_count++;
}

CUresult gsc_launch(struct CUstream_st *s, uint64_t dur_ns, const char *name)
{
  gsc_lock();
  for (;;) {
    if (!gsc_obj_find(s, GSC_STREAM)) {
      gsc_unlock();
      return CUDA_ERROR_INVALID_HANDLE;
    }
    if (s->capture) {
      CUresult r = gsc_graph_add_kernel(s->capture, dur_ns, name);
      gsc_unlock();
      return r;
    }
    ring_drain(s, gpusim_now_ns());
    if (s->ring_count < GSC_PUSHBUF)
      break;
    uint64_t oldest = s->ring[s->ring_head];
    gsc_unlock();
    gpusim_sleep_until(oldest);
    gsc_lock();
  }
  uint64_t start, not_before = gsc_max(gpusim_now_ns(), gsc_stream_ready_ns(s));
  uint64_t end = gpusim_exec_schedule(gsc_phys(s->ctx->dev), not_before, dur_ns, &start);
  s->tail_ns = end;
  ring_push(s, end);
  gsc_unlock();
  return CUDA_SUCCESS;
}

struct launch {
  CUfunction f;
  unsigned grid[3], block[3];
  CUstream stream;
  void **params, **extra;
  bool per_thread;
};

static CUresult dims_check(const struct launch *l)
{
  for (int i = 0; i < 3; i++)
    if (l->grid[i] == 0 || l->block[i] == 0)
      return CUDA_ERROR_INVALID_VALUE;
  if ((uint64_t) l->block[0] * l->block[1] * l->block[2] > 1024 || l->block[2] > 64)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult launch_prepare(const struct launch *l, struct CUstream_st **s, uint64_t *ns,
                               char *name, size_t len)
{
  struct CUfunc_st *fn;
  GSC_LOCKED;
  GSC_TRY(gsc_func_get(l->f, &fn));
  GSC_TRY(gsc_stream_get(l->stream, l->per_thread, s));
  if (fn->ctx != (*s)->ctx)
    return CUDA_ERROR_INVALID_HANDLE;
  GSC_TRY(gsc_kernel_duration(fn, l->params, l->extra, ns));
  snprintf(name, len, "%s", fn->name);
  return CUDA_SUCCESS;
}

static CUresult launch(const struct launch *l)
{
  struct CUstream_st *s;
  uint64_t ns;
  char name[sizeof(((struct CUfunc_st *) 0)->name)];
  GSC_CHECK_INIT();
  GSC_TRY(dims_check(l));
  GSC_TRY(launch_prepare(l, &s, &ns, name, sizeof(name)));
  return gsc_launch(s, ns, name);
}

GSC_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                                void **extra)
{
  (void) sharedMemBytes;
  struct launch l = { f,
                      { gridDimX, gridDimY, gridDimZ },
                      { blockDimX, blockDimY, blockDimZ },
                      hStream,
                      kernelParams,
                      extra,
                      false };
  return launch(&l);
}

GSC_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
  (void) sharedMemBytes;
  struct launch l = { f,
                      { gridDimX, gridDimY, gridDimZ },
                      { blockDimX, blockDimY, blockDimZ },
                      hStream,
                      kernelParams,
                      extra,
                      true };
  return launch(&l);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra, bool per_thread)
{
  if (!config || (config->numAttrs && !config->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  /* Attributes (clusters, priorities, programmatic launch) do not change a kernel's duration. */
  struct launch l = { f,
                      { config->gridDimX, config->gridDimY, config->gridDimZ },
                      { config->blockDimX, config->blockDimY, config->blockDimZ },
                      config->hStream,
                      kernelParams,
                      extra,
                      per_thread };
  return launch(&l);
}

GSC_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                  void **extra)
{
  return launch_ex(config, f, kernelParams, extra, false);
}

GSC_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
  return launch_ex(config, f, kernelParams, extra, true);
}

GSC_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           CUstream hStream, void **kernelParams)
{
  return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                        sharedMemBytes, hStream, kernelParams, NULL);
}

GSC_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                unsigned int gridDimY, unsigned int gridDimZ,
                                                unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                CUstream hStream, void **kernelParams)
{
  return cuLaunchKernel_ptsz(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                             sharedMemBytes, hStream, kernelParams, NULL);
}
