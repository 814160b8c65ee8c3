/* Allocation by cuMemAllocPitch_v2: the request becomes rows of up to 64 KiB, and the driver
 * picks the pitch, so the charge is pitch x height. */
#include "wl.h"

#define PITCH_ROW_MAX (64u * 1024u)

static CUresult pitch_alloc(uint64_t size, uint64_t *handle, uint64_t *charged)
{
  size_t width = size < PITCH_ROW_MAX ? (size_t) size : PITCH_ROW_MAX;
  size_t height = (size_t) ((size + width - 1) / width);
  size_t pitch = 0;
  CUdeviceptr p = 0;

  CUresult rc = wl_cu.cuMemAllocPitch_v2(&p, &pitch, width, height, 4);
  *handle = p;
  *charged = (uint64_t) pitch * height;
  return rc;
}

static CUresult pitch_free(uint64_t handle)
{
  return wl_cu.cuMemFree_v2(handle);
}

const struct wl_alloc_ops wl_alloc_pitch = { "pitch", pitch_alloc, pitch_free, NULL };
