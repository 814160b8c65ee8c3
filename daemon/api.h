/* What the API's route files share with the HTTP layer (api-http.c) and the route table
 * (api-routes.c): a parsed request, the reply a handler fills, and the handlers. Routes
 * never touch libmicrohttpd. */
#ifndef GS_DAEMON_API_H
#define GS_DAEMON_API_H

#include "daemon.h"

struct api_req {
  struct daemon *d;
  struct peer peer;
  const char *method;
  const char *path; /* without the query string */
  char arg[256];    /* the path segment a route's "{}" matched (a tenant's name), else "" */
  json_t *body;     /* the parsed JSON body of POST and PATCH (an object), else NULL */
  /* The value of query argument `name`, or NULL. */
  const char *(*query)(const struct api_req *rq, const char *name);
  void *conn;
};

struct api_reply {
  unsigned status;
  json_t *json;   /* NULL: no body (204) */
  char allow[64]; /* a 405's Allow header ("GET, POST"), else "" */
};

/* One row of the route table (api-routes.c). A handler fills r and returns 0. */
typedef int api_handler(struct api_req *rq, struct api_reply *r);
struct api_route {
  const char *method;
  const char *pattern; /* "/v1/tenants/{}": "{}" matches one non-empty segment, into rq->arg */
  api_handler *fn;
};

/* Fills r with {"error": "..."} and status; returns 0 so a route can `return api_error(...)`. */
int api_error(struct api_reply *r, unsigned status, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Fills r with json (taking it) and status. Returns 0. */
int api_ok(struct api_reply *r, unsigned status, json_t *json);

/* Answers rq through the route table: its handler, or 404 (no route has the path) or 405
 * (none has it with this method; r->allow names those that do). */
void api_route(struct api_req *rq, struct api_reply *r);
/* Whether path matches pattern (see struct api_route), a single trailing '/' allowed; what
 * "{}" matched goes to arg (len bytes; a longer segment does not match). */
bool api_path_matches(const char *pattern, const char *path, char *arg, size_t len);

/* The handlers: api-node.c */
api_handler api_node_health, api_node_gpus;
/* api-tenants.c: rq->arg names the tenant where the route has one */
api_handler api_tenants_list, api_tenants_register, api_tenant_show, api_tenant_patch,
  api_tenant_end, api_tenant_served;
/* api-usage.c */
api_handler api_usage_report;
/* api-suspend.c: rq->arg names the tenant */
api_handler api_tenant_suspend, api_tenant_resume;

/* api-idle.c */
api_handler api_idle_list, api_idle_rules_get, api_idle_rules_put;

/* A time as an RFC 3339 string in UTC, "2025-01-31T12:00:00Z". */
json_t *api_time_json(double unix_s);

/* The tenant rq->arg names, or NULL with a 404 in r: someone else's is as missing as one
 * that is not there, so that names do not leak. */
struct tenant *api_named_tenant(struct api_req *rq, struct api_reply *r);

/* The tenant as the API shows it (T in docs/daemon.md). */
json_t *api_tenant_json(const struct daemon *d, const struct tenant *t);
/* The daemon's health document, shared by GET /v1/health and the metrics port's GET /health. */
json_t *api_health_json(const struct daemon *d);

#endif
