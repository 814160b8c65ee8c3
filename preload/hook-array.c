/* Hooks for CUDA arrays and mipmapped arrays, which HAMi-core never counts. The charge is the
 * texels times their size, computed before the driver is called; the driver's own padding
 * is not visible through the API and is not charged. Both ABIs of the array creators are
 * hooked: the _v2 symbols with size_t descriptors, and the unversioned ones with the 32-bit
 * v1 descriptors, which old binaries link and cuGetProcAddress hands out below 3020. */
#include "hooks.h"

static uint64_t format_bytes(CUarray_format f)
{
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8: return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF: return 2;
  default:
    return 4; /* 32-bit formats; packed and compressed formats are at most this per channel */
  }
}

static uint64_t dim(size_t d)
{
  return d ? d : 1;
}

/* Bytes of one level, or 0 on overflow. */
static uint64_t level_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned int channels)
{
  unsigned __int128 b =
    (unsigned __int128) dim(w) * dim(h) * dim(d) * format_bytes(f) * (channels ? channels : 1);
  return b > (1ULL << 56) - 1 ? 0 : (uint64_t) b;
}

static void undo_array(uint64_t a)
{
  gs__cuda.cuArrayDestroy((CUarray) (uintptr_t) a);
}

static void undo_mipmap(uint64_t a)
{
  gs__cuda.cuMipmappedArrayDestroy((CUmipmappedArray) (uintptr_t) a);
}

static CUresult call_2d(CUarray *out, const void *d)
{
  return gs__cuda.cuArrayCreate_v2(out, d);
}

static CUresult call_3d(CUarray *out, const void *d)
{
  return gs__cuda.cuArray3DCreate_v2(out, d);
}

static CUresult call_2d_v1(CUarray *out, const void *d)
{
  return gs__cuda.cuArrayCreate(out, d);
}

static CUresult call_3d_v1(CUarray *out, const void *d)
{
  return gs__cuda.cuArray3DCreate(out, d);
}

/* Charges bytes (0: nothing to charge, pass through), creates, and remembers the array. */
static CUresult create_charged(CUarray *out, const void *d, uint64_t bytes, const char *what,
                               CUresult (*call)(CUarray *, const void *))
{
  if (!bytes)
    return call(out, d);
  int gpu = gs__current_gpu();
  CUresult rc = gs__charge(gpu, bytes, what);
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = call(out, d);
  return gs__settle(rc, GS_MAP_ARRAY, rc == CUDA_SUCCESS ? (uintptr_t) *out : 0, bytes, gpu,
                    undo_array);
}

GS_HOOK CUresult cuArrayCreate_v2(CUarray *out, const CUDA_ARRAY_DESCRIPTOR *d)
{
  GS_REAL_OR_FAIL(cuArrayCreate_v2);
  uint64_t bytes = out && d ? level_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels) : 0;
  return create_charged(out, d, bytes, "cuArrayCreate", call_2d);
}

GS_HOOK CUresult cuArray3DCreate_v2(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
  GS_REAL_OR_FAIL(cuArray3DCreate_v2);
  uint64_t bytes =
    out && d ? level_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels) : 0;
  return create_charged(out, d, bytes, "cuArray3DCreate", call_3d);
}

GS_HOOK CUresult cuArrayCreate(CUarray *out, const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
  GS_REAL_OR_FAIL(cuArrayCreate);
  uint64_t bytes = out && d ? level_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels) : 0;
  return create_charged(out, d, bytes, "cuArrayCreate", call_2d_v1);
}

GS_HOOK CUresult cuArray3DCreate(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
  GS_REAL_OR_FAIL(cuArray3DCreate);
  uint64_t bytes =
    out && d ? level_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels) : 0;
  return create_charged(out, d, bytes, "cuArray3DCreate", call_3d_v1);
}

GS_HOOK CUresult cuArrayDestroy(CUarray a)
{
  uint64_t charge = 0;
  GS_REAL_OR_FAIL(cuArrayDestroy);
  bool ours = gs__forget(GS_MAP_ARRAY, (uintptr_t) a, &charge);
  return gs__settle_free(gs__cuda.cuArrayDestroy(a), GS_MAP_ARRAY, (uintptr_t) a, ours, charge);
}

/* Each level halves every dimension, down to 1. */
static uint64_t mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels)
{
  uint64_t total = 0;
  for (unsigned int l = 0; l < levels && l < 64; l++) {
    uint64_t b = level_bytes(dim(d->Width >> l), d->Height ? dim(d->Height >> l) : 0,
                             d->Depth ? dim(d->Depth >> l) : 0, d->Format, d->NumChannels);
    if (!b || total + b < total)
      return 0;
    total += b;
  }
  return total;
}

GS_HOOK CUresult cuMipmappedArrayCreate(CUmipmappedArray *out, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                        unsigned int levels)
{
  GS_REAL_OR_FAIL(cuMipmappedArrayCreate);
  uint64_t bytes = out && d ? mipmap_bytes(d, levels) : 0;
  if (!bytes)
    return gs__cuda.cuMipmappedArrayCreate(out, d, levels);
  int gpu = gs__current_gpu();
  CUresult rc = gs__charge(gpu, bytes, "cuMipmappedArrayCreate");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = gs__cuda.cuMipmappedArrayCreate(out, d, levels);
  return gs__settle(rc, GS_MAP_ARRAY, rc == CUDA_SUCCESS ? (uintptr_t) *out : 0, bytes, gpu,
                    undo_mipmap);
}

GS_HOOK CUresult cuMipmappedArrayDestroy(CUmipmappedArray a)
{
  uint64_t charge = 0;
  GS_REAL_OR_FAIL(cuMipmappedArrayDestroy);
  bool ours = gs__forget(GS_MAP_ARRAY, (uintptr_t) a, &charge);
  return gs__settle_free(gs__cuda.cuMipmappedArrayDestroy(a), GS_MAP_ARRAY, (uintptr_t) a, ours,
                         charge);
}
