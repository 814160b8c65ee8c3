/* Unit tests for the simulated CUDA driver (sim/cuda-*.c), called through its real ABI:
 * capacity and cross-process accounting, kernel timing in virtual time, capture and replay,
 * stream-ordered and VMM memory, and cuGetProcAddress's choice of ABI versions. The tests
 * run in order in one process on a private state directory; the first one runs before
 * cuInit on purpose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gs-cuda.h"
#include "temp-dir.h"

#define GIB (1024ULL * 1024ULL * 1024ULL)

static CUcontext ctx;
static CUfunction busy;

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

static size_t used_bytes(void)
{
  size_t free_, total;
  assert_int_equal(cuMemGetInfo_v2(&free_, &total), CUDA_SUCCESS);
  return total - free_;
}

static void launch_us(CUstream s, uint64_t us)
{
  void *args[] = { &us };
  assert_int_equal(cuLaunchKernel(busy, 1, 1, 1, 1, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
}

static char dir[] = "/tmp/gpusim-unit-XXXXXX";

static int group_setup(void **state)
{
  (void) state;
  if (!mkdtemp(dir))
    return -1;
  setenv("GPUSIM_STATE_DIR", dir, 1);
  setenv("GPUSLICE_SIM", "h100-80gb", 1);
  return 0;
}

/* Removes the state directory and the state file in it. */
static int group_teardown(void **state)
{
  (void) state;
  return gs_test_remove_dir(dir);
}

static void test_calls_before_cuinit_fail_not_initialized(void **state)
{
  (void) state;
  int n;
  CUmodule m;
  assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
  assert_int_equal(n, 1);
  assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  assert_int_equal(cuModuleLoadData(&m, "any image"), CUDA_SUCCESS);
  assert_int_equal(cuModuleGetFunction(&busy, m, "sim_busy"), CUDA_SUCCESS);
}

static void test_alloc_past_capacity_fails_out_of_memory(void **state)
{
  (void) state;
  CUdeviceptr p;
  assert_int_equal(cuMemAlloc_v2(&p, 100 * GIB), CUDA_ERROR_OUT_OF_MEMORY);
  assert_int_equal(cuMemAlloc_v2(&p, 60 * GIB), CUDA_SUCCESS);
  assert_int_equal(used_bytes(), 60 * GIB);
  assert_int_equal(cuMemFree_v2(p), CUDA_SUCCESS);
  assert_int_equal(used_bytes(), 0);
  assert_int_equal(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
}

static void test_meminfo_counts_other_processes(void **state)
{
  (void) state;
  int ready[2], done[2];
  assert_int_equal(pipe(ready), 0);
  assert_int_equal(pipe(done), 0);
  pid_t pid = fork();
  if (pid == 0) {
    CUcontext c;
    CUdeviceptr p;
    char b = 0;
    int ok = cuInit(0) == CUDA_SUCCESS && cuCtxCreate_v4(&c, NULL, 0, 0) == CUDA_SUCCESS &&
      cuMemAlloc_v2(&p, GIB) == CUDA_SUCCESS;
    if (write(ready[1], &b, 1) != 1 || read(done[0], &b, 1) != 1)
      _exit(2);
    _exit(ok ? 0 : 1);
  }
  char b;
  assert_int_equal(read(ready[0], &b, 1), 1);
  assert_int_equal(used_bytes(), GIB);
  assert_int_equal(write(done[1], &b, 1), 1);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(used_bytes(), 0);
}

static void test_sim_busy_kernel_runs_for_its_parameter(void **state)
{
  (void) state;
  CUstream s;
  CUevent a, b;
  float ms;
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&a, 0), CUDA_SUCCESS);
  assert_int_equal(cuEventCreate(&b, 0), CUDA_SUCCESS);
  /* Wall-clock bounds only say "not early" and "not ignored": how late a loaded machine
   * wakes a process is no test's business (the integration tests hold medians to 5%). The
   * events are the device's own clock and must show the kernel's time. */
  double t0 = now_ms();
  assert_int_equal(cuEventRecord(a, s), CUDA_SUCCESS);
  launch_us(s, 50000);
  assert_int_equal(cuEventRecord(b, s), CUDA_SUCCESS);
  /* Launches are asynchronous: the kernel is still running when the launch returns. */
  assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
  double wall = now_ms() - t0;
  assert_int_equal(cuEventElapsedTime_v2(&ms, a, b), CUDA_SUCCESS);
  assert_true(wall >= 49.9 && wall < 1000.0);
  assert_true(ms >= 47.5f && ms < 52.5f);
  assert_int_equal(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

static void test_graph_replays_captured_kernels(void **state)
{
  (void) state;
  CUstream s;
  CUgraph g;
  CUgraphExec x;
  size_t n = 0;
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  for (int i = 0; i < 4; i++)
    launch_us(s, 2000);
  assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
  assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS); /* captured, not run */
  assert_int_equal(cuGraphGetNodes(g, NULL, &n), CUDA_SUCCESS);
  assert_int_equal(n, 4);
  assert_int_equal(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
  double t0 = now_ms();
  assert_int_equal(cuGraphLaunch(x, s), CUDA_SUCCESS);
  assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
  assert_true(now_ms() - t0 >= 7.9);
  assert_int_equal(cuGraphExecDestroy(x), CUDA_SUCCESS);
  assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

static void test_stream_ordered_free_holds_memory_until_sync(void **state)
{
  (void) state;
  CUdeviceptr p;
  assert_int_equal(cuMemAllocAsync(&p, GIB, NULL), CUDA_SUCCESS);
  assert_int_equal(cuMemFreeAsync(p, NULL), CUDA_SUCCESS);
  assert_int_equal(used_bytes(), GIB); /* back in the pool, not on the device */
  assert_int_equal(cuStreamSynchronize(NULL), CUDA_SUCCESS);
  assert_int_equal(used_bytes(), 0);
}

static void test_vmm_mappings_alias_one_allocation(void **state)
{
  (void) state;
  CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                               .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
  size_t g;
  CUmemGenericAllocationHandle h;
  CUdeviceptr va;
  unsigned char c = 0;
  assert_int_equal(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                   CUDA_SUCCESS);
  assert_int_equal(cuMemCreate(&h, g + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuMemCreate(&h, g, &prop, 0), CUDA_SUCCESS);
  assert_int_equal(cuMemAddressReserve(&va, 2 * g, 0, 0, 0), CUDA_SUCCESS);
  assert_int_equal(cuMemMap(va, g, 0, h, 0), CUDA_SUCCESS);
  assert_int_equal(cuMemMap(va + g, g, 0, h, 0), CUDA_SUCCESS);
  assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
  assert_int_equal(used_bytes(), g);
  assert_int_equal(cuMemsetD8_v2(va + 5, 42, 1), CUDA_SUCCESS);
  assert_int_equal(cuMemcpyDtoH_v2(&c, va + g + 5, 1), CUDA_SUCCESS);
  assert_int_equal(c, 42);
  assert_int_equal(cuMemUnmap(va, 2 * g), CUDA_SUCCESS);
  assert_int_equal(cuMemAddressFree(va, 2 * g), CUDA_SUCCESS);
  assert_int_equal(used_bytes(), 0);
}

static void test_copy_outside_an_allocation_is_invalid_value(void **state)
{
  (void) state;
  CUdeviceptr p;
  char buf[64] = { 0 };
  assert_int_equal(cuMemAlloc_v2(&p, 32), CUDA_SUCCESS);
  assert_int_equal(cuMemcpyHtoD_v2(p, buf, 32), CUDA_SUCCESS);
  assert_int_equal(cuMemcpyHtoD_v2(p + 1, buf, 32), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuMemcpyDtoH_v2(buf, 0x1000, 8), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuMemsetD32_v2(p, 0, 9), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuMemAlloc_v2(NULL, 32), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuMemFree_v2(p), CUDA_SUCCESS);
}

static void expect_proc(const char *name, int version, cuuint64_t flags, const char *symbol)
{
  void *fn = NULL;
  CUdriverProcAddressQueryResult q;
  assert_int_equal(cuGetProcAddress_v2(name, &fn, version, flags, &q), CUDA_SUCCESS);
  assert_int_equal(q, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, symbol));
}

static void test_get_proc_address_picks_abi_by_version(void **state)
{
  (void) state;
  void *fn;
  CUdriverProcAddressQueryResult q;
  expect_proc("cuMemAdvise", 12000, 0, "cuMemAdvise");
  expect_proc("cuMemAdvise", 12020, 0, "cuMemAdvise_v2");
  expect_proc("cuMemPrefetchAsync", 12000, 0, "cuMemPrefetchAsync");
  expect_proc("cuMemPrefetchAsync", 12020, 0, "cuMemPrefetchAsync_v2");
  expect_proc("cuMemPrefetchAsync", 12020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
              "cuMemPrefetchAsync_v2_ptsz");
  expect_proc("cuCtxCreate", 11040, 0, "cuCtxCreate_v3");
  expect_proc("cuCtxCreate", 13000, 0, "cuCtxCreate_v4");
  expect_proc("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
  expect_proc("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
  expect_proc("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
              "cuLaunchKernel_ptsz");
  assert_int_equal(cuGetProcAddress_v2("cuNoSuchThing", &fn, 12000, 0, &q), CUDA_ERROR_NOT_FOUND);
  assert_int_equal(q, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  assert_int_equal(cuGetProcAddress_v2("cuMemAdvise", &fn, 7000, 0, &q), CUDA_ERROR_NOT_FOUND);
  assert_int_equal(q, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void test_error_strings_exist_for_known_results_only(void **state)
{
  (void) state;
  const char *s = "unset";
  assert_int_equal(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
  assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
  assert_int_equal(cuGetErrorString(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &s), CUDA_SUCCESS);
  assert_int_equal(cuGetErrorString((CUresult) 12345, &s), CUDA_ERROR_INVALID_VALUE);
  assert_null(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_calls_before_cuinit_fail_not_initialized),
    cmocka_unit_test(test_alloc_past_capacity_fails_out_of_memory),
    cmocka_unit_test(test_meminfo_counts_other_processes),
    cmocka_unit_test(test_sim_busy_kernel_runs_for_its_parameter),
    cmocka_unit_test(test_graph_replays_captured_kernels),
    cmocka_unit_test(test_stream_ordered_free_holds_memory_until_sync),
    cmocka_unit_test(test_vmm_mappings_alias_one_allocation),
    cmocka_unit_test(test_copy_outside_an_allocation_is_invalid_value),
    cmocka_unit_test(test_get_proc_address_picks_abi_by_version),
    cmocka_unit_test(test_error_strings_exist_for_known_results_only),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
