/* cuInit, the driver version, the process-wide lock and object registry, and what a forked
 * child does with the state it inherits. Device queries are in cuda-device.c. */
#include "cuda-internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct gsc_driver gsc;
struct gsc_obj gsc_registry[GSC_KIND_COUNT];

static pthread_mutex_t g_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

void gsc_lock(void)
{
  pthread_mutex_lock(&g_lock);
}

void gsc_unlock(void)
{
  pthread_mutex_unlock(&g_lock);
}

void gsc_unlockp(int *unused)
{
  (void) unused;
  gsc_unlock();
}

/* ---- registry ---- */

static void registry_init(void)
{
  for (int k = 0; k < GSC_KIND_COUNT; k++)
    gsc_registry[k].prev = gsc_registry[k].next = &gsc_registry[k];
}

void gsc_obj_add(struct gsc_obj *o, enum gsc_kind kind)
{
  struct gsc_obj *head = &gsc_registry[kind];
  o->next = head;
  o->prev = head->prev;
  head->prev->next = o;
  head->prev = o;
}

void gsc_obj_del(struct gsc_obj *o)
{
  o->prev->next = o->next;
  o->next->prev = o->prev;
  o->prev = o->next = o;
}

void *gsc_obj_find(const void *p, enum gsc_kind kind)
{
  if (!p)
    return NULL;
  GSC_FOREACH(o, kind)
  if ((const void *) o == p)
    return o;
  return NULL;
}

void gsc_obj_free(struct gsc_obj *o)
{
  gsc_obj_del(o);
  free(o);
}

CUresult gsc_obj_destroy(const void *handle, enum gsc_kind kind, void (*free_fn)(void *),
                         CUresult bad)
{
  GSC_ENTER();
  void *obj = gsc_obj_find(handle, kind);
  if (!obj)
    return bad;
  free_fn(obj);
  return CUDA_SUCCESS;
}

void gsc_obj_free_owned(enum gsc_kind kind, size_t ctx_off, const struct CUctx_st *c,
                        void (*free_fn)(void *))
{
  GSC_FOREACH(o, kind)
  if (!c || *(struct CUctx_st **) ((char *) o + ctx_off) == c)
    free_fn(o);
}

/* ---- fork ---- */

static void atfork_prepare(void)
{
  gsc_lock();
}

static void atfork_parent(void)
{
  gsc_unlock();
}

/* The child is a new process to the driver: it must call cuInit again and gets its own slot
 * in the shared state. What it inherited is dropped here without touching the parent's
 * charges (gsc.forking). The lock is re-created: the thread that held it is gone. */
static void atfork_child(void)
{
  pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  g_lock = fresh;
  gsc.forking = true;
  /* Order matters: allocations refer to pools and VMM handles, so they go first. */
  GSC_FOREACH(o, GSC_CTX)
  gsc_ctx_teardown((struct CUctx_st *) o);
  for (struct gsc_alloc *a = gsc_alloc_first(), *n; a; a = n) {
    n = a->next;
    gsc_alloc_free(a);
  }
  GSC_FOREACH(o, GSC_POOL)
  gsc_pool_destroy((struct CUmemPoolHandle_st *) o);
  GSC_FOREACH(o, GSC_VMM)
  {
    struct gsc_vmm *h = (struct gsc_vmm *) o;
    h->refs = 1;
    gsc_vmm_put(h);
  }
  gsc_event_ctx_gone(NULL);
  gsc_module_ctx_gone(NULL);
  gsc_array_ctx_gone(NULL);
  gsc_graph_free_all();
  gsc_library_free_all();
  GSC_FOREACH(o, GSC_CTX)
  {
    gsc_obj_del(o);
    free(o);
  }
  gsc_ctx_reset_thread();
  memset(gsc.primary, 0, sizeof(gsc.primary));
  memset(gsc.default_pool, 0, sizeof(gsc.default_pool));
  memset(gsc.current_pool, 0, sizeof(gsc.current_pool));
  gsc.forking = false;
  gsc_ckpt_after_fork();
  atomic_store(&gsc.initialized, false);
}

static void once_init(void)
{
  registry_init();
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- cuInit ---- */

static uint64_t default_kernel_ns(void)
{
  const char *s = secure_getenv("GPUSIM_DEFAULT_KERNEL_US");
  char *end = NULL;
  unsigned long long us = s ? strtoull(s, &end, 10) : 0;
  if (!s || !*s || *end)
    us = 100;
  return (uint64_t) us * 1000ULL;
}

/* A missing device list reads as "no GPU"; a bad one as a bad argument; a broken state file
 * as an operating system problem. Each is said once on stderr, as gpusim: <message>. */
static CUresult init_failure(const char *msg)
{
  GPUSIM_WARN_ONCE("%s", msg);
  const char *spec = secure_getenv("GPUSLICE_SIM");
  if (!spec)
    return CUDA_ERROR_NO_DEVICE;
  int models[GPUSIM_MAX_DEVICES];
  char err[256];
  if (gpusim_spec_parse(spec, models, err, sizeof(err)) < 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_OPERATING_SYSTEM;
}

static CUresult init_locked(void)
{
  const char *msg = NULL;
  struct gpusim_shared *sh = gpusim_state(&msg);
  if (!sh)
    return init_failure(msg ? msg : "cannot open the simulator state");
  if (!gpusim_self())
    return CUDA_ERROR_OPERATING_SYSTEM;
  gsc.sh = sh;
  GSC_TRY(gsc_visible_init());
  gsc.default_kernel_ns = default_kernel_ns();
  gsc_map_cache_init();
  for (int d = 0; d < gsc.ndev; d++)
    GSC_TRY(gsc_pool_create_default(d));
  GSC_TRY(gsc_ckpt_start());
  atomic_store(&gsc.initialized, true);
  return CUDA_SUCCESS;
}

GSC_API CUresult cuInit(unsigned int Flags)
{
  pthread_once(&g_once, once_init);
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_LOCKED;
  if (atomic_load(&gsc.initialized))
    return CUDA_SUCCESS;
  return init_locked();
}

GSC_API CUresult cuDriverGetVersion(int *driverVersion)
{
  if (!driverVersion)
    return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = GS_CUDA_VERSION;
  return CUDA_SUCCESS;
}
