/* Mode `procaddr-check`: asks cuGetProcAddress_v2 for symbols whose ABI changed between CUDA
 * versions, and reports which exported symbol each answer is, by comparing the pointer with
 * dlsym of "name" and "name_v2". A program built against CUDA 12.0 must get the old ABI
 * even from a newer driver; that is the contract checked here. It also lists the base names
 * of the driver table (wl-driver.h) for which the answer at 13000 is not the exported symbol
 * the table pairs them with, e.g. "cuCtxCreate" not giving cuCtxCreate_v4, and the entries
 * that a procaddr path at an older --procaddr-version took by exported name instead. */
#include "wl.h"

#include <dlfcn.h>
#include <stdio.h>

#define WL_STR_(x) #x
#define WL_STR(x) WL_STR_(x)

static const char *const check_symbols[] = { "cuMemAdvise", "cuMemPrefetchAsync" };
static const int check_versions[] = { 12000, 12020 };

/* The exported name whose address is p, among name and name_v2; NULL if neither. */
static const char *match_export(void *handle, const char *name, void *p, char *buf, size_t len)
{
  snprintf(buf, len, "%s", name);
  if (p && dlsym(handle, buf) == p)
    return buf;
  snprintf(buf, len, "%s_v2", name);
  if (p && dlsym(handle, buf) == p)
    return buf;
  return NULL;
}

static int check_one(void *handle, const char *sym, int version, bool first)
{
  void *p = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  char what[96], buf[64];

  snprintf(what, sizeof(what), "cuGetProcAddress_v2 %s@%d", sym, version);
  WL_TRY(wl_cu.cuGetProcAddress_v2(sym, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &st), what);
  const char *m = match_export(handle, sym, p, buf, sizeof(buf));
  printf("%s{\"symbol\":\"%s\",\"version\":%d,\"status\":%d,\"matches\":", first ? "" : ",", sym,
         version, (int) st);
  if (m)
    printf("\"%s\"}", m);
  else
    fputs("null}", stdout);
  return 0;
}

int wl_mode_procaddr_check(const struct wl_opts *o)
{
  void *handle = wl_driver_handle();
  bool first = true;
  (void) o;

  if (!handle)
    return -1;
  WL_TRY(wl_cu.cuInit(0), "cuInit");
  fputs("{\"mode\":\"procaddr-check\",\"results\":[", stdout);
  for (size_t s = 0; s < sizeof(check_symbols) / sizeof(check_symbols[0]); s++)
    for (size_t v = 0; v < sizeof(check_versions) / sizeof(check_versions[0]); v++, first = false)
      if (check_one(handle, check_symbols[s], check_versions[v], first) < 0) {
        fputs("\n", stdout);
        return -1;
      }
  fputs("],\"table_version\":" WL_STR(WL_PROCADDR_VERSION) ",\"table_mismatches\":[", stdout);
  wl_driver_print_mismatches(handle);
  fputs("],\"filled_by_exported_name\":[", stdout);
  wl_driver_print_by_name();
  putchar(']');
  wl_line_end();
  return 0;
}
