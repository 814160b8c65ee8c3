/* cuGetProcAddress: entry points by base name and CUDA version. The rows come from
 * abi/cuda-procs.def, which the interposer shares; see that file for the lookup rule. It
 * works before cuInit, as the real one does (that is how a runtime finds cuInit). */
#include "cuda-internal.h"

#include <string.h>

struct proc_row {
  const char *name;
  int version;
  int per_thread;
  void *fn;
};

#define GS_CUDA_PROC(name, version, per_thread, symbol) \
  { name, version, per_thread, (void *) symbol },
static const struct proc_row rows[] = {
#include "cuda-procs.def"
};
#undef GS_CUDA_PROC

#define ROW_COUNT (sizeof(rows) / sizeof(rows[0]))
#define FLAGS_KNOWN \
  (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)

/* The newest row of `name` not above `version` among rows with that per_thread value. */
static const struct proc_row *newest(const char *name, int version, int per_thread, bool *known)
{
  const struct proc_row *best = NULL;
  for (size_t i = 0; i < ROW_COUNT; i++) {
    const struct proc_row *r = &rows[i];
    if (strcmp(r->name, name) != 0)
      continue;
    *known = true;
    if (r->per_thread == per_thread && r->version <= version &&
        (!best || r->version > best->version))
      best = r;
  }
  return best;
}

static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
  if (!symbol || !pfn || cudaVersion < 0 || (flags & ~(cuuint64_t) FLAGS_KNOWN))
    return CUDA_ERROR_INVALID_VALUE;
  bool known = false;
  const struct proc_row *r = NULL;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    r = newest(symbol, cudaVersion, 1, &known);
  if (!r)
    r = newest(symbol, cudaVersion, 0, &known);
  *pfn = r ? r->fn : NULL;
  if (status)
    *status = r ? CU_GET_PROC_ADDRESS_SUCCESS
      : known   ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return r ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

GSC_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

GSC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
  return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
