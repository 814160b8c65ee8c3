/* Mode `alloc-until-oom`: allocates --chunk at a time by the chosen path until the driver
 * refuses, then frees it all; --rounds times in one process. Each round's total is reported,
 * so that a later round getting as much as the first shows that frees gave the memory (and
 * any quota's charge) back; the list is printed only when --rounds is given, so the line
 * keeps its old shape otherwise. The top-level fields describe the first round. Success means
 * every refusal was CUDA_ERROR_OUT_OF_MEMORY; any other error is a failure, after the report. */
#include "wl.h"

#include <stdio.h>

struct oom_round {
  uint64_t bytes, n;
  CUresult stop, freed;
};

static void fill_and_free(const struct wl_opts *o, struct oom_round *r)
{
  struct wl_allocs a = { .ops = o->alloc };

  while ((r->stop = wl_allocs_add(&a, o->chunk)) == CUDA_SUCCESS)
    ;
  r->bytes = a.bytes;
  r->n = a.n;
  r->freed = wl_allocs_clear(&a);
}

static bool round_clean(const struct oom_round *r)
{
  return r->stop == CUDA_ERROR_OUT_OF_MEMORY && r->freed == CUDA_SUCCESS;
}

static void report(const struct wl_opts *o, const struct oom_round *r, uint64_t done)
{
  printf("{\"mode\":\"alloc-until-oom\",\"alloc\":\"%s\",\"chunk\":%llu,\"allocated_bytes\":%llu,"
         "\"allocations\":%llu,\"stopped_by\":\"%s\"",
         o->alloc->name, (unsigned long long) o->chunk, (unsigned long long) r[0].bytes,
         (unsigned long long) r[0].n, wl_error_name(r[0].stop));
  if (o->have_rounds) {
    fputs(",\"rounds\":[", stdout);
    for (uint64_t i = 0; i < done; i++)
      printf("%s%llu", i ? "," : "", (unsigned long long) r[i].bytes);
    putchar(']');
  }
  wl_line_end();
}

int wl_mode_alloc_until_oom(const struct wl_opts *o)
{
  struct oom_round r[WL_ROUNDS_MAX] = { { 0 } };
  uint64_t done = 0;

  if (wl_gpu_open(o->device, false) < 0)
    return -1;
  /* A round that fails other than by running out, or cannot free, ends the run: the next
   * round would measure the leftovers, not the quota. */
  do
    fill_and_free(o, &r[done]);
  while (round_clean(&r[done++]) && done < o->rounds);
  report(o, r, done);
  wl_gpu_close();
  const struct oom_round *last = &r[done - 1];
  if (last->stop != CUDA_ERROR_OUT_OF_MEMORY)
    return wl_fail("alloc %s: %s", o->alloc->name, wl_error_name(last->stop));
  WL_TRY(last->freed, "free");
  return 0;
}
