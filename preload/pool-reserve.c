/* The charge for memory that stream-ordered pools keep in reserve (see pool-reserve.h).
 *
 * What the interposer sees is enough to keep the charge from ever falling short: a pool's
 * reserve grows only when an allocation is freed into it (its charge then moves from the
 * pointer to this GPU's `kept` count, with no driver call on the free path), and only the
 * pool shrinks it. So `kept` can only be too high, never too low, and settling is one way:
 * at the points where pools give memory back, gpuslice asks the driver what the pools on the
 * GPU hold beyond their allocations (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT less
 * USED_MEM_CURRENT, over the default pool and every pool made with cuMemPoolCreate) and
 * gives back what `kept` has beyond that. A GPU with nothing kept costs one atomic load.
 *
 * What does not live here: the hooks (hook-async.c frees into the reserve, hook-pool.c the
 * pool calls, hook-launch.c the synchronizations) and the charging itself (quota.c). */
#include "pool-reserve.h"

#include <stdatomic.h>

#include <gpuslice.h>
#include "quota.h"
#include "real.h"

#define MAX_POOLS 64

static bool on;
static _Atomic uint64_t kept[GS_LEDGER_MAX_GPUS];

/* Pools made with cuMemPoolCreate. A slot is claimed by compare-and-swap on its pool; when
 * more pools live than there are slots, the reserve is never given back before exit. */
static struct {
  _Atomic(CUmemoryPool) pool;
  _Atomic int gpu;
} pools[MAX_POOLS];
static atomic_bool pools_overflowed;
/* A slot being filled holds BUSY until its GPU is written, so readers never pair a pool with
 * another's GPU. */
#define BUSY ((CUmemoryPool) (uintptr_t) 1)

void gs__pool_reserve_init(void)
{
  const char *v = gs_getenv_nonempty("GPUSLICE_CHARGE_POOL_RESERVE");
  on = !(v && v[0] == '0' && v[1] == '\0');
}

bool gs__pool_reserve_on(void)
{
  return on && gs__tenant_active();
}

static bool gpu_ok(int gpu)
{
  return gpu >= 0 && gpu < GS_LEDGER_MAX_GPUS;
}

void gs__pool_keep(int gpu, uint64_t bytes)
{
  if (gpu_ok(gpu))
    atomic_fetch_add_explicit(&kept[gpu], bytes, memory_order_relaxed);
}

/* Takes up to want bytes from kept[gpu]; returns how many. */
static uint64_t take_up_to(int gpu, uint64_t want)
{
  uint64_t cur = atomic_load_explicit(&kept[gpu], memory_order_relaxed), n;
  do {
    n = cur < want ? cur : want;
  } while (n &&
           !atomic_compare_exchange_weak_explicit(&kept[gpu], &cur, cur - n, memory_order_relaxed,
                                                  memory_order_relaxed));
  return n;
}

void gs__pool_unkeep(int gpu, uint64_t bytes)
{
  if (gpu_ok(gpu))
    take_up_to(gpu, bytes);
}

uint64_t gs__pool_take(int gpu, uint64_t want)
{
  return gpu_ok(gpu) ? take_up_to(gpu, want) : 0;
}

uint64_t gs__pool_kept(int gpu)
{
  return gpu_ok(gpu) ? atomic_load_explicit(&kept[gpu], memory_order_relaxed) : 0;
}

/* Adds what pool holds beyond its allocations to *spare. */
static bool add_spare(CUmemoryPool pool, uint64_t *spare)
{
  cuuint64_t reserved = 0, used = 0;
  if (gs__cuda.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
        CUDA_SUCCESS ||
      gs__cuda.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS)
    return false;
  *spare += reserved > used ? reserved - used : 0;
  return true;
}

bool gs__pool_spare_of(CUmemoryPool pool, uint64_t *spare)
{
  *spare = 0;
  gs__cuda_resolve();
  return gs__cuda.cuMemPoolGetAttribute && add_spare(pool, spare);
}

bool gs__pool_spare(int gpu, uint64_t *spare)
{
  CUdevice dev;
  CUmemoryPool def;
  *spare = 0;
  gs__cuda_resolve();
  if (atomic_load(&pools_overflowed) || !gs__cuda.cuMemPoolGetAttribute ||
      !gs__cuda.cuDeviceGetDefaultMemPool)
    return false;
  if (gs__cuda.cuDeviceGet(&dev, gpu) != CUDA_SUCCESS ||
      gs__cuda.cuDeviceGetDefaultMemPool(&def, dev) != CUDA_SUCCESS || !add_spare(def, spare))
    return false;
  for (int i = 0; i < MAX_POOLS; i++) {
    CUmemoryPool p = atomic_load_explicit(&pools[i].pool, memory_order_acquire);
    if (p && p != BUSY && atomic_load_explicit(&pools[i].gpu, memory_order_relaxed) == gpu &&
        !add_spare(p, spare))
      return false;
  }
  return true;
}

void gs__pool_settle_gpu(int gpu)
{
  uint64_t spare, cur = gs__pool_kept(gpu);
  /* Read before asking: a free between the two only makes the drop smaller (safe). */
  if (cur == 0 || !gs__pool_spare(gpu, &spare) || spare >= cur)
    return;
  gs__uncharge(gpu, take_up_to(gpu, cur - spare));
}

void gs__pool_settle(void)
{
  for (int gpu = 0; gpu < GS_LEDGER_MAX_GPUS; gpu++)
    if (atomic_load_explicit(&kept[gpu], memory_order_relaxed))
      gs__pool_settle_gpu(gpu);
}

void gs__pool_created(CUmemoryPool pool, int gpu)
{
  for (int i = 0; i < MAX_POOLS; i++) {
    CUmemoryPool empty = NULL;
    if (!atomic_compare_exchange_strong(&pools[i].pool, &empty, BUSY))
      continue;
    atomic_store_explicit(&pools[i].gpu, gpu, memory_order_relaxed);
    atomic_store_explicit(&pools[i].pool, pool, memory_order_release);
    return;
  }
  atomic_store(&pools_overflowed, true);
}

void gs__pool_destroyed(CUmemoryPool pool)
{
  for (int i = 0; i < MAX_POOLS; i++) {
    CUmemoryPool p = pool;
    if (atomic_compare_exchange_strong(&pools[i].pool, &p, NULL))
      return;
  }
}

void gs__pool_after_fork(void)
{
  for (int gpu = 0; gpu < GS_LEDGER_MAX_GPUS; gpu++)
    atomic_store(&kept[gpu], 0);
  for (int i = 0; i < MAX_POOLS; i++)
    atomic_store(&pools[i].pool, NULL);
  atomic_store(&pools_overflowed, false);
}
