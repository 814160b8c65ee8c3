/* gpuslice/served.h: report the requests a tenant served, for cost per 1,000 requests.
 *
 * A tenant started by `gpuslice run` finds its name in GPUSLICE_TENANT and the node
 * daemon's socket the way every gpuslice client does. One call adds N to the tenant's
 * served-request count in the daemon's ledger:
 *
 *     #include <gpuslice/served.h>
 *     ...
 *     if (gpuslice_served(batch_size) != 0)
 *       ;  // not under gpuslice, or no daemon: carry on, nothing is lost but the count
 *
 * It sends POST /v1/tenants/<tenant>/served with {"requests":N} over the daemon's Unix
 * socket, as one HTTP/1.1 request written by hand (so that this header needs libc only),
 * and waits at most 2 seconds for the answer. Call it every few hundred requests, not for
 * each one: every call is a round trip to the daemon.
 *
 * The socket is, as for the daemon (include/gpuslice/daemon-paths.h): GPUSLICE_SOCKET; else
 * $GPUSLICE_STATE_DIR/gpuslice.sock; else /run/gpuslice/gpuslice.sock for root; else
 * $XDG_RUNTIME_DIR/gpuslice/gpuslice.sock; else /tmp/gpuslice-<uid>/gpuslice.sock.
 *
 * Returns 0 when the daemon accepted the count, else -1 with errno set: EINVAL (no or bad
 * GPUSLICE_TENANT, or requests = 0), ENAMETOOLONG (socket path), the errno of socket(),
 * connect() or I/O (ENOENT, ECONNREFUSED: no daemon; EAGAIN: timed out), or EPROTO when
 * the daemon answered with an error, or EPERM when the directory holding the socket is not
 * owned by the caller or root or others may write it (any group or other access, for the
 * per-user default), since another user could have planted a fake daemon there; in a sticky
 * directory such as /tmp, when the socket itself is not a socket owned by the caller or root.
 * gpuslice_served_to() gives the daemon's status line.
 * Thread-safe; never raises SIGPIPE. C99 or later, POSIX. */
#ifndef GPUSLICE_SERVED_H
#define GPUSLICE_SERVED_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define GPUSLICE_SERVED_TIMEOUT_S 2

/* The daemon's socket path into buf (see above). Returns 0, or -1 with ENAMETOOLONG. */
static inline int gpuslice_socket_path(char *buf, size_t len)
{
  const char *sock = getenv("GPUSLICE_SOCKET"), *dir = getenv("GPUSLICE_STATE_DIR");
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  int n;
  if (sock && *sock)
    n = snprintf(buf, len, "%s", sock);
  else if (dir && *dir)
    n = snprintf(buf, len, "%s/gpuslice.sock", dir);
  else if (geteuid() == 0)
    n = snprintf(buf, len, "/run/gpuslice/gpuslice.sock");
  else if (xdg && *xdg)
    n = snprintf(buf, len, "%s/gpuslice/gpuslice.sock", xdg);
  else
    n = snprintf(buf, len, "/tmp/gpuslice-%u/gpuslice.sock", (unsigned) geteuid());
  if (n < 0 || (size_t) n >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}

/* 1 when the directory holding socket path is one no other user could have planted or can
 * change (owned by the caller or root, no group or other write; no group or other access
 * at all with private_only), as the gpuslice clients check it; else 0 with EPERM. The one
 * exception, not with private_only: a sticky directory (/tmp) owned by the caller or root that
 * others may write, where no one else can remove or rename a file, when the socket itself
 * (not a symlink) is a socket owned by the caller or root, or is missing. */
static inline int gpuslice__socket_dir_ok(const char *path, int private_only)
{
  char dir[108];
  struct stat st;
  char *slash;
  snprintf(dir, sizeof(dir), "%s", path);
  slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof(dir), ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  if (stat(dir, &st) < 0)
    return 1;
  if (S_ISDIR(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0) &&
      !(st.st_mode & (private_only ? 077 : 022)))
    return 1;
  if (!private_only && S_ISDIR(st.st_mode) && (st.st_mode & 01000) && /* S_ISVTX, XSI only */
      (st.st_uid == geteuid() || st.st_uid == 0)) {
    if (lstat(path, &st) < 0)
      return errno == ENOENT;
    if (S_ISSOCK(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0))
      return 1;
  }
  errno = EPERM;
  return 0;
}

/* Tenant names as the daemon accepts them: 1-63 of A-Z a-z 0-9 . _ -, not starting with
 * '.'. Checked here so that nothing else can reach the request line. */
static inline int gpuslice__tenant_ok(const char *t)
{
  size_t n = t ? strlen(t) : 0;
  if (n == 0 || n > 63 || t[0] == '.')
    return 0;
  return strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static inline int gpuslice__connect(const char *path)
{
  struct sockaddr_un sa;
  struct timeval tv = { GPUSLICE_SERVED_TIMEOUT_S, 0 };
  int fd, saved;
  if (strlen(path) >= sizeof(sa.sun_path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
      connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
    saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

static inline int gpuslice__send_all(int fd, const char *p, size_t len)
{
  while (len) {
    ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t) w;
  }
  return 0;
}

/* Reads the status line ("HTTP/1.1 204 No Content") into status; returns the code. */
static inline int gpuslice__read_status(int fd, char *status, size_t len)
{
  size_t n = 0;
  while (n + 1 < len) {
    ssize_t r = recv(fd, status + n, 1, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0 || status[n] == '\n')
      break;
    n += status[n] != '\r';
  }
  status[n] = '\0';
  if (strncmp(status, "HTTP/1.", 7) != 0 || strlen(status) < 12) {
    if (errno == 0)
      errno = EPROTO;
    return -1;
  }
  return atoi(status + 9);
}

/* The whole exchange, with the socket and tenant given. status (may be NULL) receives the
 * daemon's status line, or "" when none came. */
static inline int gpuslice_served_to(const char *socket_path, const char *tenant,
                                     unsigned long long requests, char *status, size_t len)
{
  char req[512], line[128];
  int fd, code, n;
  if (status && len)
    status[0] = '\0';
  if (!gpuslice__tenant_ok(tenant) || requests == 0) {
    errno = EINVAL;
    return -1;
  }
  n = snprintf(req, sizeof(req),
               "POST /v1/tenants/%s/served HTTP/1.1\r\nHost: gpuslice\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n"
               "Connection: close\r\n\r\n{\"requests\":%llu}",
               tenant, snprintf(line, sizeof(line), "{\"requests\":%llu}", requests), requests);
  if ((fd = gpuslice__connect(socket_path)) < 0)
    return -1;
  errno = 0;
  code = gpuslice__send_all(fd, req, (size_t) n) < 0
    ? -1
    : gpuslice__read_status(fd, line, sizeof(line));
  n = errno;
  close(fd);
  if (status && len)
    snprintf(status, len, "%s", code < 0 && n != EPROTO ? "" : line);
  if (code >= 200 && code < 300)
    return 0;
  errno = code < 0 ? (n ? n : EPROTO) : EPROTO;
  return -1;
}

/* Adds `requests` to this tenant's served count (GPUSLICE_TENANT, the default socket). */
static inline int gpuslice_served(unsigned long long requests)
{
  char path[108];
  const char *sock = getenv("GPUSLICE_SOCKET"), *dir = getenv("GPUSLICE_STATE_DIR");
  int per_user = !(sock && *sock) && !(dir && *dir) && geteuid() != 0;
  if (gpuslice_socket_path(path, sizeof(path)) < 0 || !gpuslice__socket_dir_ok(path, per_user))
    return -1;
  return gpuslice_served_to(path, getenv("GPUSLICE_TENANT"), requests, NULL, 0);
}

#endif
