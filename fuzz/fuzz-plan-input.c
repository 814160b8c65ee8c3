/* libFuzzer target for the readers of `gpuslice plan` (plan/input-*.c): metrics files a
 * user hands in. The first byte picks the reader (plain CSV, Prometheus text, Prometheus
 * range-query JSON, or one of the two Alibaba GenAI CSVs); the rest is the file. A reader
 * either accepts the file or gives a one-line error; it never crashes or leaks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/plan-io.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The name each reader sees, by format (enum gs_plan_input_format). */
static const char *const names[] = { "fuzz.csv", "fuzz.prom", "fuzz.json", "fuzz-util.csv",
                                     "fuzz-mem.csv" };

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
  enum gs_plan_input_format fmt = (enum gs_plan_input_format)(data[0] % 5);
  gs_plan_read(f, names[fmt], fmt, &d, &err);
  if (err && strchr(err->msg, '\n'))
    abort(); /* errors are one line: the CLI prints them as they are */
  gs_error_release(&err);
  gs_plan_data_release(&d);
  fclose(f);
  return 0;
}
