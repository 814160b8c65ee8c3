/* The shared-file mapper; see shm.h for which files it serves and why there is one. What
 * a file holds, and how its header is first written, stay with the layout's owner. */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/fs.h>

/* How long GS__SHM_WAIT waits for a creator, in steps of 1 ms: at most a second. */
#define WAIT_STEPS 1000

static void pause_a_moment(void)
{
  const struct timespec ms = { 0, 1000000 };
  nanosleep(&ms, NULL);
}

static int open_fd(const char *path, const struct gs__shm_layout *layout, int flags, bool *created,
                   gs_error_t *err)
{
  /* O_NONBLOCK: a FIFO planted at the path must not hang the opener. */
  int mode = ((flags & (GS__SHM_WRITE | GS__SHM_CREATE)) ? O_RDWR : O_RDONLY) | O_CLOEXEC |
    O_NOFOLLOW | O_NONBLOCK;
  int fd = -1;
  *created = false;
  if (flags & GS__SHM_CREATE) {
    fd = open(path, mode | O_CREAT | O_EXCL, 0600);
    *created = fd >= 0;
    if (fd < 0 && errno == EEXIST && (flags & GS__SHM_EXCL))
      return gs_make_error(err, EEXIST, "create %s '%s'", layout->what, path);
  }
  if (fd < 0)
    fd = (flags & GS__SHM_PROC_LINK) ? gs_open_nofollow_but_proc_fd(path, mode) : open(path, mode);
  if (fd < 0)
    return gs_make_error(err, errno, "open %s '%s'", layout->what, path);
  return fd;
}

static int check_stat(const struct stat *st, const char *path, const struct gs__shm_layout *layout,
                      int flags, gs_error_t *err)
{
  if (!S_ISREG(st->st_mode))
    return gs_make_error(err, 0, "'%s' is not a regular file", path);
  if ((flags & GS__SHM_PRIVATE) && (st->st_mode & (S_IWGRP | S_IWOTH)))
    return gs_make_error(err, 0, "'%s' may be written by others (mode %03o)", path,
                         (unsigned) st->st_mode & 0777);
  if ((size_t) st->st_size != layout->size)
    return gs_make_error(err, 0, "'%s' is not a %s of this version (size %lld, want %zu)", path,
                         layout->what, (long long) st->st_size, layout->size);
  return 0;
}

/* A new file gets its size; an existing one must have it (a file another process has just
 * made may not have it yet, under GS__SHM_WAIT). */
static int size_fd(int fd, const char *path, const struct gs__shm_layout *layout, int flags,
                   bool created, gs_error_t *err)
{
  struct stat st;
  if (created)
    return ftruncate(fd, (off_t) layout->size) < 0 ? gs_make_error(err, errno, "size '%s'", path)
                                                   : 0;
  for (int i = 0;; i++) {
    if (fstat(fd, &st) < 0)
      return gs_make_error(err, errno, "stat '%s'", path);
    if (st.st_size != 0 || !(flags & GS__SHM_WAIT) || i == WAIT_STEPS)
      return check_stat(&st, path, layout, flags, err);
    pause_a_moment();
  }
}

int gs__shm_check(const struct gs__shm_header *h, const struct gs__shm_layout *layout,
                  const char *path, gs_error_t *err)
{
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != layout->magic)
    return gs_make_error(err, 0, "'%s' is not a gpuslice %s", path, layout->what);
  if (h->version != layout->version || h->size != layout->size)
    return gs_make_error(
      err, 0, "'%s' has %s version %u (size %u); this gpuslice reads version %u (size %zu)", path,
      layout->what, h->version, h->size, layout->version, layout->size);
  return 0;
}

/* The creator writes the magic last: under GS__SHM_WAIT, give it a moment to get there. */
static int check_mapped(const struct gs__shm_header *h, const char *path,
                        const struct gs__shm_layout *layout, int flags, gs_error_t *err)
{
  for (int i = 0; (flags & GS__SHM_WAIT) && i < WAIT_STEPS &&
       __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == 0;
       i++)
    pause_a_moment();
  return gs__shm_check(h, layout, path, err);
}

static int map_fd(int fd, const char *path, const struct gs__shm_layout *layout, int flags,
                  void **out, gs_error_t *err)
{
  int prot = PROT_READ | ((flags & (GS__SHM_WRITE | GS__SHM_CREATE)) ? PROT_WRITE : 0);
  void *m = mmap(NULL, layout->size, prot, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED)
    return gs_make_error(err, errno, "map '%s'", path);
  *out = m;
  return 0;
}

int gs__shm_open(const char *path, const struct gs__shm_layout *layout, int flags, void **out,
                 bool *created, gs_error_t *err)
{
  bool made;
  void *m = NULL;
  int fd = open_fd(path, layout, flags, &made, err);
  if (fd < 0)
    return -1;
  int rc = size_fd(fd, path, layout, flags, made, err);
  if (rc == 0)
    rc = map_fd(fd, path, layout, flags, &m, err);
  close(fd);
  if (rc == 0 && !made && check_mapped(m, path, layout, flags, err) < 0) {
    gs__shm_close(m, layout);
    rc = -1;
  }
  if (rc < 0 && made)
    unlink(path);
  if (rc < 0)
    return -1;
  if (created)
    *created = made;
  *out = m;
  return 0;
}

int gs__shm_map_fd(int fd, const char *path, const struct gs__shm_layout *layout, int flags,
                   void **out, gs_error_t *err)
{
  void *m = NULL;
  flags &= ~GS__SHM_CREATE;
  if (size_fd(fd, path, layout, flags, false, err) < 0 ||
      map_fd(fd, path, layout, flags, &m, err) < 0)
    return -1;
  if (check_mapped(m, path, layout, flags, err) < 0) {
    gs__shm_close(m, layout);
    return -1;
  }
  *out = m;
  return 0;
}

void gs__shm_close(void *p, const struct gs__shm_layout *layout)
{
  if (p)
    munmap(p, layout->size);
}
