/* Device queries: count, name, UUID, memory, attributes, PCI identity. Every figure comes
 * from the model catalogue (sim-models.c) or, for the few it does not carry, from the
 * architecture table below (public datasheet values by compute capability).
 *
 * PCI identity: domain 0, bus 0x10 + the GPU's index, device 0, function 0 (a MIG device has its GPU's). NVML (nvml-*.c)
 * reports the same bus ids, so tools can match a CUDA device to an NVML one. */
#include "cuda-internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GSC_PCI_BUS_BASE 0x10

CUresult gsc_dev_check(CUdevice dev)
{
  GSC_CHECK_INIT();
  if (dev < 0 || dev >= gsc.ndev)
    return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

static const struct gpusim_model *model_of(CUdevice dev)
{
  return gsc_model(dev);
}

GSC_API CUresult cuDeviceGetCount(int *count)
{
  GSC_CHECK_INIT();
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = gsc.ndev;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
  GSC_CHECK_INIT();
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(gsc_dev_check(ordinal));
  *device = ordinal;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  gsc_dev_name(dev, name, (size_t) len);
  return CUDA_SUCCESS;
}

/* The UUID's 16 bytes are the hex digits of gpusim_uuid()'s text, which NVML prints as is; a
 * MIG device's are those of its "MIG-..." UUID. */
GSC_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!uuid)
    return CUDA_ERROR_INVALID_VALUE;
  char text[64], hex[3] = { 0 };
  gsc_dev_uuid(dev, text, sizeof(text));
  const char *p = text + 4; /* past "GPU-" or "MIG-" */
  for (int i = 0; i < 16; i++) {
    if (*p == '-')
      p++;
    hex[0] = p[0];
    hex[1] = p[1];
    uuid->bytes[i] = (char) strtoul(hex, NULL, 16);
    p += 2;
  }
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
  return cuDeviceGetUuid_v2(uuid, dev);
}

GSC_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  *bytes = gsc_dev_total(dev);
  return CUDA_SUCCESS;
}

/* The 32-bit ABI cannot say 16 GiB or more; it reports the largest value it can hold. */
GSC_API CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
  size_t total;
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  GSC_TRY(cuDeviceTotalMem_v2(&total, dev));
  *bytes = total > UINT_MAX ? UINT_MAX : (unsigned int) total;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!major || !minor)
    return CUDA_ERROR_INVALID_VALUE;
  *major = model_of(dev)->cc_major;
  *minor = model_of(dev)->cc_minor;
  return CUDA_SUCCESS;
}

GSC_API CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
  GSC_TRY(gsc_dev_check(dev));
  GSC_TRY(gsc_dev_check(peerDev));
  if (!canAccessPeer)
    return CUDA_ERROR_INVALID_VALUE;
  /* Peers share the host's address space here, so any two distinct devices can. */
  *canAccessPeer = dev != peerDev;
  return CUDA_SUCCESS;
}

/* ---- attributes ---- */

/* Figures that depend on the architecture rather than the board. */
struct arch {
  int cc; /* major * 10 + minor */
  int threads_per_sm, blocks_per_sm;
  int smem_per_sm, smem_optin;
};

static const struct arch arches[] = {
  { 75, 1024, 16, 65536, 65536 },
  { 80, 2048, 32, 167936, 166912 },
  { 89, 1536, 24, 102400, 101376 },
  { 90, 2048, 32, 233472, 232448 },
};

static const struct arch *arch_of(const struct gpusim_model *m)
{
  int cc = m->cc_major * 10 + m->cc_minor;
  for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
    if (arches[i].cc == cc)
      return &arches[i];
  return &arches[sizeof(arches) / sizeof(arches[0]) - 1];
}

/* Board figures the catalogue does not carry: memory bus width (bits) and L2 size (bytes). */
static void board_of(const struct gpusim_model *m, int *bus_bits, int *l2)
{
  static const struct {
    const char *key;
    int bus, l2;
  } boards[] = {
    { "t4", 256, 4 << 20 },          { "l4", 192, 48 << 20 },
    { "a100-40gb", 5120, 40 << 20 }, { "a100-80gb", 5120, 40 << 20 },
    { "h100-80gb", 5120, 50 << 20 }, { "h200-141gb", 6144, 60 << 20 },
  };
  *bus_bits = 4096;
  *l2 = 32 << 20;
  for (size_t i = 0; i < sizeof(boards) / sizeof(boards[0]); i++)
    if (strcmp(boards[i].key, m->key) == 0) {
      *bus_bits = boards[i].bus;
      *l2 = boards[i].l2;
    }
}

/* Attributes that hold for every simulated board, and 0 for anything not listed. */
static int common_attribute(CUdevice_attribute a)
{
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return INT_MAX;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return INT_MAX;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
  case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
  case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: return 4;
  case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
    return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  case CU_DEVICE_ATTRIBUTE_NUMA_ID:
  case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return -1;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
  case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
  case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: return 1;
  default: return 0;
  }
}

static int attribute(CUdevice dev, CUdevice_attribute a)
{
  const struct gpusim_model *m = model_of(dev);
  const struct arch *ar = arch_of(m);
  int bus_bits, l2;
  board_of(m, &bus_bits, &l2);
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return gsc_dev_sms(dev);
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return m->cc_major;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return m->cc_minor;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return (int) m->sm_clock_max_mhz * 1000;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return (int) m->mem_clock_mhz * 1000;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return bus_bits;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return l2;
  case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return l2 * 3 / 4;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return ar->threads_per_sm;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return ar->blocks_per_sm;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return ar->smem_per_sm;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return ar->smem_optin;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return GSC_PCI_BUS_BASE + gsc_phys(dev);
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
  case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: return m->cc_major >= 8;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return m->cc_major >= 9;
  case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED: return m->cc_major >= 9;
  case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: return m->cc_major >= 9;
  case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED: return m->cc_major >= 8;
  case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: return m->cc_major >= 8;
  case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
    return m->cc_major == 8 && m->cc_minor == 0 ? 2 : 32;
  default: return common_attribute(a);
  }
}

GSC_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!pi || (int) attrib < 1 ||
      (int) attrib > CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED)
    return CUDA_ERROR_INVALID_VALUE;
  *pi = attribute(dev, attrib);
  return CUDA_SUCCESS;
}

/* ---- PCI ---- */

GSC_API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
  GSC_TRY(gsc_dev_check(dev));
  if (!pciBusId || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(pciBusId, (size_t) len, "%04X:%02X:00.0", 0, GSC_PCI_BUS_BASE + gsc_phys(dev));
  return CUDA_SUCCESS;
}

/* Accepts "domain:bus:device.function" and "bus:device.function", in either case. */
GSC_API CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
  GSC_CHECK_INIT();
  if (!dev || !pciBusId)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus, device, function;
  int n = 0;
  if (sscanf(pciBusId, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &n) != 4 ||
      pciBusId[n]) {
    domain = 0;
    n = 0;
    if (sscanf(pciBusId, "%x:%x.%x%n", &bus, &device, &function, &n) != 3 || pciBusId[n])
      return CUDA_ERROR_INVALID_VALUE;
  }
  for (int d = 0; d < gsc.ndev; d++)
    if (domain == 0 && bus == (unsigned) (GSC_PCI_BUS_BASE + gsc_phys(d)) && device == 0 &&
        function == 0) {
      *dev = d;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_DEVICE;
}
