/* Small file-system helpers shared by the ledgers and boards in the state directory. */
#ifndef GS_FS_H
#define GS_FS_H

#include <sys/types.h>

#include <gpuslice/error.h>

/* Creates dir and its missing parents; dir itself gets mode, parents 0755. */
int gs_mkdir_p(const char *dir, mode_t mode, gs_error_t *err);

#endif
