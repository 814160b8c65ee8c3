/* Small file-system helpers shared by the ledgers and boards in the state directory. */
#ifndef GS_FS_H
#define GS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/error.h>

/* Creates dir and its missing parents; dir itself gets mode, parents 0755. */
int gs_mkdir_p(const char *dir, mode_t mode, gs_error_t *err);

/* Refuses a directory that someone other than the caller could have planted or can change:
 * one not owned by the caller's euid or root, or writable by group or other; with
 * private_only, any group or other access at all, or a symlink. A missing dir passes (its creator
 * decides its mode). The error names the path, its owner and its mode in one line. */
int gs_dir_check_safe(const char *dir, bool private_only, gs_error_t *err);

/* A ledger whose file was removed while its tenant ran lives on in the descriptor its
 * `gpuslice run` holds; the daemon gives it a path again as a symbolic link to
 * /proc/<pid>/fd/<n> (registry-restore.c). True when target has exactly that form. */
bool gs_is_proc_fd_path(const char *target);

/* open(path, flags | O_NOFOLLOW), except that a symbolic link to /proc/<pid>/fd/<n> is
 * followed, and only to a regular file (looked at through O_PATH first, so that nothing else
 * is ever opened). Any other link fails with ELOOP, as O_NOFOLLOW does. Returns the fd, or -1
 * with errno. */
int gs_open_nofollow_but_proc_fd(const char *path, int flags);

/* gs_dir_check_safe on the directory holding socket, with one exception: a sticky directory
 * (S_ISVTX, as /tmp) owned by the caller or root may be writable by others, since none of them
 * can remove or rename a file there that is not theirs. The socket itself must then be a
 * socket (lstat: not a symlink) owned by the caller or root, or only by the caller with
 * own_only (the daemon, which replaces a stale socket: it never removes another's file).
 * Not with private_only: a per-user default is never in a shared directory. */
int gs_socket_check_safe(const char *socket, bool private_only, bool own_only, gs_error_t *err);

/* The directory part of path into dir: "." for a bare name, "/" for one in the root. */
void gs_dir_of(const char *path, char *dir, size_t len);

#endif
