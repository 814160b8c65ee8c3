/* Internal interfaces of gs-bench-interposer: the device it works on and the timed
 * operations (bench-ops.c), and the options and output (bench-interposer.c).
 *
 * The program measures driver calls from the caller's side, so that the same binary gives
 * the baseline (the driver called directly) and the interposed figure (run under
 * `gpuslice run`, with libgpuslice.so preloaded); run-interposer.py compares the two. */
#ifndef GS_BENCH_H
#define GS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs-cuda.h"

struct bench_opts {
  unsigned rounds;       /* timed samples per operation */
  unsigned launch_batch; /* launches per sample; the stream is synchronized between samples */
  unsigned pair_batch;   /* alloc+free pairs per sample */
  size_t alloc_bytes;    /* size of every allocation, live or timed */
  size_t live[8];        /* live allocation counts to measure the pair at */
  unsigned nlive;
  unsigned ops; /* BENCH_OP_* bits: which operations to run (all by default) */
  bool paired;  /* also time the driver's own entries, in turn with the linked ones */
};

enum {
  BENCH_OP_LAUNCH = 1,
  BENCH_OP_PROCADDR = 2,
  BENCH_OP_PAIRS = 4,
  BENCH_OP_ALL = 7,
  BENCH_OP_CALIBRATE = 8
};

/* One operation's samples: each is the mean cost of one call over a batch, in ns. */
struct bench_result {
  char op[48];
  unsigned calls_per_sample;
  unsigned long long calls_total; /* every call made, warm-up included: what an instruction
                                     count of the whole run divides by */
  unsigned nsamples;
  double *ns; /* nsamples entries, owned */
  long vmas;  /* mappings in the process while the samples were taken; -1 if unknown */
};

/* Opens device 0's primary context, a stream and the sim_busy kernel. Returns 0, or -1
 * after printing one line. */
int bench_gpu_open(void);
void bench_gpu_close(void);
/* The stream and the sim_busy kernel that bench_gpu_open set up (launch-gate-bench.c). */
void bench_gpu_handles(CUstream *stream, CUfunction *busy);

struct bench_driver;

/* The timed operations. Each fills r (r->ns allocated) and returns 0, or -1 after printing
 * one line. */
int bench_launch(const struct bench_opts *o, struct bench_result *r);
int bench_launch_procaddr(const struct bench_opts *o, struct bench_result *r);
/* d: the driver's own entries, for samples paired with the linked ones (into drv); NULL for
 * the linked ones alone (drv unused). */
int bench_alloc_free(const struct bench_opts *o, size_t live, const struct bench_driver *d,
                     struct bench_result *r, struct bench_result *drv);

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

/* The driver's own entry points, past any interposer (bench-paired.c). */
struct bench_driver {
  launch_fn launch;
  CUresult (*alloc)(CUdeviceptr *, size_t);
  CUresult (*free_)(CUdeviceptr);
};
/* Looks them up in the loaded libcuda.so.1. Returns 0, or -1 after printing one line. */
int bench_driver_entries(struct bench_driver *d);
int bench_launch_paired(const struct bench_opts *o, const struct bench_driver *d,
                        struct bench_result *hook, struct bench_result *drv);

/* The machine's cost of a locked add and of a TSC read (bench-paired.c), --launch-batch per
 * sample; not part of "all". */
int bench_calibrate(const struct bench_opts *o, struct bench_result *locked,
                    struct bench_result *tsc);
/* CLOCK_MONOTONIC in ns; a result's name and sample array (bench-ops.c). */
uint64_t bench_now_ns(void);
int bench_result_init(struct bench_result *r, const char *op, unsigned calls, unsigned n);

/* Prints "gs-bench-interposer: <what>: <CUresult name> (<code>)" and returns -1. */
int bench_cu_fail(const char *what, CUresult rc);

#define BENCH_TRY(call, what)                \
  do {                                       \
    CUresult bench_rc_ = (call);             \
    if (bench_rc_ != CUDA_SUCCESS)           \
      return bench_cu_fail(what, bench_rc_); \
  } while (0)

#endif
