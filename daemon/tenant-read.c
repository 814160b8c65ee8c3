/* Reading a tenant's ledger from the daemon. The ledger belongs to the tenant, who may
 * truncate or rewrite it at any time: the daemon therefore reads it with pread into its own
 * buffer (a mapping of a truncated file would kill the daemon with SIGBUS), checks that the
 * file belongs to whom it should, and writes only the few limit fields it mirrors, with
 * pwrite. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

static int check_head(const struct gs_ledger *l, const char *path, gs_error_t *err)
{
  if (l->magic != GS_LEDGER_MAGIC)
    return gs_make_error(err, 0, "'%s' is not a gpuslice tenant ledger", path);
  if (l->version != GS_LEDGER_VERSION || l->size != sizeof(struct gs_ledger))
    return gs_make_error(err, 0, "'%s' has ledger version %u; this daemon reads version %d", path, l->version,
                         GS_LEDGER_VERSION);
  return 0;
}

#define HEAD_BYTES offsetof(struct gs_ledger, proc)

static int read_fd(int fd, const char *path, uid_t uid, struct gs_ledger *out, uid_t *owner, gs_error_t *err)
{
  struct stat st;
  if (fstat(fd, &st) < 0)
    return gs_make_error(err, errno, "stat '%s'", path);
  if (!S_ISREG(st.st_mode))
    return gs_make_error(err, 0, "'%s' is not a regular file", path);
  if (uid != (uid_t) -1 && st.st_uid != uid)
    return gs_make_error(err, EPERM, "'%s' belongs to uid %u", path, (unsigned) st.st_uid);
  ssize_t n = pread(fd, out, HEAD_BYTES, 0);
  if (n < 0)
    return gs_make_error(err, errno, "read '%s'", path);
  if ((size_t) n != HEAD_BYTES)
    return gs_make_error(err, 0, "'%s' is too short for a tenant ledger", path);
  if (owner)
    *owner = st.st_uid;
  return check_head(out, path, err);
}

int tenant_read_ledger(const char *dir, const char *name, uid_t uid, struct gs_ledger **out, uid_t *owner_uid,
                       gs_error_t *err)
{
  char path[4096];
  if (!gs_ledger_name_valid(name))
    return gs_make_error(err, 0, "bad tenant name '%s'", name);
  if ((size_t) snprintf(path, sizeof(path), "%s/tenants/%s", dir, name) >= sizeof(path))
    return gs_make_error(err, ENAMETOOLONG, "tenant path under '%s'", dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return gs_make_error(err, errno, "open tenant ledger '%s'", path);
  struct gs_ledger *l = xmalloc(sizeof(*l));
  int rc = read_fd(fd, path, uid, l, owner_uid, err);
  close(fd);
  if (rc < 0) {
    free(l);
    return -1;
  }
  *out = l;
  return 0;
}

static void put32(int fd, size_t off, uint32_t v)
{
  if (pwrite(fd, &v, sizeof(v), (off_t) off) != (ssize_t) sizeof(v))
    GS_LOG(GS_LOG_DEBUG, "mirror limits: %s", strerror(errno));
}

static void put64(int fd, size_t off, uint64_t v)
{
  if (pwrite(fd, &v, sizeof(v), (off_t) off) != (ssize_t) sizeof(v))
    GS_LOG(GS_LOG_DEBUG, "mirror limits: %s", strerror(errno));
}

void tenant_mirror_limits(const struct tenant *t)
{
  char path[4096];
  _cleanup_free_ struct gs_ledger *h = xmalloc(sizeof(*h));
  const struct gs_limits *lim = t->limits;
  snprintf(path, sizeof(path), "%s/tenants/%s", t->ledger_dir, t->name);
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return;
  /* Only the same instance of the tenant, still owned by its user. */
  if (read_fd(fd, path, t->uid, h, NULL, NULL) == 0 && h->created_unix_ns == t->created_unix_ns) {
    for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
      /* The percentage goes first, so that no reader resolves it over the new byte figure. */
      put32(fd, offsetof(struct gs_ledger, gpu[g].limit_ppm), 0);
      put64(fd, offsetof(struct gs_ledger, gpu[g].limit_bytes), atomic_load(&lim->limit_bytes[g]));
    }
    put32(fd, offsetof(struct gs_ledger, compute.limit_ppm), atomic_load(&lim->compute.limit_ppm));
    put32(fd, offsetof(struct gs_ledger, compute.policy), atomic_load(&lim->compute.policy));
    put32(fd, offsetof(struct gs_ledger, compute.priority), atomic_load(&lim->compute.priority));
  }
  close(fd);
}

int tenant_reread(struct tenant *t, struct gs_ledger *buf)
{
  char path[4096];
  if (t->ledger_fd < 0) {
    snprintf(path, sizeof(path), "%s/tenants/%s", t->ledger_dir, t->name);
    t->ledger_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (t->ledger_fd < 0)
      return -1;
  }
  return read_fd(t->ledger_fd, t->name, t->uid, buf, NULL, NULL);
}

bool tenant_owner_alive(struct tenant *t)
{
  if (t->pidfd < 0) {
    /* Opened first, then checked: if the start time matches now, the pidfd is that process. */
    t->pidfd = pidfd_open(t->owner_pid, 0);
    if (t->pidfd < 0 || !gs_proc_alive(t->owner_pid, t->owner_start_time))
      return false;
  }
  struct pollfd p = { .fd = t->pidfd, .events = POLLIN };
  return poll(&p, 1, 0) == 0;
}
