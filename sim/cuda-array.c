/* CUDA arrays and mipmapped arrays. They hold no data here (nothing reads texture memory),
 * but they take device memory: width x height x depth x channels x element size, each level
 * of a mipmap halving every dimension. Block-compressed and video formats are counted at one
 * byte per element, which is close enough for capacity accounting. Arrays belong to the
 * context that made them and are freed with it. */
#include "cuda-internal.h"

#include <stdlib.h>

struct CUarray_st {
  struct gsc_obj obj;
  struct CUctx_st *ctx;
  uint64_t bytes;
  CUDA_ARRAY3D_DESCRIPTOR desc;
};

/* Mipmapped arrays have the same shape; a distinct struct keeps the handle types apart. */
struct CUmipmappedArray_st {
  struct CUarray_st a;
};

static unsigned element_size(CUarray_format f)
{
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF:
  case CU_AD_FORMAT_UNORM_INT8X2:
  case CU_AD_FORMAT_SNORM_INT8X2:
  case CU_AD_FORMAT_UNORM_INT16X1:
  case CU_AD_FORMAT_SNORM_INT16X1: return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32:
  case CU_AD_FORMAT_SIGNED_INT32:
  case CU_AD_FORMAT_FLOAT:
  case CU_AD_FORMAT_UNORM_INT8X4:
  case CU_AD_FORMAT_SNORM_INT8X4:
  case CU_AD_FORMAT_UNORM_INT16X2:
  case CU_AD_FORMAT_SNORM_INT16X2:
  case CU_AD_FORMAT_UNORM_INT_101010_2: return 4;
  case CU_AD_FORMAT_UNORM_INT16X4:
  case CU_AD_FORMAT_SNORM_INT16X4: return 8;
  default: return 1;
  }
}

/* Bytes of one level, or 0 when the descriptor is invalid or the size overflows. */
static uint64_t level_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned level)
{
  if (d->Width == 0 || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
    return 0;
  uint64_t w = d->Width >> level, h = (d->Height ? d->Height : 1) >> level,
           z = (d->Depth ? d->Depth : 1) >> level;
  uint64_t dims[] = { w ? w : 1, h ? h : 1, z ? z : 1, d->NumChannels, element_size(d->Format) };
  uint64_t bytes = 1;
  for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
    if (dims[i] > UINT64_MAX / bytes)
      return 0;
    bytes *= dims[i];
  }
  return bytes;
}

static CUresult array_new(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels, enum gsc_kind kind,
                          void **out)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!out || !d || levels == 0)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t bytes = 0;
  for (unsigned l = 0; l < levels; l++) {
    uint64_t b = level_bytes(d, l);
    if (b == 0 || bytes + b < bytes)
      return CUDA_ERROR_INVALID_VALUE;
    bytes += b;
  }
  GSC_LOCKED;
  GSC_TRY(gsc_charge(c->dev, bytes));
  struct CUarray_st *a =
    calloc(1, kind == GSC_MIPMAP ? sizeof(struct CUmipmappedArray_st) : sizeof(*a));
  if (!a) {
    gsc_uncharge(c->dev, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->ctx = c;
  a->bytes = bytes;
  a->desc = *d;
  gsc_obj_add(&a->obj, kind);
  *out = a;
  return CUDA_SUCCESS;
}

static void array_free(void *p)
{
  struct CUarray_st *a = p;
  gsc_uncharge(a->ctx->dev, a->bytes);
  gsc_obj_free(&a->obj);
}

void gsc_array_ctx_gone(struct CUctx_st *c)
{
  gsc_obj_free_owned(GSC_ARRAY, offsetof(struct CUarray_st, ctx), c, array_free);
  gsc_obj_free_owned(GSC_MIPMAP, offsetof(struct CUarray_st, ctx), c, array_free);
}

static CUresult array_destroy(const void *h, enum gsc_kind kind)
{
  return gsc_obj_destroy(h, kind, array_free, CUDA_ERROR_INVALID_HANDLE);
}

GSC_API CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
  return array_new(pAllocateArray, 1, GSC_ARRAY, (void **) pHandle);
}

GSC_API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
  if (!pAllocateArray)
    return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d = { pAllocateArray->Width,  pAllocateArray->Height,      0,
                                pAllocateArray->Format, pAllocateArray->NumChannels, 0 };
  return cuArray3DCreate_v2(pHandle, &d);
}

GSC_API CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
  if (!pAllocateArray)
    return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY3D_DESCRIPTOR_v1 *v1 = pAllocateArray;
  CUDA_ARRAY3D_DESCRIPTOR d = { v1->Width,  v1->Height,      v1->Depth,
                                v1->Format, v1->NumChannels, v1->Flags };
  return cuArray3DCreate_v2(pHandle, &d);
}

GSC_API CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
  if (!pAllocateArray)
    return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY_DESCRIPTOR_v1 *v1 = pAllocateArray;
  CUDA_ARRAY3D_DESCRIPTOR d = { v1->Width, v1->Height, 0, v1->Format, v1->NumChannels, 0 };
  return cuArray3DCreate_v2(pHandle, &d);
}

GSC_API CUresult cuArrayDestroy(CUarray hArray)
{
  return array_destroy(hArray, GSC_ARRAY);
}

GSC_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                        const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                        unsigned int numMipmapLevels)
{
  return array_new(pMipmappedArrayDesc, numMipmapLevels, GSC_MIPMAP, (void **) pHandle);
}

GSC_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
  return array_destroy(hMipmappedArray, GSC_MIPMAP);
}
