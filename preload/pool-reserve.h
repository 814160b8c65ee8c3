/* The charge for what stream-ordered memory pools keep in reserve: memory freed into a pool
 * stays the tenant's on the device until the pool gives it back (at a synchronization, down to
 * its release threshold, or on cuMemPoolTrimTo), so its charge stays too. See pool-reserve.c.
 *
 * Behind GPUSLICE_CHARGE_POOL_RESERVE (on unless set to 0), read once when the tenant attaches.
 * Off, a free gives its charge back at once, as before. */
#ifndef GS_PRELOAD_POOL_RESERVE_H
#define GS_PRELOAD_POOL_RESERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "gs-cuda.h"

/* Reads the option; called once, when the tenant attaches. */
void gs__pool_reserve_init(void);
/* True when the reserve is charged (and the process is a tenant). */
bool gs__pool_reserve_on(void);

/* A freed pool allocation's charge stays, as reserve on gpu; unkeep undoes it when the
 * driver refuses the free. Neither changes the tenant's usage: the charge only changes hands. */
void gs__pool_keep(int gpu, uint64_t bytes);
void gs__pool_unkeep(int gpu, uint64_t bytes);
/* Moves up to `want` bytes of gpu's reserve charge to a new allocation; returns how many. */
uint64_t gs__pool_take(int gpu, uint64_t want);
/* Bytes charged as reserve on gpu. */
uint64_t gs__pool_kept(int gpu);

/* What the pools on gpu hold beyond what is allocated from them, asked of the driver; false
 * when gpuslice cannot know every pool's (a query failed, or too many pools). */
bool gs__pool_spare(int gpu, uint64_t *spare);
/* The same for one pool. */
bool gs__pool_spare_of(CUmemoryPool pool, uint64_t *spare);
/* Gives back the reserve charge the pools no longer hold: on every GPU with some, after a
 * synchronization, a trim, a pool's destruction, or when an allocation meets the limit. */
void gs__pool_settle(void);
void gs__pool_settle_gpu(int gpu);

/* The pools the driver's defaults do not cover: made by cuMemPoolCreate, until destroyed. */
void gs__pool_created(CUmemoryPool pool, int gpu);
void gs__pool_destroyed(CUmemoryPool pool);

/* A forked child holds no pool memory of its own. */
void gs__pool_after_fork(void);

#endif
