/* Unit tests for the pure rules of suspending tenants (daemon/suspend-rules.c): whether a
 * resume fits, and the one-line reasons a refusal and a resume that found no room give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "suspend.h"

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)

static void test_room_names_the_first_gpu_short_and_what_it_lacks(void **state)
{
  (void) state;
  static const struct {
    uint64_t need[3], free_[3];
    int gpu;
    uint64_t missing;
  } cases[] = {
    { { 8 * GIB, 0, 0 }, { 8 * GIB, 0, 0 }, -1, 0 },                /* exactly enough */
    { { 8 * GIB, 0, 0 }, { 8 * GIB - 1, 80 * GIB, 0 }, 0, 1 },      /* one byte short */
    { { 0, 4 * GIB, 2 * GIB }, { 0, 80 * GIB, GIB }, 2, GIB },      /* the third GPU */
    { { 0, 0, 0 }, { 0, 0, 0 }, -1, 0 },                            /* nothing to bring back */
    { { 40 * GIB, 40 * GIB, 0 }, { 10 * GIB, 0, 0 }, 0, 30 * GIB }, /* the first of two short */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint64_t missing = 42;
    assert_int_equal(suspend_room_short(cases[i].need, cases[i].free_, 3, &missing), cases[i].gpu);
    assert_int_equal(missing, cases[i].missing);
  }
}

static void test_bytes_read_in_the_largest_whole_unit(void **state)
{
  (void) state;
  char buf[32];
  suspend_bytes_text(buf, sizeof(buf), 8 * GIB - 64 * MIB);
  assert_string_equal(buf, "7.9 GiB");
  suspend_bytes_text(buf, sizeof(buf), 512 * MIB);
  assert_string_equal(buf, "512.0 MiB");
  suspend_bytes_text(buf, sizeof(buf), 640);
  assert_string_equal(buf, "640 bytes");
}

static void test_refusals_say_why_and_that_the_tenant_runs(void **state)
{
  (void) state;
  static const struct {
    const char *op;
    CUresult r;
    const char *name, *want;
  } cases[] = {
    { "lock", CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY",
      "tenant 't' not suspended: lock of process 42 failed (CUDA_ERROR_NOT_READY): its GPU work "
      "did not finish within the lock timeout (250 ms); it keeps running" },
    { "checkpoint", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
      "tenant 't' not suspended: checkpoint of process 42 failed (CUDA_ERROR_NOT_SUPPORTED): it "
      "holds managed (UVM) memory or memory shared with another process (IPC), which the driver "
      "cannot checkpoint; it keeps running" },
    { "lock", CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
      "tenant 't' not suspended: lock of process 42 failed (CUDA_ERROR_NOT_SUPPORTED): the "
      "driver cannot checkpoint this process; it keeps running" },
    { "lock", CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
      "tenant 't' not suspended: lock of process 42 failed (CUDA_ERROR_ILLEGAL_STATE): it is "
      "locked or checkpointed by someone else; it keeps running" },
    { "checkpoint", CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN",
      "tenant 't' not suspended: checkpoint of process 42 failed (CUDA_ERROR_UNKNOWN): the "
      "driver refused; it keeps running" },
  };
  char buf[512];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    suspend_refusal(buf, sizeof(buf), "t", 42, cases[i].op, cases[i].r, cases[i].name, 250);
    assert_string_equal(buf, cases[i].want);
    assert_null(strchr(buf, '\n'));
  }
}

static void test_a_resume_without_room_names_the_tenant_and_the_bytes_missing(void **state)
{
  (void) state;
  char buf[512];
  suspend_timeout_reason(buf, sizeof(buf), "lent", 2.04, 1, 40 * GIB, 19 * GIB + 512 * MIB,
                         20 * GIB + 512 * MIB);
  assert_string_equal(buf,
                      "tenant 'lent' not resumed after 2.0 s: GPU 1 has 19.5 GiB free of the "
                      "40.0 GiB it needs back, 20.5 GiB (22011707392 bytes) missing; it stays "
                      "suspended, its memory kept in host memory");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_room_names_the_first_gpu_short_and_what_it_lacks),
    cmocka_unit_test(test_bytes_read_in_the_largest_whole_unit),
    cmocka_unit_test(test_refusals_say_why_and_that_the_tenant_runs),
    cmocka_unit_test(test_a_resume_without_room_names_the_tenant_and_the_bytes_missing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
