/* What the API's route files share with the HTTP layer (api-http.c): a parsed request and
 * the reply a route fills. Routes never touch libmicrohttpd. */
#ifndef GS_DAEMON_API_H
#define GS_DAEMON_API_H

#include "daemon.h"

struct api_req {
  struct daemon *d;
  struct peer peer;
  const char *method;
  const char *path;   /* without the query string */
  json_t *body;       /* the parsed JSON body of POST and PATCH (an object), else NULL */
  /* The value of query argument `name`, or NULL. */
  const char *(*query)(const struct api_req *rq, const char *name);
  void *conn;
};

struct api_reply {
  unsigned status;
  json_t *json; /* NULL: no body (204) */
};

/* Fills r with {"error": "..."} and status; returns 0 so a route can `return api_error(...)`. */
int api_error(struct api_reply *r, unsigned status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Fills r with json (taking it) and status. Returns 0. */
int api_ok(struct api_reply *r, unsigned status, json_t *json);

/* Routes: each returns 0 when it handled the path (r filled), 1 when the path is not its. */
int api_route_tenants(struct api_req *rq, struct api_reply *r);
int api_route_node(struct api_req *rq, struct api_reply *r);
int api_route_usage(struct api_req *rq, struct api_reply *r);

/* A time as an RFC 3339 string in UTC, "2025-01-31T12:00:00Z". */
json_t *api_time_json(double unix_s);

/* The tenant as the API shows it (T in docs/daemon.md). */
json_t *api_tenant_json(const struct daemon *d, const struct tenant *t);
/* The daemon's health document, shared by GET /v1/health and the metrics port's GET /health. */
json_t *api_health_json(const struct daemon *d);

#endif
