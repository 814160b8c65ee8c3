/* Quantity parsing. Everything is integer arithmetic on the digits as typed (128-bit in
 * the middle), so "0.1G" is exactly 100000000 bytes and no input can overflow silently. */
#include <gpuslice/quantity.h>

#include <ctype.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

/* More fraction digits than this cannot change a byte count below 2^64 by a whole byte
 * once scaled by the largest unit, so they are rejected rather than silently ignored. */
#define MAX_FRAC_DIGITS 12

struct decimal {
  unsigned __int128 whole; /* the number times 10^frac_digits */
  int frac_digits;
};

struct unit {
  const char *name;
  uint64_t mult;
};

static const struct unit units[] = {
  { "", 1ULL },
  { "K", 1000ULL },
  { "M", 1000ULL * 1000 },
  { "G", 1000ULL * 1000 * 1000 },
  { "T", 1000ULL * 1000 * 1000 * 1000 },
  { "Ki", 1ULL << 10 },
  { "Mi", 1ULL << 20 },
  { "Gi", 1ULL << 30 },
  { "Ti", 1ULL << 40 },
};

static const unsigned __int128 U64_LIMIT = (unsigned __int128) UINT64_MAX;

/* Reads DIGITS[.DIGITS] from *p, advancing it. Returns 0, or -1 when there is no number
 * or it is longer than any size could be. */
static int read_decimal(const char **p, struct decimal *d)
{
  const char *s = *p;
  d->whole = 0;
  d->frac_digits = 0;
  if (!isdigit((unsigned char) *s))
    return -1;
  for (; isdigit((unsigned char) *s); s++) {
    d->whole = d->whole * 10 + (unsigned) (*s - '0');
    if (d->whole > U64_LIMIT)
      return -1;
  }
  if (*s == '.') {
    s++;
    if (!isdigit((unsigned char) *s))
      return -1;
    for (; isdigit((unsigned char) *s); s++) {
      if (++d->frac_digits > MAX_FRAC_DIGITS)
        return -1;
      d->whole = d->whole * 10 + (unsigned) (*s - '0');
    }
  }
  *p = s;
  return 0;
}

static unsigned __int128 pow10_u128(int n)
{
  unsigned __int128 r = 1;
  while (n-- > 0)
    r *= 10;
  return r;
}

/* Finds the unit spelled by s (the whole rest of the input), accepting any case and an
 * optional trailing "B" ("12B" is 12 bytes). Returns NULL when s is not a unit. */
static const struct unit *find_unit(const char *s)
{
  size_t len = strlen(s);
  if (len > 0 && (s[len - 1] == 'B' || s[len - 1] == 'b'))
    len--;
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
    if (strlen(units[i].name) == len && strncasecmp(units[i].name, s, len) == 0)
      return &units[i];
  return NULL;
}

static int parse_percent(const char *s, const struct decimal *d, uint64_t total, uint64_t *out,
                         gs_error_t *err)
{
  unsigned __int128 scale = pow10_u128(d->frac_digits);
  if (d->whole < 1 * scale || d->whole > 100 * scale)
    return gs_make_error(err, 0, "bad size '%s': a percentage must be from 1%% to 100%%", s);
  if (total == 0)
    return gs_make_error(err, 0, "bad size '%s': a percentage needs the device's memory size", s);
  *out = (uint64_t) ((unsigned __int128) total * d->whole / (100 * scale));
  return 0;
}

int gs_parse_size(const char *s, uint64_t device_total, uint64_t *out, gs_error_t *err)
{
  struct decimal d;
  const char *p = s;

  if (!s || !*s)
    return gs_make_error(err, 0, "bad size '': empty");
  if (*s == '-')
    return gs_make_error(err, 0, "bad size '%s': must not be negative", s);
  if (read_decimal(&p, &d) < 0)
    return gs_make_error(err, 0, "bad size '%s': %s", s,
                         isdigit((unsigned char) *s) ? "number too long" : "not a number");
  if (strcmp(p, "%") == 0)
    return parse_percent(s, &d, device_total, out, err);

  const struct unit *u = find_unit(p);
  if (!u)
    return gs_make_error(
      err, 0, "bad size '%s': unknown unit '%s' (want K, M, G, T, Ki, Mi, Gi, Ti or %%)", s, p);
  unsigned __int128 scale = pow10_u128(d.frac_digits);
  unsigned __int128 bytes = d.whole * u->mult;
  if (bytes / u->mult != d.whole || bytes / scale > U64_LIMIT)
    return gs_make_error(err, 0, "bad size '%s': too large", s);
  if (u->mult == 1 && bytes % scale != 0)
    return gs_make_error(err, 0, "bad size '%s': a byte count must be whole", s);
  if (bytes / scale == 0)
    return gs_make_error(err, 0, "bad size '%s': must be at least one byte", s);
  *out = (uint64_t) (bytes / scale);
  return 0;
}

int gs_parse_vram_limit(const char *s, uint64_t *bytes, uint64_t *ppm, gs_error_t *err)
{
  size_t n = strlen(s);
  uint64_t b = 0, p = 0;
  int rc = n && s[n - 1] == '%' ? gs_parse_size(s, 1000000, &p, err) : gs_parse_size(s, 0, &b, err);
  if (rc < 0)
    return -1;
  if (b > (uint64_t) INT64_MAX)
    return gs_make_error(err, 0, "bad size '%s': too large (at most %" PRId64 " bytes)", s,
                         INT64_MAX);
  *bytes = b;
  *ppm = p;
  return 0;
}
