/* The CUDA driver functions the workload calls, resolved once into one table.
 *
 * Every call in the workload goes through `wl_cu`, so that the same code exercises the ways a
 * real program finds the driver: the linked symbols, dlsym by exported name, and
 * cuGetProcAddress_v2 (or the legacy cuGetProcAddress, which has no status argument) by base
 * name at a chosen CUDA version, 13.0 by default. Each member is typed after the exported
 * symbol it names, which is also the ABI that cuGetProcAddress_v2 returns for its base name
 * at version 13000: the table pairs them (e.g. cuCtxCreate_v4 with "cuCtxCreate").
 *
 * What lives elsewhere: the fillers are in wl-driver.c; error printing is in wl-out.c. */
#ifndef WL_DRIVER_H
#define WL_DRIVER_H

#include "gs-cuda.h"

/* X(exported symbol, base name for cuGetProcAddress_v2) */
#define WL_DRIVER_FUNCS(X)                                          \
  X(cuGetProcAddress_v2, "cuGetProcAddress")                        \
  X(cuGetErrorName, "cuGetErrorName")                               \
  X(cuInit, "cuInit")                                               \
  X(cuDeviceGetCount, "cuDeviceGetCount")                           \
  X(cuDeviceGet, "cuDeviceGet")                                     \
  X(cuDeviceGetName, "cuDeviceGetName")                             \
  X(cuDeviceTotalMem_v2, "cuDeviceTotalMem")                        \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")                   \
  X(cuDeviceGetUuid_v2, "cuDeviceGetUuid")                          \
  X(cuCtxCreate_v4, "cuCtxCreate")                                  \
  X(cuCtxDestroy_v2, "cuCtxDestroy")                                \
  X(cuMemGetInfo_v2, "cuMemGetInfo")                                \
  X(cuMemAlloc_v2, "cuMemAlloc")                                    \
  X(cuMemFree_v2, "cuMemFree")                                      \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch")                          \
  X(cuMemAllocManaged, "cuMemAllocManaged")                         \
  X(cuMemAllocAsync, "cuMemAllocAsync")                             \
  X(cuMemFreeAsync, "cuMemFreeAsync")                               \
  X(cuMemPoolCreate, "cuMemPoolCreate")                             \
  X(cuMemPoolDestroy, "cuMemPoolDestroy")                           \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")             \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo")                             \
  X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity") \
  X(cuMemCreate, "cuMemCreate")                                     \
  X(cuMemRelease, "cuMemRelease")                                   \
  X(cuMemAddressReserve, "cuMemAddressReserve")                     \
  X(cuMemAddressFree, "cuMemAddressFree")                           \
  X(cuMemMap, "cuMemMap")                                           \
  X(cuMemUnmap, "cuMemUnmap")                                       \
  X(cuMemSetAccess, "cuMemSetAccess")                               \
  X(cuArrayCreate_v2, "cuArrayCreate")                              \
  X(cuArrayDestroy, "cuArrayDestroy")                               \
  X(cuModuleLoadData, "cuModuleLoadData")                           \
  X(cuModuleGetFunction, "cuModuleGetFunction")                     \
  X(cuModuleUnload, "cuModuleUnload")                               \
  X(cuLaunchKernel, "cuLaunchKernel")                               \
  X(cuLaunchKernelEx, "cuLaunchKernelEx")                           \
  X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel")         \
  X(cuStreamCreate, "cuStreamCreate")                               \
  X(cuStreamDestroy_v2, "cuStreamDestroy")                          \
  X(cuStreamSynchronize, "cuStreamSynchronize")                     \
  X(cuEventCreate, "cuEventCreate")                                 \
  X(cuEventRecord, "cuEventRecord")                                 \
  X(cuEventSynchronize, "cuEventSynchronize")                       \
  X(cuEventElapsedTime_v2, "cuEventElapsedTime")                    \
  X(cuEventDestroy_v2, "cuEventDestroy")                            \
  X(cuStreamBeginCapture_v2, "cuStreamBeginCapture")                \
  X(cuStreamEndCapture, "cuStreamEndCapture")                       \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags")     \
  X(cuGraphLaunch, "cuGraphLaunch")                                 \
  X(cuGraphExecDestroy, "cuGraphExecDestroy")                       \
  X(cuGraphDestroy, "cuGraphDestroy")

struct wl_driver {
#define WL_MEMBER(sym, base) __typeof__(&sym) sym;
  WL_DRIVER_FUNCS(WL_MEMBER)
#undef WL_MEMBER
};

extern struct wl_driver wl_cu;

enum wl_path { WL_PATH_DIRECT, WL_PATH_DLSYM, WL_PATH_PROCADDR, WL_PATH_PROCADDR_V1 };

/* The CUDA version whose ABI the table's members have, and the default the procaddr paths
 * ask for. */
#define WL_PROCADDR_VERSION 13000
/* The oldest version the procaddr paths may ask for: the one that introduced
 * cuGetProcAddress_v2. Every allocation entry of the table has had its present ABI since
 * before then (11020 at the newest), so at any allowed version all of them still come from
 * cuGetProcAddress; see wl-driver.c for the few entries that do not. */
#define WL_PROCADDR_VERSION_MIN 12000

/* Fills wl_cu by `path`; `version` is the cudaVersion the procaddr paths pass, within
 * [WL_PROCADDR_VERSION_MIN, WL_PROCADDR_VERSION]. Returns 0, or -1 after printing one line
 * naming what failed. */
int wl_driver_load(enum wl_path path, int version);

/* Prints, as JSON array elements, the base names that the last procaddr fill took by
 * exported name instead, because their ABI in the table is newer than the version asked. */
int wl_driver_print_by_name(void);

/* Prints, as JSON array elements, the base names for which cuGetProcAddress_v2 at version
 * WL_PROCADDR_VERSION does not return the exported symbol this table pairs them with. */
int wl_driver_print_mismatches(void *handle);

/* The driver library opened by name, as a program without a link to it would; NULL after
 * printing one line if it cannot be opened. Process-wide, opened once. */
void *wl_driver_handle(void);

#endif
