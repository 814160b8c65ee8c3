/* Sharing device memory between processes: legacy IPC handles (cuIpcGetMemHandle,
 * cuIpcOpenMemHandle, cuIpcCloseMemHandle) and VMM shareable handles of the POSIX file
 * descriptor type (cuMemExportToShareableHandle, cuMemImportFromShareableHandle).
 *
 * On a GPU both sides of a share see one physical allocation, so the importing side is never
 * charged to the device: the exporter's charge already covers the memory.
 *
 * - An IPC handle names the exporter's allocation: (pid, start time, device, base, size).
 *   Opening it maps a fresh region of that size in the importer. The exporter's memory is a
 *   private anonymous mapping, which cannot be shared after the fact, so the *contents* are not
 *   shared (see README). Opening a handle that the same context already opened returns the same
 *   pointer and counts a reference, as the real driver does; the mapping goes at the last close,
 *   or with its context.
 * - A VMM handle is a memfd already (cuda-vmm.c): exporting hands out a duplicate of it, and
 *   importing wraps a duplicate of the descriptor passed in, so both processes map the same
 *   pages and the contents are shared for real. */
#include "cuda-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define IPC_MAGIC "GPUSIMIP"
#define IPC_VERSION 1u

/* What a CUipcMemHandle carries; opaque bytes to the caller. */
struct ipc_wire {
  char magic[8];
  uint32_t version;
  int32_t dev;
  int32_t pid;
  uint32_t unused;
  uint64_t start_time;
  uint64_t base;
  uint64_t size;
};
_Static_assert(sizeof(struct ipc_wire) <= CU_IPC_HANDLE_SIZE, "an IPC handle holds 64 bytes");

/* One handle opened in this process. Guarded by gsc_lock. */
struct ipc_open {
  struct gsc_alloc *a;
  struct ipc_wire from;
  int refs;
  struct ipc_open *next;
};

static struct ipc_open *g_opened;

/* ---- legacy IPC ---- */

GSC_API CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
  GSC_ENTER_OUT(pHandle);
  /* Only cuMemAlloc'd memory can be exported this way; pools and VMM have their own paths. */
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) dptr, 0);
  if (!a || a->kind != GSC_MEM_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  struct ipc_wire w = { .version = IPC_VERSION,
                        .dev = a->dev,
                        .pid = getpid(),
                        .start_time = gpusim_proc_start_time(getpid()),
                        .base = a->base,
                        .size = a->size };
  memcpy(w.magic, IPC_MAGIC, sizeof(w.magic));
  memset(pHandle, 0, sizeof(*pHandle));
  memcpy(pHandle->reserved, &w, sizeof(w));
  a->ipc_exported = true; /* shared from now on, as far as a checkpoint can tell */
  return CUDA_SUCCESS;
}

static CUresult wire_check(const struct ipc_wire *w)
{
  if (memcmp(w->magic, IPC_MAGIC, sizeof(w->magic)) != 0 || w->version != IPC_VERSION ||
      w->size == 0 || gsc_dev_check(w->dev) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_HANDLE;
  /* The real driver refuses to open a process's own handle. */
  if (w->pid == getpid())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!gpusim_proc_alive(w->pid, w->start_time))
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

static struct ipc_open *opened_in(const struct ipc_wire *w, const struct CUctx_st *c)
{
  for (struct ipc_open *o = g_opened; o; o = o->next)
    if (o->a->ctx == c && o->from.pid == w->pid && o->from.start_time == w->start_time &&
        o->from.base == w->base)
      return o;
  return NULL;
}

/* A fresh mapping standing for the exporter's allocation, not charged to the device again. */
static CUresult map_opened(struct CUctx_st *c, const struct ipc_wire *w, CUdeviceptr *out)
{
  struct ipc_open *o = calloc(1, sizeof(*o));
  struct gsc_alloc *a = calloc(1, sizeof(*a));
  void *p = o && a ? gsc_map(w->size) : NULL;
  if (p) {
    *a = (struct gsc_alloc){ .base = (uintptr_t) p,
                             .size = w->size,
                             .map_len = w->size,
                             .dev = w->dev,
                             .kind = GSC_MEM_IPC,
                             .ctx = c };
    if (gsc_alloc_insert(a) == 0) {
      *o = (struct ipc_open){ .a = a, .from = *w, .refs = 1, .next = g_opened };
      g_opened = o;
      *out = a->base;
      return CUDA_SUCCESS;
    }
    munmap(p, w->size);
  }
  free(o);
  free(a);
  return CUDA_ERROR_MAP_FAILED;
}

static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
  struct CUctx_st *c;
  struct ipc_wire w;
  GSC_TRY(gsc_ctx_current(&c));
  if (!pdptr || (flags & ~(unsigned) CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(&w, handle.reserved, sizeof(w));
  GSC_TRY(wire_check(&w));
  GSC_LOCKED;
  struct ipc_open *o = opened_in(&w, c);
  if (o) {
    o->refs++;
    *pdptr = o->a->base;
    return CUDA_SUCCESS;
  }
  return map_opened(c, &w, pdptr);
}

/* The two exports differ only in the CUDA version that introduced them. */
GSC_API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
  return ipc_open(pdptr, handle, Flags);
}

GSC_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                       unsigned int Flags)
{
  return ipc_open(pdptr, handle, Flags);
}

static struct ipc_open *record_of(const struct gsc_alloc *a)
{
  for (struct ipc_open *o = g_opened; o; o = o->next)
    if (o->a == a)
      return o;
  return NULL;
}

GSC_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
  GSC_ENTER();
  struct gsc_alloc *a = gsc_alloc_find((uintptr_t) dptr, 0);
  struct ipc_open *o = a && a->base == dptr && a->kind == GSC_MEM_IPC ? record_of(a) : NULL;
  if (!o)
    return CUDA_ERROR_INVALID_VALUE;
  if (--o->refs == 0)
    gsc_alloc_free(a); /* calls gsc_ipc_gone */
  return CUDA_SUCCESS;
}

void gsc_ipc_gone(struct gsc_alloc *a)
{
  for (struct ipc_open **op = &g_opened; *op; op = &(*op)->next) {
    if ((*op)->a != a)
      continue;
    struct ipc_open *o = *op;
    *op = o->next;
    free(o);
    return;
  }
}

/* ---- VMM shareable handles ---- */

GSC_API CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                              CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType,
                                              unsigned long long flags)
{
  GSC_CHECK_INIT();
  if (!shareableHandle || flags)
    return CUDA_ERROR_INVALID_VALUE;
  /* Win32 and fabric handles have no meaning on one Linux machine. */
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_NOT_SUPPORTED;
  GSC_LOCKED;
  struct gsc_vmm *h = gsc_vmm_find(handle);
  /* A handle is exportable only as the types cuMemCreate was asked for. */
  if (!h || !(h->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;
  int fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *(int *) shareableHandle = fd;
  h->exported = true;
  return CUDA_SUCCESS;
}

/* What an exported descriptor says about its handle: one of the simulator's memfds, whose name
 * holds the device and handle types and whose size is the allocation's. */
static CUresult memfd_describe(int fd, CUmemAllocationProp *prop, size_t *size)
{
  char path[64], link[256];
  struct stat st;
  int dev;
  unsigned types;
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  ssize_t n = fd >= 0 ? readlink(path, link, sizeof(link) - 1) : -1;
  if (n < 0 || fstat(fd, &st) < 0)
    return CUDA_ERROR_INVALID_VALUE;
  link[n] = '\0';
  if (sscanf(link, "/memfd:" GSC_VMM_MEMFD_NAME, &dev, &types) != 2 || st.st_size <= 0 ||
      (uint64_t) st.st_size % GSC_VMM_GRANULARITY != 0 || gsc_dev_check(dev) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  *prop = (CUmemAllocationProp){ .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .requestedHandleTypes = (CUmemAllocationHandleType) types,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
  *size = (size_t) st.st_size;
  return CUDA_SUCCESS;
}

/* For the descriptor type, osHandle is the descriptor itself cast to a pointer. The caller
 * keeps its descriptor; the handle holds a duplicate. */
GSC_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                void *osHandle,
                                                CUmemAllocationHandleType shHandleType)
{
  CUmemAllocationProp prop;
  size_t size;
  GSC_CHECK_INIT();
  if (!handle)
    return CUDA_ERROR_INVALID_VALUE;
  if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_NOT_SUPPORTED;
  int fd = (int) (intptr_t) osHandle;
  GSC_TRY(memfd_describe(fd, &prop, &size));
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  struct gsc_vmm *h = gsc_vmm_wrap(own, size, &prop, true);
  if (!h) {
    close(own);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *handle = (CUmemGenericAllocationHandle) (uintptr_t) h;
  return CUDA_SUCCESS;
}
