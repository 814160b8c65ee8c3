/* The daemon's hold on its state dir: one daemon per state dir, by an flock on
 * `<state dir>/daemon.lock` taken before anything is adopted, with the holder's pid written in
 * it so that a second daemon can name the first. The lock lives as long as the daemon (the fd
 * is inherited across the detaching fork and closed at exit). */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <gpuslice/xalloc.h>

#define STATE_LOCK_NAME "daemon.lock"

/* The pid the holder wrote, or 0 when it cannot be read. */
static long holder_pid(int fd)
{
  char buf[32] = { 0 };
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
  return pid > 0 ? pid : 0;
}

static void write_pid(int fd)
{
  char buf[32];
  int n = snprintf(buf, sizeof(buf), "%ld\n", (long) getpid());
  if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t) n, 0) != n)
    GS_LOG(GS_LOG_WARN, "write the pid into the state dir's lock: %s", strerror(errno));
}

int state_dir_lock(const char *dir, int *fd_out, gs_error_t *err)
{
  _cleanup_free_ char *path = NULL;
  xasprintf(&path, "%s/%s", dir, STATE_LOCK_NAME);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return gs_make_error(err, errno, "state dir '%s': open '%s': %s", dir, path, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    int e = errno;
    long pid = e == EWOULDBLOCK ? holder_pid(fd) : 0;
    close(fd);
    if (e != EWOULDBLOCK)
      return gs_make_error(err, e, "state dir '%s': lock '%s': %s", dir, path, strerror(e));
    if (pid)
      return gs_make_error(err, 0, "state dir '%s' is in use by another daemon (pid %ld)", dir, pid);
    return gs_make_error(err, 0, "state dir '%s' is in use by another daemon", dir);
  }
  write_pid(fd);
  *fd_out = fd;
  return 0;
}

void state_dir_unlock(int *fd)
{
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}
