/* The clock of the idle detector and the schedules. For tests only, GPUSLICE_TEST_CLOCK_FILE
 * names a file holding a number of unix seconds, read at every call: a test moves time by
 * writing it (20 minutes of idleness, 18:00 on a Friday) without waiting. It changes no other
 * clock of the daemon (the usage ledger's intervals, device time), and is documented as a test
 * hook in docs/idle.md: never set it on a real node. */
#include "idle.h"

#include <stdio.h>
#include <stdlib.h>

#include "daemon.h"

double idle_clock_now(void)
{
  const char *path = secure_getenv("GPUSLICE_TEST_CLOCK_FILE");
  double t = 0;
  if (path && path[0]) {
    FILE *f = fopen(path, "re");
    if (f) {
      if (fscanf(f, "%lf", &t) != 1)
        t = 0;
      fclose(f);
    }
    if (t > 0)
      return t;
  }
  return daemon_now_unix();
}
