/* Threads' own ledger slots (GS_SLOT_THREAD in gpuslice/tenant-ledger.h): a thread claims one
 * on its first cuMemAlloc_v2 or cuMemFree_v2 (their full paths), up to GS_THREAD_SLOTS_MAX per
 * process, and from then on charges and gives back with plain stores to it (gs__own_add)
 * instead of locked instructions on its process's slot, which every other thread shares; the
 * fast paths of those two calls are open only to a thread with a slot of its own. When a
 * thread ends its slot, with what it holds, goes to the next thread of the process that asks;
 * the slots are given back to the tenant with the process's own. See quota.h. */
#include <pthread.h>

#include <gpuslice/limits.h>

#include "quota.h"

const _Atomic uint32_t gs__free_not_ready = GS_RUN_SUSPENDING;
__thread struct gs__tls_fast gs__tls
  __attribute__((tls_model("initial-exec"))) = { .free_gate = &gs__free_not_ready };
/* Whether the thread has asked for a slot: one that got none keeps its process's. */
static __thread bool asked __attribute__((tls_model("initial-exec")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool have_key;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* The process's thread slots: claimed, and those of ended threads, free for the next. */
static int claimed;
static struct gs_ledger_proc *spare[GS_THREAD_SLOTS_MAX];
static int nspare;

/* At the end of a thread that had a slot: its slot waits for another thread. */
static void thread_ended(void *slot)
{
  pthread_mutex_lock(&pool_lock);
  if (nspare < GS_THREAD_SLOTS_MAX)
    spare[nspare++] = slot;
  pthread_mutex_unlock(&pool_lock);
}

static void key_make(void)
{
  have_key = pthread_key_create(&key, thread_ended) == 0;
}

static struct gs_ledger_proc *take(struct gs_ledger *l, const struct gs_ledger_proc *owner)
{
  struct gs_ledger_proc *t = NULL;
  pthread_mutex_lock(&pool_lock);
  if (nspare)
    t = spare[--nspare];
  else if (claimed < GS_THREAD_SLOTS_MAX && (t = gs_ledger_claim_thread(l, owner)))
    claimed++;
  pthread_mutex_unlock(&pool_lock);
  return t;
}

void gs__thread_slot_open(struct gs_ledger *l, const struct gs_ledger_proc *owner)
{
  if (asked || !l || !owner)
    return;
  asked = true;
  pthread_once(&key_once, key_make);
  if (!have_key)
    return;
  struct gs_ledger_proc *t = take(l, owner);
  if (!t)
    return;
  if (pthread_setspecific(key, t) != 0) {
    thread_ended(t);
    return;
  }
  gs__tls.used = t->used;
}

void gs__thread_slot_after_fork(void)
{
  /* The parent's slots are the parent's: the child's one thread starts without one. */
  gs__tls = (struct gs__tls_fast){ .free_gate = &gs__free_not_ready };
  asked = false;
  claimed = nspare = 0;
  pthread_mutex_init(&pool_lock, NULL);
  if (have_key)
    pthread_setspecific(key, NULL);
}
