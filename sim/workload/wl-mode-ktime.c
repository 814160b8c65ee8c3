/* Mode `kernel-time`: --count kernels of --us microseconds, one at a time, each bracketed by
 * events and synchronized. It reports each kernel's event time and its host wall time, from
 * just before the launch to the return of cuStreamSynchronize. */
#include "wl.h"

#include <stdio.h>
#include <stdlib.h>

static int ktime_one(const struct wl_work *w, const struct wl_timer *t, double *ev_us,
                     double *wall_us)
{
  double ms = 0;

  WL_TRY(wl_cu.cuEventRecord(t->start, wl_gpu.stream), "cuEventRecord");
  uint64_t t0 = wl_now_ns();
  WL_TRY(wl_work_launch(w), "launch sim_busy");
  WL_TRY(wl_cu.cuEventRecord(t->end, wl_gpu.stream), "cuEventRecord");
  WL_TRY(wl_cu.cuStreamSynchronize(wl_gpu.stream), "cuStreamSynchronize");
  *wall_us = (double) (wl_now_ns() - t0) / 1e3;
  if (wl_timer_ms(t, &ms) < 0)
    return -1;
  *ev_us = ms * 1e3;
  return 0;
}

static void print_list(const char *key, const double *v, uint64_t n)
{
  printf(",\"%s\":[", key);
  for (uint64_t i = 0; i < n; i++)
    printf("%s%.3f", i ? "," : "", v[i]);
  putchar(']');
}

static int ktime_run(const struct wl_opts *o, double *ev, double *wall)
{
  struct wl_work w = { 0 };
  struct wl_timer t = { 0 };
  int rc = wl_timer_init(&t);

  if (rc == 0)
    rc = wl_work_init(&w, o->launch, o->us, 1);
  for (uint64_t i = 0; rc == 0 && i < o->count; i++)
    rc = ktime_one(&w, &t, &ev[i], &wall[i]);
  wl_work_fini(&w);
  wl_timer_fini(&t);
  return rc;
}

int wl_mode_kernel_time(const struct wl_opts *o)
{
  double *ev = calloc(o->count, sizeof(double));
  double *wall = calloc(o->count, sizeof(double));
  int rc = ev && wall ? 0 : wl_fail("out of host memory");

  if (rc == 0)
    rc = wl_gpu_open(o->device, true);
  if (rc == 0)
    rc = ktime_run(o, ev, wall);
  if (rc == 0) {
    printf("{\"mode\":\"kernel-time\",\"launch\":\"%s\",\"requested_us\":%llu",
           wl_launch_name(o->launch), (unsigned long long) o->us);
    print_list("event_us", ev, o->count);
    print_list("wall_us", wall, o->count);
    wl_line_end();
  }
  wl_gpu_close();
  free(ev);
  free(wall);
  return rc;
}
