/* Simulated NVML: device handles, identity (name, UUID, serial, brand, PCI, compute
 * capability, MIG mode) and memory information. Everything but memory is a fixed property
 * of the model and the device index, so it reads the same from every process. */
#include "nvml-internal.h"

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

GPUSIM_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device_arg(device, name, &dev, &model));
  return gpusim_nvml_copy_str(name, length, model->name);
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, uuid, &dev, NULL));
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  device_uuid(dev, buf, sizeof(buf));
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

/* MIG exists on the GA100 and GH100 parts (compute capability 8.0 and 9.0), not on T4 or L4.
 * The simulator never partitions a device, so where MIG exists it is off. */
GPUSIM_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                             unsigned int *pendingMode)
{
  struct gpusim_dev *dev;
  const struct gpusim_model *model;
  GSN_TRY(gpusim_nvml_device(device, &dev, &model));
  if (!currentMode || !pendingMode)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (model->cc_minor != 0 || (model->cc_major != 8 && model->cc_major != 9))
    return NVML_ERROR_NOT_SUPPORTED;
  *currentMode = NVML_DEVICE_MIG_DISABLE;
  *pendingMode = NVML_DEVICE_MIG_DISABLE;
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
  GSN_TRY(gpusim_nvml_device_arg(device, memory, &dev, NULL));
  memory_read(dev, &memory->total, &memory->used);
  memory->used += memory_reserved(memory->total, memory->used); /* v1's used includes it */
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, memory, &dev, NULL));
  if (memory->version != nvmlMemory_v2)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  memory_read(dev, &memory->total, &memory->used);
  memory->reserved = memory_reserved(memory->total, memory->used);
  memory->free = memory->total - memory->used - memory->reserved;
  return NVML_SUCCESS;
}
