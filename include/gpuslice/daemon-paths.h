/* Where the node daemon and its clients meet: the API socket, the usage ledger and the
 * metrics listener. The daemon and the CLI both take their defaults from here, so that a
 * client finds the daemon with no configuration.
 *
 *   socket   GPUSLICE_SOCKET, else <state dir>/gpuslice.sock, where the state dir is
 *            gs_ledger_state_dir() (/run/gpuslice for root, so /run/gpuslice/gpuslice.sock).
 *            A client that is not root and finds no socket in its own state dir uses the
 *            system daemon's, /run/gpuslice/gpuslice.sock, when that exists.
 *   ledger   GPUSLICE_LEDGER_DB, else /var/lib/gpuslice/ledger.db for root, else
 *            $XDG_STATE_HOME/gpuslice/ledger.db, else $HOME/.local/state/gpuslice/ledger.db,
 *            else <state dir>/ledger.db
 *   metrics  GPUSLICE_METRICS_LISTEN, else 127.0.0.1:9400
 *
 * Each returns a static string, recomputed at every call (not thread-safe; the daemon and
 * the CLI call these from their main thread). libc only. */
#ifndef GS_DAEMON_PATHS_H
#define GS_DAEMON_PATHS_H

#include <stdbool.h>

#include <gpuslice/error.h>

#define GS_DAEMON_METRICS_DEFAULT "127.0.0.1:9400"

/* The socket a client connects to. */
const char *gs_daemon_socket_path(void);
/* The daemon's directory as its clients find it: the directory of gs_daemon_socket_path(),
 * which is by default the daemon's state dir. The interposer reads limits files only there. */
const char *gs_daemon_dir(void);
/* The socket the daemon listens on: the same, without the fallback to the system socket. */
const char *gs_daemon_listen_socket_path(void);
const char *gs_daemon_ledger_path(void);
/* gs_socket_check_safe on socket, private_only as gs_ledger_state_dir_check decides it for its
 * directory: a client calls it once before it connects, the daemon (listening: the socket, if
 * there, must be its own) before it listens. */
int gs_daemon_socket_dir_check(const char *socket, bool listening, gs_error_t *err);
const char *gs_daemon_metrics_listen(void);

#endif
