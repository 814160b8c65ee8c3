/* The tenants' files in a state dir that someone removed while they ran, once state-dir.c
 * has made it again.
 *
 * Each limits file is written again from the daemon's own mapping: the tenant's new
 * processes find it; its older processes keep the old one mapped, which the daemon keeps in
 * step (limits_prev). A ledger cannot be linked back (a file with no name left cannot be given
 * one), but it lives on in the descriptor the tenant's `gpuslice run` holds: the path becomes
 * a link to /proc/<pid>/fd/<n>, which the tenant's processes, the daemon's reader and a
 * restarted daemon follow (gs_open_nofollow_but_proc_fd), so that they all charge and read
 * that one ledger. A ledger whose owner holds no descriptor stays without a path: the
 * tenant's new processes are refused their allocations (they fail closed) and the daemon
 * keeps accounting it through its own descriptor. */
#include "daemon.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpuslice/fs.h>

static void restore_limits(struct registry *r, struct tenant *t)
{
  char path[4096];
  struct stat st;
  struct gs_limits copy, *fresh = NULL;
  gs_error_t err = NULL;
  if (gs_limits_path(path, sizeof(path), r->state_dir, t->name, NULL) < 0 || lstat(path, &st) == 0)
    return;
  memcpy(&copy, t->limits, sizeof(copy));
  if (gs_limits_create(r->state_dir, &copy, r->limits_gid, &fresh, &err) < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': limits file not made again: %s", t->name, err->msg);
    gs_error_release(&err);
    return;
  }
  /* Processes that mapped a file before the last but one removal lose its updates. */
  if (t->limits_prev)
    gs_limits_close(t->limits_prev);
  t->limits_prev = t->limits;
  t->limits = fresh;
}

/* The entry of /proc/<owner>/fd that has the ledger open on fd open too, into target. */
static bool owner_descriptor(const struct tenant *t, int fd, char *target, size_t len)
{
  char dir[64], entry[400];
  struct stat want, st;
  bool found = false;
  snprintf(dir, sizeof(dir), "/proc/%d/fd", (int) t->owner_pid);
  DIR *d = fstat(fd, &want) == 0 ? opendir(dir) : NULL;
  if (!d)
    return false;
  for (struct dirent *e; !found && (e = readdir(d));) {
    snprintf(entry, sizeof(entry), "%s/%s", dir, e->d_name);
    found = e->d_name[0] != '.' && stat(entry, &st) == 0 && st.st_dev == want.st_dev &&
      st.st_ino == want.st_ino;
  }
  closedir(d);
  /* The descriptor is the owner's only while the owner is the same process. */
  found = found && gs_proc_alive(t->owner_pid, t->owner_start_time);
  if (found)
    snprintf(target, len, "%s", entry);
  return found;
}

/* <ledger dir>/tenants, for t's uid: the daemon's own state dir was just made again. */
static int tenants_dir(const struct tenant *t, char *dir, size_t len)
{
  struct stat st;
  snprintf(dir, len, "%s/tenants", t->ledger_dir);
  if (stat(dir, &st) == 0)
    return 0;
  if (mkdir(dir, 0700) < 0)
    return -1;
  if (geteuid() == 0 && t->uid != 0 && chown(dir, t->uid, (gid_t) -1) < 0) {
    rmdir(dir);
    return -1;
  }
  return 0;
}

static void restore_ledger(struct tenant *t)
{
  char dir[2048], path[4200], target[400];
  struct stat st;
  if (t->ledger_fd < 0)
    return;
  snprintf(path, sizeof(path), "%s/tenants/%s", t->ledger_dir, t->name);
  if (lstat(path, &st) == 0 || errno != ENOENT)
    return;
  if (!owner_descriptor(t, t->ledger_fd, target, sizeof(target))) {
    GS_LOG(GS_LOG_WARN,
           "tenant '%s': its ledger '%s' was removed and its owner (pid %d) holds no descriptor "
           "on it: its new processes will be refused allocations; still accounted",
           t->name, path, (int) t->owner_pid);
    return;
  }
  if (tenants_dir(t, dir, sizeof(dir)) < 0 || symlink(target, path) < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': give its ledger the path '%s' again: %s", t->name, path,
           strerror(errno));
    return;
  }
  if (geteuid() == 0 && t->uid != 0 && lchown(path, t->uid, (gid_t) -1) < 0)
    GS_LOG(GS_LOG_DEBUG, "tenant '%s': chown '%s': %s", t->name, path, strerror(errno));
  GS_LOG(GS_LOG_INFO, "tenant '%s': ledger '%s' given back as a link to %s", t->name, path, target);
}

void registry_restore(struct registry *r)
{
  for (int i = 0; i < r->n; i++) {
    struct tenant *t = r->v[i];
    if (t->exited)
      continue;
    restore_limits(r, t);
    restore_ledger(t);
  }
}
