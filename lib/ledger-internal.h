/* What the tenant ledger's two halves share, privately to lib/: its mapper for the tenant's
 * own processes (ledger.c) and its reader for everyone else (ledger-read.c). */
#ifndef GS_LEDGER_INTERNAL_H
#define GS_LEDGER_INTERNAL_H

#include <stddef.h>

#include <gpuslice/error.h>
#include "shm.h"

/* The ledger file's magic, version and size, for gs__shm_open and gs__shm_check. */
extern const struct gs__shm_layout gs__ledger_shm;

/* The path rule: <dir>/tenants/<name>. Returns 0, or -1 with err for a bad name or a path
 * that does not fit in len. */
int gs__ledger_path(char *buf, size_t len, const char *dir, const char *name, gs_error_t *err);

#endif
