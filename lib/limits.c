/* The daemon's limits files: naming, writing a new one whole, mapping it (through the
 * mapper in shm.c), and the daemon's changes to it; see gs-limits.h for why they exist and
 * who writes them. */
#include <gpuslice/limits.h>
#include <gpuslice/log.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

int gs_limits_path(char *buf, size_t len, const char *dir, const char *name, gs_error_t *err)
{
  if (!gs_ledger_name_valid(name))
    return gs_make_error(err, 0, "bad tenant name '%s' (want 1-63 of A-Z a-z 0-9 . _ -)", name);
  if ((size_t) snprintf(buf, len, "%s/limits/%s", dir, name) >= len)
    return gs_make_error(err, ENAMETOOLONG, "limits path under '%s'", dir);
  return 0;
}

static const struct gs__shm_layout limits_shm = {
  "limits file",
  GS_LIMITS_MAGIC,
  GS_LIMITS_VERSION,
  sizeof(struct gs_limits),
};

int gs_limits_open(const char *dir, const char *name, bool writable, struct gs_limits **out,
                   gs_error_t *err)
{
  char path[4096];
  if (gs_limits_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  int flags = GS__SHM_PRIVATE | (writable ? GS__SHM_WRITE : 0);
  return gs__shm_open(path, &limits_shm, flags, (void **) out, NULL, err);
}

void gs_limits_close(struct gs_limits *lim)
{
  gs__shm_close(lim, &limits_shm);
}

static int write_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t) n;
  }
  return 0;
}

/* The POSIX ACL (system.posix_acl_access, the kernel's binary form) of a limits file: the
 * daemon reads and writes it, the group (admins) and the tenant's owner read it, no one else. */
struct acl_entry {
  uint16_t tag, perm;
  uint32_t id;
};
enum {
  ACL_VERSION = 2,
  ACL_USER_OBJ = 1,
  ACL_USER = 2,
  ACL_GROUP_OBJ = 4,
  ACL_MASK = 0x10,
  ACL_OTHER = 0x20
};

static int grant_tenant(int fd, uid_t tenant)
{
  const uint32_t none = (uint32_t) -1;
  struct {
    uint32_t version;
    struct acl_entry e[5];
  } acl = { ACL_VERSION,
            { { ACL_USER_OBJ, 6, none },
              { ACL_USER, 4, (uint32_t) tenant },
              { ACL_GROUP_OBJ, 4, none },
              { ACL_MASK, 4, none },
              { ACL_OTHER, 0, none } } };
  if (tenant == geteuid())
    return 0;
  return fsetxattr(fd, "system.posix_acl_access", &acl, sizeof(acl), 0);
}

/* Mode 0640, group gid (when the daemon may give it), read for the tenant's owner by ACL. A
 * file system without ACLs gets 0644: the tenant must read its limits, and the names in them
 * are the lesser leak. The mode must not depend on the daemon's umask being sane. */
static int set_access(int fd, gid_t gid, uid_t tenant, const char *path)
{
  if (fchown(fd, (uid_t) -1, gid) < 0 && errno != EPERM)
    return -1;
  if (fchmod(fd, 0640) < 0)
    return -1;
  if (grant_tenant(fd, tenant) == 0)
    return 0;
  if (errno != ENOTSUP && errno != EOPNOTSUPP)
    return -1;
  GS_LOG(GS_LOG_WARN, "'%s': no ACLs on this file system: readable by every user", path);
  return fchmod(fd, 0644);
}

/* Writes the whole file under a temporary name, then renames it into place. */
static int write_new(const char *tmp, const char *path, const struct gs_limits *lim, gid_t gid,
                     gs_error_t *err)
{
  int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return gs_make_error(err, errno, "create '%s'", tmp);
  if (set_access(fd, gid, (uid_t) lim->uid, path) < 0 || write_all(fd, lim, sizeof(*lim)) < 0 ||
      rename(tmp, path) < 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return gs_make_error(err, e, "write limits file '%s'", path);
  }
  close(fd);
  return 0;
}

/* dir/limits: mode 0751, group gid. Its files' owners open them by name; only the daemon and
 * its group may list the names. */
static int make_dir(const char *ldir, gid_t gid, gs_error_t *err)
{
  if (mkdir(ldir, 0751) < 0 && errno != EEXIST)
    return gs_make_error(err, errno, "create directory '%s'", ldir);
  if ((chown(ldir, (uid_t) -1, gid) < 0 && errno != EPERM) || chmod(ldir, 0751) < 0)
    return gs_make_error(err, errno, "set the mode of '%s'", ldir);
  return 0;
}

int gs_limits_create(const char *dir, const struct gs_limits *init, gid_t gid,
                     struct gs_limits **out, gs_error_t *err)
{
  char path[4096], tmp[4200], ldir[4096];
  struct gs_limits lim;
  if (gs_limits_path(path, sizeof(path), dir, init->name, err) < 0)
    return -1;
  snprintf(ldir, sizeof(ldir), "%s/limits", dir);
  if (make_dir(ldir, gid, err) < 0)
    return -1;
  snprintf(tmp, sizeof(tmp), "%s/.%s.%d", ldir, init->name, (int) getpid());
  memcpy(&lim, init, sizeof(lim));
  lim.magic = GS_LIMITS_MAGIC;
  lim.version = GS_LIMITS_VERSION;
  lim.size = sizeof(lim);
  if (write_new(tmp, path, &lim, gid, err) < 0)
    return -1;
  return gs_limits_open(dir, init->name, true, out, err);
}

/* Writes the tail the file of `size` bytes lacks, then the header that makes it a file of
 * this version: a reader that sees the new version sees the tail. Each version only added
 * fields at the end, zero meaning what an older file meant; version 2 also needs its compute
 * ceiling. */
static int upgrade_fd(int fd, const struct gs_limits *old, size_t size)
{
  struct gs_limits lim;
  memcpy(&lim, old, size);
  memset((char *) &lim + size, 0, sizeof(lim) - size);
  if (size == GS_LIMITS_V2_SIZE)
    gs_limits_set_compute_ceiling(&lim);
  size_t tail = sizeof(lim) - size;
  uint32_t header[2] = { GS_LIMITS_VERSION, (uint32_t) sizeof(lim) };
  if (pwrite(fd, (char *) &lim + size, tail, (off_t) size) != (ssize_t) tail || fsync(fd) < 0)
    return -1;
  return pwrite(fd, header, sizeof(header), offsetof(struct gs_limits, version)) ==
      (ssize_t) sizeof(header)
    ? 0
    : -1;
}

/* The size of an older version this one extends in place, or 0. */
static size_t older_size(uint32_t version)
{
  return version == 2 ? GS_LIMITS_V2_SIZE : version == 3 ? GS_LIMITS_V3_SIZE : 0;
}

int gs_limits_upgrade(const char *dir, const char *name, gs_error_t *err)
{
  char path[4096];
  struct gs_limits old;
  struct stat st;
  if (gs_limits_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return 0;
  size_t size = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
      !(st.st_mode & (S_IWGRP | S_IWOTH)) && pread(fd, &old, 16, 0) == 16 &&
      old.magic == GS_LIMITS_MAGIC)
    size = older_size(old.version);
  bool older = size && (size_t) st.st_size == size && old.size == size &&
    pread(fd, &old, size, 0) == (ssize_t) size;
  int rc = older ? upgrade_fd(fd, &old, size) : 0;
  if (rc < 0)
    gs_make_error(err, errno, "upgrade limits file '%s' to version %d", path, GS_LIMITS_VERSION);
  close(fd);
  return rc < 0 ? -1 : older;
}

int gs_limits_remove(const char *dir, const char *name, gs_error_t *err)
{
  char path[4096];
  if (gs_limits_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  if (unlink(path) < 0 && errno != ENOENT)
    return gs_make_error(err, errno, "remove '%s'", path);
  return 0;
}

uint64_t gs_limit_resolve(uint64_t bytes, uint32_t ppm, uint64_t total)
{
  if (!ppm)
    return bytes;
  if (!total)
    return GS_LIMIT_NONE;
  return (uint64_t) ((unsigned __int128) total * ppm / 1000000u);
}

static uint64_t now_unix_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

void gs_limits_init(struct gs_limits *lim, const struct gs_ledger_copy *l, const char *ledger_dir,
                    const char *labels)
{
  memset(lim, 0, sizeof(*lim));
  snprintf(lim->name, sizeof(lim->name), "%s", l->name);
  lim->uid = (uint32_t) l->owner_uid;
  lim->owner_pid = l->owner_pid;
  lim->owner_start_time = l->owner_start_time;
  lim->ledger_created_unix_ns = l->created_unix_ns;
  lim->registered_unix_ns = now_unix_ns();
  snprintf(lim->ledger_dir, sizeof(lim->ledger_dir), "%s", ledger_dir);
  snprintf(lim->labels, sizeof(lim->labels), "%s", labels ? labels : l->labels);
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    atomic_init(&lim->limit_bytes[g], GS_LIMIT_NONE);
    atomic_init(&lim->ceiling_bytes[g], GS_LIMIT_NONE);
  }
  atomic_init(&lim->ceiling_compute_ppm, GS_CEILING_NONE);
  atomic_init(&lim->ceiling_policy, GS_CEILING_NONE);
  atomic_init(&lim->ceiling_priority, GS_CEILING_NONE);
  gs_limits_set_compute(lim, &l->compute.limit_ppm, &l->compute.policy, &l->compute.priority,
                        &l->compute.slice_ms);
}

void gs_limits_set_vram(struct gs_limits *lim, int gpu, uint64_t bytes, uint32_t ppm,
                        uint64_t total)
{
  /* The percentage goes first: a reader that sees the new bytes sees what they came from. */
  atomic_store(&lim->limit_ppm[gpu], ppm);
  atomic_store(&lim->limit_bytes[gpu], gs_limit_resolve(bytes, ppm, total));
}

void gs_limits_set_ceiling(struct gs_limits *lim, int gpu)
{
  atomic_store(&lim->ceiling_bytes[gpu], atomic_load(&lim->limit_bytes[gpu]));
}

void gs_limits_set_compute_ceiling(struct gs_limits *lim)
{
  uint32_t ppm = atomic_load(&lim->compute.limit_ppm);
  uint32_t policy = atomic_load(&lim->compute.policy);
  uint32_t priority = atomic_load(&lim->compute.priority);
  /* No limit, share and high are the tops: nothing above them to refuse. */
  atomic_store(&lim->ceiling_compute_ppm, ppm ? ppm : GS_CEILING_NONE);
  atomic_store(&lim->ceiling_policy, policy == GS_COMPUTE_CAP ? policy : GS_CEILING_NONE);
  atomic_store(&lim->ceiling_priority, priority == GS_PRIO_HIGH ? GS_CEILING_NONE : priority);
}

unsigned gs_compute_above_ceiling(const struct gs_compute_limits *ceiling,
                                  const struct gs_compute_limits *want, unsigned has)
{
  /* A limit of 0 is none: lifting it is the highest raise of all. */
  if ((has & GS_COMPUTE_FIELD_PPM) && ceiling->limit_ppm != GS_CEILING_NONE &&
      (want->limit_ppm == 0 || want->limit_ppm > ceiling->limit_ppm))
    return GS_COMPUTE_FIELD_PPM;
  /* Share lets the tenant use spare time beyond its share: a raise over cap. */
  if ((has & GS_COMPUTE_FIELD_POLICY) && ceiling->policy == GS_COMPUTE_CAP &&
      want->policy != GS_COMPUTE_CAP)
    return GS_COMPUTE_FIELD_POLICY;
  if ((has & GS_COMPUTE_FIELD_PRIORITY) && ceiling->priority != GS_CEILING_NONE &&
      gs_priority_rank(want->priority) > gs_priority_rank(ceiling->priority))
    return GS_COMPUTE_FIELD_PRIORITY;
  return 0;
}

void gs_limits_set_compute(struct gs_limits *lim, const uint32_t *ppm, const uint32_t *policy,
                           const uint32_t *priority, const uint32_t *slice_ms)
{
  if (ppm)
    atomic_store(&lim->compute.limit_ppm, *ppm);
  if (policy)
    atomic_store(&lim->compute.policy, *policy);
  if (priority)
    atomic_store(&lim->compute.priority, *priority);
  if (slice_ms)
    atomic_store(&lim->compute.slice_ms, *slice_ms);
}

void gs_limits_changed(struct gs_limits *lim)
{
  atomic_fetch_add(&lim->generation, 1);
}

void gs_limits_set_run_state(struct gs_limits *lim, uint32_t state)
{
  atomic_store(&lim->run_state, state);
  gs_limits_changed(lim);
  syscall(SYS_futex, (uintptr_t) &lim->run_state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void gs_limits_wait_run_state(const struct gs_limits *lim, uint32_t seen, uint64_t timeout_ns)
{
  struct timespec ts = { (time_t) (timeout_ns / 1000000000ULL),
                         (long) (timeout_ns % 1000000000ULL) };
  syscall(SYS_futex, (uintptr_t) &lim->run_state, FUTEX_WAIT, seen, &ts, NULL, 0);
}

const char *gs_run_state_name(uint32_t state)
{
  switch (state) {
  case GS_RUN_RUNNING: return "running";
  case GS_RUN_SUSPENDING: return "suspending";
  case GS_RUN_SUSPENDED: return "suspended";
  case GS_RUN_RESUMING: return "resuming";
  default: return "unknown";
  }
}

void gs_limits_mirror(struct gs_limits *dst, const struct gs_limits *src)
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    atomic_store(&dst->limit_bytes[g], atomic_load(&src->limit_bytes[g]));
    atomic_store(&dst->limit_ppm[g], atomic_load(&src->limit_ppm[g]));
  }
  atomic_store(&dst->compute.limit_ppm, atomic_load(&src->compute.limit_ppm));
  atomic_store(&dst->compute.policy, atomic_load(&src->compute.policy));
  atomic_store(&dst->compute.priority, atomic_load(&src->compute.priority));
  atomic_store(&dst->compute.slice_ms, atomic_load(&src->compute.slice_ms));
  dst->resume_wait_ms = src->resume_wait_ms;
  atomic_store(&dst->resume_failures, atomic_load(&src->resume_failures));
  gs_limits_set_run_state(dst, atomic_load(&src->run_state));
}

bool gs_limits_match(const struct gs_limits *lim, const struct gs_ledger *l, uid_t uid)
{
  return lim->uid == (uint32_t) uid && lim->ledger_created_unix_ns == l->created_unix_ns &&
    strncmp(lim->name, l->name, sizeof(lim->name)) == 0;
}

/* Opens dir/limits/name when the daemon's uid owns it and no one else may write it: the
 * owner of dir/limits, which must be closed to others' writes too. A copy the tenant made is
 * its own file, and the tenant could as well write its ledger. Returns the fd, or -1. */
static int open_daemon_file(const char *dir, const char *name)
{
  char ldir[4096];
  struct stat ds, fs;
  int fd = -1;
  if ((size_t) snprintf(ldir, sizeof(ldir), "%s/limits", dir) >= sizeof(ldir))
    return -1;
  /* The daemon keeps limits in its state dir, which others may never write. A dir they may
   * (the socket's, when that is /tmp) holds no limits/ but one someone else made. */
  if (stat(dir, &ds) < 0 || (ds.st_mode & (S_IWGRP | S_IWOTH)))
    return -1;
  /* O_PATH: the directory is 0751, its files opened by name by those who may not list it. */
  int dfd = open(ldir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0)
    return -1;
  if (fstat(dfd, &ds) == 0 && !(ds.st_mode & (S_IWGRP | S_IWOTH)))
    fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  close(dfd);
  if (fd >= 0 &&
      (fstat(fd, &fs) < 0 || !S_ISREG(fs.st_mode) || fs.st_uid != ds.st_uid ||
       (fs.st_mode & (S_IWGRP | S_IWOTH)))) {
    close(fd);
    fd = -1;
  }
  return fd;
}

int gs_limits_find(const char *daemon_dir, const struct gs_ledger *l, struct gs_limits **out)
{
  char path[4096];
  struct gs_limits *lim = NULL;
  gs_error_t err = NULL;
  if (gs_limits_path(path, sizeof(path), daemon_dir, l->name, NULL) < 0)
    return 0;
  int fd = open_daemon_file(daemon_dir, l->name);
  if (fd < 0)
    return 0;
  int rc = gs__shm_map_fd(fd, path, &limits_shm, GS__SHM_PRIVATE, (void **) &lim, &err);
  close(fd);
  gs_error_release(&err);
  if (rc < 0)
    return 0;
  if (!gs_limits_match(lim, l, geteuid())) {
    gs_limits_close(lim);
    return 0;
  }
  *out = lim;
  return 1;
}

const char *gs_compute_policy_name(uint32_t policy)
{
  return policy == GS_COMPUTE_CAP ? "cap" : "share";
}

const char *gs_priority_name(uint32_t priority)
{
  return priority == GS_PRIO_HIGH ? "high" : priority == GS_PRIO_LOW ? "low" : "normal";
}

int gs_priority_rank(uint32_t priority)
{
  return priority == GS_PRIO_HIGH ? 2 : priority == GS_PRIO_LOW ? 0 : 1;
}

int gs_parse_compute_pct(const char *s, uint32_t *ppm, gs_error_t *err)
{
  char *end = NULL;
  errno = 0;
  double pct = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(pct) || pct <= 0 || pct > 100)
    return gs_make_error(err, 0, "'%s' is not a percentage in (0, 100]", s);
  if (pct < GS_PCT_MIN)
    return gs_make_error(err, 0, "'%s' is below the smallest share, %g", s, GS_PCT_MIN);
  *ppm = (uint32_t) (pct * 10000.0 + 0.5);
  return 0;
}

int gs_compute_policy_from_name(const char *s, uint32_t *policy, gs_error_t *err)
{
  if (strcmp(s, "share") == 0)
    *policy = GS_COMPUTE_SHARE;
  else if (strcmp(s, "cap") == 0)
    *policy = GS_COMPUTE_CAP;
  else
    return gs_make_error(err, 0, "'%s' is not cap or share", s);
  return 0;
}

int gs_priority_from_name(const char *s, uint32_t *priority, gs_error_t *err)
{
  if (strcmp(s, "high") == 0)
    *priority = GS_PRIO_HIGH;
  else if (strcmp(s, "normal") == 0)
    *priority = GS_PRIO_NORMAL;
  else if (strcmp(s, "low") == 0)
    *priority = GS_PRIO_LOW;
  else
    return gs_make_error(err, 0, "'%s' is not high, normal or low", s);
  return 0;
}

bool gs_label_key_valid(const char *key, size_t len)
{
  if (len == 0 || (key[0] >= '0' && key[0] <= '9'))
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = key[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

void gs_labels_foreach(const char *labels,
                       void (*fn)(const char *key, const char *value, void *data), void *data)
{
  char key[GS_LEDGER_LABELS_MAX], value[GS_LEDGER_LABELS_MAX];
  for (const char *p = labels; p && *p;) {
    size_t n = strcspn(p, "\n");
    const char *eq = memchr(p, '=', n);
    if (eq && n < sizeof(key)) {
      snprintf(key, sizeof(key), "%.*s", (int) (eq - p), p);
      snprintf(value, sizeof(value), "%.*s", (int) (p + n - eq - 1), eq + 1);
      fn(key, value, data);
    }
    p += n + (p[n] == '\n');
  }
}

int gs_labels_check_utf8(const char *labels, gs_error_t *err)
{
  char line[GS_LEDGER_LABELS_MAX];
  for (const char *p = labels; p && *p;) {
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof(line), "%.*s", (int) n, p);
    if (!gs_utf8_valid(line)) {
      gs_scrub_utf8(line, '?');
      line[strcspn(line, "=")] = '\0';
      return gs_make_error(err, 0, "label '%s': not valid UTF-8", line);
    }
    p += n + (p[n] == '\n');
  }
  return 0;
}
