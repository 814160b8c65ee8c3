/* The verifier's pure logic: attribution of GPU processes to tenants by ancestry, the
 * comparison of NVML's accounting with the limits, and the choice of processes to act on.
 * The rules are verify.h's; reading NVML and /proc, and acting, are verifier.c's. */
#include "verify.h"

#include <stdlib.h>

static int root_cmp(const void *a, const void *b)
{
  pid_t x = ((const struct verify_root *) a)->pid, y = ((const struct verify_root *) b)->pid;
  return (x > y) - (x < y);
}

void verify_roots_sort(struct verify_root *roots, int n)
{
  if (n > 1)
    qsort(roots, (size_t) n, sizeof(*roots), root_cmp);
}

static int root_find(pid_t pid, const struct verify_root *roots, int n)
{
  struct verify_root key = { .pid = pid };
  const struct verify_root *r =
    n > 0 ? bsearch(&key, roots, (size_t) n, sizeof(*roots), root_cmp) : NULL;
  return r ? r->tenant : -1;
}

int verify_tenant_of(pid_t pid, const struct verify_root *roots, int n, verify_parent_fn parent,
                     void *data)
{
  for (int depth = 0; depth <= VERIFY_DEPTH_MAX && pid > 1; depth++) {
    int t = root_find(pid, roots, n);
    if (t >= 0)
      return t;
    pid_t up;
    if (parent(pid, &up, data) < 0 || up == pid)
      return -1;
    pid = up;
  }
  return -1;
}

uint64_t verify_vram_over(uint64_t nvml_bytes, uint64_t limit, int nprocs)
{
  if (limit == UINT64_MAX || nvml_bytes <= limit)
    return 0;
  uint64_t slack = (uint64_t) (nprocs > 0 ? nprocs : 1) * VERIFY_VRAM_SLACK;
  return nvml_bytes - limit > slack ? nvml_bytes - limit : 0;
}

uint32_t verify_compute_over(uint32_t used_ppm, uint32_t limit_ppm, bool cap_policy, bool contended)
{
  if (limit_ppm == 0 || !(cap_policy || contended) || used_ppm <= limit_ppm)
    return 0;
  return used_ppm - limit_ppm > VERIFY_COMPUTE_MARGIN_PPM ? used_ppm - limit_ppm : 0;
}

/* The tenant's unmarked process with the largest key, or -1. */
static int largest(const struct verify_proc *p, int n, int tenant, bool by_vram)
{
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (p[i].tenant != tenant || p[i].offender)
      continue;
    uint64_t k = by_vram ? p[i].vram_bytes : p[i].sm_pct;
    if (k && (best < 0 || k > (by_vram ? p[best].vram_bytes : p[best].sm_pct)))
      best = i;
  }
  return best;
}

/* Marks the largest until the tenant's total (by the key) is at most budget. */
static int pick(struct verify_proc *p, int n, int tenant, uint64_t budget, bool by_vram)
{
  uint64_t total = 0;
  int marked = 0;
  for (int i = 0; i < n; i++)
    if (p[i].tenant == tenant)
      total += by_vram ? p[i].vram_bytes : p[i].sm_pct;
  while (total > budget) {
    int i = largest(p, n, tenant, by_vram);
    if (i < 0)
      break;
    p[i].offender = true;
    total -= by_vram ? p[i].vram_bytes : p[i].sm_pct;
    marked++;
  }
  return marked;
}

int verify_pick_vram(struct verify_proc *p, int n, int tenant, uint64_t limit)
{
  return pick(p, n, tenant, limit, true);
}

int verify_pick_compute(struct verify_proc *p, int n, int tenant, uint32_t limit_ppm)
{
  /* smUtil is in percent: the budget in the same unit, rounded up so that a tenant at its
   * limit keeps its processes. */
  return pick(p, n, tenant, (limit_ppm + 9999) / 10000, false);
}
