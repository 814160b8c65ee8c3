/* libFuzzer target for gs_mig_layout_parse, which reads the layouts `gpuslice mig apply` and
 * the daemon's sharing setting take. Any input must give a valid layout or a one-line error,
 * never a crash, a leak or undefined behaviour; a layout it takes is one the rules allow, and
 * it reads back the same once written. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/mig-apply.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static struct gs_mig_table *t;
  gs_error_t err = NULL;
  if (!t && gs_mig_table_default(&t, &err) < 0)
    abort();
  char *s = malloc(size + 1), text[512];
  struct gs_mig_target l, again;
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  if (gs_mig_layout_parse(t, "h100-80gb", s, &l, &err) < 0) {
    if (!err || strchr(err->msg, '\n'))
      abort();
    gs_error_release(&err);
  } else {
    if (!l.off && gs_mig_gpu_validate(l.inst, l.n, &err) < 0)
      abort();
    gs_mig_layout_format(&l, text, sizeof(text));
    if (gs_mig_layout_parse(t, "h100-80gb", text, &again, &err) < 0 || again.n != l.n ||
        again.off != l.off)
      abort();
  }
  free(s);
  return 0;
}
