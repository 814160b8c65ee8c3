/* The resolved table of driver functions and its fillers: linked symbols, dlsym by exported
 * name, and cuGetProcAddress_v2 or the legacy cuGetProcAddress by base name. Nothing here
 * calls into CUDA except cuGetProcAddress(_v2) while filling. */
#include "wl-driver.h"

#include <assert.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct wl_driver wl_cu;

struct wl_sym {
  void **slot;      /* the member of wl_cu this entry fills */
  const char *name; /* exported symbol, for dlsym */
  const char *base; /* base name, for cuGetProcAddress_v2 */
  void *linked;     /* the symbol this program was linked against */
};

static const struct wl_sym wl_syms[] = {
#define WL_ENTRY(sym, b) { (void **) &wl_cu.sym, #sym, b, (void *) sym },
  WL_DRIVER_FUNCS(WL_ENTRY)
#undef WL_ENTRY
};

#define WL_NSYMS (sizeof(wl_syms) / sizeof(wl_syms[0]))
/* Every member of the table has exactly one entry, so none is left NULL by a filler. */
static_assert(WL_NSYMS == sizeof(struct wl_driver) / sizeof(void (*)(void)),
              "wl_syms must cover every member of struct wl_driver");

void *wl_driver_handle(void)
{
  static void *handle;

  if (!handle) {
    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      fprintf(stderr, "gpusim-workload: dlopen libcuda.so.1: %s\n", dlerror());
  }
  return handle;
}

static int fill_direct(void)
{
  for (size_t i = 0; i < WL_NSYMS; i++)
    *wl_syms[i].slot = wl_syms[i].linked;
  return 0;
}

/* dlsym returns NULL both for a missing symbol and for one whose value is NULL, so the error
 * is told apart by dlerror(), cleared before each lookup. */
static void *sym_lookup(void *handle, const char *name)
{
  dlerror();
  void *p = dlsym(handle, name);
  const char *err = dlerror();
  if (err || !p) {
    fprintf(stderr, "gpusim-workload: dlsym %s: %s\n", name, err ? err : "NULL symbol");
    return NULL;
  }
  return p;
}

static int fill_dlsym(void)
{
  void *handle = wl_driver_handle();
  if (!handle)
    return -1;
  for (size_t i = 0; i < WL_NSYMS; i++)
    if (!(*wl_syms[i].slot = sym_lookup(handle, wl_syms[i].name)))
      return -1;
  return 0;
}

/* The CUDA version that introduced the ABI of each exported symbol, from the same list the
 * simulator answers cuGetProcAddress with. */
struct wl_abi_row {
  const char *symbol;
  int version;
};
#define GS_CUDA_PROC(name, version, per_thread, symbol) { #symbol, version },
static const struct wl_abi_row wl_abi_rows[] = {
#include "cuda-procs.def"
};
#undef GS_CUDA_PROC

static int abi_since(const char *symbol)
{
  for (size_t i = 0; i < sizeof(wl_abi_rows) / sizeof(wl_abi_rows[0]); i++)
    if (strcmp(wl_abi_rows[i].symbol, symbol) == 0)
      return wl_abi_rows[i].version;
  return -1;
}

/* Entries the last procaddr fill took by exported name (see fill_procaddr). */
static bool wl_by_name[WL_NSYMS];

/* One lookup through the legacy cuGetProcAddress, which reports no status: a NULL answer
 * or an error is all a caller of it can see. */
static CUresult procaddr_v1(void *gpa, const char *base, void **slot, int version,
                            CUdriverProcAddressQueryResult *status)
{
  CUresult rc =
    ((__typeof__(&cuGetProcAddress)) gpa)(base, slot, version, CU_GET_PROC_ADDRESS_DEFAULT);
  *status = rc == CUDA_SUCCESS && *slot ? CU_GET_PROC_ADDRESS_SUCCESS
                                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return rc;
}

/* Asked at a version older than the ABI the table is typed with, the driver would hand out
 * an older ABI (at 12000: cuCtxCreate_v3 for "cuCtxCreate", cuEventElapsedTime for
 * "cuEventElapsedTime"), which the table's member cannot call. Such entries are taken by
 * their exported name instead and listed by wl_driver_print_by_name, so a test can see that
 * none of them is an allocation path. */
static int fill_procaddr(bool legacy, int version)
{
  void *handle = wl_driver_handle();
  const char *entry = legacy ? "cuGetProcAddress" : "cuGetProcAddress_v2";
  void *gpa = handle ? sym_lookup(handle, entry) : NULL;
  if (!gpa)
    return -1;
  *(void **) &wl_cu.cuGetProcAddress_v2 = gpa; /* replaced below, by asking it */
  for (size_t i = 0; i < WL_NSYMS; i++) {
    int since = abi_since(wl_syms[i].name);
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc;
    if (since < 0) {
      fprintf(stderr, "gpusim-workload: %s: not in abi/cuda-procs.def\n", wl_syms[i].name);
      return -1;
    }
    wl_by_name[i] = version < since;
    if (wl_by_name[i]) {
      if (!(*wl_syms[i].slot = sym_lookup(handle, wl_syms[i].name)))
        return -1;
      continue;
    }
    if (legacy)
      rc = procaddr_v1(gpa, wl_syms[i].base, wl_syms[i].slot, version, &status);
    else
      rc = ((__typeof__(&cuGetProcAddress_v2)) gpa)(wl_syms[i].base, wl_syms[i].slot, version,
                                                    CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !*wl_syms[i].slot) {
      fprintf(stderr, "gpusim-workload: %s %s@%d: CUresult %d, status %d\n", entry, wl_syms[i].base,
              version, (int) rc, (int) status);
      return -1;
    }
  }
  return 0;
}

int wl_driver_print_by_name(void)
{
  int n = 0;
  for (size_t i = 0; i < WL_NSYMS; i++)
    if (wl_by_name[i])
      printf("%s\"%s\"", n++ ? "," : "", wl_syms[i].base);
  return n;
}

int wl_driver_print_mismatches(void *handle)
{
  int n = 0;

  for (size_t i = 0; i < WL_NSYMS; i++) {
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc = wl_cu.cuGetProcAddress_v2(wl_syms[i].base, &p, WL_PROCADDR_VERSION,
                                            CU_GET_PROC_ADDRESS_DEFAULT, &st);
    if (rc != CUDA_SUCCESS || !p || p != dlsym(handle, wl_syms[i].name))
      printf("%s\"%s\"", n++ ? "," : "", wl_syms[i].base);
  }
  return n;
}

int wl_driver_load(enum wl_path path, int version)
{
  switch (path) {
  case WL_PATH_DIRECT: return fill_direct();
  case WL_PATH_DLSYM: return fill_dlsym();
  case WL_PATH_PROCADDR: return fill_procaddr(false, version);
  case WL_PATH_PROCADDR_V1: return fill_procaddr(true, version);
  }
  return -1;
}
