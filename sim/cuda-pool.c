/* Stream-ordered allocation (cuMemAllocAsync, cuMemFreeAsync) and memory pools.
 *
 * A pool holds `reserved` bytes of device memory, `used` of them by live allocations. An
 * allocation takes from the free part of the reserve, and reserves more from the device
 * when that is short; a free gives bytes back to the pool, not to the device. The pool gives
 * its unused reserve back down to its release threshold (default 0) whenever a stream, event
 * or context synchronization completes, and down to any floor on cuMemPoolTrimTo. This is
 * what the real driver shows to NVML: freed stream-ordered memory stays "used" on the device
 * until the next synchronization. Each device has a default pool, which is also its current
 * pool until cuDeviceSetMemPool says otherwise. */
#include "cuda-internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static struct CUmemPoolHandle_st *pool_new(const CUmemPoolProps *props)
{
  struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  p->dev = props->location.id;
  p->props = *props;
  p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
  gsc_obj_add(&p->obj, GSC_POOL);
  return p;
}

CUresult gsc_pool_create_default(int dev)
{
  CUmemPoolProps props = { 0 };
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = dev;
  struct CUmemPoolHandle_st *p = pool_new(&props);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  p->is_default = true;
  gsc.default_pool[dev] = gsc.current_pool[dev] = p;
  return CUDA_SUCCESS;
}

void gsc_pool_trim(struct CUmemPoolHandle_st *p, uint64_t keep)
{
  uint64_t floor = gsc_max(keep, p->used);
  if (p->reserved > floor) {
    gsc_uncharge(p->dev, p->reserved - floor);
    p->reserved = floor;
  }
}

void gsc_pools_settle(int dev)
{
  GSC_FOREACH(o, GSC_POOL)
  {
    struct CUmemPoolHandle_st *p = (struct CUmemPoolHandle_st *) o;
    if (p->dev == dev)
      gsc_pool_trim(p, p->threshold);
  }
}

void gsc_pool_free_bytes(struct CUmemPoolHandle_st *p, uint64_t bytes)
{
  p->used -= bytes < p->used ? bytes : p->used;
}

/* Frees what is still allocated from the pool, gives its reserve back, and forgets it. */
void gsc_pool_destroy(struct CUmemPoolHandle_st *p)
{
  for (struct gsc_alloc *a = gsc_alloc_first(), *n; a; a = n) {
    n = a->next;
    if (a->kind == GSC_MEM_POOL && a->pool == p)
      gsc_alloc_free(a);
  }
  gsc_pool_trim(p, 0);
  gsc_obj_free(&p->obj);
}

/* ---- allocation ---- */

/* Grows the reserve so that size more bytes fit. */
static CUresult pool_reserve(struct CUmemPoolHandle_st *p, size_t size)
{
  uint64_t avail = p->reserved - p->used;
  if (avail >= size)
    return CUDA_SUCCESS;
  uint64_t need = size - avail;
  if (p->props.maxSize && p->reserved + need > p->props.maxSize)
    return CUDA_ERROR_OUT_OF_MEMORY;
  GSC_TRY(gsc_charge(p->dev, need));
  p->reserved += need;
  p->reserved_high = gsc_max(p->reserved_high, p->reserved);
  return CUDA_SUCCESS;
}

static CUresult pool_alloc(struct CUmemPoolHandle_st *p, size_t size, CUdeviceptr *out)
{
  GSC_TRY(pool_reserve(p, size));
  struct gsc_alloc *a = calloc(1, sizeof(*a));
  void *mem = a ? gsc_map(size) : NULL;
  if (!mem || (a->base = (uintptr_t) mem, a->size = a->map_len = size, gsc_alloc_insert(a) < 0)) {
    if (mem)
      munmap(mem, size);
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->dev = p->dev;
  a->kind = GSC_MEM_POOL;
  a->pool = p;
  p->used += size;
  p->used_high = gsc_max(p->used_high, p->used);
  *out = (CUdeviceptr) a->base;
  return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream h,
                            bool per_thread)
{
  struct CUstream_st *s;
  GSC_CHECK_INIT();
  if (!dptr || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  if (s->capture)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  struct CUmemPoolHandle_st *p =
    pool ? gsc_obj_find(pool, GSC_POOL) : gsc.current_pool[s->ctx->dev];
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  return pool_alloc(p, size, dptr);
}

GSC_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  return alloc_async(dptr, bytesize, NULL, hStream, false);
}

GSC_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  return alloc_async(dptr, bytesize, NULL, hStream, true);
}

GSC_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
  return pool ? alloc_async(dptr, bytesize, pool, hStream, false) : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
  return pool ? alloc_async(dptr, bytesize, pool, hStream, true) : CUDA_ERROR_INVALID_VALUE;
}

/* Memory from cuMemAlloc may be freed here too; it goes straight back to the device. */
static CUresult free_async(CUdeviceptr dptr, CUstream h, bool per_thread)
{
  struct CUstream_st *s;
  GSC_ENTER();
  GSC_TRY(gsc_stream_get(h, per_thread, &s));
  if (s->capture)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) dptr, 0);
  if (!a || a->base != dptr || (a->kind != GSC_MEM_POOL && a->kind != GSC_MEM_DEVICE))
    return CUDA_ERROR_INVALID_VALUE;
  gsc_alloc_free(a);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
  return free_async(dptr, hStream, false);
}

GSC_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
  return free_async(dptr, hStream, true);
}

/* ---- pools ---- */

GSC_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
  GSC_CHECK_INIT();
  if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      (poolProps->handleTypes & ~(unsigned) CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;
  /* Pools of host memory are not modelled. */
  if (poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_NOT_SUPPORTED;
  GSC_TRY(gsc_dev_check(poolProps->location.id));
  GSC_LOCKED;
  struct CUmemPoolHandle_st *p = pool_new(poolProps);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pool = p;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
  GSC_ENTER();
  struct CUmemPoolHandle_st *p = gsc_obj_find(pool, GSC_POOL);
  if (!p || p->is_default)
    return CUDA_ERROR_INVALID_VALUE;
  if (gsc.current_pool[p->dev] == p)
    gsc.current_pool[p->dev] = gsc.default_pool[p->dev];
  gsc_pool_destroy(p);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
  GSC_ENTER_DEV_OUT(dev, pool_out);
  *pool_out = gsc.default_pool[dev];
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
  GSC_ENTER_DEV_OUT(dev, pool);
  *pool = gsc.current_pool[dev];
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
  GSC_TRY(gsc_dev_check(dev));
  GSC_LOCKED;
  struct CUmemPoolHandle_st *p = gsc_obj_find(pool, GSC_POOL);
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  if (p->dev != dev)
    return CUDA_ERROR_INVALID_DEVICE;
  gsc.current_pool[dev] = p;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
  GSC_ENTER();
  struct CUmemPoolHandle_st *p = gsc_obj_find(pool, GSC_POOL);
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  gsc_pool_trim(p, minBytesToKeep);
  return CUDA_SUCCESS;
}

/* ---- attributes ---- */

static CUresult pool_set(struct CUmemPoolHandle_st *p, CUmemPool_attribute attr, const void *value)
{
  uint64_t v;
  switch (attr) {
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    memcpy(&p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES], value, sizeof(int));
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    memcpy(&p->threshold, value, sizeof(p->threshold));
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
    /* Only 0 is accepted: it resets the high-water mark to the current value. */
    memcpy(&v, value, sizeof(v));
    if (v != 0)
      return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
      p->reserved_high = p->reserved;
    else
      p->used_high = p->used;
    return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult pool_get(const struct CUmemPoolHandle_st *p, CUmemPool_attribute attr, void *value)
{
  uint64_t v;
  switch (attr) {
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    memcpy(value, &p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES], sizeof(int));
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = p->threshold; break;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v = p->reserved; break;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = p->reserved_high; break;
  case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = p->used; break;
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v = p->used_high; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  memcpy(value, &v, sizeof(v));
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
  GSC_ENTER_OUT(value);
  struct CUmemPoolHandle_st *p = gsc_obj_find(pool, GSC_POOL);
  return p ? pool_set(p, attr, value) : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
  GSC_ENTER_OUT(value);
  struct CUmemPoolHandle_st *p = gsc_obj_find(pool, GSC_POOL);
  return p ? pool_get(p, attr, value) : CUDA_ERROR_INVALID_VALUE;
}
