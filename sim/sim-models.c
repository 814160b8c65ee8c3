/* Simulated GPU models and GPUSLICE_SIM parsing. The figures are the public datasheet
 * values (memory as NVML reports it, SM counts, PCI ids, board power limits and clocks). */
#include "sim-models.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)

const struct gpusim_model gpusim_models[] = {
  { "t4", "Tesla T4", 15360 * MIB, 40, 7, 5, 0x1eb8, 70000, 1590, 5001 },
  { "l4", "NVIDIA L4", 23034 * MIB, 58, 8, 9, 0x27b8, 72000, 2040, 6251 },
  { "a100-40gb", "NVIDIA A100-SXM4-40GB", 40960 * MIB, 108, 8, 0, 0x20b0, 400000, 1410, 1215 },
  { "a100-80gb", "NVIDIA A100-SXM4-80GB", 81920 * MIB, 108, 8, 0, 0x20b2, 400000, 1410, 1593 },
  { "h100-80gb", "NVIDIA H100 80GB HBM3", 81559 * MIB, 132, 9, 0, 0x2330, 700000, 1980, 2619 },
  { "h200-141gb", "NVIDIA H200", 143771 * MIB, 132, 9, 0, 0x2335, 700000, 1980, 3201 },
};
const size_t gpusim_model_count = sizeof(gpusim_models) / sizeof(gpusim_models[0]);

static int model_find(const char *key, size_t len)
{
  for (size_t i = 0; i < gpusim_model_count; i++)
    if (strlen(gpusim_models[i].key) == len && strncmp(gpusim_models[i].key, key, len) == 0)
      return (int) i;
  return -1;
}

static void known_models(char *buf, size_t len)
{
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < gpusim_model_count && off < len; i++)
    off += (size_t) snprintf(buf + off, len - off, "%s%s", i ? ", " : "", gpusim_models[i].key);
}

/* Parses one "model[:count]" token of length len. Returns the count, or -1. */
static int parse_token(const char *tok, size_t len, int *model, char *err, size_t errlen)
{
  const char *colon = memchr(tok, ':', len);
  size_t klen = colon ? (size_t) (colon - tok) : len;
  char known[128];

  *model = model_find(tok, klen);
  if (*model < 0) {
    known_models(known, sizeof(known));
    snprintf(err, errlen, "GPUSLICE_SIM: unknown model '%.*s' (known: %s)", (int) klen, tok, known);
    return -1;
  }
  if (!colon)
    return 1;
  char num[16];
  size_t nlen = len - klen - 1;
  char *end = NULL;
  if (nlen == 0 || nlen >= sizeof(num))
    goto bad;
  memcpy(num, colon + 1, nlen);
  num[nlen] = '\0';
  if (num[0] < '0' || num[0] > '9')
    goto bad;
  errno = 0;
  long n = strtol(num, &end, 10);
  if (errno || *end || n < 1 || n > GPUSIM_MAX_DEVICES)
    goto bad;
  return (int) n;
bad:
  snprintf(err, errlen, "GPUSLICE_SIM: bad count in '%.*s' (want 1..%d)", (int) len, tok,
           GPUSIM_MAX_DEVICES);
  return -1;
}

/* The message echoes what the user typed: a control character in it (a newline) would break
 * the one-line promise, so each is shown as '?'. */
static int fail_one_line(char *err)
{
  for (char *p = err; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  return -1;
}

int gpusim_spec_parse(const char *spec, int out[GPUSIM_MAX_DEVICES], char *err, size_t errlen)
{
  int ndev = 0;
  const char *p = spec;

  if (!spec || !*spec) {
    snprintf(err, errlen, "GPUSLICE_SIM: empty device list");
    return fail_one_line(err);
  }
  for (;;) {
    size_t len = strcspn(p, ",");
    int model;
    if (len == 0) {
      snprintf(err, errlen, "GPUSLICE_SIM: empty entry in '%s'", spec);
      return fail_one_line(err);
    }
    int count = parse_token(p, len, &model, err, errlen);
    if (count < 0)
      return fail_one_line(err);
    if (ndev + count > GPUSIM_MAX_DEVICES) {
      snprintf(err, errlen, "GPUSLICE_SIM: '%.*s' brings the total past %d devices", (int) len, p,
               GPUSIM_MAX_DEVICES);
      return fail_one_line(err);
    }
    while (count--)
      out[ndev++] = model;
    if (p[len] == '\0')
      return ndev;
    p += len + 1;
  }
}

/* FNV-1a, enough to spread model and index into distinct, stable UUIDs. */
static uint64_t fnv1a(const char *s, uint64_t h)
{
  for (; *s; s++) {
    h ^= (unsigned char) *s;
    h *= 0x100000001b3ULL;
  }
  return h;
}

void gpusim_uuid(int model, int index, char *buf, size_t len)
{
  char seed[64];
  snprintf(seed, sizeof(seed), "%s/%d", gpusim_models[model].key, index);
  uint64_t a = fnv1a(seed, 0xcbf29ce484222325ULL);
  uint64_t b = fnv1a(seed, a ^ 0x9e3779b97f4a7c15ULL);
  snprintf(buf, len, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned) (a >> 32),
           (unsigned) (a >> 16) & 0xffff, (unsigned) a & 0xffff, (unsigned) (b >> 48),
           (unsigned long long) (b & 0xffffffffffffULL));
}
