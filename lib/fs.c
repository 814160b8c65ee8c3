/* File-system helpers; see gs-fs.h. */
#include <gpuslice/fs.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gs_mkdir_p(const char *dir, mode_t mode, gs_error_t *err)
{
  char path[4096];
  snprintf(path, sizeof(path), "%s", dir);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
      return gs_make_error(err, errno, "create directory '%s'", path);
    *p = '/';
  }
  if (mkdir(path, mode) < 0 && errno != EEXIST)
    return gs_make_error(err, errno, "create directory '%s'", path);
  return 0;
}

int gs_dir_check_safe(const char *dir, bool private_only, gs_error_t *err)
{
  struct stat st;
  /* The per-user default sits in a shared place (/tmp): a symlink there is someone else's to
   * re-point, so it must be the directory itself. A given dir may be a link the caller made. */
  if ((private_only ? lstat(dir, &st) : stat(dir, &st)) < 0)
    return errno == ENOENT ? 0 : gs_make_error(err, errno, "state dir '%s'", dir);
  mode_t open_bits = private_only ? 0077 : 0022;
  bool owner_ok = st.st_uid == geteuid() || st.st_uid == 0;
  if (S_ISDIR(st.st_mode) && owner_ok && !(st.st_mode & open_bits))
    return 0;
  return gs_make_error(err, EPERM,
                       "state dir '%s' is %s owned by uid %u with mode %04o; refusing it (want a "
                       "directory owned by you or root, mode %s)",
                       dir, S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
                       (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777),
                       private_only ? "0700" : "without group or other write");
}

void gs_dir_of(const char *path, char *dir, size_t len)
{
  snprintf(dir, len, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, len, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
}

/* A sticky directory that others may write (/tmp): anyone may add a file there, but only its
 * owner or root may remove or rename it. So the socket file, once it is the caller's or root's,
 * stays theirs, and that is what is checked; a missing one passes, as a missing dir does. */
static int socket_check_in_sticky(const char *socket, const char *dir, bool own_only,
                                  gs_error_t *err)
{
  struct stat st;
  if (lstat(socket, &st) < 0)
    return errno == ENOENT ? 0 : gs_make_error(err, errno, "socket '%s'", socket);
  bool owner_ok = st.st_uid == geteuid() || (!own_only && st.st_uid == 0);
  if (S_ISSOCK(st.st_mode) && owner_ok)
    return 0;
  return gs_make_error(err, EPERM,
                       "socket '%s' in the shared directory '%s' is %s owned by uid %u with mode "
                       "%04o; refusing it (want a socket owned by %s)",
                       socket, dir, S_ISSOCK(st.st_mode) ? "a socket" : "not a socket",
                       (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777),
                       own_only ? "you" : "you or root");
}

int gs_socket_check_safe(const char *socket, bool private_only, bool own_only, gs_error_t *err)
{
  char dir[4096];
  struct stat st;
  gs_dir_of(socket, dir, sizeof(dir));
  if (gs_dir_check_safe(dir, private_only, err) == 0)
    return 0;
  if (private_only || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || !(st.st_mode & S_ISVTX) ||
      (st.st_uid != geteuid() && st.st_uid != 0))
    return -1;
  gs_error_release(err);
  return socket_check_in_sticky(socket, dir, own_only, err);
}
