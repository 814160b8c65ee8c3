/* Mode `busy`: keeps the device busy at a duty cycle for --seconds. Below a duty of 1 it
 * launches one step (a kernel, or a graph of kernels), waits for it, then sleeps until the
 * event-measured kernel time is --duty of the wall time so far. At a duty of 1 it keeps a
 * few steps queued instead, so the device never waits on the host. Each step is bracketed
 * by its own pair of events.
 *
 * kernel_seconds is what the events measured; like a real GPU's events, they include time a
 * kernel waited behind other processes' kernels, so under contention it exceeds the work
 * done. requested_kernel_seconds is the work done: kernels completed x --kernel-us. The
 * pacing below a duty of 1 follows the events, i.e. the device time the process occupied. */
#include "wl.h"

#include <stdio.h>

#define BUSY_QUEUE 4            /* steps in flight at duty 1 */
#define BUSY_GRAPH_KERNELS 4    /* kernels per graph with --launch graph */

struct busy_run {
  struct wl_work work;
  struct wl_timer t[BUSY_QUEUE];
  unsigned depth, head, inflight;
  uint64_t kernels;
  double kernel_ms;
};

/* Waits for the oldest step in flight and adds its time. */
static int busy_complete(struct busy_run *b)
{
  double ms = 0;
  if (wl_timer_ms(&b->t[b->head], &ms) < 0)
    return -1;
  b->kernel_ms += ms;
  b->kernels += b->work.per_step;
  b->head = (b->head + 1) % b->depth;
  b->inflight--;
  return 0;
}

static int busy_launch(struct busy_run *b)
{
  const struct wl_timer *t = &b->t[(b->head + b->inflight) % b->depth];
  WL_TRY(wl_cu.cuEventRecord(t->start, wl_gpu.stream), "cuEventRecord");
  WL_TRY(wl_work_launch(&b->work), "launch sim_busy");
  WL_TRY(wl_cu.cuEventRecord(t->end, wl_gpu.stream), "cuEventRecord");
  b->inflight++;
  return 0;
}

static int busy_loop(struct busy_run *b, const struct wl_opts *o, uint64_t t0)
{
  uint64_t until = t0 + (uint64_t) (o->seconds * 1e9);

  while (wl_now_ns() < until) {
    if (b->inflight == b->depth && busy_complete(b) < 0)
      return -1;
    if (busy_launch(b) < 0)
      return -1;
    if (o->duty < 1) {
      if (busy_complete(b) < 0)
        return -1;
      wl_sleep_until_ns(t0 + (uint64_t) (b->kernel_ms * 1e6 / o->duty));
    }
  }
  while (b->inflight > 0)
    if (busy_complete(b) < 0)
      return -1;
  return 0;
}

static int busy_run(struct busy_run *b, const struct wl_opts *o)
{
  b->depth = o->duty < 1 ? 1 : BUSY_QUEUE;
  for (unsigned i = 0; i < b->depth; i++)
    if (wl_timer_init(&b->t[i]) < 0)
      return -1;
  if (wl_work_init(&b->work, o->launch, o->kernel_us, BUSY_GRAPH_KERNELS) < 0)
    return -1;
  uint64_t t0 = wl_now_ns();
  if (busy_loop(b, o, t0) < 0)
    return -1;
  uint64_t t1 = wl_now_ns();
  printf("{\"mode\":\"busy\",\"launch\":\"%s\",\"duty\":%g,\"kernels\":%llu,\"kernel_seconds\":%.6f,"
         "\"wall_seconds\":%.6f,\"requested_kernel_seconds\":%.6f,\"start_ns\":%llu,\"end_ns\":%llu",
         wl_launch_name(o->launch), o->duty, (unsigned long long) b->kernels, b->kernel_ms / 1e3,
         (double) (t1 - t0) / 1e9, (double) b->kernels * (double) o->kernel_us / 1e6,
         (unsigned long long) t0, (unsigned long long) t1);
  wl_line_end();
  return 0;
}

int wl_mode_busy(const struct wl_opts *o)
{
  struct busy_run b = { 0 };
  struct wl_allocs held = { .ops = o->alloc };

  if (wl_gpu_open(o->device, true) < 0)
    return -1;
  CUresult arc = o->hold_bytes ? wl_allocs_add(&held, o->hold_bytes) : CUDA_SUCCESS;
  int rc = arc == CUDA_SUCCESS ? busy_run(&b, o) : wl_cuda_fail("--hold-bytes alloc", arc);
  wl_work_fini(&b.work);
  for (unsigned i = 0; i < BUSY_QUEUE; i++)
    wl_timer_fini(&b.t[i]);
  wl_allocs_clear(&held);
  wl_gpu_close();
  return rc;
}
