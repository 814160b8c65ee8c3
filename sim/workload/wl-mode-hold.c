/* Mode `hold`: allocates --bytes (in --chunk pieces if given), says so, and keeps the memory
 * until SIGTERM, SIGINT or SIGUSR1 arrives or stdin reaches end of file, whichever is first.
 * Stdin is watched only when it is a pipe, socket or terminal: /dev/null or a file would
 * read as an immediate end of file, which is not what a caller there means. */
#include "wl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

static bool stdin_watchable(void)
{
  struct stat st;
  if (fstat(STDIN_FILENO, &st) < 0)
    return false;
  return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || isatty(STDIN_FILENO);
}

/* Blocks until a stop signal or EOF; returns what stopped it. The signals are blocked
 * before "ready" is printed, so one sent as soon as the caller reads that line is not lost. */
static const char *wait_for_stop(int sfd)
{
  struct pollfd p[2] = { { .fd = sfd, .events = POLLIN },
                         { .fd = STDIN_FILENO, .events = POLLIN } };
  nfds_t n = stdin_watchable() ? 2 : 1;
  char buf[256];

  for (;;) {
    if (poll(p, n, -1) < 0) {
      if (errno == EINTR)
        continue;
      wl_fail("poll: %s", strerror(errno));
      return "error";
    }
    if (p[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      static char name[32];
      if (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
        const char *abbrev = sigabbrev_np((int) si.ssi_signo);
        snprintf(name, sizeof(name), "SIG%s", abbrev ? abbrev : "?");
        return name;
      }
    }
    if (n == 2 && p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));
      if (r <= 0)
        return "eof";
    }
  }
}

static int hold_signals(void)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int fd = signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0)
    wl_fail("signalfd: %s", strerror(errno));
  return fd;
}

static int hold_alloc(const struct wl_opts *o, struct wl_allocs *a)
{
  uint64_t chunk = o->chunk ? o->chunk : o->bytes;

  for (uint64_t left = o->bytes; left > 0;) {
    uint64_t n = left < chunk ? left : chunk;
    CUresult rc = wl_allocs_add(a, n);
    if (rc != CUDA_SUCCESS)
      return wl_fail("alloc %s %llu bytes: %s", o->alloc->name, (unsigned long long) n,
                     wl_error_name(rc));
    left -= n;
  }
  return 0;
}

int wl_mode_hold(const struct wl_opts *o)
{
  struct wl_allocs a = { .ops = o->alloc };
  int sfd = hold_signals();

  if (sfd < 0 || wl_gpu_open(o->device, false) < 0)
    return -1;
  int rc = hold_alloc(o, &a);
  if (rc == 0) {
    printf("{\"mode\":\"hold\",\"alloc\":\"%s\",\"requested_bytes\":%llu,\"allocated_bytes\":%llu,"
           "\"allocations\":%llu,\"pid\":%d,\"ready\":true",
           o->alloc->name, (unsigned long long) o->bytes, (unsigned long long) a.bytes,
           (unsigned long long) a.n, (int) getpid());
    wl_line_end();
    const char *why = wait_for_stop(sfd);
    printf("{\"mode\":\"hold\",\"released_bytes\":%llu,\"stopped_by\":\"%s\"",
           (unsigned long long) a.bytes, why);
    wl_line_end();
  }
  CUresult freed = wl_allocs_clear(&a);
  wl_gpu_close();
  close(sfd);
  if (rc == 0 && freed != CUDA_SUCCESS)
    return wl_cuda_fail("free", freed);
  return rc;
}
