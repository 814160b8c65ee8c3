/* The placement core's and the trace generators' random numbers: splitmix64, small, fast and
 * the same on every platform, so a seed replays the same everywhere. Not for anything secret. */
#ifndef GS_LIB_RNG_H
#define GS_LIB_RNG_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t gs__rng_next(uint64_t *s)
{
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* A draw in [0, n), n > 0 (the modulo's bias is below 2^-40 for the sizes used here). */
static inline size_t gs__rng_below(uint64_t *s, size_t n)
{
  return (size_t) (gs__rng_next(s) % n);
}

#endif
