/* Finding a process's gate for a GPU: made on the first launch there, from the tenant's
 * ledger and the board named by the GPU's UUID, and cached per thread; deciding whether it is
 * open (no gating needed) or closed; and the gate's row on that board, claimed at its first
 * gated launch, or waited for (GPUSLICE_BOARD_FULL) when every row is taken. A process that
 * is no tenant gets an always-open gate; a tenant whose GPU cannot be gated gets a gate that
 * refuses its launches. See compute-gate.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuslice/env.h>

#include "compute-gate.h"
#include <gpuslice.h>
#include "hooks.h"

/* What a gate without a board or a limits file compares with: words that never move. */
static const _Atomic uint32_t no_gating = 0;
static const _Atomic uint64_t no_limgen = 0;

/* Marks a GPU whose gate could not be made, so that it is not tried on every launch: its
 * launches are refused (no board: enter_slow says no), never let through ungated. */
static struct gs_gate gate_none = {
  .gatingp = &no_gating, .limgenp = &no_limgen, .row = -1, .mu = PTHREAD_MUTEX_INITIALIZER
};
#define GATE_NONE (&gate_none)
/* The gate of a process that is no tenant: always open, its launches go straight to the driver. */
static struct gs_gate gate_pass = { .gatingp = &no_gating,
                                    .limgenp = &no_limgen,
                                    .open = true,
                                    .row = -1,
                                    .mu = PTHREAD_MUTEX_INITIALIZER };
#define GATE_PASS (&gate_pass)
/* How often a gate without a row looks for one. */
#define ROW_POLL_NS 10000000ull

/* What a thread's cache holds until it finds its gate: closed, and never what it has seen, so
 * that both checks of the launch path send it to gs__gate_decide. */
struct gs_gate gs__gate_unknown = { .gatingp = &no_gating,
                                    .limgenp = &no_limgen,
                                    .seen_gating = 1,
                                    .row = -1,
                                    .mu = PTHREAD_MUTEX_INITIALIZER };

__thread struct gs_gate *gs__gate_tls __attribute__((tls_model("initial-exec"))) =
  &gs__gate_unknown;

static _Atomic(struct gs_gate *) gates[GS_LEDGER_MAX_GPUS];
static pthread_mutex_t gates_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* A forked child holds no turn and none of its parent's events; it runs in the one thread
 * that forked, whose cached gate was the parent's. */
static void gates_after_fork(void)
{
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++)
    atomic_store(&gates[i], NULL);
  pthread_mutex_init(&gates_lock, NULL);
  gs__gate_tls = &gs__gate_unknown;
}

/* A process that ends while it holds a turn hands it on at once. Its work has finished or
 * been torn down with it; the little device time since its last marker goes uncharged. */
__attribute__((destructor)) static void gates_at_exit(void)
{
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++) {
    struct gs_gate *g = atomic_load(&gates[i]);
    if (g && g != GATE_PASS)
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
  if (!gs__cuda.cuDeviceGet || !gs__cuda.cuDeviceGetUuid ||
      gs__cuda.cuDeviceGet(&dev, gpu) != CUDA_SUCCESS ||
      gs__cuda.cuDeviceGetUuid(&u, dev) != CUDA_SUCCESS)
    return -1;
  gs__uuid_text(&u, buf, len);
  return 0;
}

/* GPUSLICE_BOARD_FULL, read once (under gates_lock, before the first gate is made). */
static struct gs_board_full board_full;

static void board_full_read(void)
{
  static bool read;
  if (read)
    return;
  read = true;
  const char *v = gs_getenv("GPUSLICE_BOARD_FULL");
  if (gs_board_full_parse(v, &board_full) < 0)
    GS_LOG(GS_LOG_WARN,
           "GPUSLICE_BOARD_FULL='%s' is not wait, wait:SECONDS or refuse; waiting up to %u s", v,
           board_full.wait_s);
}

/* The gate starts without a row: its first launch claims one (gs__gate_row). */
static struct gs_gate *gate_new(struct gs_ledger *l, int gpu)
{
  char uuid[GS_BOARD_UUID_MAX];
  gs_error_t err = NULL;
  struct gs_board *b = NULL;
  if (gpu_uuid(gpu, uuid, sizeof(uuid)) < 0) {
    GS_LOG(GS_LOG_ERROR, "compute gate: no UUID for GPU %d; its launches are refused", gpu);
    return NULL;
  }
  if (gs_board_open(gs_ledger_state_dir(), uuid, &b, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "compute gate: %s; launches on GPU %d are refused", err->msg, gpu);
    gs_error_release(&err);
    return NULL;
  }
  struct gs_gate *g = calloc(1, sizeof(*g));
  if (!g) {
    GS_LOG(GS_LOG_ERROR, "compute gate: out of memory on GPU %d; its launches are refused", gpu);
    gs_board_close(b);
    return NULL;
  }
  uint32_t slice = atomic_load(&l->compute.slice_ms);
  if (slice)
    atomic_store(&b->slice_ms, slice);
  *g = (struct gs_gate){ .gatingp = &b->gating,
                         .limgenp = gs__limits_generation(),
                         .b = b,
                         .ledger = l,
                         .row = -1,
                         .gpu = gpu,
                         .mark_every = 1,
                         .keep = -1 };
  pthread_mutex_init(&g->mu, NULL);
  return g;
}

static int row_claim(struct gs_gate *g, uint64_t now)
{
  struct gs_ledger *l = g->ledger;
  return gs_board_row_claim(g->b, l->name, gs__compute_limit_ppm(g->gpu),
                            gs__compute_policy(g->gpu), gs_ledger_priority(l), now);
}

static void row_full_log(struct gs_gate *g)
{
  if (board_full.mode == GS_BOARD_FULL_REFUSE)
    GS_LOG(GS_LOG_ERROR,
           "compute gate: every row of GPU %d's board is taken; launches are refused until one is "
           "free (GPUSLICE_BOARD_FULL=refuse)",
           g->gpu);
  else
    GS_LOG(GS_LOG_WARN,
           "compute gate: every row of GPU %d's board is taken; launches wait up to %u s for one, "
           "then are refused",
           g->gpu, board_full.wait_s);
}

/* Slow on purpose: a full board is rare, and a waiting launch has nothing better to do. */
bool gs__gate_row(struct gs_gate *g)
{
  static _Atomic bool logged;
  uint64_t t0 = gs__mono_ns(), now = t0, bound = (uint64_t) board_full.wait_s * 1000000000ull;
  for (;;) {
    int row = row_claim(g, now);
    if (row >= 0) {
      g->row = row;
      atomic_fetch_add(&g->ledger->gpu[g->gpu].throttled_ns, now - t0);
      return true;
    }
    if (!atomic_exchange(&logged, true))
      row_full_log(g);
    if (board_full.mode == GS_BOARD_FULL_REFUSE || now >= t0 + bound)
      return false;
    struct timespec ts = { 0, (long) ROW_POLL_NS };
    nanosleep(&ts, NULL);
    now = gs__mono_ns();
  }
}

static struct gs_gate *gate_slow(int gpu)
{
  pthread_once(&fork_once, register_fork);
  pthread_mutex_lock(&gates_lock);
  struct gs_gate *g = atomic_load(&gates[gpu]);
  if (!g) {
    struct gs_ledger *l = gs__tenant_ledger();
    board_full_read();
    g = l ? gate_new(l, gpu) : GATE_PASS;
    atomic_store(&gates[gpu], g ? g : GATE_NONE);
  }
  pthread_mutex_unlock(&gates_lock);
  return atomic_load(&gates[gpu]);
}

/* The gate of the thread's current GPU, made if needed; NULL when the thread has no current
 * context (nothing to cache: the driver refuses such a launch itself). */
static struct gs_gate *gate_find(void)
{
  int gpu = gs__current_gpu();
  if (gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS)
    return NULL;
  struct gs_gate *g = atomic_load_explicit(&gates[gpu], memory_order_acquire);
  return g ? g : gate_slow(gpu);
}

/* Whether the process's own tenant asks for gating on this GPU: a compute limit, or a
 * priority, which only means something with turns. */
static bool own_limits_gate(struct gs_gate *g)
{
  return gs__compute_limit_ppm(g->gpu) != 0 || gs_ledger_priority(g->ledger) != GS_PRIO_NORMAL;
}

/* Looks again at what the gate depends on and opens or closes it. With mu held. The words are
 * read before anything they guard, so a change made meanwhile moves them past what is
 * recorded here, and the next launch looks again. */
static void gate_look(struct gs_gate *g)
{
  uint32_t gating = atomic_load(g->gatingp);
  uint64_t limgen = atomic_load(g->limgenp);
  bool open = g->b && !GS_GATING_NEEDED(gating) && !own_limits_gate(g);
  if (open && !atomic_load(&g->open))
    gs__gate_quit(g);
  atomic_store(&g->seen_gating, gating);
  atomic_store(&g->seen_limgen, limgen);
  atomic_store(&g->open, open);
}

struct gs_gate *gs__gate_decide(struct gs_gate *g)
{
  if (g == &gs__gate_unknown && !(g = gate_find()))
    return NULL;
  gs__gate_tls = g;
  if (g == GATE_PASS)
    return NULL;
  pthread_mutex_lock(&g->mu);
  gate_look(g);
  pthread_mutex_unlock(&g->mu);
  return atomic_load(&g->open) ? NULL : g;
}
