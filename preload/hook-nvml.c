/* NVML hooks: nvidia-smi and monitoring libraries inside a tenant see the slice, as
 * cuMemGetInfo does. NVML names devices by handle and CUDA by ordinal; the two meet at the
 * UUID, which this file matches once per device and remembers. A MIG device is "MIG-<hex>"
 * to NVML and the same 16 bytes to CUDA, so the match is on what follows the prefix. */
#include <stdio.h>
#include <string.h>

#include "hooks.h"

#define MAX_SEEN 64

static struct {
  nvmlDevice_t dev;
  int gpu; /* CUDA ordinal, or -1 when no CUDA device has this UUID */
} seen[MAX_SEEN];
static _Atomic int nseen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

void gs__uuid_text(const CUuuid *u, char *buf, size_t len)
{
  const unsigned char *b = (const unsigned char *) u->bytes;
  snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

/* "GPU-<hex>" (as gs__uuid_text writes CUDA's bytes) against NVML's "GPU-<hex>" or "MIG-<hex>". */
static bool same_uuid(const char *cuda_text, const char *nvml)
{
  bool prefixed = strncmp(nvml, "GPU-", 4) == 0 || strncmp(nvml, "MIG-", 4) == 0;
  return prefixed && strcmp(cuda_text + 4, nvml + 4) == 0;
}

/* The CUDA ordinal whose UUID is uuid, or -1. Initializes the driver: a process that only
 * uses NVML (nvidia-smi) has not done so. */
static int ordinal_of(const char *uuid)
{
  int n = 0;
  gs__cuda_resolve();
  if (!gs__cuda.cuInit || gs__cuda.cuInit(0) != CUDA_SUCCESS ||
      gs__cuda.cuDeviceGetCount(&n) != CUDA_SUCCESS)
    return -1;
  for (int i = 0; i < n; i++) {
    CUdevice d;
    CUuuid u;
    char text[96];
    if (gs__cuda.cuDeviceGet(&d, i) != CUDA_SUCCESS ||
        gs__cuda.cuDeviceGetUuid(&u, d) != CUDA_SUCCESS)
      continue;
    gs__uuid_text(&u, text, sizeof(text));
    if (same_uuid(text, uuid))
      return i;
  }
  return -1;
}

static int gpu_of(nvmlDevice_t dev)
{
  char uuid[96];
  int gpu = -1;
  pthread_mutex_lock(&seen_lock);
  for (int i = 0; i < nseen; i++)
    if (seen[i].dev == dev) {
      gpu = seen[i].gpu;
      goto out;
    }
  if (gs__nvml.nvmlDeviceGetUUID &&
      gs__nvml.nvmlDeviceGetUUID(dev, uuid, sizeof(uuid)) == NVML_SUCCESS)
    gpu = ordinal_of(uuid);
  if (nseen < MAX_SEEN) {
    seen[nseen].dev = dev;
    seen[nseen].gpu = gpu;
    nseen++;
  }
out:
  pthread_mutex_unlock(&seen_lock);
  return gpu;
}

/* Rewrites total, free and used to the slice, and the driver's reserve (v2 only) to 0: it is
 * outside the slice. Leaves them alone when the device is not limited. */
static void slice(nvmlDevice_t dev, unsigned long long *total, unsigned long long *free_,
                  unsigned long long *used, unsigned long long *reserved)
{
  uint64_t limit, in_use;
  if (!gs__tenant_active() || !gs__limit(gpu_of(dev), &limit, &in_use))
    return;
  uint64_t left = in_use < limit ? limit - in_use : 0;
  *total = limit;
  if (*free_ > left)
    *free_ = left;
  *used = *total - *free_;
  if (reserved)
    *reserved = 0;
}

GS_HOOK nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
  GS_NVML_REAL_OR_FAIL(nvmlDeviceGetMemoryInfo);
  nvmlReturn_t rc = gs__nvml.nvmlDeviceGetMemoryInfo(device, memory);
  if (rc == NVML_SUCCESS && memory)
    slice(device, &memory->total, &memory->free, &memory->used, NULL);
  return rc;
}

GS_HOOK nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
  GS_NVML_REAL_OR_FAIL(nvmlDeviceGetMemoryInfo_v2);
  nvmlReturn_t rc = gs__nvml.nvmlDeviceGetMemoryInfo_v2(device, memory);
  if (rc == NVML_SUCCESS && memory)
    slice(device, &memory->total, &memory->free, &memory->used, &memory->reserved);
  return rc;
}
