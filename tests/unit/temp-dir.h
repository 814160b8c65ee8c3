/* Scratch directories for the unit tests: a fresh one under /tmp, and its removal with
 * everything left in it; and, for a test program that needs one directory for all its
 * tests, the group setup and teardown that make and remove it (gs_test_dir). */
#ifndef GS_TEST_TEMP_DIR_H
#define GS_TEST_TEMP_DIR_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Makes /tmp/gs-<what>-XXXXXX, its name in dir (len bytes): 0, or -1. */
static inline int gs_test_make_dir(char *dir, size_t len, const char *what)
{
  snprintf(dir, len, "/tmp/gs-%s-XXXXXX", what);
  return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and all it holds: 0, or -1. */
static inline int gs_test_remove_dir(const char *dir)
{
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The test program's directory: /tmp/gs-<program>-XXXXXX, from gs_test_dir_setup on. */
static char gs_test_dir[64];

static inline int gs_test_dir_setup(void **state)
{
  (void) state;
  return gs_test_make_dir(gs_test_dir, sizeof(gs_test_dir), program_invocation_short_name);
}

static inline int gs_test_dir_teardown(void **state)
{
  (void) state;
  return gs_test_remove_dir(gs_test_dir);
}

#endif
