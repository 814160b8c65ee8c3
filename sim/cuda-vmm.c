/* Virtual memory management: physical allocations (cuMemCreate), address reservations
 * (cuMemAddressReserve) and the mappings between them (cuMemMap).
 *
 * A physical allocation is a memfd of its size, charged to its device: mapping one handle
 * at two addresses shows the same bytes at both, as on a GPU, and untouched pages cost no
 * RAM. A reservation is an inaccessible NORESERVE mapping; cuMemMap maps the memfd over part
 * of it (readable and writable at once; cuMemSetAccess can narrow that), and each mapping is
 * an entry in the allocation table so copies and sets can use it. A handle lives while it
 * has user references (create, retain, less release) or mappings. The granularity is 2 MiB.
 * Exporting and importing handles between processes is in cuda-ipc.c. */
#include "cuda-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct reservation {
  uintptr_t base;
  size_t size;
  struct reservation *next;
};

static struct reservation *g_reservations;

static struct gsc_vmm *vmm_find(CUmemGenericAllocationHandle handle)
{
  return gsc_obj_find((const void *) (uintptr_t) handle, GSC_VMM);
}

struct gsc_vmm *gsc_vmm_find(CUmemGenericAllocationHandle handle)
{
  return vmm_find(handle);
}

void gsc_vmm_put(struct gsc_vmm *h)
{
  if (--h->refs > 0)
    return;
  close(h->fd);
  if (!h->imported)
    gsc_uncharge(h->dev, h->size);
  gsc_obj_free(&h->obj);
}

static CUresult prop_check(const CUmemAllocationProp *prop)
{
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  return gsc_dev_check(prop->location.id);
}

GSC_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option)
{
  GSC_CHECK_INIT();
  if (!granularity ||
      (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
       option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(prop_check(prop));
  *granularity = GSC_VMM_GRANULARITY;
  return CUDA_SUCCESS;
}

/* ---- physical allocations ---- */

/* The name is what an importing process learns the handle's device and handle types from
 * (cuda-ipc.c reads it back through /proc/self/fd). */
int gsc_vmm_memfd(size_t size, const CUmemAllocationProp *prop)
{
  char name[64];
  snprintf(name, sizeof(name), GSC_VMM_MEMFD_NAME, prop->location.id,
           (unsigned) prop->requestedHandleTypes);
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd >= 0 && ftruncate(fd, (off_t) size) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct gsc_vmm *gsc_vmm_wrap(int fd, size_t size, const CUmemAllocationProp *prop, bool imported)
{
  struct gsc_vmm *h = calloc(1, sizeof(*h));
  if (!h)
    return NULL;
  h->fd = fd;
  h->size = size;
  h->dev = prop->location.id;
  h->refs = h->user_refs = 1;
  h->prop = *prop;
  h->imported = imported;
  gsc_obj_add(&h->obj, GSC_VMM);
  return h;
}

static struct gsc_vmm *vmm_new(size_t size, const CUmemAllocationProp *prop)
{
  int fd = gsc_vmm_memfd(size, prop);
  if (fd < 0)
    return NULL;
  struct gsc_vmm *h = gsc_vmm_wrap(fd, size, prop, false);
  if (!h)
    close(fd);
  return h;
}

GSC_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
  GSC_CHECK_INIT();
  if (!handle || flags || size == 0 || size % GSC_VMM_GRANULARITY)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(prop_check(prop));
  GSC_LOCKED;
  GSC_TRY(gsc_charge(prop->location.id, size));
  struct gsc_vmm *h = vmm_new(size, prop);
  if (!h) {
    gsc_uncharge(prop->location.id, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *handle = (CUmemGenericAllocationHandle) (uintptr_t) h;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
  GSC_ENTER();
  struct gsc_vmm *h = vmm_find(handle);
  if (!h || h->user_refs == 0)
    return CUDA_ERROR_INVALID_VALUE;
  h->user_refs--;
  gsc_vmm_put(h);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                        CUmemGenericAllocationHandle handle)
{
  GSC_ENTER_OUT(prop);
  struct gsc_vmm *h = vmm_find(handle);
  if (!h)
    return CUDA_ERROR_INVALID_VALUE;
  *prop = h->prop;
  return CUDA_SUCCESS;
}

/* ---- reservations ---- */

static struct reservation *reservation_holding(uintptr_t p, size_t len)
{
  for (struct reservation *r = g_reservations; r; r = r->next)
    if (p >= r->base && len <= r->size && p - r->base <= r->size - len)
      return r;
  return NULL;
}

/* An inaccessible range of size bytes aligned to `align`, near `hint` if it is free. */
static void *reserve_range(size_t size, size_t align, uintptr_t hint)
{
  if (hint && hint % align == 0) {
    void *p = mmap((void *) hint, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED)
      return p;
  }
  size_t len = size + align;
  char *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  char *start = (char *) (((uintptr_t) p + align - 1) / align * align);
  if (start > p)
    munmap(p, (size_t) (start - p));
  if (start + size < p + len)
    munmap(start + size, (size_t) (p + len - (start + size)));
  return start;
}

GSC_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags)
{
  GSC_CHECK_INIT();
  if (!ptr || flags || size == 0 || size % GSC_VMM_GRANULARITY || (alignment & (alignment - 1)))
    return CUDA_ERROR_INVALID_VALUE;
  if (alignment < GSC_VMM_GRANULARITY)
    alignment = GSC_VMM_GRANULARITY;
  GSC_LOCKED;
  struct reservation *r = calloc(1, sizeof(*r));
  void *p = r ? reserve_range(size, alignment, (uintptr_t) addr) : NULL;
  if (!p) {
    free(r);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  r->base = (uintptr_t) p;
  r->size = size;
  r->next = g_reservations;
  g_reservations = r;
  *ptr = (CUdeviceptr) r->base;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
  GSC_ENTER();
  for (struct reservation **rp = &g_reservations; *rp; rp = &(*rp)->next) {
    struct reservation *r = *rp;
    if (r->base != ptr || r->size != size)
      continue;
    if (gsc_alloc_overlap(r->base, r->size))
      return CUDA_ERROR_INVALID_VALUE; /* still mapped */
    munmap((void *) r->base, r->size);
    *rp = r->next;
    free(r);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- mappings ---- */

GSC_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags)
{
  GSC_CHECK_INIT();
  if (flags || size == 0 || size % GSC_VMM_GRANULARITY || offset % GSC_VMM_GRANULARITY)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  struct gsc_vmm *h = vmm_find(handle);
  if (!h || offset > h->size || size > h->size - offset)
    return CUDA_ERROR_INVALID_VALUE;
  if (!reservation_holding(ptr, size) || gsc_alloc_overlap(ptr, size))
    return CUDA_ERROR_INVALID_VALUE;
  struct gsc_alloc *a = calloc(1, sizeof(*a));
  if (!a)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (mmap((void *) ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, h->fd,
           (off_t) offset) == MAP_FAILED) {
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *a = (struct gsc_alloc){ .base = ptr,
                           .size = size,
                           .dev = h->dev,
                           .kind = GSC_MEM_VMM,
                           .vmm = h,
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
  gsc_alloc_insert(a);
  h->refs++;
  return CUDA_SUCCESS;
}

/* The range must be made of whole mappings. */
GSC_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
  GSC_ENTER();
  uintptr_t end = ptr + size;
  bool any = false;
  for (struct gsc_alloc *a = gsc_alloc_first(); a; a = a->next) {
    bool overlaps = a->base < end && ptr < a->base + a->size;
    if (overlaps && (a->kind != GSC_MEM_VMM || a->base < ptr || a->base + a->size > end))
      return CUDA_ERROR_INVALID_VALUE;
    any |= overlaps;
  }
  if (!any)
    return CUDA_ERROR_INVALID_VALUE;
  for (struct gsc_alloc *a = gsc_alloc_first(), *n; a; a = n) {
    n = a->next;
    if (a->base >= ptr && a->base + a->size <= end)
      gsc_alloc_free(a);
  }
  return CUDA_SUCCESS;
}

static int prot_of(CUmemAccess_flags f)
{
  return f == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
    : f == CU_MEM_ACCESS_FLAGS_PROT_READ         ? PROT_READ
                                                 : PROT_NONE;
}

GSC_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                size_t count)
{
  GSC_CHECK_INIT();
  if (!desc || count == 0 || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE || desc[i].flags == 2)
      return CUDA_ERROR_INVALID_VALUE;
    GSC_TRY(gsc_dev_check(desc[i].location.id));
    /* One address space serves every device: the widest access asked for wins. */
    if (desc[i].flags > flags)
      flags = desc[i].flags;
  }
  GSC_LOCKED;
  uintptr_t end = ptr + size;
  for (uintptr_t p = ptr; p < end;) {
    struct gsc_alloc *a = gsc_alloc_find(p, 1);
    if (!a || a->kind != GSC_MEM_VMM)
      return CUDA_ERROR_INVALID_VALUE;
    p = a->base + a->size;
  }
  for (uintptr_t p = ptr; p < end;) {
    struct gsc_alloc *a = gsc_alloc_find(p, 1);
    mprotect((void *) a->base, a->size, prot_of(flags));
    a->flags = flags;
    p = a->base + a->size;
  }
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                CUdeviceptr ptr)
{
  GSC_CHECK_INIT();
  if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_dev_check(location->id));
  GSC_LOCKED;
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) ptr, 1);
  if (!a || a->kind != GSC_MEM_VMM)
    return CUDA_ERROR_INVALID_VALUE;
  *flags = a->flags;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
  GSC_ENTER_OUT(handle);
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) addr, 1);
  if (!a || a->kind != GSC_MEM_VMM)
    return CUDA_ERROR_INVALID_VALUE;
  a->vmm->refs++;
  a->vmm->user_refs++;
  *handle = (CUmemGenericAllocationHandle) (uintptr_t) a->vmm;
  return CUDA_SUCCESS;
}
