/* Simulated NVML: device handles, identity (name, UUID, serial, brand, PCI, compute
 * capability) and memory information, for GPUs and, where NVML allows it, MIG devices (name,
 * UUID, memory; the rest of MIG is nvml-mig.c's). Everything but memory is a fixed property
 * of the model and the device index, so it reads the same from every process. */
#include "nvml-internal.h"
#include "sim-mig.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

GPUSIM_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
  GSN_TRY(gpusim_nvml_ready_arg(deviceCount));
  *deviceCount = gpusim_nvml_device_count();
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
  return nvmlDeviceGetCount_v2(deviceCount);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!device || index >= gpusim_nvml_device_count())
    return NVML_ERROR_INVALID_ARGUMENT;
  *device = gpusim_nvml_handle(index);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

static void device_uuid(const struct gpusim_dev *dev, char *buf, size_t len)
{
  gpusim_uuid(dev->model, dev->index, buf, len);
}

/* Whether a MIG device of GPU d has this UUID; its handle in *device. */
static bool mig_device_by_uuid(int d, const char *uuid, nvmlDevice_t *device)
{
  struct gpusim_mig_dev devs[GPUSIM_MIG_GI * GPUSIM_MIG_CI];
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  int n = gpusim_mig_devices(d, devs);
  for (int k = 0; k < n; k++) {
    gpusim_mig_uuid(d, devs[k].gi, devs[k].ci, buf, sizeof(buf));
    if (strcasecmp(buf, uuid) == 0) {
      *device = gpusim_nvml_mig_handle(d, devs[k].gi, devs[k].ci);
      return true;
    }
  }
  return false;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!uuid || !device)
    return NVML_ERROR_INVALID_ARGUMENT;
  struct gpusim_shared *s = gpusim_state(NULL);
  for (unsigned int i = 0; i < gpusim_nvml_device_count(); i++) {
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    device_uuid(&s->dev[i], buf, sizeof(buf));
    if (strcasecmp(buf, uuid) == 0) {
      *device = gpusim_nvml_handle(i);
      return NVML_SUCCESS;
    }
    if (mig_device_by_uuid((int) i, uuid, device))
      return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

/* Accepts both "domain:bus:device.function" spellings (8- or 4-digit domain, any case),
 * as the real library does. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!pciBusId || !device)
    return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int domain, bus, dev, fn;
  char tail;
  if (sscanf(pciBusId, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) != 4)
    return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < gpusim_nvml_device_count(); i++) {
    if (domain == 0 && bus == NVML_SIM_PCI_BUS(i) && dev == 0 && fn == 0) {
      *device = gpusim_nvml_handle(i);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, index, &dev, NULL));
  *index = (unsigned) dev->index;
  return NVML_SUCCESS;
}

/* The minor number is N of /dev/nvidiaN, which follows the device order here. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
  return nvmlDeviceGetIndex(device, minorNumber);
}

/* A GPU's handle or a MIG device's, and a non-NULL out pointer. */
static nvmlReturn_t any_device_arg(nvmlDevice_t device, const void *out, struct gpusim_dev **dev,
                                   int *gi, int *ci)
{
  GSN_TRY(gpusim_nvml_any_device(device, dev, gi, ci));
  return out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* A MIG device is named "<GPU name> MIG <profile>", as NVML and CUDA both name it. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
  struct gpusim_dev *dev;
  int gi, ci;
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  GSN_TRY(any_device_arg(device, name, &dev, &gi, &ci));
  if (gi < 0)
    return gpusim_nvml_copy_str(name, length, gpusim_models[dev->model].name);
  gpusim_mig_name(dev->index, gi, ci, buf, sizeof(buf));
  return gpusim_nvml_copy_str(name, length, buf);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
  struct gpusim_dev *dev;
  int gi, ci;
  GSN_TRY(any_device_arg(device, uuid, &dev, &gi, &ci));
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  if (gi < 0)
    device_uuid(dev, buf, sizeof(buf));
  else
    gpusim_mig_uuid(dev->index, gi, ci, buf, sizeof(buf));
  return gpusim_nvml_copy_str(uuid, length, buf);
}

/* A 13-digit board serial derived from the UUID, so it is stable and distinct per device. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, serial, &dev, NULL));
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], buf[NVML_DEVICE_SERIAL_BUFFER_SIZE];
  unsigned long long h = 1469598103934665603ULL;
  device_uuid(dev, uuid, sizeof(uuid));
  for (const char *p = uuid; *p; p++)
    h = (h ^ (unsigned char) *p) * 1099511628211ULL;
  snprintf(buf, sizeof(buf), "1320%09llu", h % 1000000000ULL);
  return gpusim_nvml_copy_str(serial, length, buf);
}

/* Data-centre boards report the NVIDIA brand on current drivers; the T4 still reports Tesla. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, type, &dev, &model));
  *type = strcmp(model->key, "t4") == 0 ? NVML_BRAND_TESLA : NVML_BRAND_NVIDIA;
  return NVML_SUCCESS;
}

/* Fills the fields that every PCI info layout shares, in the layout of nvmlPciInfo_t. */
static void pci_fill(const struct gpusim_dev *dev, const struct gpusim_model *model,
                     nvmlPciInfo_t *pci)
{
  memset(pci, 0, sizeof(*pci));
  pci->domain = 0;
  pci->bus = NVML_SIM_PCI_BUS(dev->index);
  pci->device = 0;
  pci->pciDeviceId = ((unsigned) model->pci_device_id << 16) | 0x10deu;
  /* The subsystem is the board vendor's; NVIDIA-built boards carry NVIDIA's id in the low half. */
  pci->pciSubSystemId = ((unsigned) model->pci_device_id << 16) | 0x10deu;
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
           pci->domain, pci->bus, pci->device);
  snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, pci->domain, pci->bus,
           pci->device);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, pci, &dev, &model));
  pci_fill(dev, model, pci);
  return NVML_SUCCESS;
}

/* The older entry points own a 52-byte struct: writing the 68-byte layout would overrun it. */
static nvmlReturn_t pci_info_legacy(nvmlDevice_t device, nvmlPciInfoLegacy_t *pci)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, pci, &dev, &model));
  nvmlPciInfo_t full;
  pci_fill(dev, model, &full);
  memset(pci, 0, sizeof(*pci));
  memcpy(pci->busId, full.busIdLegacy, sizeof(pci->busId));
  pci->domain = full.domain;
  pci->bus = full.bus;
  pci->device = full.device;
  pci->pciDeviceId = full.pciDeviceId;
  pci->pciSubSystemId = full.pciSubSystemId;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfoLegacy_t *pci)
{
  return pci_info_legacy(device, pci);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfoLegacy_t *pci)
{
  return pci_info_legacy(device, pci);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                           int *minor)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device(device, &dev, &model));
  if (!major || !minor)
    return NVML_ERROR_INVALID_ARGUMENT;
  *major = model->cc_major;
  *minor = model->cc_minor;
  return NVML_SUCCESS;
}

/* Used memory is what live processes hold; processes that died holding memory are reaped
 * first (at most GSN_REAP_PERIOD_NS late), so a killed process's memory is soon gone, as with
 * the real driver. */
static void memory_read(struct gpusim_dev *dev, unsigned long long *total, unsigned long long *used)
{
  gpusim_reap_dead_every(GSN_REAP_PERIOD_NS);
  *total = dev->total_bytes;
  *used = atomic_load(&dev->used_bytes);
  if (*used > *total)
    *used = *total;
}

/* A MIG device's memory is its GPU instance's, which its compute instances share; the
 * driver's reserve is the GPU's, outside every instance. */
static void mig_memory_read(struct gpusim_dev *dev, int gi, unsigned long long *total,
                            unsigned long long *used)
{
  const struct gpusim_mig_gi *g = &gpusim_state(NULL)->mig[dev->index].gi[gi];
  gpusim_reap_dead_every(GSN_REAP_PERIOD_NS);
  gpusim_mem_lock(dev->index);
  *total = g->total_bytes;
  *used = g->used_bytes < g->total_bytes ? g->used_bytes : g->total_bytes;
  gpusim_mem_unlock(dev->index);
}

/* The memory the driver keeps for itself: on real parts a few hundred MiB that no process
 * holds, which memory info v1 counts as used and v2 reports apart. The simulated driver
 * keeps 1/160 of the device, whole MiB (509 MiB of an H100's 81559). Its CUDA library does
 * not keep it back from allocations, so a device filled past that point shows the reserve
 * shrunk to what is left: used + free + reserved stays the total. */
static unsigned long long memory_reserved(unsigned long long total, unsigned long long used)
{
  unsigned long long r = total / 160 & ~((1ULL << 20) - 1);
  return r < total - used ? r : total - used;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
  struct gpusim_dev *dev;
  int gi, ci;
  GSN_TRY(any_device_arg(device, memory, &dev, &gi, &ci));
  if (gi >= 0) {
    mig_memory_read(dev, gi, &memory->total, &memory->used);
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  }
  memory_read(dev, &memory->total, &memory->used);
  memory->used += memory_reserved(memory->total, memory->used); /* v1's used includes it */
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
  struct gpusim_dev *dev;
  int gi, ci;
  GSN_TRY(any_device_arg(device, memory, &dev, &gi, &ci));
  if (memory->version != nvmlMemory_v2)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (gi >= 0) {
    mig_memory_read(dev, gi, &memory->total, &memory->used);
    memory->reserved = 0;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  }
  memory_read(dev, &memory->total, &memory->used);
  memory->reserved = memory_reserved(memory->total, memory->used);
  memory->free = memory->total - memory->used - memory->reserved;
  return NVML_SUCCESS;
}
