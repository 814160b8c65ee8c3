/* Allocation by cuArrayCreate_v2: a 2D array of single-channel floats, rows of up to 8192
 * elements (32 KiB), as many rows as it takes to hold the request. */
#include "wl.h"

#include <stdint.h>

#define ARRAY_ROW_ELEMS 8192u

static CUresult array_alloc(uint64_t size, uint64_t *handle, uint64_t *charged)
{
  uint64_t elems = (size + 3) / 4;
  CUDA_ARRAY_DESCRIPTOR d = {
    .Width = elems < ARRAY_ROW_ELEMS ? (size_t) elems : ARRAY_ROW_ELEMS,
    .Format = CU_AD_FORMAT_FLOAT,
    .NumChannels = 1,
  };
  CUarray a = NULL;

  d.Height = (size_t) ((elems + d.Width - 1) / d.Width);
  CUresult rc = wl_cu.cuArrayCreate_v2(&a, &d);
  *handle = (uint64_t) (uintptr_t) a;
  *charged = (uint64_t) d.Width * d.Height * 4;
  return rc;
}

static CUresult array_free(uint64_t handle)
{
  return wl_cu.cuArrayDestroy((CUarray) (uintptr_t) handle);
}

const struct wl_alloc_ops wl_alloc_array = { "array", array_alloc, array_free, NULL };
