/* libFuzzer target for gpusim_spec_parse, the simulator's GPUSLICE_SIM list, which gpuslice run
 * also checks. Any input must give devices or a one-line error naming a token. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim-models.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  int dev[GPUSIM_MAX_DEVICES];
  char err[256];
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  int n = gpusim_spec_parse(s, dev, err, sizeof(err));
  if (n > GPUSIM_MAX_DEVICES || (n < 0 && (!err[0] || strchr(err, '\n'))))
    abort(); /* too many devices, or an error that is not one line */
  for (int i = 0; i < n; i++)
    if (dev[i] < 0 || (size_t) dev[i] >= gpusim_model_count)
      abort();
  free(s);
  return 0;
}
