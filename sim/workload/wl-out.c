/* What the workload prints: one JSON object per line on stdout, one error line on stderr;
 * and the host clock it measures with. */
#include "wl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

const char *wl_error_name(CUresult rc)
{
  static char buf[32];
  const char *name = NULL;

  if (wl_cu.cuGetErrorName && wl_cu.cuGetErrorName(rc, &name) == CUDA_SUCCESS && name)
    return name;
  snprintf(buf, sizeof(buf), "CUresult %d", (int) rc);
  return buf;
}

int wl_cuda_fail(const char *what, CUresult rc)
{
  fprintf(stderr, "gpusim-workload: %s: %s\n", what, wl_error_name(rc));
  return -1;
}

int wl_fail(const char *fmt, ...)
{
  va_list ap;

  fputs("gpusim-workload: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return -1;
}

void wl_json_string(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char) *s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

void wl_line_end(void)
{
  fputs("}\n", stdout);
  fflush(stdout);
}

uint64_t wl_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

void wl_sleep_until_ns(uint64_t t)
{
  struct timespec ts = { .tv_sec = (time_t) (t / 1000000000ull),
                         .tv_nsec = (long) (t % 1000000000ull) };
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}
