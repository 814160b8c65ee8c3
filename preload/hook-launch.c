/* Launch hooks: every call that submits kernels passes the compute gate first (compute-gate.h), and
 * the synchronize calls tell the gate when the process has waited for its work. A process
 * that is no tenant goes straight to the driver.
 *
 * Gated: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and cuGraphLaunch,
 * each with its per-thread-stream (_ptsz) form. Copies and memsets are not kernels and are
 * not gated. */
#include "compute-gate.h"
#include "hooks.h"
#include "pool-reserve.h"
#include "resume-wait.h"

/* Runs `call` (a driver call on stream s) through the gate. A launch the gate refuses (it
 * has no board or board row for the tenant) is CUDA_ERROR_NOT_PERMITTED, never ungated. */
#define GS_GATED(fn, s, ptsz, ...)                   \
  do {                                               \
    GS_RESUMED_OR_RETURN();                          \
    GS_REAL_OR_FAIL(fn);                             \
    struct gs_gate *g_ = gs__gate();                 \
    if (!g_)                                         \
      return gs__cuda.fn(__VA_ARGS__);               \
    uint64_t now_ = gs__gate_enter(g_, (s), (ptsz)); \
    if (__builtin_expect(now_ == 0, 0))              \
      return CUDA_ERROR_NOT_PERMITTED;               \
    CUresult rc_ = gs__cuda.fn(__VA_ARGS__);         \
    if (rc_ == CUDA_SUCCESS)                         \
      gs__gate_leave(g_, (s), (ptsz), now_);         \
    return rc_;                                      \
  } while (0)

/* Runs a synchronize call, telling the gate before and after. */
#define GS_SYNC(fn, ...)                                        \
  do {                                                          \
    GS_RESUMED_OR_RETURN();                                     \
    GS_REAL_OR_FAIL(fn);                                        \
    struct gs_gate *g_ = gs__gate();                            \
    if (g_)                                                     \
      gs__gate_sync_begin(g_);                                  \
    CUresult rc_ = gs__cuda.fn(__VA_ARGS__);                    \
    if (g_)                                                     \
      gs__gate_sync_end(g_);                                    \
    if (rc_ == CUDA_SUCCESS)                                    \
      gs__pool_settle(); /* pools give memory back at a sync */ \
    return rc_;                                                 \
  } while (0)

GS_HOOK CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int shmem, CUstream s, void **params, void **extra)
{
  GS_GATED(cuLaunchKernel, s, false, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

GS_HOOK CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shmem, CUstream s, void **params,
                                     void **extra)
{
  GS_GATED(cuLaunchKernel_ptsz, s, true, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

/* A NULL config is the driver's to refuse; the gate has no stream to measure on then. */
GS_HOOK CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                                  void **extra)
{
  if (!config)
    GS_GATED(cuLaunchKernelEx, NULL, false, config, f, params, extra);
  GS_GATED(cuLaunchKernelEx, config->hStream, false, config, f, params, extra);
}

GS_HOOK CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
                                       void **extra)
{
  if (!config)
    GS_GATED(cuLaunchKernelEx_ptsz, NULL, true, config, f, params, extra);
  GS_GATED(cuLaunchKernelEx_ptsz, config->hStream, true, config, f, params, extra);
}

GS_HOOK CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                           unsigned int gz, unsigned int bx, unsigned int by,
                                           unsigned int bz, unsigned int shmem, CUstream s,
                                           void **params)
{
  GS_GATED(cuLaunchCooperativeKernel, s, false, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

GS_HOOK CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                unsigned int gz, unsigned int bx, unsigned int by,
                                                unsigned int bz, unsigned int shmem, CUstream s,
                                                void **params)
{
  GS_GATED(cuLaunchCooperativeKernel_ptsz, s, true, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

GS_HOOK CUresult cuGraphLaunch(CUgraphExec exec, CUstream s)
{
  GS_GATED(cuGraphLaunch, s, false, exec, s);
}

GS_HOOK CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s)
{
  GS_GATED(cuGraphLaunch_ptsz, s, true, exec, s);
}

GS_HOOK CUresult cuCtxSynchronize(void)
{
  GS_SYNC(cuCtxSynchronize);
}

GS_HOOK CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
  GS_SYNC(cuCtxSynchronize_v2, ctx);
}

GS_HOOK CUresult cuStreamSynchronize(CUstream s)
{
  GS_SYNC(cuStreamSynchronize, s);
}

GS_HOOK CUresult cuStreamSynchronize_ptsz(CUstream s)
{
  GS_SYNC(cuStreamSynchronize_ptsz, s);
}

GS_HOOK CUresult cuEventSynchronize(CUevent e)
{
  GS_SYNC(cuEventSynchronize, e);
}
