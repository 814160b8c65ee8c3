/* The limit variables of other systems (gpuslice/peer-limits.h): the spellings HAMi-core and
 * KAI Scheduler write and their exact byte counts, what is refused, and how the variables
 * combine per device when read from an environment. Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice/peer-limits.h>

#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)
#define TIB (1024ULL * GIB)

struct size_case {
  const char *in;
  uint64_t unit, want;
};

static const struct size_case good_sizes[] = {
  { "4g", 1, 4 * GIB },
  { "4G", 1, 4 * GIB },
  { "4096m", 1, 4 * GIB },
  { "4096M", 1, 4 * GIB },
  { "1048576k", 1, GIB },
  { "1073741824", 1, GIB },
  { "4Gi", 1, 4 * GIB },
  { "4GiB", 1, 4 * GIB },
  { "4gb", 1, 4 * GIB },
  { "512MB", 1, 512 * MIB },
  { "2t", 1, 2 * TIB },
  { "0", 1, 0 },
  { "0g", 1, 0 },
  { "007m", 1, 7 * MIB }, /* decimal, not octal */
  { "18446744073709551615", 1, UINT64_MAX },
  { "16777215t", 1, 16777215ULL * TIB },
  /* KAI's: a bare number is MiB, a suffix means what it says. */
  { "4096", MIB, 4 * GIB },
  { "4g", MIB, 4 * GIB },
  { "1", MIB, MIB },
};

static const char *const bad_sizes[] = {
  "",
  " 4g",
  "4g ",
  "-4g",
  "+4g",
  "4.5g",
  "4x",
  "4gg",
  "4gig",
  "4ib",
  "g",
  "0x100",
  "18446744073709551616",
  "16777216t",
  "17179869184g",
  "4\ng",
};

static void test_size_parse_takes_hami_spellings_in_binary_units(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(good_sizes) / sizeof(good_sizes[0]); i++) {
    uint64_t got = 12345;
    int rc = gs_peer_size_parse(good_sizes[i].in, good_sizes[i].unit, &got);
    if (rc != 0 || got != good_sizes[i].want)
      fail_msg("'%s' (unit %llu): rc %d, %llu bytes, want %llu", good_sizes[i].in,
               (unsigned long long) good_sizes[i].unit, rc, (unsigned long long) got,
               (unsigned long long) good_sizes[i].want);
  }
}

static void test_size_parse_refuses_anything_else_and_leaves_the_result(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
    uint64_t got = 12345;
    if (gs_peer_size_parse(bad_sizes[i], 1, &got) != -1 || got != 12345)
      fail_msg("'%s' accepted as %llu", bad_sizes[i], (unsigned long long) got);
    got = 12345;
    if (gs_peer_size_parse(bad_sizes[i], MIB, &got) != -1 || got != 12345)
      fail_msg("'%s' (MiB) accepted as %llu", bad_sizes[i], (unsigned long long) got);
  }
  uint64_t got = 1;
  assert_int_equal(gs_peer_size_parse(NULL, 1, &got), -1);
  assert_int_equal(got, 1);
  /* A bare number overflows only once scaled. */
  assert_int_equal(gs_peer_size_parse("17592186044416", MIB, &got), -1);
}

static void test_pct_parse_takes_whole_percentages_with_0_and_100_as_none(void **state)
{
  static const struct {
    const char *in;
    uint32_t want;
  } good[] = { { "50", 500000 }, { "1", 10000 }, { "99", 990000 },
               { "0", 0 },       { "100", 0 },   { "050", 500000 } };
  static const char *const bad[] = { "", "101", "-1", "50%", "12.5", "abc", " 50", "4294967346" };
  (void) state;
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    uint32_t got = 7;
    if (gs_peer_pct_parse(good[i].in, &got) != 0 || got != good[i].want)
      fail_msg("'%s': %u, want %u", good[i].in, got, good[i].want);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    uint32_t got = 7;
    if (gs_peer_pct_parse(bad[i], &got) != -1 || got != 7)
      fail_msg("'%s' accepted as %u", bad[i], got);
  }
}

/* ---- reading an environment ---- */

static const char *const *fake_env; /* "NAME=VALUE" strings, NULL-terminated */

static const char *fake_getenv(const char *name)
{
  size_t n = strlen(name);
  for (const char *const *e = fake_env; *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
      return *e + n + 1;
  return NULL;
}

struct bad_seen {
  int count;
  char last[128];
};

static void note_bad(const char *name, const char *value, const char *expected, void *data)
{
  struct bad_seen *b = data;
  assert_non_null(expected);
  b->count++;
  snprintf(b->last, sizeof(b->last), "%s=%s", name, value);
}

static struct gs_peer_limits read_env(const char *const *env, struct bad_seen *bad)
{
  struct gs_peer_limits l;
  memset(&l, 0xab, sizeof(l));
  fake_env = env;
  gs_peer_limits_read(&l, fake_getenv, note_bad, bad);
  return l;
}

static void test_read_with_no_variables_limits_nothing(void **state)
{
  static const char *const env[] = { "PATH=/bin", NULL };
  struct bad_seen bad = { 0 };
  (void) state;
  struct gs_peer_limits l = read_env(env, &bad);
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++) {
    assert_true(l.mem_bytes[i] == GS_LIMIT_NONE);
    assert_int_equal(l.sm_ppm[i], 0);
  }
  assert_int_equal(bad.count, 0);
}

static void test_read_per_device_replaces_the_plain_variable_on_its_device(void **state)
{
  static const char *const env[] = { "CUDA_DEVICE_MEMORY_LIMIT=4g",
                                     "CUDA_DEVICE_MEMORY_LIMIT_1=8g",
                                     "CUDA_DEVICE_MEMORY_LIMIT_2=0",
                                     "CUDA_DEVICE_MEMORY_LIMIT_15=1g",
                                     "CUDA_DEVICE_SM_LIMIT=50",
                                     "CUDA_DEVICE_SM_LIMIT_3=20",
                                     NULL };
  struct bad_seen bad = { 0 };
  (void) state;
  struct gs_peer_limits l = read_env(env, &bad);
  assert_true(l.mem_bytes[0] == 4 * GIB);
  assert_true(l.mem_bytes[1] == 8 * GIB); /* HAMi's rule: the device's own wins */
  assert_true(l.mem_bytes[2] == 4 * GIB); /* 0 is unset: the plain one holds */
  assert_true(l.mem_bytes[15] == GIB);
  assert_int_equal(l.sm_ppm[0], 500000);
  assert_int_equal(l.sm_ppm[3], 200000);
  assert_int_equal(bad.count, 0);
}

static void test_read_kai_and_hami_together_take_the_lower(void **state)
{
  static const char *const env[] = { "GPU_MEMORY_LIMIT=3072", "CUDA_DEVICE_MEMORY_LIMIT_0=2g",
                                     "CUDA_DEVICE_MEMORY_LIMIT_1=6g", NULL };
  struct bad_seen bad = { 0 };
  (void) state;
  struct gs_peer_limits l = read_env(env, &bad);
  assert_true(l.mem_bytes[0] == 2 * GIB);
  assert_true(l.mem_bytes[1] == 3 * GIB);
  assert_true(l.mem_bytes[5] == 3 * GIB);
}

static void test_read_reports_each_bad_value_once_and_ignores_it(void **state)
{
  static const char *const env[] = { "CUDA_DEVICE_MEMORY_LIMIT=4x", "CUDA_DEVICE_MEMORY_LIMIT_1=2g",
                                     "GPU_MEMORY_LIMIT=-1", "CUDA_DEVICE_SM_LIMIT=150", NULL };
  struct bad_seen bad = { 0 };
  (void) state;
  struct gs_peer_limits l = read_env(env, &bad);
  assert_int_equal(bad.count, 3);
  assert_string_equal(bad.last, "CUDA_DEVICE_SM_LIMIT=150");
  assert_true(l.mem_bytes[0] == GS_LIMIT_NONE);
  assert_true(l.mem_bytes[1] == 2 * GIB);
  assert_int_equal(l.sm_ppm[0], 0);
  /* No callback: ignored all the same. */
  fake_env = env;
  gs_peer_limits_read(&l, fake_getenv, NULL, NULL);
  assert_true(l.mem_bytes[0] == GS_LIMIT_NONE);
}

static void test_lower_never_raises(void **state)
{
  (void) state;
  assert_true(gs_peer_lower(8 * GIB, 4 * GIB) == 4 * GIB);
  assert_true(gs_peer_lower(4 * GIB, 8 * GIB) == 4 * GIB);
  assert_true(gs_peer_lower(GS_LIMIT_NONE, 4 * GIB) == 4 * GIB);
  assert_true(gs_peer_lower(4 * GIB, GS_LIMIT_NONE) == 4 * GIB);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_size_parse_takes_hami_spellings_in_binary_units),
    cmocka_unit_test(test_size_parse_refuses_anything_else_and_leaves_the_result),
    cmocka_unit_test(test_pct_parse_takes_whole_percentages_with_0_and_100_as_none),
    cmocka_unit_test(test_read_with_no_variables_limits_nothing),
    cmocka_unit_test(test_read_per_device_replaces_the_plain_variable_on_its_device),
    cmocka_unit_test(test_read_kai_and_hami_together_take_the_lower),
    cmocka_unit_test(test_read_reports_each_bad_value_once_and_ignores_it),
    cmocka_unit_test(test_lower_never_raises),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
