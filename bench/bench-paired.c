/* Paired samples (--paired): each operation timed through the symbol the program is linked
 * against (the interposer's hook when libgpuslice.so is preloaded) and through the driver's
 * own entry point, batch after batch in the same process, so that what the interposer adds
 * is measured without the noise between processes (a process's cache and page placement, a
 * CPU's frequency) that dominates a few nanoseconds.
 *
 * The driver's own entry points are looked up with libc's dlsym, which the interposer's
 * exported dlsym would otherwise stand in front of: dlvsym is not interposed, and finds libc's
 * dlsym by its symbol version. Without the interposer both halves of a pair are the driver, and
 * their difference is the benchmark's own bias (about 0). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

typedef void *(*dlsym_fn)(void *, const char *);

static void *driver_entry(dlsym_fn find, void *cuda, const char *name)
{
  void *p = find(cuda, name);
  if (!p)
    fprintf(stderr, "gs-bench-interposer: libcuda.so.1 has no %s\n", name);
  return p;
}

int bench_driver_entries(struct bench_driver *d)
{
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *f = libc ? dlvsym(libc, "dlsym", "GLIBC_2.34") : NULL;
  if (libc && !f)
    f = dlvsym(libc, "dlsym", "GLIBC_2.2.5");
  if (!f || !cuda) {
    fprintf(stderr, "gs-bench-interposer: --paired: %s\n",
            !cuda ? "libcuda.so.1 is not loaded" : "libc's dlsym not found by version");
    return -1;
  }
  dlsym_fn find;
  memcpy(&find, &f, sizeof(find)); /* object to function pointer, as dlsym's callers do */
  void *launch = driver_entry(find, cuda, "cuLaunchKernel");
  void *alloc = driver_entry(find, cuda, "cuMemAlloc_v2");
  void *free_ = driver_entry(find, cuda, "cuMemFree_v2");
  if (!launch || !alloc || !free_)
    return -1;
  memcpy(&d->launch, &launch, sizeof(d->launch));
  memcpy(&d->alloc, &alloc, sizeof(d->alloc));
  memcpy(&d->free_, &free_, sizeof(d->free_));
  return 0;
}

/* What two instructions cost on this machine, for reading the figures: the interposer's
 * alloc+free pair makes four locked read-modify-writes (the charge's compare-and-swap, the
 * map slot's claim and take, the tenant's subtract; the process's part goes to the thread's
 * own ledger slot unlocked), and a gated launch reads the TSC once. Each sample is the mean over a batch. */
static _Atomic uint64_t calibration_word;

static double locked_batch(unsigned n)
{
  uint64_t t0 = bench_now_ns();
  for (unsigned i = 0; i < n; i++)
    atomic_fetch_add(&calibration_word, 1);
  return (double) (bench_now_ns() - t0) / n;
}

static double tsc_batch(unsigned n)
{
  uint64_t sum = 0, t0 = bench_now_ns();
#if defined(__x86_64__)
  for (unsigned i = 0; i < n; i++)
    sum += __builtin_ia32_rdtsc();
#endif
  atomic_fetch_add(&calibration_word, sum & 1); /* keeps the reads */
  return (double) (bench_now_ns() - t0) / n;
}

int bench_calibrate(const struct bench_opts *o, struct bench_result *locked,
                    struct bench_result *tsc)
{
  if (bench_result_init(locked, "locked_add", o->launch_batch, o->rounds) < 0 ||
      bench_result_init(tsc, "tsc_read", o->launch_batch, o->rounds) < 0)
    return -1;
  for (unsigned i = 0; i < o->rounds; i++) {
    locked->ns[i] = locked_batch(o->launch_batch);
    tsc->ns[i] = tsc_batch(o->launch_batch);
  }
  return 0;
}
