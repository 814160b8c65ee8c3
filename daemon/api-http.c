/* The API server: HTTP with JSON bodies over the daemon's Unix socket, served by
 * libmicrohttpd from the daemon's one poll loop (epoll mode, no thread of its own).
 *
 * It owns the transport: the socket (made here, mode from the config, a stale socket of a
 * dead daemon replaced, a live one refused), the caller's identity (SO_PEERCRED, access.c),
 * bodies (at most 64 KiB, else 413; POST and PATCH bodies must be a JSON object, else 400),
 * the request URI (at most 8 KiB, else 414) and header block (at most 32 KiB, else 431),
 * errors as {"error": "..."}; the route table (api-routes.c) picks the handler. */
#include "api.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/fs.h>

struct conn_state {
  char *buf;
  size_t len;
  size_t uri_len; /* the request target as sent, query included */
  bool headers_seen;
  bool too_big;
};

int api_error(struct api_reply *r, unsigned status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  /* The error is one JSON line that clients print as is: no control character, DEL included. */
  char *msg = xvasprintf_line(' ', fmt, ap);
  va_end(ap);
  r->status = status;
  r->json = json_pack("{s:s}", "error", msg);
  free(msg);
  return 0;
}

int api_ok(struct api_reply *r, unsigned status, json_t *json)
{
  r->status = status;
  r->json = json;
  return 0;
}

json_t *api_time_json(double unix_s)
{
  char buf[64];
  time_t s = (time_t) unix_s;
  struct tm tm;
  gmtime_r(&s, &tm);
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return json_string(buf);
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, const struct api_reply *r)
{
  char *text = r->json ? json_dumps(r->json, JSON_COMPACT) : NULL;
  size_t len = text ? strlen(text) : 0;
  struct MHD_Response *resp = text
    ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE)
    : MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  if (text)
    MHD_add_response_header(resp, "Content-Type", "application/json");
  if (r->allow[0])
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
  enum MHD_Result ret = MHD_queue_response(conn, r->status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
  struct api_reply r = { 0 };
  api_error(&r, status, "%s", msg);
  enum MHD_Result ret = send_reply(conn, &r);
  json_decref(r.json);
  return ret;
}

static const char *query_arg(const struct api_req *rq, const char *name)
{
  return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* POST, PATCH and PUT carry a JSON object; other methods ignore any body. */
static int parse_body(struct api_req *rq, const struct conn_state *cs, struct api_reply *r)
{
  json_error_t jerr;
  if (strcmp(rq->method, "POST") != 0 && strcmp(rq->method, "PATCH") != 0 &&
      strcmp(rq->method, "PUT") != 0)
    return 0;
  if (cs->len == 0) {
    rq->body = json_object();
    return 0;
  }
  rq->body = json_loadb(cs->buf, cs->len, JSON_REJECT_DUPLICATES, &jerr);
  if (!rq->body)
    return api_error(r, 400, "invalid JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                     jerr.column),
           -1;
  if (!json_is_object(rq->body))
    return api_error(r, 400, "invalid JSON: the body must be an object"), -1;
  return 0;
}

static enum MHD_Result handle(struct daemon *d, struct MHD_Connection *conn, const char *url,
                              const char *method, struct conn_state *cs)
{
  struct api_req rq = { .d = d, .method = method, .path = url, .query = query_arg, .conn = conn };
  struct api_reply r = { 0 };
  gs_error_t err = NULL;
  const union MHD_ConnectionInfo *ci =
    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci || access_peer(ci->connect_fd, d->cfg.admin_group, &rq.peer, &err) < 0) {
    gs_error_release(&err);
    return send_error(conn, 403, "cannot tell who is calling (SO_PEERCRED)");
  }
  if (parse_body(&rq, cs, &r) == 0)
    api_route(&rq, &r);
  GS_LOG(GS_LOG_DEBUG, "uid %u: %s %s: %u", (unsigned) rq.peer.uid, method, url, r.status);
  enum MHD_Result ret = send_reply(conn, &r);
  json_decref(r.json);
  json_decref(rq.body);
  return ret;
}

static bool declared_too_big(struct MHD_Connection *conn)
{
  const char *cl =
    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  return cl && strtoull(cl, NULL, 10) > DAEMON_BODY_MAX;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t key_size, const char *value, size_t value_size)
{
  size_t *total = cls;
  (void) kind;
  (void) key;
  (void) value;
  *total += key_size + value_size + 4; /* ": " and CRLF */
  return MHD_YES;
}

/* Refused once the headers are in, before any body is read. libmicrohttpd would refuse a URI
 * or header block past its pool (DAEMON_HTTP_POOL) itself, in HTML; the daemon refuses them
 * in JSON well before that. */
static enum MHD_Result check_headers(struct MHD_Connection *conn, const struct conn_state *cs)
{
  size_t header_bytes = 0;
  if (cs->uri_len > DAEMON_URI_MAX)
    return send_error(conn, 414, "request URI exceeds 8 KiB");
  MHD_get_connection_values_n(conn, MHD_HEADER_KIND, count_header, &header_bytes);
  if (header_bytes > DAEMON_HEADERS_MAX)
    return send_error(conn, 431, "request header fields exceed 32 KiB");
  if (declared_too_big(conn))
    return send_error(conn, 413, "request body exceeds 64 KiB");
  return MHD_YES;
}

/* Called with the request target as sent (before the query is split off and decoded), before
 * the handler: what it returns is the request's state, freed by on_completed. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
  (void) cls;
  (void) conn;
  struct conn_state *cs = xcalloc(1, sizeof(*cs));
  cs->uri_len = strlen(uri);
  return cs;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
  struct conn_state *cs = *con_cls;
  (void) version;
  if (!cs->headers_seen) {
    cs->headers_seen = true;
    return check_headers(conn, cs);
  }
  if (*upload_size) {
    if (!cs->too_big && cs->len + *upload_size <= DAEMON_BODY_MAX) {
      cs->buf = xrealloc(cs->buf, cs->len + *upload_size);
      memcpy(cs->buf + cs->len, upload, *upload_size);
      cs->len += *upload_size;
    } else {
      cs->too_big = true;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (cs->too_big)
    return send_error(conn, 413, "request body exceeds 64 KiB");
  return handle(cls, conn, url, method, cs);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
  struct conn_state *cs = *con_cls;
  (void) cls;
  (void) conn;
  (void) code;
  if (cs) {
    free(cs->buf);
    free(cs);
    *con_cls = NULL;
  }
}

/* Percent-decoding of paths and query values, with every control character it yields made
 * a space: a NUL above all, which would cut "/v1/tenants/a1%00zz" short to "a1". What is left
 * names no tenant and no route, and error messages that quote it stay one line. */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
  (void) cls;
  (void) conn;
  size_t len = MHD_http_unescape(s);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
      s[i] = ' ';
  return len;
}

/* A socket file left by a daemon that died is replaced; one that answers is another daemon.
 * Another user's file is never removed (root could, in a sticky /tmp), whatever it is. */
static int clear_stale(const struct sockaddr_un *addr, gs_error_t *err)
{
  struct stat st;
  if (lstat(addr->sun_path, &st) < 0)
    return 0;
  if (st.st_uid != geteuid())
    return gs_make_error(err, EPERM,
                         "'%s' exists, owned by uid %u with mode %04o; refusing to replace "
                         "another user's file",
                         addr->sun_path, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
  if (!S_ISSOCK(st.st_mode))
    return gs_make_error(err, EEXIST, "'%s' exists and is not a socket", addr->sun_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool live = fd >= 0 && connect(fd, (const struct sockaddr *) addr, sizeof(*addr)) == 0;
  if (fd >= 0)
    close(fd);
  if (live)
    return gs_make_error(err, EADDRINUSE, "another daemon is listening at '%s'", addr->sun_path);
  unlink(addr->sun_path);
  return 0;
}

/* The socket path goes with the server, unless it names another user's file by now. */
static void unlink_own_socket(const char *path)
{
  struct stat st;
  if (lstat(path, &st) == 0 && st.st_uid == geteuid())
    unlink(path);
}

static int make_dir_of(const char *path, gs_error_t *err)
{
  _cleanup_free_ char *dir = xstrdup(path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir)
    return 0;
  *slash = '\0';
  return gs_mkdir_p(dir, 0755, err);
}

static int listen_unix(const char *path, unsigned mode, gs_error_t *err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  if (strlen(path) >= sizeof(addr.sun_path))
    return gs_make_error(err, ENAMETOOLONG, "socket path '%s'", path);
  strcpy(addr.sun_path, path);
  if (make_dir_of(path, err) < 0 || clear_stale(&addr, err) < 0)
    return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return gs_make_error(err, errno, "socket");
  if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) < 0 || chmod(path, mode) < 0 ||
      listen(fd, 64) < 0) {
    int e = errno;
    close(fd);
    return gs_make_error(err, e, "listen on '%s'", path);
  }
  return fd;
}

int api_http_start(struct daemon *d, gs_error_t *err)
{
  int fd = listen_unix(d->cfg.socket, d->cfg.socket_mode, err);
  if (fd < 0)
    return -1;
  d->api = MHD_start_daemon(
    MHD_USE_EPOLL, 0, NULL, NULL, on_request, d, MHD_OPTION_LISTEN_SOCKET, fd,
    MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
    MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 10,
    MHD_OPTION_CONNECTION_LIMIT, (unsigned) DAEMON_API_CONNECTIONS,
    /* Mapped per connection, touched only as far as a request fills it: the worst case, every
     * connection holding a request just under the pool, is 256 x 256 KiB = 64 MiB. */
    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) DAEMON_HTTP_POOL, MHD_OPTION_END);
  if (!d->api) {
    close(fd);
    unlink_own_socket(d->cfg.socket);
    return gs_make_error(err, 0, "cannot start the API server on '%s'", d->cfg.socket);
  }
  return 0;
}

void api_http_stop(struct daemon *d)
{
  if (!d->api)
    return;
  MHD_stop_daemon(d->api);
  d->api = NULL;
  unlink_own_socket(d->cfg.socket);
}
