/* The pure rules of suspending tenants (suspend.h): no driver, no registry, so that
 * tests/unit/test_daemon_suspend.c can drive every case. */
#include <gpuslice.h>

#include <stdio.h>

#include "suspend.h"

int suspend_room_short(const uint64_t *need, const uint64_t *free_, int ngpus, uint64_t *missing)
{
  for (int g = 0; g < ngpus; g++)
    if (need[g] > free_[g]) {
      *missing = need[g] - free_[g];
      return g;
    }
  *missing = 0;
  return -1;
}

void suspend_bytes_text(char *buf, size_t len, uint64_t bytes)
{
  if (bytes >= (1ULL << 30))
    snprintf(buf, len, "%.1f GiB", (double) bytes / (double) (1ULL << 30));
  else if (bytes >= (1ULL << 20))
    snprintf(buf, len, "%.1f MiB", (double) bytes / (double) (1ULL << 20));
  else
    snprintf(buf, len, "%llu bytes", (unsigned long long) bytes);
}

/* What the driver's refusal means, in the words a user needs. */
static const char *why(const char *op, CUresult r, unsigned lock_timeout_ms, char *buf, size_t len)
{
  switch (r) {
  case CUDA_ERROR_NOT_READY:
    snprintf(buf, len, "its GPU work did not finish within the lock timeout (%u ms)",
             lock_timeout_ms);
    return buf;
  case CUDA_ERROR_NOT_SUPPORTED:
    return *op == 'c' ? "it holds managed (UVM) memory or memory shared with another process "
                        "(IPC), which the driver cannot checkpoint"
                      : "the driver cannot checkpoint this process";
  case CUDA_ERROR_ILLEGAL_STATE: return "it is locked or checkpointed by someone else";
  case CUDA_ERROR_OUT_OF_MEMORY: return "no host memory for its device memory";
  case CUDA_ERROR_INVALID_VALUE: return "it is not a CUDA process, or has ended";
  default: return "the driver refused";
  }
}

void suspend_refusal(char *buf, size_t len, const char *tenant, pid_t pid, const char *op,
                     CUresult r, const char *rname, unsigned lock_timeout_ms)
{
  char tmp[128];
  snprintf(buf, len,
           "tenant '%s' not suspended: %s of process %d failed (%s): %s; it keeps running", tenant,
           op, (int) pid, rname, why(op, r, lock_timeout_ms, tmp, sizeof(tmp)));
}

void suspend_timeout_reason(char *buf, size_t len, const char *tenant, double waited_s, int gpu,
                            uint64_t need, uint64_t free_, uint64_t missing)
{
  char n[32], f[32], m[32];
  suspend_bytes_text(n, sizeof(n), need);
  suspend_bytes_text(f, sizeof(f), free_);
  suspend_bytes_text(m, sizeof(m), missing);
  snprintf(buf, len,
           "tenant '%s' not resumed after %.1f s: GPU %d has %s free of the %s it needs back, %s "
           "(%llu bytes) missing; it stays suspended, its memory kept in host memory",
           tenant, waited_s, gpu, f, n, m, (unsigned long long) missing);
}
