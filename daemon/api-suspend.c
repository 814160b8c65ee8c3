/* The suspend routes (docs/suspend.md): POST /v1/tenants/NAME/suspend and .../resume, behind
 * `gpuslice suspend` and `gpuslice resume`. The caller must see the tenant (its owner or an
 * admin, access.c). What they do is suspend.c's and resume.c's.
 *
 *   suspend  body {"lock_timeout_ms": N} (optional, 1..600000): 200 T once suspended; 409 with
 *            the reason when refused (the tenant keeps running); 503 without a usable driver.
 *   resume   200 T once running; 202 T while it waits for room (T's state "resuming": poll
 *            it; a resume that fails leaves it "suspended" with suspension.error set); 409 when
 *            it is not suspended or the resume failed at once. */
#include "api.h"

#include "suspend.h"

#define LOCK_TIMEOUT_MAX_MS 600000

int api_tenant_suspend(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = api_named_tenant(rq, r);
  if (!t)
    return 0;
  const json_t *v = rq->body ? json_object_get(rq->body, "lock_timeout_ms") : NULL;
  if (v &&
      (!json_is_integer(v) || json_integer_value(v) < 1 ||
       json_integer_value(v) > LOCK_TIMEOUT_MAX_MS))
    return api_error(r, 400, "field 'lock_timeout_ms': want milliseconds from 1 to %d",
                     LOCK_TIMEOUT_MAX_MS);
  unsigned ms = v ? (unsigned) json_integer_value(v) : 0;
  int status;
  gs_error_t err = NULL;
  if (suspend_tenant(rq->d, t, ms, &status, &err) < 0) {
    api_error(r, (unsigned) status, "%s", err->msg);
    gs_error_release(&err);
    return 0;
  }
  GS_LOG(GS_LOG_INFO, "tenant '%s' suspended by uid %u", t->name, (unsigned) rq->peer.uid);
  return api_ok(r, 200, api_tenant_json(rq->d, t));
}

int api_tenant_resume(struct api_req *rq, struct api_reply *r)
{
  struct tenant *t = api_named_tenant(rq, r);
  if (!t)
    return 0;
  int status;
  gs_error_t err = NULL;
  if (resume_tenant(rq->d, t, "api", &status, &err) < 0) {
    api_error(r, 409, "%s", err->msg);
    gs_error_release(&err);
    return 0;
  }
  return api_ok(r, (unsigned) status, api_tenant_json(rq->d, t));
}
