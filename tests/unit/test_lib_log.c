/* GS_LOG: arguments are not evaluated when the level is off, messages reach the sink the
 * edge set, and debug lines carry file:line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice.h>

static char last_line[1024];
static int last_level = -1;
static int lines;

static void capture(int level, const char *line, void *data)
{
  (void) data;
  snprintf(last_line, sizeof(last_line), "%s", line);
  last_level = level;
  lines++;
}

static int evaluated;
static int count_evaluation(void)
{
  return ++evaluated;
}

static int setup(void **state)
{
  (void) state;
  gs_log_set_sink(capture, NULL);
  lines = 0;
  evaluated = 0;
  last_line[0] = '\0';
  return 0;
}

static int teardown(void **state)
{
  (void) state;
  gs_log_set_sink(NULL, NULL);
  gs_log_level = GS_LOG_WARN;
  return 0;
}

static void test_log_skips_arguments_when_level_is_off(void **state)
{
  (void) state;
  gs_log_level = GS_LOG_WARN;
  GS_LOG(GS_LOG_DEBUG, "value %d", count_evaluation());
  GS_LOG(GS_LOG_INFO, "value %d", count_evaluation());
  assert_int_equal(evaluated, 0);
  assert_int_equal(lines, 0);
}

static void test_log_hands_message_to_sink(void **state)
{
  (void) state;
  gs_log_level = GS_LOG_WARN;
  GS_LOG(GS_LOG_WARN, "tenant %s over %d%%", "a", 90);
  assert_int_equal(lines, 1);
  assert_int_equal(last_level, GS_LOG_WARN);
  assert_string_equal(last_line, "tenant a over 90%");
}

static void test_log_debug_lines_carry_file_and_line(void **state)
{
  (void) state;
  gs_log_level = GS_LOG_DEBUG;
  int line = __LINE__ + 1;
  GS_LOG(GS_LOG_DEBUG, "x=%d", count_evaluation());
  char want[64];
  snprintf(want, sizeof(want), "test_lib_log.c:%d: x=1", line);
  assert_string_equal(last_line, want);
}

static void test_log_level_parse_accepts_names_and_digits(void **state)
{
  (void) state;
  assert_int_equal(gs_log_level_parse("error"), GS_LOG_ERROR);
  assert_int_equal(gs_log_level_parse("WARN"), GS_LOG_WARN);
  assert_int_equal(gs_log_level_parse("info"), GS_LOG_INFO);
  assert_int_equal(gs_log_level_parse("3"), GS_LOG_DEBUG);
  assert_int_equal(gs_log_level_parse("loud"), -1);
  assert_int_equal(gs_log_level_parse("4"), -1);
  assert_int_equal(gs_log_level_parse(NULL), -1);
}

static void test_log_level_from_env(void **state)
{
  (void) state;
  setenv("GPUSLICE_LOG", "debug", 1);
  gs_log_init_from_env();
  assert_int_equal(gs_log_level, GS_LOG_DEBUG);
  setenv("GPUSLICE_LOG", "nonsense", 1);
  gs_log_init_from_env();
  assert_int_equal(gs_log_level, GS_LOG_DEBUG); /* unchanged */
  unsetenv("GPUSLICE_LOG");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_log_skips_arguments_when_level_is_off, setup, teardown),
    cmocka_unit_test_setup_teardown(test_log_hands_message_to_sink, setup, teardown),
    cmocka_unit_test_setup_teardown(test_log_debug_lines_carry_file_and_line, setup, teardown),
    cmocka_unit_test_setup_teardown(test_log_level_parse_accepts_names_and_digits, setup, teardown),
    cmocka_unit_test_setup_teardown(test_log_level_from_env, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
