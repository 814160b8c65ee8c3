/* A cache of freed device mappings, for benchmarks (GPUSIM_MAP_CACHE=N, off by default).
 *
 * Every simulated allocation is an mmap and every free a munmap (cuda-mem.c), a few
 * microseconds of system calls that drown what a caller adds around a small allocation.
 * NVIDIA's driver sub-allocates small requests from memory it already holds; with this cache
 * the simulator does too, in its own way: up to N freed mappings of at most
 * GSC_MAP_CACHE_BYTES are kept mapped and handed out again to an allocation of the same
 * length. Their contents are not cleared (the driver's memory is not either); the device's
 * accounting is charged and released as without the cache. Called with gsc_lock held. */
#include "cuda-internal.h"

#include <stdlib.h>
#include <sys/mman.h>

#define GSC_MAP_CACHE_MAX 4096

static struct {
  void *p;
  size_t len;
} cache[GSC_MAP_CACHE_MAX];
static unsigned cached, cache_max;

void gsc_map_cache_init(void)
{
  const char *s = secure_getenv("GPUSIM_MAP_CACHE");
  char *end = NULL;
  unsigned long n = s && *s ? strtoul(s, &end, 10) : 0;
  cache_max = end && !*end && n <= GSC_MAP_CACHE_MAX ? (unsigned) n : 0;
}

void *gsc_map_cached(size_t len)
{
  for (unsigned i = cached; len <= GSC_MAP_CACHE_BYTES && i-- > 0;)
    if (cache[i].len == len) {
      void *p = cache[i].p;
      cache[i] = cache[--cached];
      return p;
    }
  return gsc_map(len);
}

void gsc_unmap_cached(void *p, size_t len)
{
  if (len <= GSC_MAP_CACHE_BYTES && cached < cache_max) {
    cache[cached].p = p;
    cache[cached++].len = len;
    return;
  }
  munmap(p, len);
}
