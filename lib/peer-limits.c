/* Parsing the limit variables of other GPU-sharing systems (HAMi, KAI Scheduler): see
 * gpuslice/peer-limits.h. What the interposer does with them is preload/quota.c's. */
#include <gpuslice/peer-limits.h>

#include <stdbool.h>
#include <stdio.h>

#define SIZE_EXPECTED "a size: digits, optionally followed by k, m, g or t"
#define PCT_EXPECTED "a whole percentage from 0 to 100"

static bool is_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* Decimal digits at *s into *out, moving *s past them; false on none or on overflow. */
static bool digits(const char **s, uint64_t *out)
{
  uint64_t n = 0;
  const char *p = *s;
  if (!is_digit(*p))
    return false;
  for (; is_digit(*p); p++) {
    uint64_t d = (uint64_t) (*p - '0');
    if (n > (UINT64_MAX - d) / 10)
      return false;
    n = n * 10 + d;
  }
  *s = p;
  *out = n;
  return true;
}

/* The power of 1024 a suffix letter stands for, or -1. */
static int suffix_power(char c)
{
  switch (c | 0x20) {
  case 'k': return 1;
  case 'm': return 2;
  case 'g': return 3;
  case 't': return 4;
  default: return -1;
  }
}

/* The multiplier of the suffix at s ("", or a letter, "i", "b" as the header says), or 0. */
static uint64_t suffix_scale(const char *s, uint64_t unit)
{
  if (!*s)
    return unit;
  int power = suffix_power(*s++);
  if (power < 0)
    return 0;
  if (*s == 'i' || *s == 'I')
    s++;
  if (*s == 'b' || *s == 'B')
    s++;
  return *s ? 0 : 1ULL << (10 * power);
}

int gs_peer_size_parse(const char *s, uint64_t unit, uint64_t *bytes)
{
  uint64_t n, scale;
  if (!s || !digits(&s, &n) || !(scale = suffix_scale(s, unit)))
    return -1;
  if (n > UINT64_MAX / scale)
    return -1;
  *bytes = n * scale;
  return 0;
}

int gs_peer_pct_parse(const char *s, uint32_t *ppm)
{
  uint64_t n;
  if (!s || !digits(&s, &n) || *s || n > 100)
    return -1;
  *ppm = n == 100 ? 0 : (uint32_t) n * 10000u;
  return 0;
}

/* One variable's memory limit: GS_LIMIT_NONE when unset, 0, or ignored. */
static uint64_t read_size(const char *name, uint64_t unit, gs_peer_getenv_fn get,
                          gs_peer_bad_fn bad, void *data)
{
  uint64_t v;
  const char *s = get(name);
  if (!s)
    return GS_LIMIT_NONE;
  if (gs_peer_size_parse(s, unit, &v) < 0) {
    if (bad)
      bad(name, s, SIZE_EXPECTED, data);
    return GS_LIMIT_NONE;
  }
  return v ? v : GS_LIMIT_NONE;
}

/* One variable's compute limit: 0 when unset, none, or ignored. */
static uint32_t read_pct(const char *name, gs_peer_getenv_fn get, gs_peer_bad_fn bad, void *data)
{
  uint32_t v;
  const char *s = get(name);
  if (!s)
    return 0;
  if (gs_peer_pct_parse(s, &v) < 0) {
    if (bad)
      bad(name, s, PCT_EXPECTED, data);
    return 0;
  }
  return v;
}

void gs_peer_limits_read(struct gs_peer_limits *out, gs_peer_getenv_fn get, gs_peer_bad_fn bad,
                         void *data)
{
  char name[48];
  uint64_t hami = read_size("CUDA_DEVICE_MEMORY_LIMIT", GS_PEER_UNIT_BYTES, get, bad, data);
  uint64_t kai = read_size("GPU_MEMORY_LIMIT", GS_PEER_UNIT_MIB, get, bad, data);
  uint32_t sm = read_pct("CUDA_DEVICE_SM_LIMIT", get, bad, data);
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++) {
    snprintf(name, sizeof(name), "CUDA_DEVICE_MEMORY_LIMIT_%d", i);
    uint64_t dev = read_size(name, GS_PEER_UNIT_BYTES, get, bad, data);
    out->mem_bytes[i] = gs_peer_lower(dev != GS_LIMIT_NONE ? dev : hami, kai);
    snprintf(name, sizeof(name), "CUDA_DEVICE_SM_LIMIT_%d", i);
    uint32_t dev_sm = read_pct(name, get, bad, data);
    out->sm_ppm[i] = dev_sm ? dev_sm : sm;
  }
}
