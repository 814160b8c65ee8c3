/* The resolved table of driver functions and its three fillers: linked symbols, dlsym by
 * exported name, and cuGetProcAddress_v2 by base name. Nothing here calls into CUDA except
 * cuGetProcAddress_v2 while filling. */
#include "wl-driver.h"

#include <assert.h>
#include <dlfcn.h>
#include <stdio.h>

struct wl_driver wl_cu;

struct wl_sym {
  void **slot;          /* the member of wl_cu this entry fills */
  const char *name;     /* exported symbol, for dlsym */
  const char *base;     /* base name, for cuGetProcAddress_v2 */
  void *linked;         /* the symbol this program was linked against */
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

static int fill_procaddr(void)
{
  void *handle = wl_driver_handle();
  void *gpa = handle ? sym_lookup(handle, "cuGetProcAddress_v2") : NULL;
  if (!gpa)
    return -1;
  *(void **) &wl_cu.cuGetProcAddress_v2 = gpa;
  for (size_t i = 0; i < WL_NSYMS; i++) {
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc = wl_cu.cuGetProcAddress_v2(wl_syms[i].base, wl_syms[i].slot, WL_PROCADDR_VERSION,
                                            CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !*wl_syms[i].slot) {
      fprintf(stderr, "gpusim-workload: cuGetProcAddress_v2 %s@%d: CUresult %d, status %d\n",
              wl_syms[i].base, WL_PROCADDR_VERSION, (int) rc, (int) status);
      return -1;
    }
  }
  return 0;
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

int wl_driver_load(enum wl_path path)
{
  switch (path) {
  case WL_PATH_DIRECT:
    return fill_direct();
  case WL_PATH_DLSYM:
    return fill_dlsym();
  case WL_PATH_PROCADDR:
    return fill_procaddr();
  }
  return -1;
}
