/* The one mapper of lib/'s shared files: the tenant ledger (ledger.c), the daemon's limits
 * files (limits.c) and the compute boards (compute-board.c). It creates or opens a file,
 * sizes it, maps it and checks its header, so that each layout's owner says only what its
 * file is (a gs__shm_layout) and how it is named, never how it is mapped.
 *
 * Every shared layout starts with struct gs__shm_header: a magic, a version and its size.
 * A file whose size or header does not match is a clear error, never a crash.
 *
 * Private to lib/ (the gs__ prefix). libc only: the interposer links it. The simulator's
 * state file (sim/sim-state.c) is mapped by the simulator itself, which does not link lib/. */
#ifndef GS_SHM_H
#define GS_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/error.h>

/* The first 16 bytes of every shared layout; each layout pins its own copy of these fields
 * at these offsets (see the _Static_asserts beside each struct). */
struct gs__shm_header {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
};

/* What a shared file is: its name in messages ("tenant ledger"), magic, version and size. */
struct gs__shm_layout {
  const char *what;
  uint64_t magic;
  uint32_t version;
  size_t size;
};

enum gs__shm_flags {
  GS__SHM_WRITE = 1 << 0,     /* map read-write; else read-only */
  GS__SHM_CREATE = 1 << 1,    /* create the file (0600, zeroed) when it does not exist: the
                             * caller then writes the header, the magic last */
  GS__SHM_EXCL = 1 << 2,      /* with CREATE: fail with status EEXIST when it exists */
  GS__SHM_WAIT = 1 << 3,      /* another process may be between creating the file and writing
                             * its header: wait (at most a second each) for its size and magic */
  GS__SHM_PRIVATE = 1 << 4,   /* refuse a file that group or others may write */
  GS__SHM_PROC_LINK = 1 << 5, /* follow a link to /proc/<pid>/fd/<n> (a ledger the daemon
                               * gave its path back, gs_open_nofollow_but_proc_fd) */
};

/* Maps the file at path as layout says, with flags (enum gs__shm_flags). *created, when not
 * NULL, tells whether this call made the file; only then is the header left for the caller
 * to write. A file this call made and could not map is removed again. Returns 0 and *out, or
 * -1 with err; err's status is the errno of the failure (EEXIST for CREATE | EXCL). */
int gs__shm_open(const char *path, const struct gs__shm_layout *layout, int flags, void **out,
                 bool *created, gs_error_t *err);

/* Maps the existing file open on fd (which the caller has checked and still owns) as layout
 * says, as gs__shm_open does without CREATE; path names it in messages. */
int gs__shm_map_fd(int fd, const char *path, const struct gs__shm_layout *layout, int flags,
                   void **out, gs_error_t *err);

/* Checks a header (of a mapping or of a copy) against layout; path names it in messages. */
int gs__shm_check(const struct gs__shm_header *h, const struct gs__shm_layout *layout,
                  const char *path, gs_error_t *err);

/* Unmaps what gs__shm_open mapped; safe on NULL. */
void gs__shm_close(void *p, const struct gs__shm_layout *layout);

#endif
