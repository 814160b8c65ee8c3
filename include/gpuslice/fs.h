/* Small file-system helpers shared by the ledgers and boards in the state directory. */
#ifndef GS_FS_H
#define GS_FS_H

#include <stdbool.h>
#include <sys/types.h>

#include <gpuslice/error.h>

/* Creates dir and its missing parents; dir itself gets mode, parents 0755. */
int gs_mkdir_p(const char *dir, mode_t mode, gs_error_t *err);

/* Refuses a directory that someone other than the caller could have planted or can change:
 * one not owned by the caller's euid or root, or writable by group or other; with
 * private_only, any group or other access at all, or a symlink. A missing dir passes (its creator
 * decides its mode). The error names the path, its owner and its mode in one line. */
int gs_dir_check_safe(const char *dir, bool private_only, gs_error_t *err);

#endif
