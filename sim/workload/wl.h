/* Internal interfaces of gpusim-workload: options, the one device it works on, kernel
 * launches, output, and the modes. Each mode lives in wl-mode-<name>.c, each allocation
 * path in alloc-<kind>.c (see wl-alloc.h), the driver table in wl-driver.{h,c}. */
#ifndef WL_H
#define WL_H

#include <stdbool.h>
#include <stdint.h>

#include "wl-alloc.h"
#include "wl-driver.h"

enum wl_launch { WL_LAUNCH_PLAIN, WL_LAUNCH_EX, WL_LAUNCH_COOP, WL_LAUNCH_GRAPH };

struct wl_opts {
  const char *mode;
  enum wl_path path;
  int device;
  const struct wl_alloc_ops *alloc;
  enum wl_launch launch;
  uint64_t chunk, bytes, hold_bytes, max_bytes; /* 0 when not given */
  double seconds, duty;
  double every; /* busy: seconds between steps, on a fixed schedule (have_every) */
  uint64_t kernel_us, us, count, ops, seed;
  uint64_t rounds;           /* alloc-until-oom: fill-then-free cycles */
  uint64_t procaddr_version; /* the cudaVersion the procaddr paths ask for */
  /* busy: when to start (CLOCK_MONOTONIC ns), and the window whose device time it reports */
  uint64_t start_at_ns, window_start_ns, window_end_ns;
  bool latency; /* busy: report per-step launch-to-completion latency */
  bool have_seconds, have_us, have_rounds, have_procaddr_version;
  bool have_start_at, have_window_start, have_window_end, have_every;
};

/* The most fill-then-free cycles alloc-until-oom runs in one process. */
#define WL_ROUNDS_MAX 64

/* Parses argv into o. Returns 0, 1 when --help was printed, or -1 after printing one line. */
int wl_options_parse(int argc, char **argv, struct wl_opts *o);
/* Bytes with an optional K/M/G/T suffix, optionally followed by "i" and/or "B"; all binary. */
int wl_parse_size(const char *s, uint64_t *out);

/* The device, context, stream and kernels of this process: one device per run. */
struct wl_gpu {
  CUdevice dev;
  int ordinal;
  CUcontext ctx;
  CUstream stream;
  CUmodule mod;
  CUfunction busy;
};
extern struct wl_gpu wl_gpu;
extern const char wl_kernels_ptx[];

/* cuInit, then a context and a stream on device `ordinal`, and the kernels if asked. */
int wl_gpu_open(int ordinal, bool kernels);
void wl_gpu_close(void);

/* One unit of launched work: one sim_busy kernel, or one graph of `per_step` of them. */
struct wl_work {
  enum wl_launch how;
  uint64_t us;
  unsigned per_step;
  CUgraph graph;
  CUgraphExec exec;
};
/* Prepares the work (captures the graph) and runs one untimed warm-up kernel, so that lazy
 * module loading on a real driver does not land in the first measurement. */
int wl_work_init(struct wl_work *w, enum wl_launch how, uint64_t us, unsigned graph_kernels);
CUresult wl_work_launch(const struct wl_work *w);
void wl_work_fini(struct wl_work *w);
const char *wl_launch_name(enum wl_launch how);

/* A pair of events around one unit of work. */
struct wl_timer {
  CUevent start, end;
};
int wl_timer_init(struct wl_timer *t);
void wl_timer_fini(struct wl_timer *t);
/* Milliseconds between the two events, once `end` has completed. */
int wl_timer_ms(const struct wl_timer *t, double *ms);

/* Prints "gpusim-workload: <what>: <CUDA error name>" and returns -1. */
int wl_cuda_fail(const char *what, CUresult rc);
/* Prints "gpusim-workload: <message>" and returns -1. */
int wl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *wl_error_name(CUresult rc);
/* Writes s as a JSON string literal. */
void wl_json_string(const char *s);
/* Ends the current JSON line and flushes, so that a reader sees each line as it happens. */
void wl_line_end(void);

uint64_t wl_now_ns(void);
void wl_sleep_until_ns(uint64_t t);

#define WL_TRY(call, what)                 \
  do {                                     \
    CUresult wl_rc_ = (call);              \
    if (wl_rc_ != CUDA_SUCCESS)            \
      return wl_cuda_fail((what), wl_rc_); \
  } while (0)

/* Modes: each returns 0 or -1 (after printing why). */
int wl_mode_info(const struct wl_opts *o);
int wl_mode_alloc_until_oom(const struct wl_opts *o);
int wl_mode_hold(const struct wl_opts *o);
int wl_mode_busy(const struct wl_opts *o);
int wl_mode_kernel_time(const struct wl_opts *o);
int wl_mode_churn(const struct wl_opts *o);
int wl_mode_procaddr_check(const struct wl_opts *o);

#endif
