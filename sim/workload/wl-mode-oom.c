/* Mode `alloc-until-oom`: allocates --chunk at a time by the chosen path until the driver
 * refuses, reports how far it got, and frees it all. Success means the refusal was
 * CUDA_ERROR_OUT_OF_MEMORY; any other error is a failure, after the report. */
#include "wl.h"

#include <stdio.h>

int wl_mode_alloc_until_oom(const struct wl_opts *o)
{
  struct wl_allocs a = { .ops = o->alloc };
  CUresult stop;

  if (wl_gpu_open(o->device, false) < 0)
    return -1;
  while ((stop = wl_allocs_add(&a, o->chunk)) == CUDA_SUCCESS)
    ;
  printf("{\"mode\":\"alloc-until-oom\",\"alloc\":\"%s\",\"chunk\":%llu,\"allocated_bytes\":%llu,"
         "\"allocations\":%llu,\"stopped_by\":\"%s\"",
         o->alloc->name, (unsigned long long) o->chunk, (unsigned long long) a.bytes,
         (unsigned long long) a.n, wl_error_name(stop));
  wl_line_end();
  CUresult freed = wl_allocs_clear(&a);
  wl_gpu_close();
  if (stop != CUDA_ERROR_OUT_OF_MEMORY)
    return wl_fail("alloc %s: %s", o->alloc->name, wl_error_name(stop));
  WL_TRY(freed, "free");
  return 0;
}
