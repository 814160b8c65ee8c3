/* Hooks for the plain allocation paths: cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged and
 * their frees, and what the tenant sees of its memory: cuMemGetInfo and cuDeviceTotalMem. */
#include "hooks.h"
#include "resume-wait.h"

#define PITCH_ALIGN \
  512 /* the widest pitch alignment of supported GPUs: the charge never falls short */

static void undo_free(uint64_t p)
{
  gs__cuda.cuMemFree_v2((CUdeviceptr) p);
}

static inline __attribute__((always_inline)) CUresult alloc_tracked(
  CUdeviceptr *dptr, size_t bytes, const char *what,
  CUresult (*call)(CUdeviceptr *, size_t, unsigned int), unsigned int flags)
{
  int gpu = gs__current_gpu();
  CUresult rc = gs__charge(gpu, bytes, what);
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = call(dptr, bytes, flags);
  return gs__settle(rc, GS_MAP_PTR, rc == CUDA_SUCCESS ? *dptr : 0, bytes, gpu, undo_free);
}

static CUresult plain(CUdeviceptr *dptr, size_t bytes, unsigned int flags)
{
  (void) flags;
  return gs__cuda.cuMemAlloc_v2(dptr, bytes);
}

static CUresult managed(CUdeviceptr *dptr, size_t bytes, unsigned int flags)
{
  return gs__cuda.cuMemAllocManaged(dptr, bytes, flags);
}

/* Everything cuMemAlloc_v2's fast path leaves: the first allocation on the thread's GPU, a
 * charge that does not fit at once, bad arguments, no tenant. It opens the thread's lane. */
static __attribute__((noinline)) CUresult alloc_v2_slow(CUdeviceptr *dptr, size_t bytesize)
{
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemAlloc_v2);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAlloc_v2(dptr, bytesize);
  CUresult rc = alloc_tracked(dptr, bytesize, "cuMemAlloc", plain, 0);
  struct gs__lane *ln = gs__lane(gs__current_gpu());
  if (ln && !gs__tls.used)
    gs__thread_slot_want();
  gs__tls.lane = gs__tls.used ? ln : NULL; /* the fast path charges the thread's own slot */
  return rc;
}

/* The driver refused (rc), or made the allocation at p but the map could not record it (p
 * not 0: it is undone): the charge goes back. */
static __attribute__((noinline)) CUresult alloc_v2_undo(CUresult rc, CUdeviceptr p, uint64_t charge)
{
  if (p)
    undo_free(p);
  gs__uncharge(GS_CHARGE_GPU(charge), GS_CHARGE_BYTES(charge));
  return rc;
}

/* The common case takes the thread's lane (its GPU's, cached per thread like the current GPU),
 * charges it, calls the driver and records the allocation, keeping nothing else across the
 * call: every other case goes the full way. An open lane means the driver's cuMemAlloc_v2 was
 * found; a null dptr is the driver's to refuse, and the charge then goes back. */
GS_HOOK CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
  struct gs__lane *ln = gs__tls.lane;
  if (__builtin_expect(!ln || !gs__running() || !gs__lane_take(ln, bytesize), 0))
    return alloc_v2_slow(dptr, bytesize);
  gs__own_add(&gs__tls.used[ln->gpu], bytesize); /* a thread with a lane has a slot */
  uint64_t charge = ln->tag | bytesize;
  CUresult rc = gs__cuda.cuMemAlloc_v2(dptr, bytesize);
  if (__builtin_expect(rc != CUDA_SUCCESS, 0))
    return alloc_v2_undo(rc, 0, charge);
  if (__builtin_expect(gs_ptrmap_put(&gs__maps[GS_MAP_PTR], *dptr, charge) == 0, 1))
    return CUDA_SUCCESS;
  return alloc_v2_undo(CUDA_ERROR_OUT_OF_MEMORY, *dptr, charge);
}

GS_HOOK CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemAllocManaged);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAllocManaged(dptr, bytesize, flags);
  return alloc_tracked(dptr, bytesize, "cuMemAllocManaged", managed, flags);
}

GS_HOOK CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                    unsigned int elem)
{
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemAllocPitch_v2);
  size_t padded = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
  if (!dptr || !pitch || width == 0 || height == 0 || padded < width || height > SIZE_MAX / padded)
    return gs__cuda.cuMemAllocPitch_v2(dptr, pitch, width, height, elem);
  int gpu = gs__current_gpu();
  uint64_t charged = (uint64_t) padded * height;
  CUresult rc = gs__charge(gpu, charged, "cuMemAllocPitch");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = gs__cuda.cuMemAllocPitch_v2(dptr, pitch, width, height, elem);
  if (rc == CUDA_SUCCESS && (uint64_t) *pitch * height < charged) {
    gs__uncharge(gpu, charged - (uint64_t) *pitch * height); /* the driver padded less */
    charged = (uint64_t) *pitch * height;
  }
  return gs__settle(rc, GS_MAP_PTR, rc == CUDA_SUCCESS ? *dptr : 0, charged, gpu, undo_free);
}

static __attribute__((noinline)) CUresult free_v2_slow(CUdeviceptr dptr)
{
  uint64_t charge = 0;
  GS_RESUMED_OR_RETURN();
  GS_REAL_OR_FAIL(cuMemFree_v2);
  if (atomic_load_explicit(&gs__maps_live, memory_order_acquire)) {
    if (!gs__tls.used)
      gs__thread_slot_want();
    if (gs__tls.used) /* the fast path gives back to the thread's own slot */
      gs__tls.free_gate = atomic_load(&gs__run_state);
  }
  bool ours = gs__forget(GS_MAP_PTR, dptr, &charge);
  return gs__settle_free(gs__cuda.cuMemFree_v2(dptr), GS_MAP_PTR, dptr, ours, charge);
}

static __attribute__((noinline)) CUresult free_v2_refused(CUresult rc, CUdeviceptr dptr,
                                                          uint64_t charge)
{
  return gs__settle_free(rc, GS_MAP_PTR, dptr, true, charge);
}

/* The common case: a pointer the map holds is taken out and its charge given back before the
 * driver frees it (so that an allocation reusing the address never loses its own entry);
 * what the map does not hold goes straight to the driver. */
GS_HOOK CUresult cuMemFree_v2(CUdeviceptr dptr)
{
  uint64_t charge;
  if (__builtin_expect(!gs__word_is_zero(gs__tls.free_gate), 0)) /* GS_RUN_RUNNING */
    return free_v2_slow(dptr);
  if (!gs_ptrmap_take(&gs__maps[GS_MAP_PTR], dptr, &charge))
    return gs__cuda.cuMemFree_v2(dptr);
  /* A charge in the map was made through its GPU's lane, which is open; a thread past the
   * gate has a slot of its own. */
  uint64_t bytes = GS_CHARGE_BYTES(charge);
  gs__own_sub(&gs__tls.used[GS_CHARGE_GPU(charge)], bytes);
  atomic_fetch_sub_explicit(gs__lane_of(charge)->used, bytes, memory_order_acq_rel);
  CUresult rc = gs__cuda.cuMemFree_v2(dptr);
  if (__builtin_expect(rc != CUDA_SUCCESS, 0))
    return free_v2_refused(rc, dptr, charge);
  return CUDA_SUCCESS;
}

/* The pre-3.2 entry points with 32-bit sizes still exist, and cuGetProcAddress hands them out
 * to callers that ask for an old version: they are counted like the others. */
static CUresult plain_v1(CUdeviceptr *dptr, size_t bytes, unsigned int flags)
{
  CUdeviceptr_v1 p = 0;
  (void) flags;
  CUresult rc = gs__cuda.cuMemAlloc(&p, (unsigned int) bytes);
  *dptr = p;
  return rc;
}

static void undo_free_v1(uint64_t p)
{
  gs__cuda.cuMemFree((CUdeviceptr_v1) p);
}

GS_HOOK CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
  GS_RESUMED_OR_RETURN();
  CUdeviceptr p = 0;
  GS_REAL_OR_FAIL(cuMemAlloc);
  if (!dptr || bytesize == 0)
    return gs__cuda.cuMemAlloc(dptr, bytesize);
  int gpu = gs__current_gpu();
  CUresult rc = gs__charge(gpu, bytesize, "cuMemAlloc");
  if (rc != CUDA_SUCCESS)
    return rc;
  rc = plain_v1(&p, bytesize, 0);
  if (rc == CUDA_SUCCESS)
    *dptr = (CUdeviceptr_v1) p;
  return gs__settle(rc, GS_MAP_PTR, p, bytesize, gpu, undo_free_v1);
}

GS_HOOK CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
  uint64_t charge = 0;
  GS_REAL_OR_FAIL(cuMemFree);
  bool ours = gs__forget(GS_MAP_PTR, dptr, &charge);
  return gs__settle_free(gs__cuda.cuMemFree(dptr), GS_MAP_PTR, dptr, ours, charge);
}

/* The slice as the tenant sees it: the limit is the total, and what is left of it is free,
 * clamped to what is really free on the device. */
static void clamp_to_slice(int gpu, uint64_t *free_, uint64_t *total)
{
  uint64_t limit, used;
  if (!gs__limit(gpu, &limit, &used))
    return;
  uint64_t left = used < limit ? limit - used : 0;
  *total = limit;
  if (*free_ > left)
    *free_ = left;
}

GS_HOOK CUresult cuMemGetInfo_v2(size_t *free_, size_t *total)
{
  GS_REAL_OR_FAIL(cuMemGetInfo_v2);
  CUresult rc = gs__cuda.cuMemGetInfo_v2(free_, total);
  if (rc != CUDA_SUCCESS || !free_ || !total)
    return rc;
  uint64_t f = *free_, t = *total;
  clamp_to_slice(gs__current_gpu(), &f, &t);
  *free_ = f;
  *total = t;
  return rc;
}

GS_HOOK CUresult cuMemGetInfo(unsigned int *free_, unsigned int *total)
{
  size_t f, t;
  GS_REAL_OR_FAIL(cuMemGetInfo_v2);
  if (!free_ || !total)
    return gs__cuda.cuMemGetInfo(free_, total);
  CUresult rc = cuMemGetInfo_v2(&f, &t);
  if (rc == CUDA_SUCCESS) {
    *free_ = f > UINT32_MAX ? UINT32_MAX : (unsigned int) f;
    *total = t > UINT32_MAX ? UINT32_MAX : (unsigned int) t;
  }
  return rc;
}

GS_HOOK CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
  uint64_t limit, used;
  GS_REAL_OR_FAIL(cuDeviceTotalMem_v2);
  CUresult rc = gs__cuda.cuDeviceTotalMem_v2(bytes, dev);
  if (rc == CUDA_SUCCESS && bytes && gs__limit(dev, &limit, &used) && limit < *bytes)
    *bytes = limit;
  return rc;
}
