/* `gpuslice daemon`: the node daemon. The verb is only the door: the daemon lives in daemon/
 * (the gpuslice_daemon library), which parses its own options; see daemon/daemon.c and
 * docs/daemon.md. */
#include "cli.h"

#include "daemon.h"

int cli_daemon(int argc, char **argv)
{
  return gs_daemon_main(argc, argv);
}
