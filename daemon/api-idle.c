/* The idle routes (docs/idle.md):
 *   GET /v1/idle        every tenant the caller may see: idle_seconds, state, the rule that
 *                       applies, what it would do next and what it did; the mode; the GPUs no
 *                       tenant holds memory on (for consolidation)
 *   GET /v1/idle/rules  the rules and schedules in force
 *   PUT /v1/idle/rules  replaces them (admins only): checked whole first, a bad one is 400 with
 *                       the one line naming the rule and the field, and the old ones stay */
#include "api.h"

#include "idle.h"

int api_idle_list(struct api_req *rq, struct api_reply *r)
{
  struct daemon *d = rq->d;
  json_t *tenants = json_array();
  for (int i = 0; i < d->reg.n; i++)
    if (access_may_see(&rq->peer, d->reg.v[i]))
      json_array_append_new(tenants, idle_tenant_json(d, d->reg.v[i]));
  return api_ok(r, 200,
                json_pack("{s:s, s:i, s:i, s:o, s:o}", "mode", idle_acting(d) ? "act" : "dry-run",
                          "rules", idle_rules_of(d)->n, "schedules", idle_rules_of(d)->ns,
                          "empty_gpus", idle_empty_gpus_json(d), "tenants", tenants));
}

int api_idle_rules_get(struct api_req *rq, struct api_reply *r)
{
  return api_ok(r, 200, idle_rules_json(idle_rules_of(rq->d)));
}

int api_idle_rules_put(struct api_req *rq, struct api_reply *r)
{
  if (!rq->peer.admin)
    return api_error(r, 403, "only an admin may change the idle rules");
  struct idle_rules rules;
  gs_error_t err = NULL;
  if (idle_rules_parse(rq->body, &rules, &err) < 0) {
    api_error(r, 400, "%s", err->msg);
    gs_error_release(&err);
    return 0;
  }
  idle_set_rules(rq->d, &rules);
  GS_LOG(GS_LOG_INFO, "idle rules replaced by uid %u: %d rule(s), %d schedule(s)",
         (unsigned) rq->peer.uid, idle_rules_of(rq->d)->n, idle_rules_of(rq->d)->ns);
  return api_ok(r, 200, idle_rules_json(idle_rules_of(rq->d)));
}
