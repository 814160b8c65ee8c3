/* The metrics server: GET /metrics (Prometheus text, rendered from the last sample by
 * lib/metrics-render.c) and GET /health, on TCP, 127.0.0.1:9400 unless configured
 * ("off" turns it off). Nothing here is per-user: it is for the node's monitoring. */
#include "api.h"

#include <microhttpd.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gpuslice/metrics.h>

#include "idle.h"

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *text)
{
  struct MHD_Response *resp =
    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", type);
  enum MHD_Result ret = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result metrics(struct daemon *d, struct MHD_Connection *conn)
{
  struct gs_metrics_health h = {
    .uptime_s = daemon_uptime(d),
    .samples_total = d->health.samples_total,
    .sample_errors_total = d->health.sample_errors_total,
    .last_sample_duration_s = d->health.last_sample_duration_s,
    .tenants = d->reg.n,
    .gpus = d->snap.ngpus,
  };
  char *text = NULL;
  size_t len = 0;
  gs_error_t err = NULL;
  if (gs_metrics_render_fields(&d->snap, d->fields ? d->fields : gs_metrics_fields_default(), &h,
                               &text, &len, &err) < 0) {
    char *msg = NULL;
    xasprintf(&msg, "render: %s\n", err->msg);
    gs_error_release(&err);
    return reply(conn, 500, "text/plain; charset=utf-8", msg);
  }
  if (d->idle)
    idle_metrics_append(d, &text, &len);
  return reply(conn, 200, GS_METRICS_CONTENT_TYPE, text);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
  struct daemon *d = cls;
  (void) version;
  (void) upload;
  (void) upload_size;
  (void) con_cls;
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return reply(conn, 405, "application/json", xstrdup("{\"error\":\"use GET\"}"));
  if (strcmp(url, "/metrics") == 0)
    return metrics(d, conn);
  if (strcmp(url, "/health") == 0) {
    json_t *j = api_health_json(d);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return reply(conn, 200, "application/json", text);
  }
  return reply(conn, 404, "application/json",
               xstrdup("{\"error\":\"no such resource; try /metrics\"}"));
}

/* A port: decimal digits only, 1..65535 (getaddrinfo would take 99999 and wrap it). */
static bool port_valid(const char *s)
{
  char *end = NULL;
  long port = strtol(s, &end, 10);
  return s[0] >= '0' && s[0] <= '9' && !*end && port >= 1 && port <= 65535;
}

/* "ADDR:PORT" or "[V6ADDR]:PORT", numeric only. */
static int parse_listen(const char *spec, struct addrinfo **out, gs_error_t *err)
{
  _cleanup_free_ char *copy = xstrdup(spec);
  char *colon = strrchr(copy, ':'), *host = copy;
  struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV,
                            .ai_socktype = SOCK_STREAM };
  if (!colon || colon == copy || !port_valid(colon + 1))
    return gs_make_error(
      err, 0, "metrics listen address '%s': want ADDR:PORT, such as 127.0.0.1:9400", spec);
  *colon = '\0';
  if (host[0] == '[' && colon[-1] == ']') {
    host++;
    colon[-1] = '\0';
  }
  int rc = getaddrinfo(host, colon + 1, &hints, out);
  if (rc != 0)
    return gs_make_error(err, 0, "metrics listen address '%s': %s", spec, gai_strerror(rc));
  return 0;
}

/* Bounds on what clients may hold, so that idle connections cannot keep a scrape out. The
 * server stays on the daemon's one thread (it reads the snapshot the sampler writes, without
 * locks); in epoll mode an idle connection costs that thread nothing, so what starved a scrape
 * was the global limit: once it is reached libmicrohttpd stops accepting until a connection
 * times out. One address may hold only a few connections, the server many more, and a
 * connection that sends nothing for a few seconds is closed. */
enum {
  METRICS_CONNECTION_LIMIT = 256,
  METRICS_PER_IP_LIMIT = 8,
  METRICS_IDLE_TIMEOUT_S = 5,
};

bool metrics_listen_valid(const char *spec)
{
  struct addrinfo *ai = NULL;
  if (strcmp(spec, "off") == 0)
    return true;
  if (parse_listen(spec, &ai, NULL) < 0)
    return false;
  freeaddrinfo(ai);
  return true;
}

int metrics_http_start(struct daemon *d, gs_error_t *err)
{
  struct addrinfo *ai = NULL;
  if (strcmp(d->cfg.metrics_listen, "off") == 0)
    return 0;
  if (parse_listen(d->cfg.metrics_listen, &ai, err) < 0)
    return -1;
  unsigned flags = MHD_USE_EPOLL | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  d->metrics = MHD_start_daemon(
    flags, 0, NULL, NULL, on_request, d, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) METRICS_IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
    (unsigned) METRICS_CONNECTION_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
    (unsigned) METRICS_PER_IP_LIMIT, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!d->metrics)
    return gs_make_error(err, 0, "cannot listen for metrics on %s (in use?)",
                         d->cfg.metrics_listen);
  return 0;
}

void metrics_http_stop(struct daemon *d)
{
  if (d->metrics)
    MHD_stop_daemon(d->metrics);
  d->metrics = NULL;
}
