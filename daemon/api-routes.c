/* The API's routes: one table of {method, path pattern, handler}, and the matcher that picks a
 * row for a request. A path no row has is 404; a path some row has, with a method none of its
 * rows has, is 405 with an Allow header naming those that do.
 *
 * Patterns are literal but for "{}", which takes one non-empty path segment (a tenant's name)
 * into rq->arg. A path may end in one '/' more than its pattern ("/v1/tenants/").
 *
 * What does not live here: the transport (api-http.c) and what each route does (api-node.c,
 * api-tenants.c, api-suspend.c, api-usage.c). */
#include "api.h"

#include <string.h>

static const struct api_route routes[] = {
  { "GET", "/v1/health", api_node_health },
  { "GET", "/health", api_node_health },
  { "GET", "/v1/gpus", api_node_gpus },
  { "GET", "/v1/tenants", api_tenants_list },
  { "POST", "/v1/tenants", api_tenants_register },
  { "GET", "/v1/tenants/{}", api_tenant_show },
  { "PATCH", "/v1/tenants/{}", api_tenant_patch },
  { "DELETE", "/v1/tenants/{}", api_tenant_end },
  { "POST", "/v1/tenants/{}/served", api_tenant_served },
  { "POST", "/v1/tenants/{}/suspend", api_tenant_suspend },
  { "POST", "/v1/tenants/{}/resume", api_tenant_resume },
  { "GET", "/v1/usage", api_usage_report },
  { "GET", "/v1/idle", api_idle_list },
  { "GET", "/v1/idle/rules", api_idle_rules_get },
  { "PUT", "/v1/idle/rules", api_idle_rules_put },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

bool api_path_matches(const char *pattern, const char *path, char *arg, size_t len)
{
  while (*pattern && *path) {
    if (pattern[0] == '{' && pattern[1] == '}') {
      size_t n = strcspn(path, "/");
      if (n == 0 || n >= len)
        return false;
      memcpy(arg, path, n);
      arg[n] = '\0';
      pattern += 2;
      path += n;
    } else if (*pattern++ != *path++) {
      return false;
    }
  }
  return !*pattern && (!*path || strcmp(path, "/") == 0);
}

/* "GET, PATCH or DELETE": the methods of the rows whose pattern the path matched. */
static void join_methods(const bool *matched, char *out, size_t len, bool spoken)
{
  size_t n = 0, total = 0, used = 0;
  for (size_t i = 0; i < NROUTES; i++)
    total += matched[i];
  out[0] = '\0';
  for (size_t i = 0; i < NROUTES && used < len; i++) {
    if (!matched[i])
      continue;
    const char *sep = n == 0 ? "" : !spoken || n + 1 < total ? ", " : " or ";
    int w = snprintf(out + used, len - used, "%s%s", sep, routes[i].method);
    used += w > 0 ? (size_t) w : 0;
    n++;
  }
}

void api_route(struct api_req *rq, struct api_reply *r)
{
  bool matched[NROUTES] = { false };
  bool any = false;
  for (size_t i = 0; i < NROUTES; i++) {
    if (!api_path_matches(routes[i].pattern, rq->path, rq->arg, sizeof(rq->arg)))
      continue;
    if (strcmp(routes[i].method, rq->method) == 0) {
      routes[i].fn(rq, r);
      return;
    }
    matched[i] = any = true;
  }
  if (!any) {
    api_error(r, 404, "no such resource: %s", rq->path);
    return;
  }
  char spoken[64];
  join_methods(matched, spoken, sizeof(spoken), true);
  join_methods(matched, r->allow, sizeof(r->allow), false);
  api_error(r, 405, "use %s", spoken);
}
