/* Finding a process's gate for a GPU: made on the first launch there, from the tenant's
 * ledger and the board named by the GPU's UUID. A process that is no tenant, or whose GPU
 * cannot be gated, gets NULL and launches pass straight through. See compute-gate.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute-gate.h"
#include <gpuslice.h>
#include "hooks.h"

/* Marks a GPU whose gate could not be made, so that it is not tried on every launch. */
#define GATE_NONE ((struct gs_gate *) 1)

static _Atomic(struct gs_gate *) gates[GS_LEDGER_MAX_GPUS];
static pthread_mutex_t gates_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* A forked child holds no turn and none of its parent's events. */
static void gates_after_fork(void)
{
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++)
    atomic_store(&gates[i], NULL);
  pthread_mutex_init(&gates_lock, NULL);
}

/* A process that ends while it holds a turn hands it on at once. Its work has finished or
 * been torn down with it; the little device time since its last marker goes uncharged. */
__attribute__((destructor)) static void gates_at_exit(void)
{
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++) {
    struct gs_gate *g = atomic_load(&gates[i]);
    if (g && g != GATE_NONE)
      gs__gate_exit(g);
  }
}

static void register_fork(void)
{
  pthread_atfork(NULL, NULL, gates_after_fork);
}

static int gpu_uuid(int gpu, char *buf, size_t len)
{
  CUdevice dev;
  CUuuid u;
  if (!gs__cuda.cuDeviceGet || !gs__cuda.cuDeviceGetUuid || gs__cuda.cuDeviceGet(&dev, gpu) != CUDA_SUCCESS ||
      gs__cuda.cuDeviceGetUuid(&u, dev) != CUDA_SUCCESS)
    return -1;
  gs__uuid_text(&u, buf, len);
  return 0;
}

static struct gs_gate *gate_new(struct gs_ledger *l, int gpu)
{
  char uuid[GS_BOARD_UUID_MAX];
  gs_error_t err = NULL;
  struct gs_board *b = NULL;
  if (gpu_uuid(gpu, uuid, sizeof(uuid)) < 0) {
    GS_LOG(GS_LOG_WARN, "compute gate: no UUID for GPU %d; its launches are not gated", gpu);
    return NULL;
  }
  if (gs_board_open(gs_ledger_state_dir(), uuid, &b, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "compute gate: %s; launches on GPU %d are not gated", err->msg, gpu);
    gs_error_release(&err);
    return NULL;
  }
  uint32_t slice = atomic_load(&l->compute.slice_ms);
  if (slice)
    atomic_store(&b->slice_ms, slice);
  int row = gs_board_row_claim(b, l->name, gs_ledger_compute_limit_ppm(l), gs_ledger_compute_policy(l),
                               gs_ledger_priority(l), gs__mono_ns());
  struct gs_gate *g = row >= 0 ? calloc(1, sizeof(*g)) : NULL;
  if (!g) {
    GS_LOG(GS_LOG_ERROR, "compute gate: %s on GPU %d; its launches are not gated",
           row < 0 ? "every board row is taken" : "out of memory", gpu);
    gs_board_close(b);
    return NULL;
  }
  *g = (struct gs_gate){ .b = b, .ledger = l, .row = row, .gpu = gpu, .mark_every = 32, .keep = -1 };
  pthread_mutex_init(&g->mu, NULL);
  return g;
}

static struct gs_gate *gate_slow(int gpu)
{
  pthread_once(&fork_once, register_fork);
  pthread_mutex_lock(&gates_lock);
  struct gs_gate *g = atomic_load(&gates[gpu]);
  if (!g) {
    struct gs_ledger *l = gs__tenant_ledger();
    g = l ? gate_new(l, gpu) : NULL;
    atomic_store(&gates[gpu], g ? g : GATE_NONE);
  }
  pthread_mutex_unlock(&gates_lock);
  return g == GATE_NONE ? NULL : g;
}

struct gs_gate *gs__gate(void)
{
  int gpu = gs__current_gpu();
  if (gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS)
    return NULL;
  struct gs_gate *g = atomic_load_explicit(&gates[gpu], memory_order_acquire);
  if (__builtin_expect(g != NULL, 1))
    return g == GATE_NONE ? NULL : g;
  return gate_slow(gpu);
}
