/* File-system helpers; see gs-fs.h. */
#include <gpuslice/fs.h>

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

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
