/* libFuzzer target for gs_metrics_fields_parse, which reads the daemon's counters file (the
 * `counters` setting, a CSV in dcgm-exporter's format). Any input must give a field set or a
 * one-line error, never a crash, a leak or undefined behaviour; a field set it gives must
 * render. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/metrics.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  struct gs_metrics_fields *f = malloc(sizeof(*f));
  gs_error_t err = NULL;
  if (!s || !f) {
    free(s);
    free(f);
    return 0;
  }
  memcpy(s, data, size);
  s[size] = '\0';
  if (gs_metrics_fields_parse(s, f, &err) == 0) {
    struct gs_snap_gpu g = { .have = ~0u };
    struct gs_snapshot snap = { .ngpus = 1, .gpus = &g };
    char *out = NULL;
    size_t len;
    if (f->n < 1 || f->n > GS_METRICS_FIELDS_MAX ||
        gs_metrics_render_fields(&snap, f, NULL, &out, &len, &err) < 0)
      abort();
    free(out);
  } else if (!err || strchr(err->msg, '\n')) {
    abort(); /* errors are one line: the daemon prints them as they are */
  }
  gs_error_release(&err);
  free(f);
  free(s);
  return 0;
}
