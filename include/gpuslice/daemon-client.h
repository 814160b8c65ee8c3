/* The client for the node daemon's HTTP API: JSON over the daemon's Unix socket, through
 * libcurl (CURLOPT_UNIX_SOCKET_PATH). The verbs that talk to the daemon (ps, gpus, top, usage,
 * set) and the registration of tenants (gpuslice/daemon-register.h: `gpuslice run`, the Slurm
 * plugin) share it; part of gpuslice_client (client/). docs/daemon.md describes the routes.
 *
 * One client holds one curl handle and reuses its connection; it is not thread-safe. */
#ifndef GS_DAEMON_CLIENT_H
#define GS_DAEMON_CLIENT_H

#include <jansson.h>

#include <gpuslice.h>

/* What daemon_client_request returns besides 0. Every one fills *err. */
enum {
  DAEMON_ERR = -1,       /* anything else: out of memory, a reply that is not JSON, ... */
  DAEMON_NO_ANSWER = -2, /* nothing listens at the socket, or it never answered; *err reads
                            "no daemon at <socket>: <reason>" */
  DAEMON_REFUSED = -3,   /* the daemon answered with a 4xx or 5xx; *err holds its
                            {"error": ...} text (or "HTTP <status>") */
};

struct daemon_client;

/* The socket the CLI talks to: opt (a --socket value) when not NULL, else GPUSLICE_SOCKET,
 * else the default (include/gpuslice/daemon-paths.h). Static or opt itself; do not free. */
const char *daemon_client_socket(const char *opt);

/* Makes a client for the daemon at socket_path (NULL: daemon_client_socket(NULL)).
 * Connects lazily, at the first request. Returns NULL with *err filled. */
struct daemon_client *daemon_client_new(const char *socket_path, gs_error_t *err);
void daemon_client_free(struct daemon_client *c);
/* The socket this client talks to. */
const char *daemon_client_path(const struct daemon_client *c);
/* Gives up on a request after timeout_ms in all (default 10000); the connect phase always
 * gives up after at most 2 s. */
void daemon_client_set_timeout(struct daemon_client *c, long timeout_ms);

/* Sends `METHOD path` (path starts with "/v1/..."; query strings allowed) with body as JSON
 * (NULL: no body). On a 2xx status returns 0 and sets *reply to the parsed JSON reply, or to
 * NULL when the reply is empty (204); reply may be NULL to discard it. *http_status (may be
 * NULL) gets the status, or 0 when none came. Else returns a DAEMON_* code above. */
int daemon_client_request(struct daemon_client *c, const char *method, const char *path,
                          const json_t *body, json_t **reply, long *http_status, gs_error_t *err);

/* Convenience: daemon_client_request with "GET" and no body. */
int daemon_client_get(struct daemon_client *c, const char *path, json_t **reply, gs_error_t *err);

/* Percent-encodes s for use as one path segment or query value. Never NULL (xmalloc). */
char *daemon_client_escape(const char *s);

/* Frees a json_t when it goes out of scope. */
void daemon_client__cleanup_json(json_t **j);
#define _cleanup_json_ __attribute__((cleanup(daemon_client__cleanup_json)))

#endif
