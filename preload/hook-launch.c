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
 * or looks again, and a closed gate takes a turn. A launch the gate refuses (it has no board or
 * board row for the tenant) is CUDA_ERROR_NOT_PERMITTED, never ungated. A hidden global, not
 * static, so that its name survives link-time optimization: the fast path below jumps to it by
 * name. */
#define GS_GATED_SLOW(fn, params, args, stream, ptsz)        \
  CUresult fn##_gated params;                                \
  __attribute__((used, noinline)) CUresult fn##_gated params \
  {                                                          \
    GS_RESUMED_OR_RETURN();                                  \
    GS_REAL_OR_FAIL(fn);                                     \
    struct gs_gate *g_ = gs__gate_closed(gs__gate_tls);      \
    if (!g_)                                                 \
      return gs__cuda.fn args;                               \
    CUstream s_ = (stream);                                  \
    uint64_t now_ = gs__gate_enter(g_, s_, (ptsz));          \
    if (__builtin_expect(now_ == 0, 0))                      \
      return CUDA_ERROR_NOT_PERMITTED;                       \
    CUresult rc_ = gs__cuda.fn args;                         \
    if (rc_ == CUDA_SUCCESS)                                 \
      gs__gate_leave(g_, s_, (ptsz), now_);                  \
    return rc_;                                              \
  }

#if defined(__x86_64__)
/* A naked function reads its parameters only in its assembly. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
/* The hook itself, written out because GCC copies a call's stack arguments through registers
 * before a tail call, which would double what the checks cost. With the caller's registers and
 * stack untouched, it jumps to the driver when the thread's cached gate is open
 * (gs__gate_open), or closed and passed (gs__gate_pass, transcribed: the tenant runs, the
 * clock is the TSC's, and the launch is counted before the jump); else to fn_gated. Free to
 * use: rax, r10, r11 (no argument is passed in them); rdx, which rdtsc and mul overwrite, is
 * kept in r11 meanwhile. stream_asm leaves the launch's stream in r11. */
#define GS_GATED_FAST(fn, params, args, stream, stream_asm, ptsz)                                  \
  __attribute__((naked)) GS_HOOK CUresult fn params                                                \
  {                                                                                                \
    __asm__(                                                                                       \
      "endbr64\n\t"                                                                                \
      "movq gs__gate_tls@gottpoff(%%rip), %%rax\n\t"                                               \
      "movq %%fs:(%%rax), %%rax\n\t"                                                               \
      "movq %c[gatingp](%%rax), %%r10\n\t"                                                         \
      "movl (%%r10), %%r10d\n\t"                                                                   \
      "cmpl %c[seen_gating](%%rax), %%r10d\n\t"                                                    \
      "jne 1f\n\t"                                                                                 \
      "movq %c[limgenp](%%rax), %%r10\n\t"                                                         \
      "movq (%%r10), %%r10\n\t"                                                                    \
      "cmpq %c[seen_limgen](%%rax), %%r10\n\t"                                                     \
      "jne 1f\n\t"                                                                                 \
      "movq gs__cuda+%c[real](%%rip), %%r11\n\t"                                                   \
      "testq %%r11, %%r11\n\t"                                                                     \
      "jz 1f\n\t"                                                                                  \
      "cmpb $0, %c[open](%%rax)\n\t"                                                               \
      "je 3f\n\t"                                                                                  \
      "jmp *%%r11\n"                                                                               \
      "3:\n\t" /* closed: the tenant runs, holds a turn, the clock is known */                     \
      "movq %%rax, %%r10\n\t"                                                                      \
      "movq gs__run_state(%%rip), %%rax\n\t"                                                       \
      "cmpl $0, (%%rax)\n\t"                                                                       \
      "jne 1f\n\t"                                                                                 \
      "cmpq $0, %c[turn](%%r10)\n\t"                                                               \
      "je 1f\n\t"                                                                                  \
      "cmpq $0, gs__gate_clock+%c[mult](%%rip)\n\t"                                                \
      "je 1f\n\t"                                                                                  \
      "movq %%rdx, %%r11\n\t" /* now, as gs__gate_now */                                           \
      "rdtsc\n\t"                                                                                  \
      "shlq $32, %%rdx\n\t"                                                                        \
      "orq %%rdx, %%rax\n\t"                                                                       \
      "subq gs__gate_clock+%c[tsc0](%%rip), %%rax\n\t"                                             \
      "mulq gs__gate_clock+%c[mult](%%rip)\n\t"                                                    \
      "shrdq $32, %%rdx, %%rax\n\t"                                                                \
      "addq gs__gate_clock+%c[ns0](%%rip), %%rax\n\t"                                              \
      "movq %%r11, %%rdx\n\t" /* the turn: unexpired, still the board's */                         \
      "cmpq %c[deadline](%%r10), %%rax\n\t"                                                        \
      "jae 1f\n\t"                                                                                 \
      "movq %c[board](%%r10), %%r11\n\t"                                                           \
      "movq %c[bturn](%%r11), %%r11\n\t"                                                           \
      "cmpq %c[turn](%%r10), %%r11\n\t"                                                            \
      "jne 1f\n\t" /* no gap, no marker or share due */                                            \
      "movq %c[last_launch](%%r10), %%r11\n\t"                                                     \
      "addq %[gap], %%r11\n\t"                                                                     \
      "cmpq %%r11, %%rax\n\t"                                                                      \
      "jae 1f\n\t"                                                                                 \
      "movq %c[last_mark](%%r10), %%r11\n\t"                                                       \
      "addq %[mark], %%r11\n\t"                                                                    \
      "cmpq %%r11, %%rax\n\t"                                                                      \
      "jae 1f\n\t"                                                                                 \
      "movq %c[shared](%%r10), %%r11\n\t"                                                          \
      "addq %[share], %%r11\n\t"                                                                   \
      "cmpq %%r11, %%rax\n\t"                                                                      \
      "jae 1f\n\t"                                                                                 \
      "movl %c[since](%%r10), %%r11d\n\t"                                                          \
      "addl $1, %%r11d\n\t"                                                                        \
      "cmpl %c[every](%%r10), %%r11d\n\t"                                                          \
      "jae 1f\n\t" /* passed: count the launch, as gs__gate_leave would */                         \
      "movl %%r11d, %c[since](%%r10)\n\t"                                                          \
      "movq %%rax, %c[last_launch](%%r10)\n\t"                                                     \
      "movb %[ptsz_], %c[last_ptsz](%%r10)\n\t" stream_asm                                         \
      "movq %%r11, %c[last_stream](%%r10)\n\t"                                                     \
      "jmp *gs__cuda+%c[real](%%rip)\n"                                                            \
      "1:\n\t"                                                                                     \
      "jmp " #fn "_gated"                                                                          \
      :                                                                                            \
      : [open] "i"(offsetof(struct gs_gate, open)),                                                \
        [gatingp] "i"(offsetof(struct gs_gate, gatingp)),                                          \
        [seen_gating] "i"(offsetof(struct gs_gate, seen_gating)),                                  \
        [limgenp] "i"(offsetof(struct gs_gate, limgenp)),                                          \
        [seen_limgen] "i"(offsetof(struct gs_gate, seen_limgen)),                                  \
        [real] "i"(offsetof(struct gs_cuda_real, fn)), [turn] "i"(offsetof(struct gs_gate, turn)), \
        [deadline] "i"(offsetof(struct gs_gate, deadline_ns)),                                     \
        [board] "i"(offsetof(struct gs_gate, b)), [bturn] "i"(offsetof(struct gs_board, turn)),    \
        [last_launch] "i"(offsetof(struct gs_gate, last_launch_ns)),                               \
        [last_mark] "i"(offsetof(struct gs_gate, last_mark_ns)),                                   \
        [shared] "i"(offsetof(struct gs_gate, shared_ns)),                                         \
        [since] "i"(offsetof(struct gs_gate, since_mark)),                                         \
        [every] "i"(offsetof(struct gs_gate, mark_every)),                                         \
        [last_ptsz] "i"(offsetof(struct gs_gate, last_ptsz)),                                      \
        [last_stream] "i"(offsetof(struct gs_gate, last_stream)),                                  \
        [tsc0] "i"(offsetof(struct gs_gate_clock, tsc0)),                                          \
        [ns0] "i"(offsetof(struct gs_gate_clock, ns0)),                                            \
        [mult] "i"(offsetof(struct gs_gate_clock, mult)), [gap] "i"(GS_GATE_GAP_NS),               \
        [mark] "i"(GS_GATE_MARK_NS), [share] "i"(GS_GATE_SHARE_NS), [ptsz_] "i"((ptsz) ? 1 : 0),   \
        [hstream] "i"(offsetof(CUlaunchConfig, hStream)));                                         \
  }
/* Where each hook's stream is, at its entry (the ninth argument is the third on the stack). */
#define STREAM_ARG9 "movq 24(%%rsp), %%r11\n\t"
#define STREAM_CONFIG                \
  "xorl %%r11d, %%r11d\n\t"          \
  "testq %%rdi, %%rdi\n\t"           \
  "jz 2f\n\t"                        \
  "movq %c[hstream](%%rdi), %%r11\n" \
  "2:\n\t"
#define STREAM_ARG2 "movq %%rsi, %%r11\n\t"
#else
/* gs__gate_open, then gs__gate_pass; else fn_gated. */
#define GS_GATED_FAST(fn, params, args, stream, stream_asm, ptsz)                      \
  GS_HOOK CUresult fn params                                                           \
  {                                                                                    \
    if (__builtin_expect(gs__gate_open(gs__gate_tls), 1) && gs__cuda.fn)               \
      return gs__cuda.fn args;                                                         \
    if (gs__running() && gs__cuda.fn && gs__gate_pass(gs__gate_tls, (stream), (ptsz))) \
      return gs__cuda.fn args;                                                         \
    return fn##_gated args;                                                            \
  }
#define STREAM_ARG9
#define STREAM_CONFIG
#define STREAM_ARG2
#endif

/* Defines the hook fn, with parameters params, passing args on: a launch on stream `stream`
 * (an expression of the parameters; on x86-64 stream_asm loads it). */
#define GS_GATED_HOOK(fn, params, args, stream, stream_asm, ptsz) \
  GS_GATED_SLOW(fn, params, args, stream, ptsz)                   \
  GS_GATED_FAST(fn, params, args, stream, stream_asm, ptsz)

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
GS_GATED_HOOK(cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_ARGS, s, STREAM_ARG9, false)
GS_GATED_HOOK(cuLaunchKernel_ptsz, LAUNCH_PARAMS, LAUNCH_ARGS, s, STREAM_ARG9, true)

/* A NULL config is the driver's to refuse; the gate has no stream to measure on then. */
#define EX_PARAMS (const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
#define EX_ARGS (config, f, params, extra)
GS_GATED_HOOK(cuLaunchKernelEx, EX_PARAMS, EX_ARGS, config ? config->hStream : NULL, STREAM_CONFIG,
              false)
GS_GATED_HOOK(cuLaunchKernelEx_ptsz, EX_PARAMS, EX_ARGS, config ? config->hStream : NULL,
              STREAM_CONFIG, true)

#define COOP_PARAMS                                                                  \
  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params)
#define COOP_ARGS (f, gx, gy, gz, bx, by, bz, shmem, s, params)
GS_GATED_HOOK(cuLaunchCooperativeKernel, COOP_PARAMS, COOP_ARGS, s, STREAM_ARG9, false)
GS_GATED_HOOK(cuLaunchCooperativeKernel_ptsz, COOP_PARAMS, COOP_ARGS, s, STREAM_ARG9, true)

GS_GATED_HOOK(cuGraphLaunch, (CUgraphExec exec, CUstream s), (exec, s), s, STREAM_ARG2, false)
GS_GATED_HOOK(cuGraphLaunch_ptsz, (CUgraphExec exec, CUstream s), (exec, s), s, STREAM_ARG2, true)

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
