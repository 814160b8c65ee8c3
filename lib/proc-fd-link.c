/* Following the one kind of symbolic link a ledger path may be; see gs-fs.h. libc only: the
 * interposer opens its ledger through it. */
#include <gpuslice/fs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Skips one or more digits; NULL when there are none. */
static const char *digits(const char *p)
{
  const char *q = p;
  while (*q >= '0' && *q <= '9')
    q++;
  return q > p ? q : NULL;
}

bool gs_is_proc_fd_path(const char *target)
{
  const char *p = strncmp(target, "/proc/", 6) == 0 ? digits(target + 6) : NULL;
  p = p && strncmp(p, "/fd/", 4) == 0 ? digits(p + 4) : NULL;
  return p && *p == '\0';
}

/* The file the link at path names, as an O_PATH descriptor, when the link is to
 * /proc/<pid>/fd/<n> and that is a regular file. */
static int proc_fd_target(const char *path)
{
  char target[64];
  struct stat st;
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  if (n <= 0 || (size_t) n >= sizeof(target) - 1)
    return -1;
  target[n] = '\0';
  if (!gs_is_proc_fd_path(target))
    return -1;
  int pfd = open(target, O_PATH | O_CLOEXEC);
  if (pfd >= 0 && (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode))) {
    close(pfd);
    return -1;
  }
  return pfd;
}

int gs_open_nofollow_but_proc_fd(const char *path, int flags)
{
  int fd = open(path, flags | O_NOFOLLOW);
  if (fd >= 0 || errno != ELOOP)
    return fd;
  int pfd = proc_fd_target(path);
  if (pfd < 0) {
    errno = ELOOP;
    return -1;
  }
  char self[64];
  snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
  fd = open(self, flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL));
  int e = errno;
  close(pfd);
  errno = e;
  return fd;
}
