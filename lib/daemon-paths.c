/* The daemon's default paths; see gs-daemon-paths.h for the rules. */
#include <gpuslice/daemon-paths.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpuslice/env.h>
#include <gpuslice/fs.h>
#include <gpuslice/tenant-ledger.h>

#define SYSTEM_SOCKET "/run/gpuslice/gpuslice.sock"

const char *gs_daemon_listen_socket_path(void)
{
  static char buf[4096];
  const char *env = gs_getenv_nonempty("GPUSLICE_SOCKET");
  if (env)
    snprintf(buf, sizeof(buf), "%s", env);
  else
    snprintf(buf, sizeof(buf), "%s/gpuslice.sock", gs_ledger_state_dir());
  return buf;
}

const char *gs_daemon_socket_path(void)
{
  const char *own = gs_daemon_listen_socket_path();
  struct stat st;
  if (geteuid() == 0 || gs_getenv_nonempty("GPUSLICE_SOCKET") || stat(own, &st) == 0 ||
      stat(SYSTEM_SOCKET, &st) < 0 || !S_ISSOCK(st.st_mode))
    return own;
  return SYSTEM_SOCKET;
}

const char *gs_daemon_dir(void)
{
  static char buf[4096];
  snprintf(buf, sizeof(buf), "%s", gs_daemon_socket_path());
  char *slash = strrchr(buf, '/');
  if (!slash)
    snprintf(buf, sizeof(buf), ".");
  else if (slash == buf)
    buf[1] = '\0';
  else
    *slash = '\0';
  return buf;
}

const char *gs_daemon_ledger_path(void)
{
  static char buf[4096];
  const char *env = gs_getenv_nonempty("GPUSLICE_LEDGER_DB");
  const char *xdg = gs_getenv_nonempty("XDG_STATE_HOME");
  const char *home = gs_getenv_nonempty("HOME");
  if (env)
    snprintf(buf, sizeof(buf), "%s", env);
  else if (geteuid() == 0)
    snprintf(buf, sizeof(buf), "/var/lib/gpuslice/ledger.db");
  else if (xdg)
    snprintf(buf, sizeof(buf), "%s/gpuslice/ledger.db", xdg);
  else if (home)
    snprintf(buf, sizeof(buf), "%s/.local/state/gpuslice/ledger.db", home);
  else
    snprintf(buf, sizeof(buf), "%s/ledger.db", gs_ledger_state_dir());
  return buf;
}

const char *gs_daemon_metrics_listen(void)
{
  static char buf[256];
  const char *env = gs_getenv_nonempty("GPUSLICE_METRICS_LISTEN");
  snprintf(buf, sizeof(buf), "%s", env ? env : GS_DAEMON_METRICS_DEFAULT);
  return buf;
}

int gs_daemon_socket_dir_check(const char *socket, bool listening, gs_error_t *err)
{
  char dir[4096];
  gs_dir_of(socket, dir, sizeof(dir));
  return gs_socket_check_safe(socket, gs_ledger_state_dir_is_per_user(dir), listening, err);
}
