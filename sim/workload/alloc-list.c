/* The list of live allocations that the allocating modes keep, and the lookup of a path by
 * name. The paths themselves are in alloc-<kind>.c. */
#include "wl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct wl_alloc_ops *const wl_allocs_known[] = {
  &wl_alloc_plain, &wl_alloc_pitch, &wl_alloc_managed, &wl_alloc_async,
  &wl_alloc_pool,  &wl_alloc_vmm,   &wl_alloc_array,
};

const struct wl_alloc_ops *wl_alloc_find(const char *name)
{
  for (size_t i = 0; i < sizeof(wl_allocs_known) / sizeof(wl_allocs_known[0]); i++)
    if (strcmp(wl_allocs_known[i]->name, name) == 0)
      return wl_allocs_known[i];
  return NULL;
}

/* Host memory running out is not what this program measures: it is fatal. */
static void *xrealloc(void *p, size_t n)
{
  void *q = realloc(p, n);
  if (!q) {
    fprintf(stderr, "gpusim-workload: out of host memory\n");
    exit(1);
  }
  return q;
}

CUresult wl_allocs_add(struct wl_allocs *a, uint64_t size)
{
  uint64_t handle = 0, charged = 0;

  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 64;
    a->handles = xrealloc(a->handles, a->cap * sizeof(*a->handles));
    a->charged = xrealloc(a->charged, a->cap * sizeof(*a->charged));
  }
  CUresult rc = a->ops->alloc(size, &handle, &charged);
  if (rc != CUDA_SUCCESS)
    return rc;
  a->handles[a->n] = handle;
  a->charged[a->n] = charged;
  a->n++;
  a->bytes += charged;
  return CUDA_SUCCESS;
}

CUresult wl_allocs_remove(struct wl_allocs *a, uint64_t i)
{
  CUresult rc = a->ops->free(a->handles[i]);
  a->bytes -= a->charged[i];
  a->n--;
  a->handles[i] = a->handles[a->n];
  a->charged[i] = a->charged[a->n];
  return rc;
}

CUresult wl_allocs_clear(struct wl_allocs *a)
{
  CUresult first = CUDA_SUCCESS;

  while (a->n > 0) {
    CUresult rc = wl_allocs_remove(a, a->n - 1);
    if (first == CUDA_SUCCESS)
      first = rc;
  }
  if (a->ops->fini)
    a->ops->fini();
  free(a->handles);
  free(a->charged);
  a->handles = a->charged = NULL;
  a->cap = 0;
  return first;
}
