/* Moving a locked process's device memory to host memory and back, for the checkpoint API
 * (cuda-checkpoint.c). Runs in the target's service thread, with gsc_lock held and every
 * other CUDA call of the process blocked.
 *
 * Device memory is anonymous mappings (cuMemAlloc, pools) and memfds (VMM handles). Saving
 * copies the bytes to host buffers of this process and releases the device side: a mapping is
 * replaced by an inaccessible reservation of the same range (the address stays taken), a
 * memfd's pages are punched out, and the process's charges leave the device (NVML shows the
 * memory free) along with its contexts (NVML lists it no more). Loading charges the device
 * again first, maps the same addresses and copies the bytes back.
 *
 * Only what holds data is copied: of a mapping, the pages that are resident (mincore) and not
 * all zeros; of a memfd, its data extents (SEEK_DATA). Every other byte of device memory is
 * zero, and is zero again after the load. So an 8 GiB allocation of which 16 MiB were written
 * costs 16 MiB of host memory, which is what lets the tests suspend ten of them on a small
 * machine. NVIDIA's driver copies every allocated byte. A mapping's pages are released as
 * they are copied, 64 MiB at a time, so a suspend needs little more memory than the data. */
#include "cuda-internal.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK_PAGES 16384 /* released per step: 64 MiB of 4 KiB pages */

struct run {
  uint64_t off, len;
};

/* One saved range: a mapping (base, len) or a VMM handle's memfd (vmm). */
struct saved {
  uintptr_t base;
  size_t len;
  struct gsc_vmm *vmm;
  struct run *runs;
  size_t nruns, cap;
  char *host; /* the copy: the runs' bytes one after another */
  size_t host_len;
};

static struct {
  struct saved *v;
  size_t n;
  uint64_t charged[GPUSIM_MAX_DEVICES];
  uint32_t contexts[GPUSIM_MAX_DEVICES];
} g;

static size_t page_size(void)
{
  return (size_t) sysconf(_SC_PAGESIZE);
}

/* ---- what may be checkpointed ---- */

CUresult gsc_ckpt_supported(void)
{
  for (struct gsc_alloc *a = gsc_alloc_first(); a; a = a->next)
    if (a->kind == GSC_MEM_MANAGED || a->kind == GSC_MEM_IPC || a->ipc_exported)
      return CUDA_ERROR_NOT_SUPPORTED;
  GSC_FOREACH(o, GSC_VMM)
  {
    const struct gsc_vmm *h = (const struct gsc_vmm *) o;
    if (h->imported || h->exported)
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

/* ---- runs and host buffers ---- */

static int run_add(struct saved *s, uint64_t off, uint64_t len)
{
  if (s->nruns && s->runs[s->nruns - 1].off + s->runs[s->nruns - 1].len == off) {
    s->runs[s->nruns - 1].len += len;
    return 0;
  }
  if (s->nruns == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct run *r = realloc(s->runs, cap * sizeof(*r));
    if (!r)
      return -1;
    s->runs = r;
    s->cap = cap;
  }
  s->runs[s->nruns++] = (struct run){ off, len };
  return 0;
}

/* Untouched pages of the NORESERVE buffer cost nothing: it is sized for the worst case. */
static int host_reserve(struct saved *s, size_t len)
{
  if (len == 0)
    return 0;
  void *p =
    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  s->host = p;
  s->host_len = len;
  return 0;
}

static void saved_free(struct saved *s)
{
  if (s->host)
    munmap(s->host, s->host_len);
  free(s->runs);
  memset(s, 0, sizeof(*s));
}

static bool page_zero(const void *p, size_t len)
{
  const uint64_t *w = p;
  for (size_t i = 0; i < len / sizeof(*w); i++)
    if (w[i])
      return false;
  return true;
}

/* ---- mappings ---- */

/* Copies the pending run [from, to) of the mapping into the host buffer at *used. */
static void flush_run(struct saved *s, size_t from, size_t to, size_t *used)
{
  if (to <= from)
    return;
  /* One call makes the copy's pages, not one fault each (where the kernel can: 5.14 on). */
  madvise(s->host + *used, to - from, MADV_POPULATE_WRITE);
  memcpy(s->host + *used, (const char *) s->base + from, to - from);
  *used += to - from;
}

static int save_mapping(struct saved *s)
{
  size_t pg = page_size(), npages = (s->len + pg - 1) / pg, resident = 0, used = 0;
  unsigned char *vec = malloc(npages ? npages : 1);
  if (!vec || mincore((void *) s->base, npages * pg, vec) < 0) {
    free(vec);
    return -1;
  }
  for (size_t i = 0; i < npages; i++)
    resident += vec[i] & 1;
  int rc = host_reserve(s, resident * pg);
  for (size_t c = 0; rc == 0 && c < npages; c += CHUNK_PAGES) {
    size_t end = c + CHUNK_PAGES < npages ? c + CHUNK_PAGES : npages, start = 0;
    bool open = false;
    for (size_t i = c; i < end && rc == 0; i++) {
      bool data = (vec[i] & 1) && !page_zero((const char *) s->base + i * pg, pg);
      if (data && !open) {
        start = i * pg;
        open = true;
      } else if (!data && open) {
        rc = run_add(s, start, i * pg - start);
        flush_run(s, start, i * pg, &used);
        open = false;
      }
    }
    if (open && rc == 0) {
      rc = run_add(s, start, end * pg - start);
      flush_run(s, start, end * pg, &used);
    }
    /* What was copied leaves the "device" now: the host copy grows as the device shrinks. */
    if (rc == 0)
      madvise((char *) s->base + c * pg, (end - c) * pg, MADV_DONTNEED);
  }
  free(vec);
  if (rc == 0 &&
      mmap((void *) s->base, npages * pg, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
    rc = -1;
  return rc;
}

/* Copies n bytes of the host copy at pos back to off in the range, a chunk at a time, giving
 * each chunk of the host copy back once it is copied: the device grows as the host shrinks. */
static void copy_back(struct saved *s, uint64_t off, size_t n, size_t pos)
{
  size_t chunk = CHUNK_PAGES * page_size();
  for (size_t done = 0; done < n; done += chunk) {
    size_t len = n - done < chunk ? n - done : chunk;
    char *dst = (char *) s->base + off + done;
    /* One call makes the chunk's pages, not one fault each (where the kernel can: 5.14 on). */
    madvise(dst, len, MADV_POPULATE_WRITE);
    memcpy(dst, s->host + pos + done, len);
    madvise(s->host + pos + done, len, MADV_DONTNEED);
  }
}

/* Maps the range again (unless a failed save left it mapped) and copies the runs back. */
static int load_mapping(struct saved *s, bool remap)
{
  size_t pg = page_size(), npages = (s->len + pg - 1) / pg, pos = 0;
  if (remap &&
      mmap((void *) s->base, npages * pg, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
    return -1;
  for (size_t r = 0; r < s->nruns; r++) {
    copy_back(s, s->runs[r].off, s->runs[r].len, pos);
    pos += s->runs[r].len;
  }
  return 0;
}

/* ---- VMM handles: memfds ---- */

static int save_memfd(struct saved *s)
{
  int fd = s->vmm->fd;
  off_t size = (off_t) s->vmm->size, off = 0, data;
  uint64_t total = 0, used = 0;
  while (off < size && (data = lseek(fd, off, SEEK_DATA)) >= 0 && data < size) {
    off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0 || hole > size)
      hole = size;
    if (run_add(s, (uint64_t) data, (uint64_t) (hole - data)) < 0)
      return -1;
    total += (uint64_t) (hole - data);
    off = hole;
  }
  if (host_reserve(s, total) < 0)
    return -1;
  for (size_t r = 0; r < s->nruns; r++) {
    if (pread(fd, s->host + used, s->runs[r].len, (off_t) s->runs[r].off) !=
        (ssize_t) s->runs[r].len)
      return -1;
    used += s->runs[r].len;
  }
  return size ? fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, size) : 0;
}

static int load_memfd(struct saved *s)
{
  uint64_t pos = 0;
  for (size_t r = 0; r < s->nruns; r++) {
    if (pwrite(s->vmm->fd, s->host + pos, s->runs[r].len, (off_t) s->runs[r].off) !=
        (ssize_t) s->runs[r].len)
      return -1;
    pos += s->runs[r].len;
  }
  return 0;
}

/* ---- the whole process ---- */

static bool saves_mapping(const struct gsc_alloc *a)
{
  return a->map_len && (a->kind == GSC_MEM_DEVICE || a->kind == GSC_MEM_POOL);
}

/* The ranges to save: every device mapping, then every VMM handle's memfd. */
static int plan(void)
{
  size_t n = 0, i = 0;
  for (struct gsc_alloc *a = gsc_alloc_first(); a; a = a->next)
    n += saves_mapping(a);
  GSC_FOREACH(o, GSC_VMM)
  n++;
  g.v = calloc(n ? n : 1, sizeof(*g.v));
  if (!g.v)
    return -1;
  for (struct gsc_alloc *a = gsc_alloc_first(); a; a = a->next)
    if (saves_mapping(a))
      g.v[i++] = (struct saved){ .base = a->base, .len = a->map_len };
  GSC_FOREACH(o, GSC_VMM)
  g.v[i++] = (struct saved){ .vmm = (struct gsc_vmm *) o };
  g.n = n;
  return 0;
}

static int load_one(struct saved *s)
{
  int rc = s->vmm ? load_memfd(s) : load_mapping(s, true);
  saved_free(s);
  return rc;
}

/* Undoes a save that failed part way: a memfd is punched only at the end, so it still holds
 * everything; a mapping is still mapped, and what it released was copied. */
static void undo_failed(struct saved *s)
{
  if (!s->vmm)
    load_mapping(s, false);
  saved_free(s);
}

static void forget_all(void)
{
  for (size_t i = 0; i < g.n; i++)
    saved_free(&g.v[i]);
  free(g.v);
  g.v = NULL;
  g.n = 0;
}

CUresult gsc_ckpt_save(void)
{
  struct gpusim_proc *self = gpusim_self();
  if (!self || plan() < 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < g.n; i++) {
    struct saved *s = &g.v[i];
    if ((s->vmm ? save_memfd(s) : save_mapping(s)) < 0) {
      /* Out of host memory: put back what was moved (a range reads zero wherever nothing was
       * copied from, which is what it held there). */
      for (size_t j = 0; j < i; j++)
        load_one(&g.v[j]);
      undo_failed(s);
      forget_all();
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  for (int d = 0; d < gsc.ndev; d++) {
    g.charged[d] = self->used[d];
    gpusim_mem_release(d, g.charged[d]);
    g.contexts[d] = atomic_exchange(&self->contexts[d], 0);
  }
  return CUDA_SUCCESS;
}

CUresult gsc_ckpt_load(void)
{
  struct gpusim_proc *self = gpusim_self();
  int d;
  if (!self)
    return CUDA_ERROR_OPERATING_SYSTEM;
  for (d = 0; d < gsc.ndev; d++)
    if (gpusim_mem_reserve(d, g.charged[d]) < 0)
      break;
  if (d < gsc.ndev) {
    while (d-- > 0)
      gpusim_mem_release(d, g.charged[d]);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  int failed = 0;
  for (size_t i = 0; i < g.n; i++)
    failed |= load_one(&g.v[i]) < 0;
  forget_all();
  for (d = 0; d < gsc.ndev; d++)
    atomic_store(&self->contexts[d], g.contexts[d]);
  return failed ? CUDA_ERROR_OPERATING_SYSTEM : CUDA_SUCCESS;
}
