/* Mode `churn`: --ops random operations, each either an allocation of 1..--max-bytes bytes or
 * the free of a random live allocation, then frees what is left. The sequence is fixed by
 * --seed, so a failure can be replayed. */
#include "wl.h"

#include <stdio.h>

/* splitmix64: small, seedable, and good enough to pick sizes and victims. */
static uint64_t churn_next(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int churn_ops(const struct wl_opts *o, struct wl_allocs *a, uint64_t *peak)
{
  uint64_t s = o->seed;

  for (uint64_t i = 0; i < o->ops; i++) {
    uint64_t r = churn_next(&s);
    CUresult rc;
    if (a->n == 0 || (r & 1)) {
      uint64_t size = 1 + churn_next(&s) % o->max_bytes;
      if ((rc = wl_allocs_add(a, size)) != CUDA_SUCCESS)
        return wl_fail("op %llu: alloc %s %llu bytes: %s", (unsigned long long) i, o->alloc->name,
                       (unsigned long long) size, wl_error_name(rc));
    } else if ((rc = wl_allocs_remove(a, churn_next(&s) % a->n)) != CUDA_SUCCESS) {
      return wl_fail("op %llu: free %s: %s", (unsigned long long) i, o->alloc->name,
                     wl_error_name(rc));
    }
    if (a->n > *peak)
      *peak = a->n;
  }
  return 0;
}

int wl_mode_churn(const struct wl_opts *o)
{
  struct wl_allocs a = { .ops = o->alloc };
  uint64_t peak = 0;

  if (wl_gpu_open(o->device, false) < 0)
    return -1;
  int rc = churn_ops(o, &a, &peak);
  CUresult freed = wl_allocs_clear(&a);
  wl_gpu_close();
  if (rc == 0 && freed != CUDA_SUCCESS)
    rc = wl_cuda_fail("free", freed);
  if (rc == 0) {
    printf("{\"mode\":\"churn\",\"alloc\":\"%s\",\"ops\":%llu,\"seed\":%llu,\"peak_live\":%llu",
           o->alloc->name, (unsigned long long) o->ops, (unsigned long long) o->seed,
           (unsigned long long) peak);
    wl_line_end();
  }
  return rc;
}
