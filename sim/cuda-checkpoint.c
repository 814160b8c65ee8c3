/* The checkpoint API (cuCheckpointProcess*, CUDA 12.8, driver r570): a controller process
 * locks another process, moves its device memory to host memory, brings it back and unlocks
 * it, as NVIDIA's driver does.
 *
 * The controller cannot do the work itself: the target's device memory is private mappings of
 * the target. So each process runs a service thread from cuInit on, which waits on its slot's
 * mailbox in the shared state (struct gpusim_ckpt); a controller posts a request there, wakes
 * it, and waits for the answer. GetState reads the state word directly.
 *
 * The states and refusals are the driver's:
 *   lock        RUNNING -> LOCKED. New CUDA calls of the target block (GSC_CHECK_INIT waits,
 *               and the service thread holds the process-wide lock), and the lock waits for
 *               the work the process has submitted (its streams' tails on the virtual
 *               timeline). A timeout that expires first leaves the process RUNNING and
 *               answers CUDA_ERROR_NOT_READY.
 *   checkpoint  LOCKED -> CHECKPOINTED (cuda-ckpt-save.c). Managed memory and memory shared
 *               with another process: CUDA_ERROR_NOT_SUPPORTED, the process stays LOCKED.
 *   restore     CHECKPOINTED -> LOCKED, at the same addresses; CUDA_ERROR_OUT_OF_MEMORY, and
 *               still CHECKPOINTED, when the device lacks the room.
 *   unlock      LOCKED -> RUNNING: blocked calls go on.
 * Any other order is CUDA_ERROR_ILLEGAL_STATE; a pid that names no process on the simulated
 * driver (none, or one that never called cuInit) is CUDA_ERROR_INVALID_VALUE, as are args
 * whose reserved fields are not zero. Remapping GPUs on restore is not simulated. */
#include "cuda-internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT_SLICE_NS 100000000ULL /* a waiting controller checks the target is alive this often */

static pid_t g_service_pid; /* the process whose service thread runs; under gsc_lock */

/* word: a 32-bit atomic; the futex reads it as a plain one. */
static long futex(volatile void *word, int op, uint32_t val, uint64_t timeout_ns)
{
  struct timespec ts = { (time_t) (timeout_ns / 1000000000ULL),
                         (long) (timeout_ns % 1000000000ULL) };
  return syscall(SYS_futex, (uintptr_t) word, op, val, timeout_ns ? &ts : NULL, NULL, 0);
}

/* ---- the gate: calls made while the process is locked ---- */

void gsc_gate_wait(void)
{
  while (atomic_load_explicit(&gsc.held, memory_order_acquire))
    futex(&gsc.held, FUTEX_WAIT_PRIVATE, 1, 0);
}

static void gate_close(void)
{
  atomic_store(&gsc.held, 1);
}

static void gate_open(void)
{
  atomic_store(&gsc.held, 0);
  futex(&gsc.held, FUTEX_WAKE_PRIVATE, INT_MAX, 0);
}

/* ---- the target's side: the service thread ---- */

/* The end of all the work this process has submitted: the latest tail of its streams. */
static uint64_t submitted_until(void)
{
  uint64_t t = 0;
  GSC_FOREACH(o, GSC_CTX)
  {
    const struct CUctx_st *c = (const struct CUctx_st *) o;
    if (c->active)
      t = gsc_max(t, gsc_ctx_tail_ns(c));
  }
  return t;
}

/* Closes the gate, then waits for submitted work to finish with no call of the process in
 * the middle of its own: on success the service thread keeps gsc_lock until unlock. */
static CUresult do_lock(struct gpusim_ckpt *m, uint32_t timeout_ms)
{
  uint64_t deadline = timeout_ms ? gpusim_now_ns() + timeout_ms * 1000000ULL : UINT64_MAX;
  gate_close();
  for (;;) {
    gsc_lock();
    uint64_t tail = submitted_until(), now = gpusim_now_ns();
    if (tail <= now) {
      atomic_store(&m->state, CU_PROCESS_STATE_LOCKED);
      return CUDA_SUCCESS;
    }
    gsc_unlock(); /* calls already past the gate may finish meanwhile */
    if (now >= deadline) {
      gate_open();
      return CUDA_ERROR_NOT_READY;
    }
    gpusim_sleep_until(tail < deadline ? tail : deadline);
  }
}

static CUresult do_checkpoint(struct gpusim_ckpt *m)
{
  GSC_TRY(gsc_ckpt_supported());
  GSC_TRY(gsc_ckpt_save());
  atomic_store(&m->state, CU_PROCESS_STATE_CHECKPOINTED);
  return CUDA_SUCCESS;
}

static CUresult do_restore(struct gpusim_ckpt *m)
{
  CUresult rc = gsc_ckpt_load();
  if (rc == CUDA_SUCCESS)
    atomic_store(&m->state, CU_PROCESS_STATE_LOCKED);
  else if (rc != CUDA_ERROR_OUT_OF_MEMORY)
    atomic_store(&m->state, CU_PROCESS_STATE_FAILED);
  return rc;
}

static CUresult do_unlock(struct gpusim_ckpt *m)
{
  atomic_store(&m->state, CU_PROCESS_STATE_RUNNING);
  gsc_unlock();
  gate_open();
  return CUDA_SUCCESS;
}

static CUresult serve(struct gpusim_ckpt *m, uint32_t op, uint32_t timeout_ms)
{
  uint32_t st = atomic_load(&m->state);
  switch (op) {
  case GPUSIM_CKPT_LOCK:
    return st == CU_PROCESS_STATE_RUNNING ? do_lock(m, timeout_ms) : CUDA_ERROR_ILLEGAL_STATE;
  case GPUSIM_CKPT_CHECKPOINT:
    return st == CU_PROCESS_STATE_LOCKED ? do_checkpoint(m) : CUDA_ERROR_ILLEGAL_STATE;
  case GPUSIM_CKPT_RESTORE:
    return st == CU_PROCESS_STATE_CHECKPOINTED ? do_restore(m) : CUDA_ERROR_ILLEGAL_STATE;
  case GPUSIM_CKPT_UNLOCK:
    return st == CU_PROCESS_STATE_LOCKED ? do_unlock(m) : CUDA_ERROR_ILLEGAL_STATE;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

static void *service(void *arg)
{
  struct gpusim_ckpt *m = arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not this thread's */
  uint32_t seen = atomic_load(&m->req_seq);
  atomic_store(&m->tid, (int32_t) syscall(SYS_gettid));
  for (;;) {
    uint32_t seq = atomic_load(&m->req_seq);
    if (seq == seen) {
      futex(&m->req_seq, FUTEX_WAIT, seen, 0);
      continue;
    }
    m->result = serve(m, m->op, m->timeout_ms);
    seen = seq;
    atomic_store(&m->done_seq, seq);
    futex(&m->done_seq, FUTEX_WAKE, INT_MAX, 0);
  }
  return NULL;
}

CUresult gsc_ckpt_start(void)
{
  pthread_t t;
  pthread_attr_t a;
  struct gpusim_proc *self = gpusim_self();
  if (g_service_pid == getpid())
    return CUDA_SUCCESS;
  if (!self)
    return CUDA_ERROR_OPERATING_SYSTEM;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 256 * 1024);
  int rc = pthread_create(&t, &a, service, &self->ckpt);
  pthread_attr_destroy(&a);
  if (rc != 0)
    return CUDA_ERROR_OPERATING_SYSTEM;
  pthread_setname_np(t, "gpusim-ckpt");
  g_service_pid = getpid();
  return CUDA_SUCCESS;
}

void gsc_ckpt_after_fork(void)
{
  atomic_store(&gsc.held, 0);
}

/* ---- the controller's side ---- */

/* The mailbox of process pid, when it runs on the simulated driver with a service thread. */
static struct gpusim_ckpt *mailbox(int pid)
{
  struct gpusim_proc *p = pid > 0 ? gpusim_proc_find(pid) : NULL;
  return p && atomic_load(&p->ckpt.tid) ? &p->ckpt : NULL;
}

/* Takes the mailbox for this process, from a controller that died holding it if need be. */
static void mailbox_take(struct gpusim_ckpt *m)
{
  int32_t me = getpid();
  for (;;) {
    int32_t holder = 0;
    if (atomic_compare_exchange_strong(&m->caller, &holder, me))
      return;
    if (kill(holder, 0) < 0 && errno == ESRCH) {
      if (atomic_compare_exchange_strong(&m->caller, &holder, me))
        return;
      continue;
    }
    futex(&m->caller, FUTEX_WAIT, (uint32_t) holder, WAIT_SLICE_NS);
  }
}

static void mailbox_give(struct gpusim_ckpt *m)
{
  atomic_store(&m->caller, 0);
  futex(&m->caller, FUTEX_WAKE, 1, 0);
}

/* Posts op to process pid and waits for its answer. */
static CUresult request(int pid, uint32_t op, uint32_t timeout_ms)
{
  struct gpusim_proc *p = pid > 0 ? gpusim_proc_find(pid) : NULL;
  struct gpusim_ckpt *m = mailbox(pid);
  if (!m)
    return CUDA_ERROR_INVALID_VALUE;
  mailbox_take(m);
  m->op = op;
  m->timeout_ms = timeout_ms;
  uint32_t seq = atomic_fetch_add(&m->req_seq, 1) + 1;
  futex(&m->req_seq, FUTEX_WAKE, 1, 0);
  CUresult rc = CUDA_ERROR_INVALID_VALUE; /* the target ended meanwhile */
  for (;;) {
    uint32_t done = atomic_load(&m->done_seq);
    if (done == seq) {
      rc = m->result;
      break;
    }
    if (!gpusim_proc_alive(p->pid, p->start_time))
      break;
    futex(&m->done_seq, FUTEX_WAIT, done, WAIT_SLICE_NS);
  }
  mailbox_give(m);
  return rc;
}

static bool zeroed(const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i])
      return false;
  return true;
}

/* The checkpoint entry points are the controller's: they pass no gate, so that a process may
 * drive its own checkpoint from another thread as the driver allows. */
#define CKPT_ENTER()                     \
  do {                                   \
    if (!atomic_load(&gsc.initialized))  \
      return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

GSC_API CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)
{
  CKPT_ENTER();
  struct gpusim_ckpt *m = mailbox(pid);
  if (!state || !m)
    return CUDA_ERROR_INVALID_VALUE;
  *state = (CUprocessState) atomic_load(&m->state);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
  CKPT_ENTER();
  struct gpusim_ckpt *m = mailbox(pid);
  if (!tid || !m)
    return CUDA_ERROR_INVALID_VALUE;
  *tid = atomic_load(&m->tid);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
  CKPT_ENTER();
  if (args && (args->reserved0 || !zeroed(args->reserved1, sizeof(args->reserved1))))
    return CUDA_ERROR_INVALID_VALUE;
  return request(pid, GPUSIM_CKPT_LOCK, args ? args->timeoutMs : 0);
}

GSC_API CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
  CKPT_ENTER();
  if (args && !zeroed(args, sizeof(*args)))
    return CUDA_ERROR_INVALID_VALUE;
  return request(pid, GPUSIM_CKPT_CHECKPOINT, 0);
}

GSC_API CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
  CKPT_ENTER();
  if (args &&
      (!zeroed(args->reserved, sizeof(args->reserved)) || args->reserved1 ||
       (args->gpuPairsCount && !args->gpuPairs)))
    return CUDA_ERROR_INVALID_VALUE;
  if (args && args->gpuPairsCount)
    return CUDA_ERROR_NOT_SUPPORTED; /* no second GPU of the same chip to move to here */
  return request(pid, GPUSIM_CKPT_RESTORE, 0);
}

GSC_API CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
  CKPT_ENTER();
  if (args && !zeroed(args, sizeof(*args)))
    return CUDA_ERROR_INVALID_VALUE;
  return request(pid, GPUSIM_CKPT_UNLOCK, 0);
}
