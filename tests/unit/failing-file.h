/* A stdio stream whose every read fails with EIO, for testing how readers report a read
 * error (a disk or a gzip stream failing half-way). Close it with fclose. */
#ifndef GS_TEST_FAILING_FILE_H
#define GS_TEST_FAILING_FILE_H

#include <errno.h>
#include <stdio.h>
#include <sys/types.h>

static inline ssize_t gs_test_failing_read(void *cookie, char *buf, size_t size)
{
  (void) cookie, (void) buf, (void) size;
  errno = EIO;
  return -1;
}

static inline FILE *gs_test_failing_file(void)
{
  cookie_io_functions_t io = { .read = gs_test_failing_read };
  return fopencookie(NULL, "r", io);
}

#endif
