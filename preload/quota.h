/* The tenant as the interposer sees it: which ledger this process charges, its slot there,
 * and the maps from what the driver handed out (pointers, handles, arrays, contexts) to what
 * was charged for it.
 *
 * Without GPUSLICE_TENANT the process is no tenant: nothing is charged and every hook
 * passes straight through. With it, but with a ledger that cannot be read, allocations are
 * refused (CUDA_ERROR_NOT_PERMITTED) rather than left unlimited, and the reason is logged once. */
#ifndef GS_PRELOAD_QUOTA_H
#define GS_PRELOAD_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "gs-cuda.h"
#include <gpuslice/tenant-ledger.h>
#include <gpuslice/ptrmap.h>

/* What a map entry records: the bytes charged and the GPU, packed in one word. */
#define GS_CHARGE(bytes, gpu) (((uint64_t) (gpu) << 56) | (bytes))
#define GS_CHARGE_BYTES(v) ((v) & ((1ULL << 56) - 1))
#define GS_CHARGE_GPU(v) ((int) ((v) >> 56))

enum gs_map {
  GS_MAP_PTR,    /* device pointers: cuMemAlloc*, managed, async */
  GS_MAP_HANDLE, /* VMM allocation handles */
  GS_MAP_ARRAY,  /* arrays and mipmapped arrays */
  GS_MAP_CTX,    /* contexts made with cuCtxCreate */
  /* Raw maps (gs__map_*), not charges. */
  GS_MAP_HANDLE_REFS, /* VMM handle -> references keeping its memory: the user's, plus one per mapping */
  GS_MAP_VA_HANDLE, /* start of a mapping made by cuMemMap -> the handle it maps */
  GS_MAP_VA_SIZE,   /* start of a mapping -> its size */
  GS_MAP_COUNT
};

/* The tenant's ledger, or NULL when the process is no tenant. */
struct gs_ledger *gs__tenant_ledger(void);

/* True when this process belongs to a tenant whose ledger is attached. */
bool gs__tenant_active(void);

/* Charges bytes on gpu to the tenant before the driver is asked for them. CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY past the limit (logged once), or CUDA_ERROR_NOT_PERMITTED when the
 * ledger is unreadable. Always succeeds when the process is no tenant. */
CUresult gs__charge(int gpu, uint64_t bytes, const char *what);
/* gs__charge without the refusal's log line, for a caller with another way to try first;
 * gs__refuse then logs it (once per process) and returns CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gs__charge_quiet(int gpu, uint64_t bytes);
CUresult gs__refuse(int gpu, uint64_t bytes, const char *what);
/* Charges without checking the limit: for putting back what a failed free had released. */
void gs__charge_force(int gpu, uint64_t bytes);
void gs__uncharge(int gpu, uint64_t bytes);

/* Records what was charged for key; on failure (no memory for the map) returns false and the
 * caller undoes the allocation. */
bool gs__remember(enum gs_map map, uint64_t key, uint64_t bytes, int gpu);
/* Forgets key and gives back its charge. False when gpuslice never charged for it. */
bool gs__forget(enum gs_map map, uint64_t key, uint64_t *charge);
/* What was charged for key, leaving it recorded. False when gpuslice never charged for it. */
bool gs__peek(enum gs_map map, uint64_t key, uint64_t *charge);

/* The raw maps, for values that are not charges; all false when the process is no tenant.
 * gs__map_add changes a value in place, atomically (see gs_ptrmap_add). */
bool gs__map_put(enum gs_map map, uint64_t key, uint64_t value);
bool gs__map_get(enum gs_map map, uint64_t key, uint64_t *value);
bool gs__map_take(enum gs_map map, uint64_t key, uint64_t *value);
bool gs__map_add(enum gs_map map, uint64_t key, int64_t delta, uint64_t *after);

/* The GPU the calling thread's current context is on, or -1. */
int gs__current_gpu(void);

/* Forgets the primary contexts counted so far: a forked child has none of its own. */
void gs__ctx_after_fork(void);

/* Bytes each CUDA context is charged; 0 when the process is no tenant. */
uint64_t gs__context_reserve(void);

/* The tenant's limit on gpu as this process holds it (lowered by HAMi's or KAI's variables,
 * gpuslice/peer-limits.h), and the tenant's usage there. False when gpu is not limited. */
bool gs__limit(int gpu, uint64_t *limit, uint64_t *used);

/* The tenant's compute limit (millionths, 0 for none) and policy on gpu as this process
 * holds them: the ledger's (or the daemon's), lowered by CUDA_DEVICE_SM_LIMIT[_<i>] to a cap.
 * The compute gate reads these, never the ledger's getters. */
uint32_t gs__compute_limit_ppm(int gpu);
uint32_t gs__compute_policy(int gpu);

#endif
