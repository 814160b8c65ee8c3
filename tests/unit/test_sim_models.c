/* gpusim_spec_parse and gpusim_uuid: GPUSLICE_SIM lists become devices in order, every bad
 * list fails with a message naming the bad token, and UUIDs are stable and distinct. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim-models.h"

static int model_index(const char *key)
{
  for (size_t i = 0; i < gpusim_model_count; i++)
    if (strcmp(gpusim_models[i].key, key) == 0)
      return (int) i;
  fail_msg("no model %s", key);
  return -1;
}

static void test_spec_lists_devices_in_order(void **state)
{
  int dev[GPUSIM_MAX_DEVICES];
  char err[256] = "";
  (void) state;
  assert_int_equal(gpusim_spec_parse("h100-80gb:2,t4", dev, err, sizeof(err)), 3);
  assert_int_equal(dev[0], model_index("h100-80gb"));
  assert_int_equal(dev[1], model_index("h100-80gb"));
  assert_int_equal(dev[2], model_index("t4"));
}

static void test_spec_accepts_every_model_and_sixteen_devices(void **state)
{
  int dev[GPUSIM_MAX_DEVICES];
  char err[256];
  (void) state;
  for (size_t i = 0; i < gpusim_model_count; i++)
    assert_int_equal(gpusim_spec_parse(gpusim_models[i].key, dev, err, sizeof(err)), 1);
  assert_int_equal(gpusim_spec_parse("a100-40gb:8,l4:8", dev, err, sizeof(err)), 16);
  assert_int_equal(gpusim_spec_parse("h200-141gb:16", dev, err, sizeof(err)), 16);
}

struct bad_spec {
  const char *spec;
  const char *token; /* must appear in the message */
};

static const struct bad_spec bad[] = {
  { "bogus", "bogus" },    { "t4:x", "t4:x" },          { "t4:0", "t4:0" },
  { "t4:", "t4:" },        { "t4:-1", "t4:-1" },        { "t4:17", "t4:17" },
  { ",t4", ",t4" },        { "t4,,l4", "t4,,l4" },      { "t4,", "t4," },
  { "t4:8,l4:9", "l4:9" }, { "h100-80gb:16,t4", "t4" }, { "", "GPUSLICE_SIM" },
};

static void test_spec_rejects_bad_lists_naming_the_token(void **state)
{
  int dev[GPUSIM_MAX_DEVICES];
  (void) state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char err[256] = "";
    if (gpusim_spec_parse(bad[i].spec, dev, err, sizeof(err)) != -1)
      fail_msg("'%s' accepted", bad[i].spec);
    if (!strstr(err, bad[i].token))
      fail_msg("'%s': message '%s' does not name '%s'", bad[i].spec, err, bad[i].token);
  }
}

static void test_spec_rejects_seventeen_single_devices(void **state)
{
  int dev[GPUSIM_MAX_DEVICES];
  char spec[256] = "", err[256] = "";
  (void) state;
  for (int i = 0; i < 17; i++)
    strcat(spec, i ? ",t4" : "t4");
  assert_int_equal(gpusim_spec_parse(spec, dev, err, sizeof(err)), -1);
  assert_non_null(strstr(err, "16"));
}

static void test_uuids_are_stable_and_distinct(void **state)
{
  char seen[GPUSIM_MAX_DEVICES * 8][64];
  int n = 0;
  (void) state;
  for (size_t m = 0; m < gpusim_model_count; m++) {
    for (int i = 0; i < GPUSIM_MAX_DEVICES; i++) {
      char again[64];
      gpusim_uuid((int) m, i, seen[n], sizeof(seen[n]));
      gpusim_uuid((int) m, i, again, sizeof(again));
      assert_string_equal(seen[n], again);
      assert_int_equal(strncmp(seen[n], "GPU-", 4), 0);
      assert_int_equal(strlen(seen[n]), 40); /* GPU- plus 8-4-4-4-12 */
      for (int j = 0; j < n; j++)
        assert_string_not_equal(seen[j], seen[n]);
      n++;
    }
  }
}

/* Found by fuzz/fuzz-sim-spec: the message quotes the token, newline and all. */
static void test_spec_error_is_one_line_even_for_a_newline(void **state)
{
  (void) state;
  int dev[GPUSIM_MAX_DEVICES];
  char err[256];
  assert_int_equal(gpusim_spec_parse("t4,bo\ngus", dev, err, sizeof(err)), -1);
  assert_null(strchr(err, '\n'));
  assert_non_null(strstr(err, "'bo?gus'"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_spec_lists_devices_in_order),
    cmocka_unit_test(test_spec_accepts_every_model_and_sixteen_devices),
    cmocka_unit_test(test_spec_rejects_bad_lists_naming_the_token),
    cmocka_unit_test(test_spec_rejects_seventeen_single_devices),
    cmocka_unit_test(test_uuids_are_stable_and_distinct),
    cmocka_unit_test(test_spec_error_is_one_line_even_for_a_newline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
