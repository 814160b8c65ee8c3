/* libFuzzer target for gs_parse_size, which reads what users type (--vram, --context-reserve).
 * Any input must give a result or an error, never a crash, a leak or undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/quantity.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  uint64_t out;
  gs_error_t err = NULL;
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  for (int pass = 0; pass < 2; pass++) {
    int rc = gs_parse_size(s, pass ? 0 : 85520809984ULL, &out, &err);
    if (rc == 0 && out == 0)
      abort(); /* the parser promises at least one byte */
    if (rc < 0 && (!err || strchr(err->msg, '\n')))
      abort(); /* errors are one line: the CLI prints them as they are */
    gs_error_release(&err);
  }
  free(s);
  return 0;
}
