/* One interface over the driver's ways to allocate device memory, one file per way
 * (alloc-plain.c, alloc-pitch.c, ...). A path may round the request up (pitch, array, vmm);
 * it reports the bytes it asked the driver for, so that callers can compare with what the
 * device says is in use. */
#ifndef WL_ALLOC_H
#define WL_ALLOC_H

#include <stdint.h>

#include "gs-cuda.h"

struct wl_alloc_ops {
  const char *name;
  /* Allocates at least size bytes into *handle; *charged gets the bytes requested of the
   * driver after this path's own rounding. */
  CUresult (*alloc)(uint64_t size, uint64_t *handle, uint64_t *charged);
  CUresult (*free)(uint64_t handle);
  /* Releases what the path keeps between allocations (a pool); NULL if nothing. */
  void (*fini)(void);
};

extern const struct wl_alloc_ops wl_alloc_plain, wl_alloc_pitch, wl_alloc_managed, wl_alloc_async,
  wl_alloc_pool, wl_alloc_vmm, wl_alloc_array;

/* The path named `name`, or NULL. */
const struct wl_alloc_ops *wl_alloc_find(const char *name);

/* A growable list of live allocations of one path. */
struct wl_allocs {
  const struct wl_alloc_ops *ops;
  uint64_t *handles;
  uint64_t *charged;
  uint64_t n, cap, bytes;
};
/* Allocates size bytes and records it; returns the driver's result. */
CUresult wl_allocs_add(struct wl_allocs *a, uint64_t size);
/* Frees entry i (the last entry takes its place). */
CUresult wl_allocs_remove(struct wl_allocs *a, uint64_t i);
/* Frees everything, returning the first failure; always releases the list itself. */
CUresult wl_allocs_clear(struct wl_allocs *a);

#endif
