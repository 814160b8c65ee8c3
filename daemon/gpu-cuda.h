/* The daemon's CUDA driver (gpu-cuda.c): the checkpoint API on other processes and memory held
 * on a GPU. Private to daemon/. */
#ifndef GS_DAEMON_GPU_CUDA_H
#define GS_DAEMON_GPU_CUDA_H

#include <stdint.h>
#include <sys/types.h>

#include <gpuslice.h>

#include "gs-cuda.h"

struct cuda;
/* Loads the driver include/gpuslice/driver.h picks (the simulated one when GPUSLICE_SIM is
 * set) and calls cuInit. Fails, saying so, on a driver without the checkpoint API. */
int cuda_open(struct cuda **out, gs_error_t *err);
void cuda_close(struct cuda *c);
/* "CUDA_ERROR_NOT_SUPPORTED" for r. */
const char *cuda_error_name(const struct cuda *c, CUresult r);

/* cuCheckpointProcess* on process pid; a lock's timeout in ms (0: none). */
CUresult cuda_proc_state(struct cuda *c, pid_t pid, CUprocessState *state);
CUresult cuda_proc_lock(struct cuda *c, pid_t pid, unsigned timeout_ms);
CUresult cuda_proc_checkpoint(struct cuda *c, pid_t pid);
CUresult cuda_proc_restore(struct cuda *c, pid_t pid);
CUresult cuda_proc_unlock(struct cuda *c, pid_t pid);

/* Allocates bytes on gpu in the daemon's own context: memory a suspended tenant keeps. *handle
 * is 0 on failure. */
CUresult cuda_hold(struct cuda *c, int gpu, uint64_t bytes, uint64_t *handle);
void cuda_release(struct cuda *c, int gpu, uint64_t handle);

#endif
