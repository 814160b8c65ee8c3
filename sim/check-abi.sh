#!/bin/sh
# Checks abi/gs-cuda.h against NVIDIA's real cuda.h. Needs a CUDA toolkit, so it is not part of
# the build or CI; run it by hand after editing the header:  sim/check-abi.sh [CUDA_INCLUDE_DIR]
#
# 1. Values: every enum constant and #define in gs-cuda.h, plus the size and field offsets of
#    each struct, are printed by one program built against gs-cuda.h and one built against
#    cuda.h; the two outputs must be identical.
# 2. Prototypes: gs-cuda.h's entry points are compiled after cuda.h with the driver's internal
#    view (__CUDA_API_VERSION_INTERNAL), which declares every ABI version under its exported
#    name; a prototype that differs from NVIDIA's is a "conflicting types" error.
set -eu
CUDA_INC=${1:-/usr/local/cuda/include}
HERE=$(cd "$(dirname "$0")" && pwd)
ABI=$HERE/../abi/gs-cuda.h
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CC=${CC:-cc}

# Constants: enumerators ("  NAME = value,") and object-like #defines of gs-cuda.h.
{
  sed -n 's/^  \(CU[A-Za-z0-9_]*\) = .*/\1/p' "$ABI"
  sed -n 's/^#define \(CU[A-Za-z0-9_]*\) .*/\1/p' "$ABI" | grep -v '^CU_STREAM_\|_END$\|_POINTER$\|_SIZE$\|^CU_DEVICE_CPU$\|^CU_DEVICE_INVALID$'
} | sort -u >"$TMP/consts"

{
  cat <<'EOT'
#include <stdio.h>
#include <stddef.h>
#ifdef REAL
#include <cuda.h>
#else
#include "gs-cuda.h"
#endif
#define V(x) printf("%s %lld\n", #x, (long long) (x));
#define S(t) printf("sizeof %s %zu align %zu\n", #t, sizeof(t), _Alignof(t));
#define O(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f));
int main(void) {
EOT
  sed 's/.*/V(&)/' "$TMP/consts"
  cat <<'EOT'
V((long long) (size_t) CU_STREAM_LEGACY) V((long long) (size_t) CU_STREAM_PER_THREAD)
V((long long) (size_t) CU_LAUNCH_PARAM_END) V((long long) (size_t) CU_LAUNCH_PARAM_BUFFER_POINTER)
V((long long) (size_t) CU_LAUNCH_PARAM_BUFFER_SIZE) V(CU_DEVICE_CPU) V(CU_DEVICE_INVALID)
S(CUdevice) S(CUdeviceptr) S(CUmemGenericAllocationHandle) S(CUresult) S(CUuuid)
S(CUipcMemHandle) S(CUipcEventHandle) S(CUmemLocation) O(CUmemLocation, id)
S(CUmemAllocationProp) O(CUmemAllocationProp, requestedHandleTypes) O(CUmemAllocationProp, location)
O(CUmemAllocationProp, win32HandleMetaData) O(CUmemAllocationProp, allocFlags)
O(CUmemAllocationProp, allocFlags.usage)
S(CUmemAccessDesc) O(CUmemAccessDesc, flags)
S(CUmemPoolProps) O(CUmemPoolProps, location) O(CUmemPoolProps, win32SecurityAttributes)
O(CUmemPoolProps, maxSize) O(CUmemPoolProps, usage) O(CUmemPoolProps, reserved)
S(CUmemPoolPtrExportData)
S(CUDA_ARRAY_DESCRIPTOR) O(CUDA_ARRAY_DESCRIPTOR, Format) O(CUDA_ARRAY_DESCRIPTOR, NumChannels)
S(CUDA_ARRAY3D_DESCRIPTOR) O(CUDA_ARRAY3D_DESCRIPTOR, Depth) O(CUDA_ARRAY3D_DESCRIPTOR, Format)
O(CUDA_ARRAY3D_DESCRIPTOR, Flags)
S(CUlaunchAttributeValue) S(CUlaunchAttribute) O(CUlaunchAttribute, value)
O(CUlaunchAttributeValue, cooperative) O(CUlaunchAttributeValue, priority)
O(CUlaunchAttributeValue, clusterDim.z) O(CUlaunchAttributeValue, programmaticEvent.triggerAtBlockStart)
S(CUlaunchConfig) O(CUlaunchConfig, sharedMemBytes) O(CUlaunchConfig, hStream) O(CUlaunchConfig, attrs)
O(CUlaunchConfig, numAttrs)
S(CUexecAffinityParam) S(CUctxCigParam) S(CUctxCreateParams) O(CUctxCreateParams, numExecAffinityParams)
O(CUctxCreateParams, cigParams)
S(CUgraphEdgeData)
S(CUprocessState) S(CUcheckpointLockArgs) O(CUcheckpointLockArgs, reserved0) O(CUcheckpointLockArgs, reserved1)
S(CUcheckpointCheckpointArgs) S(CUcheckpointUnlockArgs) S(CUcheckpointGpuPair) O(CUcheckpointGpuPair, newUuid)
S(CUcheckpointRestoreArgs) O(CUcheckpointRestoreArgs, gpuPairsCount)
S(CUmem_advise) S(CUdevice_attribute) S(CUstreamCaptureMode) S(CUdriverProcAddressQueryResult)
return 0; }
EOT
} >"$TMP/values.c"

$CC -std=gnu11 -DREAL -I"$CUDA_INC" "$TMP/values.c" -o "$TMP/real"
$CC -std=gnu11 -I"$HERE/../abi" "$TMP/values.c" -o "$TMP/ours"
"$TMP/real" >"$TMP/real.out"
"$TMP/ours" >"$TMP/ours.out"
if ! diff -u "$TMP/real.out" "$TMP/ours.out"; then
  echo "check-abi: values differ (- real cuda.h, + gs-cuda.h)" >&2
  exit 1
fi

# Prototypes, typedefs of the old ABI, and opaque handle types.
{
  echo '#define __CUDA_API_VERSION_INTERNAL 1'
  echo '#include <cuda.h>'
  sed -n '/^\/\* ---- entry points ----/,/^#ifdef __cplusplus/p' "$ABI" | sed '$d'
  echo 'int main(void) { return 0; }'
} >"$TMP/protos.c"
$CC -std=gnu11 -Werror -I"$CUDA_INC" -c "$TMP/protos.c" -o "$TMP/protos.o"

echo "check-abi: $(wc -l <"$TMP/real.out") values and $(grep -c '^CUresult' "$TMP/protos.c") prototypes match $CUDA_INC/cuda.h"
