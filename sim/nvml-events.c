/* Simulated NVML: events. The simulated device raises one kind, XID critical errors, and
 * only when a test injects one: gpusim_xid_inject (exported, like gpusim_spec_check, and the
 * simulator's own; nothing in gpuslice calls it) records the XID in the shared state file,
 * and every process's event set registered for XIDs on that device then receives it, in
 * order, from nvmlEventSetWait_v2. A set sees the XIDs recorded after it registered; one that
 * falls more than GPUSIM_XID_RING behind loses the oldest, as a real driver's queue would. */
#include "nvml-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define EVENT_SET_MAGIC 0x47534e45u /* "GSNE" */
#define SIM_EVENT_TYPES ((unsigned long long) nvmlEventTypeXidCriticalError)

struct nvmlEventSet_st {
  unsigned int magic;
  unsigned long long types[GPUSIM_MAX_DEVICES]; /* registered per device */
  uint64_t seen[GPUSIM_MAX_DEVICES];            /* XIDs of the device already delivered */
};

static bool set_ok(const struct nvmlEventSet_st *set)
{
  return set && set->magic == EVENT_SET_MAGIC;
}

GPUSIM_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
  GSN_TRY(gpusim_nvml_ready_arg(set));
  struct nvmlEventSet_st *s = calloc(1, sizeof(*s));
  if (!s)
    return NVML_ERROR_MEMORY;
  s->magic = EVENT_SET_MAGIC;
  *set = s;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!set_ok(set))
    return NVML_ERROR_INVALID_ARGUMENT;
  set->magic = 0;
  free(set);
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                         unsigned long long *eventTypes)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device_arg(device, eventTypes, &dev, NULL));
  *eventTypes = SIM_EVENT_TYPES;
  return NVML_SUCCESS;
}

GPUSIM_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                 nvmlEventSet_t set)
{
  struct gpusim_dev *dev;
  GSN_TRY(gpusim_nvml_device(device, &dev, NULL));
  if (!set_ok(set))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (eventTypes & ~SIM_EVENT_TYPES)
    return NVML_ERROR_NOT_SUPPORTED;
  struct gpusim_shared *s = gpusim_state(NULL);
  if (!(set->types[dev->index] & nvmlEventTypeXidCriticalError))
    set->seen[dev->index] = atomic_load(&s->health[dev->index].xid_count);
  set->types[dev->index] |= eventTypes;
  return NVML_SUCCESS;
}

/* The next XID for set, if any device it watches has one it has not delivered. */
static bool event_take(struct nvmlEventSet_st *set, nvmlEventData_t *data)
{
  struct gpusim_shared *s = gpusim_state(NULL);
  for (unsigned int d = 0; d < gpusim_nvml_device_count(); d++) {
    if (!(set->types[d] & nvmlEventTypeXidCriticalError))
      continue;
    struct gpusim_dev_health *h = &s->health[d];
    uint64_t n = atomic_load(&h->xid_count);
    if (n == set->seen[d])
      continue;
    if (n - set->seen[d] > GPUSIM_XID_RING)
      set->seen[d] = n - GPUSIM_XID_RING;
    *data = (nvmlEventData_t){ .device = gpusim_nvml_handle(d),
                               .eventType = nvmlEventTypeXidCriticalError,
                               .eventData = h->xid[set->seen[d] % GPUSIM_XID_RING],
                               .gpuInstanceId = 0xFFFFFFFFu,
                               .computeInstanceId = 0xFFFFFFFFu };
    set->seen[d]++;
    return true;
  }
  return false;
}

/* Polls the shared state every millisecond until an event or the timeout. */
GPUSIM_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                            unsigned int timeoutms)
{
  GSN_TRY(gpusim_nvml_ready());
  if (!set_ok(set) || !data)
    return NVML_ERROR_INVALID_ARGUMENT;
  uint64_t deadline = gpusim_now_ns() + (uint64_t) timeoutms * 1000000u;
  for (;;) {
    if (event_take(set, data))
      return NVML_SUCCESS;
    if (gpusim_now_ns() >= deadline)
      return NVML_ERROR_TIMEOUT;
    nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
  }
}

/* The test control: 0, or -1 and a one-line message for a bad state or device index. */
GPUSIM_API int gpusim_xid_inject(unsigned int index, unsigned long long xid, char *err,
                                 size_t errlen);

int gpusim_xid_inject(unsigned int index, unsigned long long xid, char *err, size_t errlen)
{
  const char *why = NULL;
  struct gpusim_shared *s = gpusim_state(&why);
  if (!s) {
    snprintf(err, errlen, "%s", why ? why : "no simulated state");
    return -1;
  }
  if (index >= s->ndev) {
    snprintf(err, errlen, "no simulated device %u (there are %u)", index, s->ndev);
    return -1;
  }
  gpusim_xid_record((int) index, xid);
  return 0;
}
