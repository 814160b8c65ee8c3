/* Device memory: the per-process allocation table, charging against the shared device
 * capacity, cuMemAlloc/cuMemFree and friends, memory info, address ranges and pointer
 * attributes. Host, managed and stream-ordered memory build on this (cuda-host.c,
 * cuda-managed.c, cuda-pool.c), as do VMM mappings (cuda-vmm.c).
 *
 * Every device allocation is an anonymous MAP_NORESERVE mapping, handed out as the device
 * pointer itself: a 141 GB device fits in a small machine because only touched pages cost
 * RAM, and copies are plain memcpy. The table lets frees find size and device and lets
 * copies check that a range lies inside one allocation instead of faulting. */
#include "cuda-internal.h"

#include <search.h>
#include <stdlib.h>
#include <sys/mman.h>

static void *g_tree;             /* tsearch tree of struct gsc_alloc, ordered by range */
static struct gsc_alloc *g_list; /* the same entries, for walking */

CUresult gsc_charge(int dev, uint64_t bytes)
{
  if (bytes == 0)
    return CUDA_SUCCESS;
  return gpusim_mem_reserve(gsc_phys(dev), bytes) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void gsc_uncharge(int dev, uint64_t bytes)
{
  if (bytes && !gsc.forking)
    gpusim_mem_release(gsc_phys(dev), bytes);
}

void *gsc_map(size_t len)
{
  void *p =
    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* ---- the table ---- */

/* Ranges compare equal when they overlap, so a lookup with [p, p + len) finds the entry
 * that holds p; entries themselves never overlap. */
static int range_cmp(const void *a, const void *b)
{
  const struct gsc_alloc *x = a, *y = b;
  uintptr_t xe = x->base + (x->size ? x->size : 1), ye = y->base + (y->size ? y->size : 1);
  if (xe <= y->base)
    return -1;
  if (ye <= x->base)
    return 1;
  return 0;
}

int gsc_alloc_insert(struct gsc_alloc *a)
{
  void *node = tsearch(a, &g_tree, range_cmp);
  if (!node || *(struct gsc_alloc **) node != a)
    return -1; /* out of memory, or overlapping an existing entry */
  a->prev = NULL;
  a->next = g_list;
  if (g_list)
    g_list->prev = a;
  g_list = a;
  return 0;
}

void gsc_alloc_remove(struct gsc_alloc *a)
{
  tdelete(a, &g_tree, range_cmp);
  if (a->prev)
    a->prev->next = a->next;
  else
    g_list = a->next;
  if (a->next)
    a->next->prev = a->prev;
}

struct gsc_alloc *gsc_alloc_find(uintptr_t p, size_t len)
{
  struct gsc_alloc key = { .base = p, .size = 1 };
  void *node = tfind(&key, &g_tree, range_cmp);
  if (!node)
    return NULL;
  struct gsc_alloc *a = *(struct gsc_alloc **) node;
  uintptr_t end = a->base + a->size;
  if (len > end - p)
    return NULL;
  return a;
}

struct gsc_alloc *gsc_alloc_overlap(uintptr_t p, size_t len)
{
  struct gsc_alloc key = { .base = p, .size = len };
  void *node = tfind(&key, &g_tree, range_cmp);
  return node ? *(struct gsc_alloc **) node : NULL;
}

struct gsc_alloc *gsc_alloc_first(void)
{
  return g_list;
}

static bool is_device_kind(const struct gsc_alloc *a)
{
  return a->kind != GSC_MEM_HOST;
}

CUresult gsc_dev_range(CUdeviceptr p, size_t len)
{
  GSC_LOCKED;
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) p, len);
  return a && is_device_kind(a) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- allocation and free ---- */

CUresult gsc_dev_alloc(struct CUctx_st *c, size_t size, enum gsc_mem_kind kind, CUdeviceptr *out)
{
  if (size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  GSC_TRY(gsc_charge(c->dev, size));
  struct gsc_alloc *a = calloc(1, sizeof(*a));
  void *p = a ? gsc_map_cached(size) : NULL;
  if (!p || (a->base = (uintptr_t) p, a->size = a->map_len = size, gsc_alloc_insert(a) < 0)) {
    if (p)
      gsc_unmap_cached(p, size);
    free(a);
    gsc_uncharge(c->dev, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->dev = c->dev;
  a->kind = kind;
  a->ctx = c;
  *out = (CUdeviceptr) a->base;
  return CUDA_SUCCESS;
}

/* VMM mappings live inside a reservation: freeing one puts the reservation's inaccessible
 * placeholder back rather than unmapping the range. */
static void vmm_unmap(struct gsc_alloc *a)
{
  mmap((void *) a->base, a->size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  gsc_vmm_put(a->vmm);
}

void gsc_alloc_free(struct gsc_alloc *a)
{
  gsc_alloc_remove(a);
  if (a->map_len && a->kind == GSC_MEM_DEVICE)
    gsc_unmap_cached((void *) a->base, a->map_len);
  else if (a->map_len)
    munmap((void *) a->base, a->map_len);
  switch (a->kind) {
  case GSC_MEM_DEVICE:
  case GSC_MEM_MANAGED: gsc_uncharge(a->dev, a->size); break;
  case GSC_MEM_POOL: gsc_pool_free_bytes(a->pool, a->size); break;
  case GSC_MEM_VMM: vmm_unmap(a); break;
  case GSC_MEM_IPC: gsc_ipc_gone(a); break;
  case GSC_MEM_HOST: break;
  }
  free(a);
}

GSC_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!dptr)
    return CUDA_ERROR_INVALID_VALUE;
  return gsc_dev_alloc(c, bytesize, GSC_MEM_DEVICE, dptr);
}

/* Rows are padded to 512 bytes, the texture pitch alignment of the simulated boards. */
GSC_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
      (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
    return CUDA_ERROR_INVALID_VALUE;
  size_t pitch = (WidthInBytes + GSC_PITCH_ALIGN - 1) / GSC_PITCH_ALIGN * GSC_PITCH_ALIGN;
  if (pitch < WidthInBytes || Height > SIZE_MAX / pitch)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_dev_alloc(c, pitch * Height, GSC_MEM_DEVICE, dptr));
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
  GSC_ENTER();
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) dptr, 0);
  if (!a || a->base != dptr || a->kind == GSC_MEM_HOST || a->kind == GSC_MEM_VMM ||
      a->kind == GSC_MEM_IPC)
    return CUDA_ERROR_INVALID_VALUE;
  gsc_alloc_free(a);
  return CUDA_SUCCESS;
}

/* Free memory is what every process together leaves on the device (on a MIG device, in its
 * GPU instance). A process that died
 * without freeing has already given its memory back on a real GPU, so look for those first. */
GSC_API CUresult cuMemGetInfo_v2(size_t *free_, size_t *total)
{
  struct CUctx_st *c;
  GSC_TRY(gsc_ctx_current(&c));
  if (!free_ || !total)
    return CUDA_ERROR_INVALID_VALUE;
  gpusim_reap_dead();
  uint64_t used = gsc_dev_used(c->dev), cap = gsc_dev_total(c->dev);
  *total = cap;
  *free_ = used < cap ? cap - used : 0;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
  GSC_ENTER();
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) dptr, 0);
  if (!a || !is_device_kind(a))
    return CUDA_ERROR_NOT_FOUND;
  if (pbase)
    *pbase = a->base;
  if (psize)
    *psize = a->size;
  return CUDA_SUCCESS;
}

/* ---- the 32-bit ABI ----
 * CUdeviceptr_v1 holds 32 bits, and the simulator's device pointers are host addresses far
 * above 4 GiB, so the pre-3.2 pointer entry points cannot work; they say so. */

GSC_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
  (void) dptr;
  (void) bytesize;
  GSC_CHECK_INIT();
  return CUDA_ERROR_NOT_SUPPORTED;
}

GSC_API CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                 unsigned int WidthInBytes, unsigned int Height,
                                 unsigned int ElementSizeBytes)
{
  (void) dptr, (void) pPitch, (void) WidthInBytes, (void) Height, (void) ElementSizeBytes;
  GSC_CHECK_INIT();
  return CUDA_ERROR_NOT_SUPPORTED;
}

GSC_API CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
  (void) dptr;
  GSC_CHECK_INIT();
  return CUDA_ERROR_NOT_SUPPORTED;
}

GSC_API CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                      CUdeviceptr_v1 dptr)
{
  (void) pbase, (void) psize, (void) dptr;
  GSC_CHECK_INIT();
  return CUDA_ERROR_NOT_SUPPORTED;
}

GSC_API CUresult cuMemGetInfo(unsigned int *free_, unsigned int *total)
{
  size_t f, t;
  if (!free_ || !total)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(cuMemGetInfo_v2(&f, &t));
  *free_ = f > UINT32_MAX ? UINT32_MAX : (unsigned int) f;
  *total = t > UINT32_MAX ? UINT32_MAX : (unsigned int) t;
  return CUDA_SUCCESS;
}

/* ---- pointer attributes ---- */

static CUresult pointer_attr(void *data, CUpointer_attribute attr, const struct gsc_alloc *a,
                             CUdeviceptr p)
{
  bool host = a->kind == GSC_MEM_HOST;
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *) data = a->ctx; break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned int *) data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *) data = p; break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (!host && a->kind != GSC_MEM_MANAGED)
      return CUDA_ERROR_INVALID_VALUE;
    *(void **) data = (void *) p;
    break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *) data = a->kind == GSC_MEM_MANAGED; break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *) data = host ? -1 : a->dev; break;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *) data = a->base; break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *) data = a->base; break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *) data = a->size; break;
  case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *) data = a->pool; break;
  default: return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

GSC_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
  GSC_ENTER_OUT(data);
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) ptr, 0);
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  return pointer_attr(data, attribute, a, ptr);
}
