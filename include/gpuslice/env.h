/* Reading the environment. gpuslice's code is loaded into setuid programs' children and
 * into processes it did not start, so it reads variables only through secure_getenv. */
#ifndef GS_ENV_H
#define GS_ENV_H

#include <stdbool.h>

/* The variable's value, or NULL when unset or when the process runs with elevated
 * privileges (secure_getenv). */
const char *gs_getenv(const char *name);

/* As gs_getenv, but an empty value counts as unset. */
const char *gs_getenv_nonempty(const char *name);

#endif
