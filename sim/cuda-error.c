/* cuGetErrorName and cuGetErrorString for every CUresult in gs-cuda.h. Both work before
 * cuInit. The descriptions are the simulator's own short wording. */
#include "cuda-internal.h"

#include <stddef.h>

struct error_text {
  CUresult code;
  const char *name, *text;
};

#define GSC_ERROR(code, text) \
  {                           \
    code, #code, text         \
  }
static const struct error_text errors[] = {
  GSC_ERROR(CUDA_SUCCESS, "no error"),
  GSC_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
  GSC_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of device memory"),
  GSC_ERROR(CUDA_ERROR_NOT_INITIALIZED, "the driver has not been initialized (cuInit)"),
  GSC_ERROR(CUDA_ERROR_DEINITIALIZED, "the driver is shutting down"),
  GSC_ERROR(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled"),
  GSC_ERROR(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized"),
  GSC_ERROR(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
  GSC_ERROR(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
  GSC_ERROR(CUDA_ERROR_STUB_LIBRARY, "stub library"),
  GSC_ERROR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "call requires newer driver"),
  GSC_ERROR(CUDA_ERROR_DEVICE_UNAVAILABLE, "device unavailable"),
  GSC_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is present"),
  GSC_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
  GSC_ERROR(CUDA_ERROR_DEVICE_NOT_LICENSED, "device not licensed"),
  GSC_ERROR(CUDA_ERROR_INVALID_IMAGE, "invalid device kernel image"),
  GSC_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
  GSC_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context is already current"),
  GSC_ERROR(CUDA_ERROR_MAP_FAILED, "map failed"),
  GSC_ERROR(CUDA_ERROR_UNMAP_FAILED, "unmap failed"),
  GSC_ERROR(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
  GSC_ERROR(CUDA_ERROR_ALREADY_MAPPED, "already mapped"),
  GSC_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU, "no binary for gpu"),
  GSC_ERROR(CUDA_ERROR_ALREADY_ACQUIRED, "already acquired"),
  GSC_ERROR(CUDA_ERROR_NOT_MAPPED, "not mapped"),
  GSC_ERROR(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "not mapped as array"),
  GSC_ERROR(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "not mapped as pointer"),
  GSC_ERROR(CUDA_ERROR_ECC_UNCORRECTABLE, "ecc uncorrectable"),
  GSC_ERROR(CUDA_ERROR_UNSUPPORTED_LIMIT, "unsupported limit"),
  GSC_ERROR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "context already in use"),
  GSC_ERROR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access unsupported"),
  GSC_ERROR(CUDA_ERROR_INVALID_PTX, "invalid ptx"),
  GSC_ERROR(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid graphics context"),
  GSC_ERROR(CUDA_ERROR_NVLINK_UNCORRECTABLE, "nvlink uncorrectable"),
  GSC_ERROR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "jit compiler not found"),
  GSC_ERROR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "unsupported ptx version"),
  GSC_ERROR(CUDA_ERROR_JIT_COMPILATION_DISABLED, "jit compilation disabled"),
  GSC_ERROR(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "unsupported exec affinity"),
  GSC_ERROR(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "unsupported devside sync"),
  GSC_ERROR(CUDA_ERROR_CONTAINED, "contained"),
  GSC_ERROR(CUDA_ERROR_INVALID_SOURCE, "invalid source"),
  GSC_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
  GSC_ERROR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
  GSC_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object init failed"),
  GSC_ERROR(CUDA_ERROR_OPERATING_SYSTEM, "an operating system call failed"),
  GSC_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
  GSC_ERROR(CUDA_ERROR_ILLEGAL_STATE, "illegal state"),
  GSC_ERROR(CUDA_ERROR_LOSSY_QUERY, "lossy query"),
  GSC_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
  GSC_ERROR(CUDA_ERROR_NOT_READY, "device work not yet complete"),
  GSC_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS, "illegal memory access"),
  GSC_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "launch out of resources"),
  GSC_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT, "launch timeout"),
  GSC_ERROR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch incompatible texturing"),
  GSC_ERROR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access already enabled"),
  GSC_ERROR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access not enabled"),
  GSC_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active"),
  GSC_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
  GSC_ERROR(CUDA_ERROR_ASSERT, "assert"),
  GSC_ERROR(CUDA_ERROR_TOO_MANY_PEERS, "too many peers"),
  GSC_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "host memory already registered"),
  GSC_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "host memory not registered"),
  GSC_ERROR(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
  GSC_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION, "illegal instruction"),
  GSC_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
  GSC_ERROR(CUDA_ERROR_INVALID_ADDRESS_SPACE, "invalid address space"),
  GSC_ERROR(CUDA_ERROR_INVALID_PC, "invalid pc"),
  GSC_ERROR(CUDA_ERROR_LAUNCH_FAILED, "kernel launch failed"),
  GSC_ERROR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "cooperative launch too large"),
  GSC_ERROR(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory leak"),
  GSC_ERROR(CUDA_ERROR_NOT_PERMITTED, "not permitted"),
  GSC_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
  GSC_ERROR(CUDA_ERROR_SYSTEM_NOT_READY, "system not ready"),
  GSC_ERROR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system driver mismatch"),
  GSC_ERROR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "compat not supported on device"),
  GSC_ERROR(CUDA_ERROR_MPS_CONNECTION_FAILED, "mps connection failed"),
  GSC_ERROR(CUDA_ERROR_MPS_RPC_FAILURE, "mps rpc failure"),
  GSC_ERROR(CUDA_ERROR_MPS_SERVER_NOT_READY, "mps server not ready"),
  GSC_ERROR(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "mps max clients reached"),
  GSC_ERROR(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "mps max connections reached"),
  GSC_ERROR(CUDA_ERROR_MPS_CLIENT_TERMINATED, "mps client terminated"),
  GSC_ERROR(CUDA_ERROR_CDP_NOT_SUPPORTED, "cdp not supported"),
  GSC_ERROR(CUDA_ERROR_CDP_VERSION_MISMATCH, "cdp version mismatch"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            "operation not permitted while the stream is capturing"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "stream capture invalidated"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_MERGE, "stream capture merge"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "stream capture unmatched"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "stream capture unjoined"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "stream capture isolation"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "stream capture implicit"),
  GSC_ERROR(CUDA_ERROR_CAPTURED_EVENT, "captured event"),
  GSC_ERROR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "stream capture wrong thread"),
  GSC_ERROR(CUDA_ERROR_TIMEOUT, "timeout"),
  GSC_ERROR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "graph exec update failure"),
  GSC_ERROR(CUDA_ERROR_EXTERNAL_DEVICE, "external device"),
  GSC_ERROR(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size"),
  GSC_ERROR(CUDA_ERROR_FUNCTION_NOT_LOADED, "function not loaded"),
  GSC_ERROR(CUDA_ERROR_INVALID_RESOURCE_TYPE, "invalid resource type"),
  GSC_ERROR(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "invalid resource configuration"),
  GSC_ERROR(CUDA_ERROR_KEY_ROTATION, "key rotation"),
  GSC_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef GSC_ERROR

static const struct error_text *error_find(CUresult code)
{
  for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == code)
      return &errors[i];
  return NULL;
}

GSC_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const struct error_text *e = error_find(error);
  *pStr = e ? e->name : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GSC_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const struct error_text *e = error_find(error);
  *pStr = e ? e->text : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
