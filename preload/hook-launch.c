/* Launch hooks: every call that submits kernels passes the compute gate first (compute-gate.h), and
 * the synchronize calls tell the gate when the process has waited for its work. A process
 * that is no tenant goes straight to the driver.
 *
 * Gated: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and cuGraphLaunch,
 * each with its per-thread-stream (_ptsz) form. Copies and memsets are not kernels and are
 * not gated. */
#include <stddef.h>

#include "compute-gate.h"
#include "hooks.h"
#include "pool-reserve.h"
#include "resume-wait.h"

/* The gated path of the hook fn: a suspended tenant is resumed first (the daemon's suspend
 * moves the limits' generation, so an open gate's launch comes here too); the gate is found,
 * or looks again, and a closed gate takes a turn. A launch the gate refuses (it has no board or board row for the tenant) is
 * CUDA_ERROR_NOT_PERMITTED, never ungated. A hidden global, not static, so that its name
 * survives link-time optimization: the fast path below jumps to it by name. */
#define GS_GATED_SLOW(fn, params, args, stream, ptsz)                 \
  CUresult fn##_gated params;                                         \
  __attribute__((used, noinline, noclone)) CUresult fn##_gated params \
  {                                                                   \
    GS_RESUMED_OR_RETURN();                                           \
    GS_REAL_OR_FAIL(fn);                                              \
    struct gs_gate *g_ = gs__gate_closed(gs__gate_tls);               \
    if (!g_)                                                          \
      return gs__cuda.fn args;                                        \
    CUstream s_ = (stream);                                           \
    uint64_t now_ = gs__gate_enter(g_, s_, (ptsz));                   \
    if (__builtin_expect(now_ == 0, 0))                               \
      return CUDA_ERROR_NOT_PERMITTED;                                \
    CUresult rc_ = gs__cuda.fn args;                                  \
    if (rc_ == CUDA_SUCCESS)                                          \
      gs__gate_leave(g_, s_, (ptsz), now_);                           \
    return rc_;                                                       \
  }

#if defined(__x86_64__)
/* A naked function reads its parameters only in its assembly. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
/* The hook itself: with the thread's cached gate open (gs__gate_open), a jump to the driver
 * with the caller's registers and stack untouched; else a jump to fn_gated. Written out
 * because GCC copies a call's stack arguments through registers before a tail call, which
 * would double what the check costs. */
#define GS_GATED_FAST(fn, params, args)                                 \
  __attribute__((naked)) GS_HOOK CUresult fn params                     \
  {                                                                     \
    __asm__("endbr64\n\t"                                               \
            "movq gs__gate_tls@gottpoff(%%rip), %%rax\n\t"              \
            "movq %%fs:(%%rax), %%rax\n\t"                              \
            "cmpb $0, %c[open](%%rax)\n\t"                              \
            "je 1f\n\t"                                                 \
            "movq %c[gatingp](%%rax), %%r10\n\t"                        \
            "movl (%%r10), %%r10d\n\t"                                  \
            "cmpl %c[seen_gating](%%rax), %%r10d\n\t"                   \
            "jne 1f\n\t"                                                \
            "movq %c[limgenp](%%rax), %%r10\n\t"                        \
            "movq (%%r10), %%r10\n\t"                                   \
            "cmpq %c[seen_limgen](%%rax), %%r10\n\t"                    \
            "jne 1f\n\t"                                                \
            "movq gs__cuda+%c[real](%%rip), %%r11\n\t"                  \
            "testq %%r11, %%r11\n\t"                                    \
            "jz 1f\n\t"                                                 \
            "jmp *%%r11\n"                                              \
            "1:\n\t"                                                    \
            "jmp " #fn "_gated"                                         \
            :                                                           \
            : [open] "i"(offsetof(struct gs_gate, open)),               \
              [gatingp] "i"(offsetof(struct gs_gate, gatingp)),         \
              [seen_gating] "i"(offsetof(struct gs_gate, seen_gating)), \
              [limgenp] "i"(offsetof(struct gs_gate, limgenp)),         \
              [seen_limgen] "i"(offsetof(struct gs_gate, seen_limgen)), \
              [real] "i"(offsetof(struct gs_cuda_real, fn)));           \
  }
#else
#define GS_GATED_FAST(fn, params, args)                                  \
  GS_HOOK CUresult fn params                                             \
  {                                                                      \
    if (__builtin_expect(gs__gate_open(gs__gate_tls), 1) && gs__cuda.fn) \
      return gs__cuda.fn args;                                           \
    return fn##_gated args;                                              \
  }
#endif

/* Defines the hook fn, with parameters params, passing args on: a launch on stream `stream`
 * (an expression of the parameters). */
#define GS_GATED_HOOK(fn, params, args, stream, ptsz) \
  GS_GATED_SLOW(fn, params, args, stream, ptsz)       \
  GS_GATED_FAST(fn, params, args)

/* Runs a synchronize call, telling the gate before and after. */
#define GS_SYNC(fn, ...)                                        \
  do {                                                          \
    GS_RESUMED_OR_RETURN();                                     \
    GS_REAL_OR_FAIL(fn);                                        \
    struct gs_gate *g_ = gs__gate_tls;                          \
    g_ = gs__gate_open(g_) ? NULL : gs__gate_closed(g_);        \
    if (g_)                                                     \
      gs__gate_sync_begin(g_);                                  \
    CUresult rc_ = gs__cuda.fn(__VA_ARGS__);                    \
    if (g_)                                                     \
      gs__gate_sync_end(g_);                                    \
    if (rc_ == CUDA_SUCCESS)                                    \
      gs__pool_settle(); /* pools give memory back at a sync */ \
    return rc_;                                                 \
  } while (0)

#define LAUNCH_PARAMS                                                                \
  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra)
#define LAUNCH_ARGS (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
GS_GATED_HOOK(cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_ARGS, s, false)
GS_GATED_HOOK(cuLaunchKernel_ptsz, LAUNCH_PARAMS, LAUNCH_ARGS, s, true)

/* A NULL config is the driver's to refuse; the gate has no stream to measure on then. */
#define EX_PARAMS (const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
#define EX_ARGS (config, f, params, extra)
GS_GATED_HOOK(cuLaunchKernelEx, EX_PARAMS, EX_ARGS, config ? config->hStream : NULL, false)
GS_GATED_HOOK(cuLaunchKernelEx_ptsz, EX_PARAMS, EX_ARGS, config ? config->hStream : NULL, true)

#define COOP_PARAMS                                                                  \
  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params)
#define COOP_ARGS (f, gx, gy, gz, bx, by, bz, shmem, s, params)
GS_GATED_HOOK(cuLaunchCooperativeKernel, COOP_PARAMS, COOP_ARGS, s, false)
GS_GATED_HOOK(cuLaunchCooperativeKernel_ptsz, COOP_PARAMS, COOP_ARGS, s, true)

GS_GATED_HOOK(cuGraphLaunch, (CUgraphExec exec, CUstream s), (exec, s), s, false)
GS_GATED_HOOK(cuGraphLaunch_ptsz, (CUgraphExec exec, CUstream s), (exec, s), s, true)

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
