/* Environment access through secure_getenv; see gs-env.h. */
#include <gpuslice/env.h>

#include <stdlib.h>

const char *gs_getenv(const char *name)
{
  return secure_getenv(name);
}

const char *gs_getenv_nonempty(const char *name)
{
  const char *v = secure_getenv(name);
  return v && *v ? v : NULL;
}
