/* libFuzzer target for the limit variables of other systems (gpuslice/peer-limits.h), which
 * the interposer reads from a workload's environment: the input is both a value for each
 * parser and an environment of NAME=VALUE lines. Any input must give a result or be ignored,
 * never a crash or undefined behaviour, and never a memory limit of 0 bytes (which would
 * refuse every allocation) nor a share outside 1..99%. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/peer-limits.h>

#define MAX_VARS 64

static char *vars[MAX_VARS];
static int nvars;

static const char *fuzz_getenv(const char *name)
{
  size_t n = strlen(name);
  for (int i = 0; i < nvars; i++)
    if (strncmp(vars[i], name, n) == 0 && vars[i][n] == '=')
      return vars[i] + n + 1;
  return NULL;
}

static void check_parsers(const char *s)
{
  uint64_t bytes, mib;
  uint32_t ppm;
  if (gs_peer_size_parse(s, GS_PEER_UNIT_BYTES, &bytes) == 0 &&
      gs_peer_size_parse(s, GS_PEER_UNIT_MIB, &mib) == 0 && mib < bytes)
    abort(); /* a bare number in MiB is never less than in bytes */
  if (gs_peer_pct_parse(s, &ppm) == 0 && (ppm % 10000 || ppm > 990000))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_peer_limits l;
  char *s = malloc(size + 1), *line, *save = NULL;
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  check_parsers(s);
  nvars = 0;
  for (line = strtok_r(s, "\n", &save); line && nvars < MAX_VARS;
       line = strtok_r(NULL, "\n", &save))
    vars[nvars++] = line;
  gs_peer_limits_read(&l, fuzz_getenv, NULL, NULL);
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++)
    if (l.mem_bytes[i] == 0 || l.sm_ppm[i] % 10000 || l.sm_ppm[i] > 990000)
      abort();
  free(s);
  return 0;
}
