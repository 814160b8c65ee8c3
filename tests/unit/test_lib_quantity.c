/* gs_parse_size: accepted spellings and their exact byte counts, and rejected inputs whose
 * message must name the bad token. Table-driven. Also the parsers of a tenant's options that
 * `gpuslice run` and the Slurm plugin share: gs_parse_vram_limit, and limits.h's compute
 * share, policy and priority. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice.h>
#include <gpuslice/limits.h>

#define GIB (1024ULL * 1024 * 1024)
#define TOTAL (80ULL * GIB)

struct good_case {
  const char *in;
  uint64_t want;
};

static const struct good_case good[] = {
  { "1", 1 },
  { "1048576", 1048576 },
  { "12B", 12 },
  { "1K", 1000 },
  { "1M", 1000000 },
  { "1G", 1000000000ULL },
  { "2T", 2000000000000ULL },
  { "1Ki", 1024 },
  { "1Mi", 1048576 },
  { "1Gi", GIB },
  { "1Ti", 1024 * GIB },
  { "512MiB", 512ULL << 20 },
  { "20GiB", 20 * GIB },
  { "1GB", 1000000000ULL },
  { "1g", 1000000000ULL },
  { "1.5G", 1500000000ULL },
  { "0.1G", 100000000ULL },
  { "1.5Gi", 3 * GIB / 2 },
  { "25%", TOTAL / 4 },
  { "100%", TOTAL },
  { "1%", TOTAL / 100 },
  { "12.5%", TOTAL / 8 },
  { "18446744073709551615", UINT64_MAX },
  { "16777215Ti", 16777215ULL << 40 },
};

struct bad_case {
  const char *in;
  const char *token; /* must appear in the message */
};

static const struct bad_case bad[] = {
  { "", "''" },
  { "12X", "'X'" },
  { "12Gfoo", "'Gfoo'" },
  { "-1G", "'-1G'" },
  { "0", "'0'" },
  { "0G", "'0G'" },
  { "0.0001K", "'0.0001K'" },
  { "200%", "'200%'" },
  { "0%", "'0%'" },
  { "0.5%", "'0.5%'" },
  { "100.01%", "'100.01%'" },
  { "18446744073709551616", "'18446744073709551616'" },
  { "16777216Ti", "'16777216Ti'" },
  { "99999999999999999999999T", "'99999999999999999999999T'" },
  { "1.5", "'1.5'" },
  { "G", "'G'" },
  { ".5G", "'.5G'" },
  { "5.G", "'5.G'" },
  { " 5G", "' 5G'" },
  { "5G ", "'G '" },
  { "5 G", "' G'" },
  { "+5G", "'+5G'" },
  { "0x10", "'x10'" },
  { "25%%", "'%%'" },
  { "1.0000000000001G", "'1.0000000000001G'" },
};

static void test_parse_size_accepts_units_and_percentages(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    gs_error_t err = NULL;
    uint64_t v = 0;
    int r = gs_parse_size(good[i].in, TOTAL, &v, &err);
    if (r != 0)
      fail_msg("'%s' rejected: %s", good[i].in, err->msg);
    if (v != good[i].want)
      fail_msg("'%s' gave %llu, want %llu", good[i].in, (unsigned long long) v,
               (unsigned long long) good[i].want);
    assert_null(err);
  }
}

static void test_parse_size_rejects_with_message_naming_token(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    gs_error_t err = NULL;
    uint64_t v = 42;
    int r = gs_parse_size(bad[i].in, TOTAL, &v, &err);
    if (r != -1)
      fail_msg("'%s' accepted as %llu", bad[i].in, (unsigned long long) v);
    assert_non_null(err);
    if (!strstr(err->msg, bad[i].token))
      fail_msg("'%s': message '%s' does not name %s", bad[i].in, err->msg, bad[i].token);
    assert_int_equal(v, 42); /* untouched on failure */
    gs_error_release(&err);
    assert_null(err);
  }
}

static void test_parse_size_percentage_needs_device_total(void **state)
{
  gs_error_t err = NULL;
  uint64_t v;
  (void) state;
  assert_int_equal(gs_parse_size("50%", 0, &v, &err), -1);
  assert_non_null(strstr(err->msg, "'50%'"));
  gs_error_release(&err);
  /* a plain size does not need it */
  assert_int_equal(gs_parse_size("1Gi", 0, &v, &err), 0);
  assert_int_equal(v, GIB);
}

static void test_parse_size_percentage_of_odd_total_rounds_down(void **state)
{
  gs_error_t err = NULL;
  uint64_t v;
  (void) state;
  assert_int_equal(gs_parse_size("33.3%", 1000, &v, &err), 0);
  assert_int_equal(v, 333);
  assert_int_equal(gs_parse_size("100%", UINT64_MAX, &v, &err), 0);
  assert_true(v == UINT64_MAX);
}

static void test_parse_vram_limit_gives_bytes_or_millionths(void **state)
{
  gs_error_t err = NULL;
  uint64_t bytes = 7, ppm = 7;
  (void) state;
  assert_int_equal(gs_parse_vram_limit("1Gi", &bytes, &ppm, &err), 0);
  assert_true(bytes == GIB && ppm == 0);
  assert_int_equal(gs_parse_vram_limit("12.5%", &bytes, &ppm, &err), 0);
  assert_true(bytes == 0 && ppm == 125000);
  assert_int_equal(gs_parse_vram_limit("abc", &bytes, &ppm, &err), -1);
  assert_non_null(strstr(err->msg, "'abc'"));
  assert_true(bytes == 0 && ppm == 125000); /* untouched on failure */
  assert_int_equal(gs_parse_vram_limit("9223372036854775808", &bytes, &ppm, &err), -1);
  assert_non_null(strstr(err->msg, "too large"));
  assert_int_equal(gs_parse_vram_limit("9223372036854775807", &bytes, &ppm, &err), 0);
  gs_error_release(&err);
}

static void test_compute_option_parsers_take_the_documented_values_only(void **state)
{
  gs_error_t err = NULL;
  uint32_t v = 0;
  (void) state;
  assert_int_equal(gs_parse_compute_pct("12.5", &v, &err), 0);
  assert_int_equal(v, 125000);
  assert_int_equal(gs_parse_compute_pct("100", &v, &err), 0);
  assert_int_equal(v, 1000000);
  static const char *const bad_pct[] = { "150", "0", "-5", "abc", "", "50%", "nan", "0.00001" };
  for (size_t i = 0; i < sizeof(bad_pct) / sizeof(bad_pct[0]); i++) {
    v = 42;
    if (gs_parse_compute_pct(bad_pct[i], &v, &err) != -1)
      fail_msg("'%s' accepted as %u", bad_pct[i], v);
    char want[32];
    snprintf(want, sizeof(want), "'%s'", bad_pct[i]);
    if (!strstr(err->msg, want))
      fail_msg("'%s': message '%s' does not name it", bad_pct[i], err->msg);
    assert_int_equal(v, 42);
  }
  assert_int_equal(gs_compute_policy_from_name("cap", &v, &err), 0);
  assert_int_equal(v, GS_COMPUTE_CAP);
  assert_int_equal(gs_compute_policy_from_name("share", &v, &err), 0);
  assert_int_equal(v, GS_COMPUTE_SHARE);
  assert_int_equal(gs_compute_policy_from_name("capped", &v, &err), -1);
  assert_non_null(strstr(err->msg, "'capped'"));
  assert_int_equal(gs_priority_from_name("high", &v, &err), 0);
  assert_int_equal(v, GS_PRIO_HIGH);
  assert_int_equal(gs_priority_from_name("low", &v, &err), 0);
  assert_int_equal(v, GS_PRIO_LOW);
  assert_int_equal(gs_priority_from_name("normal", &v, &err), 0);
  assert_int_equal(v, GS_PRIO_NORMAL);
  assert_int_equal(gs_priority_from_name("urgent", &v, &err), -1);
  assert_non_null(strstr(err->msg, "'urgent'"));
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse_size_accepts_units_and_percentages),
    cmocka_unit_test(test_parse_size_rejects_with_message_naming_token),
    cmocka_unit_test(test_parse_size_percentage_needs_device_total),
    cmocka_unit_test(test_parse_size_percentage_of_odd_total_rounds_down),
    cmocka_unit_test(test_parse_vram_limit_gives_bytes_or_millionths),
    cmocka_unit_test(test_compute_option_parsers_take_the_documented_values_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
