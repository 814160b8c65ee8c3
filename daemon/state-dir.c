/* The daemon's hold on its state dir: one daemon per state dir, by an flock on
 * `<state dir>/daemon.lock` taken before anything is adopted, with the holder's pid written in
 * it so that a second daemon can name the first. The lock lives as long as the daemon (the fd
 * is inherited across the detaching fork and closed at exit).
 *
 * And, each interval, whether the state dir and the socket are still there: when someone
 * removed them, they are made again (the lock taken again, the API server on a new socket),
 * logged once, and the tenants' files in it too (registry-restore.c). */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpuslice/fs.h>
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
      return gs_make_error(err, 0, "state dir '%s' is in use by another daemon (pid %ld)", dir,
                           pid);
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

/* Whether path still names the file that fd has open. */
static bool same_file(const char *path, int fd)
{
  struct stat a, b;
  return fd >= 0 && stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
    a.st_ino == b.st_ino;
}

void state_dir_note_socket(struct daemon *d)
{
  struct stat st;
  d->socket_ino = stat(d->cfg.socket, &st) == 0 ? st.st_ino : 0;
}

static bool socket_there(const struct daemon *d)
{
  struct stat st;
  return stat(d->cfg.socket, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == d->socket_ino;
}

/* The state dir and the socket again, after someone removed them. The API server is started
 * again on a new socket; the tenants stay in the registry, read through the ledger fds the
 * daemon holds. */
static int remake(struct daemon *d, gs_error_t *err)
{
  _cleanup_free_ char *path = NULL;
  xasprintf(&path, "%s/%s", d->cfg.state_dir, STATE_LOCK_NAME);
  if (!same_file(path, d->state_lock)) {
    state_dir_unlock(&d->state_lock);
    if (gs_ledger_state_dir_make(d->cfg.state_dir, err) < 0 ||
        state_dir_lock(d->cfg.state_dir, &d->state_lock, err) < 0)
      return -1;
  }
  /* Stopping the server unlinks the socket path: never while it names another file. */
  struct stat st;
  if (!d->api || socket_there(d))
    return 0;
  if (lstat(d->cfg.socket, &st) == 0)
    return gs_make_error(err, 0, "'%s' is now another file", d->cfg.socket);
  api_http_stop(d);
  if (api_http_start(d, err) < 0)
    return -1;
  state_dir_note_socket(d);
  return 0;
}

void state_dir_watch(struct daemon *d)
{
  _cleanup_free_ char *path = NULL;
  gs_error_t err = NULL;
  xasprintf(&path, "%s/%s", d->cfg.state_dir, STATE_LOCK_NAME);
  if ((d->state_lock < 0 || same_file(path, d->state_lock)) && (!d->api || socket_there(d))) {
    d->state_lost = false;
    return;
  }
  if (remake(d, &err) == 0) {
    GS_LOG(GS_LOG_WARN,
           "state dir '%s' or socket '%s' was removed: made again; %d tenant(s) still known",
           d->cfg.state_dir, d->cfg.socket, d->reg.n);
    registry_restore(&d->reg);
    d->state_lost = false;
    return;
  }
  if (!d->state_lost)
    GS_LOG(GS_LOG_ERROR, "state dir '%s' or socket '%s' was removed and cannot be made again: %s",
           d->cfg.state_dir, d->cfg.socket, err->msg);
  d->state_lost = true;
  gs_error_release(&err);
}
