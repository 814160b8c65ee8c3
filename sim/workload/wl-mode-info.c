/* Mode `info`: every device's name, memory, SM count and UUID, and what cuMemGetInfo_v2
 * reports from a context made on it. One JSON line for the whole machine. */
#include "wl.h"

#include <stdio.h>

struct dev_info {
  char name[256];
  char uuid[48];
  size_t total, free, ctx_total;
  int sms;
};

static void uuid_format(const CUuuid *u, char *buf, size_t len)
{
  const unsigned char *b = (const unsigned char *) u->bytes;
  snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

/* cuMemGetInfo_v2 answers for the current context, so one is made for the question. */
static int dev_mem(CUdevice dev, struct dev_info *d)
{
  CUcontext ctx = NULL;
  WL_TRY(wl_cu.cuCtxCreate_v4(&ctx, NULL, 0, dev), "cuCtxCreate_v4");
  CUresult rc = wl_cu.cuMemGetInfo_v2(&d->free, &d->ctx_total);
  wl_cu.cuCtxDestroy_v2(ctx);
  WL_TRY(rc, "cuMemGetInfo_v2");
  return 0;
}

static int dev_query(int ordinal, struct dev_info *d)
{
  CUdevice dev = 0;
  CUuuid uuid = { { 0 } };

  WL_TRY(wl_cu.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  WL_TRY(wl_cu.cuDeviceGetName(d->name, (int) sizeof(d->name), dev), "cuDeviceGetName");
  WL_TRY(wl_cu.cuDeviceTotalMem_v2(&d->total, dev), "cuDeviceTotalMem_v2");
  WL_TRY(wl_cu.cuDeviceGetAttribute(&d->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
         "cuDeviceGetAttribute MULTIPROCESSOR_COUNT");
  WL_TRY(wl_cu.cuDeviceGetUuid_v2(&uuid, dev), "cuDeviceGetUuid_v2");
  uuid_format(&uuid, d->uuid, sizeof(d->uuid));
  return dev_mem(dev, d);
}

static void dev_print(int ordinal, const struct dev_info *d)
{
  printf("%s{\"index\":%d,\"name\":", ordinal ? "," : "", ordinal);
  wl_json_string(d->name);
  printf(",\"total_bytes\":%zu,\"sm_count\":%d,\"uuid\":\"%s\",\"free_bytes\":%zu,\"ctx_total_"
         "bytes\":%zu}",
         d->total, d->sms, d->uuid, d->free, d->ctx_total);
}

int wl_mode_info(const struct wl_opts *o)
{
  int count = 0;
  (void) o;

  WL_TRY(wl_cu.cuInit(0), "cuInit");
  WL_TRY(wl_cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  struct dev_info devs[64];
  if (count > 64)
    count = 64;
  for (int i = 0; i < count; i++)
    if (dev_query(i, &devs[i]) < 0)
      return -1;
  printf("{\"mode\":\"info\",\"device_count\":%d,\"devices\":[", count);
  for (int i = 0; i < count; i++)
    dev_print(i, &devs[i]);
  putchar(']');
  wl_line_end();
  return 0;
}
