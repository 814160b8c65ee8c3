/* libFuzzer target for the readers of `gpuslice plan` (cli/plan-input-*.c): metrics files a
 * user hands in. The first byte picks the reader (plain CSV, Prometheus text, Prometheus
 * range-query JSON, or one of the two Alibaba GenAI CSVs); the rest is the file. A reader
 * either accepts the file or gives a one-line error; it never crashes or leaks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int read_as(int which, FILE *f, struct gs_plan_data *d, gs_error_t *err)
{
  switch (which % 5) {
  case 0:
    return plan_read_csv(f, "fuzz.csv", d, err);
  case 1:
    return plan_read_prom(f, "fuzz.prom", d, err);
  case 2:
    return plan_read_promjson(f, "fuzz.json", d, err);
  case 3:
    return plan_read_genai(f, "fuzz-util.csv", false, d, err);
  default:
    return plan_read_genai(f, "fuzz-mem.csv", true, d, err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  gs_error_t err = NULL;
  struct gs_plan_data d;
  if (size < 1)
    return 0;
  FILE *f = fmemopen((void *) (uintptr_t) (data + 1), size - 1, "r");
  if (!f)
    return 0;
  gs_plan_data_init(&d);
  read_as(data[0], f, &d, &err);
  if (err && strchr(err->msg, '\n'))
    abort(); /* errors are one line: the CLI prints them as they are */
  gs_error_release(&err);
  gs_plan_data_release(&d);
  fclose(f);
  return 0;
}
