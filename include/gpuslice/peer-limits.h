/* The limit variables that workloads already carry for other GPU-sharing systems, read so that
 * a cluster can move to gpuslice without changing its pod specs:
 *
 *   CUDA_DEVICE_MEMORY_LIMIT, CUDA_DEVICE_MEMORY_LIMIT_<i>   HAMi (HAMi-core's libvgpu.so)
 *   CUDA_DEVICE_SM_LIMIT, CUDA_DEVICE_SM_LIMIT_<i>           HAMi
 *   GPU_MEMORY_LIMIT                                         KAI Scheduler (Run:ai)
 *
 * Such a variable only ever lowers a limit: what gpuslice's own options and the node daemon
 * set stays the authority, and a variable can take a tenant's process below it, never above
 * (gs_peer_lower). docs/memory-quotas.md says where each format comes from.
 *
 * Parsing is pure: the caller hands the environment in and chooses what to do with a value
 * that is ignored. libc only, no allocation: the interposer reads these once, at attach. */
#ifndef GS_PEER_LIMITS_H
#define GS_PEER_LIMITS_H

#include <stdint.h>

#include <gpuslice/tenant-ledger.h>

/* What a bare number counts in: bytes for HAMi's variable, MiB for KAI's. */
#define GS_PEER_UNIT_BYTES 1ULL
#define GS_PEER_UNIT_MIB (1ULL << 20)

/* A memory size as HAMi-core reads CUDA_DEVICE_MEMORY_LIMIT: decimal digits, then optionally
 * k, m, g or t in either case (powers of 1024), which may be followed by "i" and then "b"
 * ("4g", "4096M", "4Gi", "4GiB", "4gb" are all 4 GiB). A bare number counts in `unit` bytes.
 * 0 means no limit, as in HAMi. Returns 0 with *bytes, or -1 (and *bytes untouched) for
 * anything else: empty, a sign, a fraction, an unknown suffix, trailing text, overflow. */
int gs_peer_size_parse(const char *s, uint64_t unit, uint64_t *bytes);

/* A share of the GPU as HAMi-core reads CUDA_DEVICE_SM_LIMIT: a whole percentage from 0 to
 * 100. Returns 0 with *ppm in millionths of the GPU, 0 meaning no limit (for 0 and 100, as
 * HAMi), or -1 for anything else. */
int gs_peer_pct_parse(const char *s, uint32_t *ppm);

/* What the variables say, per GPU (CUDA ordinal, as HAMi numbers CUDA_DEVICE_MEMORY_LIMIT_<i>). */
struct gs_peer_limits {
  uint64_t mem_bytes[GS_LEDGER_MAX_GPUS]; /* GS_LIMIT_NONE where no variable limits memory */
  uint32_t sm_ppm[GS_LEDGER_MAX_GPUS];    /* 0 where no variable limits compute */
};

/* Looks a variable up: its value, or NULL when unset. */
typedef const char *(*gs_peer_getenv_fn)(const char *name);
/* Told once about each variable whose value is ignored; `expected` says what it should be. */
typedef void (*gs_peer_bad_fn)(const char *name, const char *value, const char *expected,
                               void *data);

/* Reads every variable above through get. HAMi's rule decides between its two forms: a
 * per-device CUDA_DEVICE_MEMORY_LIMIT_<i> (or _SM_LIMIT_<i>) that is set and not 0 replaces
 * the plain one for device i. GPU_MEMORY_LIMIT applies to every device, and where both
 * systems' variables apply the lower one holds. Ignored values are as good as unset. */
void gs_peer_limits_read(struct gs_peer_limits *out, gs_peer_getenv_fn get, gs_peer_bad_fn bad,
                         void *data);

/* limit, lowered by a peer's limit: never above either. */
static inline uint64_t gs_peer_lower(uint64_t limit, uint64_t peer)
{
  return peer < limit ? peer : limit;
}

#endif
