/* Mode `busy`: keeps the device busy at a duty cycle for --seconds. Below a duty of 1 it
 * launches one step (a kernel, or a graph of kernels), waits for it, then sleeps until the
 * event-measured kernel time is --duty of the wall time so far. At a duty of 1 it keeps a
 * few steps queued instead, so the device never waits on the host. Each step is bracketed
 * by its own pair of events.
 *
 * kernel_seconds is what the events measured; like a real GPU's events, they include time a
 * kernel waited behind other processes' kernels, so under contention it exceeds the work
 * done. requested_kernel_seconds is the work done: kernels completed x --kernel-us. The
 * pacing below a duty of 1 follows the events, i.e. the device time the process occupied.
 *
 * For share measurements across processes, --start-at-ns makes every process start and stop
 * at the same CLOCK_MONOTONIC instants, and the window options (or --start-at-ns alone)
 * report the device time of this process's kernels inside a common window, independent of
 * when each process started or ended. --latency reports how long each step took from the
 * launch call to completion, which includes any time the launch was held by gpuslice's
 * gate and any wait behind other processes' kernels. Both need each step's absolute end:
 * a reference event recorded on the idle stream at the start gives it, as the reference's
 * host time plus the elapsed time between the two events. */
#include "wl.h"

#include <stdio.h>
#include <stdlib.h>

#define BUSY_QUEUE 4          /* steps in flight at duty 1 */
#define BUSY_GRAPH_KERNELS 4  /* kernels per graph with --launch graph */
#define BUSY_REF_TRIES 20     /* records of the reference event, at most */
#define BUSY_REF_MAX_NS 20000 /* a reference record that took longer is done again */

/* Latencies of the steps, in µs, kept for the percentiles. */
struct busy_lat {
  double *us;
  size_t n, cap;
};

struct busy_run {
  struct wl_work work;
  struct wl_timer t[BUSY_QUEUE];
  uint64_t launched_ns[BUSY_QUEUE]; /* host time just before each step's launch */
  unsigned depth, head, inflight;
  uint64_t kernels;
  double kernel_ms;
  bool timed;   /* absolute end times wanted: window or latency */
  bool latency; /* keep each step's latency */
  CUevent ref;  /* recorded on the idle stream at ref_ns */
  uint64_t ref_ns, win_start, win_end, win_ns;
  struct busy_lat lat;
};

static int lat_add(struct busy_lat *l, double us)
{
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 4096;
    double *p = realloc(l->us, cap * sizeof(*p));
    if (!p)
      return wl_fail("out of memory for %zu latencies", cap);
    l->us = p;
    l->cap = cap;
  }
  l->us[l->n++] = us;
  return 0;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The nearest-rank percentile q (0..1] of the sorted latencies. */
static double lat_pct(const struct busy_lat *l, double q)
{
  size_t k = (size_t) (q * (double) l->n + 0.999999);
  return l->us[(k ? k : 1) - 1];
}

/* Device time of a step that ended at `end` and ran `ns`, inside the window. Kernels of a
 * graph step are taken as back to back: off by at most one graph at each edge of the window. */
static uint64_t window_overlap(const struct busy_run *b, uint64_t end, uint64_t ns)
{
  uint64_t start = end > ns ? end - ns : 0;
  uint64_t lo = start > b->win_start ? start : b->win_start;
  uint64_t hi = end < b->win_end ? end : b->win_end;
  return hi > lo ? hi - lo : 0;
}

/* Charges the completed step at slot i to the window and the latencies. */
static int busy_account(struct busy_run *b, unsigned i)
{
  float ms = 0;
  WL_TRY(wl_cu.cuEventElapsedTime_v2(&ms, b->ref, b->t[i].end),
         "cuEventElapsedTime_v2 (reference)");
  uint64_t end = b->ref_ns + (uint64_t) ((double) ms * 1e6 + 0.5);
  b->win_ns += window_overlap(b, end, b->work.per_step * b->work.us * 1000);
  if (end < b->launched_ns[i])
    end = b->launched_ns[i];
  return b->latency ? lat_add(&b->lat, (double) (end - b->launched_ns[i]) / 1e3) : 0;
}

/* Waits for the oldest step in flight and adds its time. */
static int busy_complete(struct busy_run *b)
{
  double ms = 0;
  if (wl_timer_ms(&b->t[b->head], &ms) < 0)
    return -1;
  if (b->timed && busy_account(b, b->head) < 0)
    return -1;
  b->kernel_ms += ms;
  b->kernels += b->work.per_step;
  b->head = (b->head + 1) % b->depth;
  b->inflight--;
  return 0;
}

static int busy_launch(struct busy_run *b)
{
  unsigned i = (b->head + b->inflight) % b->depth;
  b->launched_ns[i] = wl_now_ns();
  WL_TRY(wl_cu.cuEventRecord(b->t[i].start, wl_gpu.stream), "cuEventRecord");
  WL_TRY(wl_work_launch(&b->work), "launch sim_busy");
  WL_TRY(wl_cu.cuEventRecord(b->t[i].end, wl_gpu.stream), "cuEventRecord");
  b->inflight++;
  return 0;
}

/* --every: one step at t0, t0 + E, t0 + 2E... until `until`, each waited for. */
static int busy_every(struct busy_run *b, const struct wl_opts *o, uint64_t t0, uint64_t until)
{
  uint64_t period = (uint64_t) (o->every * 1e9);
  for (uint64_t next = t0; next < until; next += period) {
    wl_sleep_until_ns(next);
    if (busy_launch(b) < 0 || busy_complete(b) < 0)
      return -1;
  }
  wl_sleep_until_ns(until);
  return 0;
}

static int busy_loop(struct busy_run *b, const struct wl_opts *o, uint64_t t0, uint64_t until)
{
  if (o->have_every)
    return busy_every(b, o, t0, until);
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

/* Records the reference event on the idle stream; its host time is taken as the middle of
 * the call, which is where the driver stamps it. A call that took long (the process was
 * preempted inside it) would leave that uncertain by as much, so it is recorded again. */
static int busy_reference(struct busy_run *b)
{
  WL_TRY(wl_cu.cuEventCreate(&b->ref, CU_EVENT_DEFAULT), "cuEventCreate");
  for (int tries = 0; tries < BUSY_REF_TRIES; tries++) {
    uint64_t before = wl_now_ns();
    WL_TRY(wl_cu.cuEventRecord(b->ref, wl_gpu.stream), "cuEventRecord (reference)");
    uint64_t took = wl_now_ns() - before;
    b->ref_ns = before + took / 2;
    if (took <= BUSY_REF_MAX_NS)
      break;
  }
  return 0;
}

static void busy_print_extra(const struct busy_run *b, const struct wl_opts *o)
{
  if (o->have_start_at || o->have_window_start || o->have_window_end)
    printf(",\"window_start_ns\":%llu,\"window_end_ns\":%llu,\"window_kernel_seconds\":%.6f",
           (unsigned long long) b->win_start, (unsigned long long) b->win_end,
           (double) b->win_ns / 1e9);
  if (!o->latency)
    return;
  qsort(b->lat.us, b->lat.n, sizeof(*b->lat.us), cmp_double);
  if (b->lat.n)
    printf(",\"latency_steps\":%zu,\"latency_p50_us\":%.1f,\"latency_p99_us\":%.1f,\"latency_max_"
           "us\":%.1f",
           b->lat.n, lat_pct(&b->lat, 0.5), lat_pct(&b->lat, 0.99), b->lat.us[b->lat.n - 1]);
  else
    printf(",\"latency_steps\":0");
}

static void busy_print(const struct busy_run *b, const struct wl_opts *o, uint64_t t0, uint64_t t1)
{
  printf(
    "{\"mode\":\"busy\",\"launch\":\"%s\",\"duty\":%g,\"kernels\":%llu,\"kernel_seconds\":%.6f,"
    "\"wall_seconds\":%.6f,\"requested_kernel_seconds\":%.6f,\"start_ns\":%llu,\"end_ns\":%llu",
    wl_launch_name(o->launch), o->duty, (unsigned long long) b->kernels, b->kernel_ms / 1e3,
    (double) (t1 - t0) / 1e9, (double) b->kernels * (double) o->kernel_us / 1e6,
    (unsigned long long) t0, (unsigned long long) t1);
  busy_print_extra(b, o);
  wl_line_end();
}

static int busy_run(struct busy_run *b, const struct wl_opts *o)
{
  b->depth = o->duty < 1 || o->have_every ? 1 : BUSY_QUEUE;
  for (unsigned i = 0; i < b->depth; i++)
    if (wl_timer_init(&b->t[i]) < 0)
      return -1;
  if (wl_work_init(&b->work, o->launch, o->kernel_us, BUSY_GRAPH_KERNELS) < 0)
    return -1;
  if (o->have_start_at)
    wl_sleep_until_ns(o->start_at_ns);
  uint64_t t0 = wl_now_ns(), base = o->have_start_at ? o->start_at_ns : t0;
  uint64_t until = base + (uint64_t) (o->seconds * 1e9);
  b->win_start = o->have_window_start ? o->window_start_ns : base;
  b->win_end = o->have_window_end ? o->window_end_ns : until;
  b->timed = o->latency || o->have_start_at || o->have_window_start || o->have_window_end;
  b->latency = o->latency;
  if (b->timed && busy_reference(b) < 0)
    return -1;
  if (busy_loop(b, o, t0, until) < 0)
    return -1;
  busy_print(b, o, t0, wl_now_ns());
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
  if (b.ref)
    wl_cu.cuEventDestroy_v2(b.ref);
  free(b.lat.us);
  wl_allocs_clear(&held);
  wl_gpu_close();
  return rc;
}
