/* What the verbs that ask the daemon (ps, gpus, top, usage, set) share beyond the client
 * itself: one request that reports its own failure the CLI's way, JSON output, and typed
 * reads of the daemon's replies that tolerate a missing or null field. */
#ifndef GS_CLI_DAEMON_VERB_H
#define GS_CLI_DAEMON_VERB_H

#include <jansson.h>
#include <stdbool.h>

#include <gpuslice/daemon-client.h>
#include <gpuslice/opt.h>
#include "cli-table.h"

/* Sends the request to the daemon at socket (NULL: the default). On success returns 0 with
 * *reply (may be NULL for an empty reply). On failure prints "gpuslice: <verb>: <why>" and
 * returns CLI_FAILURE. */
int verb_request(const char *verb, const char *socket, const char *method, const char *path,
                 const json_t *body, json_t **reply);

/* verb_request for a request the daemon may take long to answer (a suspend, a resume): gives up
 * after timeout_ms instead of the client's default; *http_status (may be NULL) gets the status. */
int verb_request_waiting(const char *verb, const char *socket, const char *method, const char *path,
                         const json_t *body, long timeout_ms, json_t **reply, long *http_status);

/* --socket PATH, for every verb that asks the daemon: an entry of its option table. */
#define VERB_SOCKET_HELP \
  "The daemon's socket (default: $GPUSLICE_SOCKET, else /run/gpuslice/gpuslice.sock for root)"
#define VERB_SOCKET_ENTRY(type)                                                               \
  {                                                                                           \
    .name = "socket", .arg = "PATH", .kind = GS_OPT_STRING, .offset = offsetof(type, socket), \
    .help = VERB_SOCKET_HELP                                                                  \
  }

/* The options of a listing verb (ps, gpus): --json, --socket PATH, --help. */
struct verb_list_opts {
  const char *socket;
  bool json;
};
#define VERB_LIST_NOPTS 3
extern const struct gs_opt verb_list_entries[VERB_LIST_NOPTS];
#define VERB_LIST_OUTRO "Exit status: 0 success, 1 failure (no daemon answers), 2 usage error.\n"

/* The whole of a listing verb (ps, gpus), whose table has verb_list_entries: GETs path,
 * checks that reply[key] is an array, and prints the reply as JSON or the table build makes
 * of that array. Returns the exit status. */
int verb_list(const struct gs_opt_table *opts, int argc, char **argv, const char *path,
              const char *key, struct table *(*build)(const json_t *) );

/* Prints j as indented JSON with a final newline. Returns CLI_OK, or CLI_FAILURE when stdout
 * fails. */
int verb_print_json(const json_t *j);

/* Reads o[key]: a number (integer or real) else dflt; a string else NULL. */
double jnum(const json_t *o, const char *key, double dflt);
const char *jstr(const json_t *o, const char *key);
/* True when o[key] is a number (not null, not missing). */
bool jhas_num(const json_t *o, const char *key);

#endif
