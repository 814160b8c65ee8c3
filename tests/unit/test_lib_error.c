/* gs_error_t: messages carry the cause, context is prepended as errors travel up, and
 * release is safe to repeat. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice.h>

static int open_config(const char *path, gs_error_t *err)
{
  return gs_make_error(err, ENOENT, "open '%s'", path);
}

static void test_make_error_appends_strerror_and_returns_minus_one(void **state)
{
  gs_error_t err = NULL;
  (void) state;
  assert_int_equal(open_config("/etc/x", &err), -1);
  assert_int_equal(err->status, ENOENT);
  assert_string_equal(err->msg, "open '/etc/x': No such file or directory");
  gs_error_release(&err);
  assert_null(err);
  gs_error_release(&err); /* twice is fine */
}

static void test_make_error_with_status_zero_has_no_system_cause(void **state)
{
  gs_error_t err = NULL;
  (void) state;
  gs_make_error(&err, 0, "bad size '%s'", "12X");
  assert_int_equal(err->status, 0);
  assert_string_equal(err->msg, "bad size '12X'");
  gs_error_release(&err);
}

static void test_prepend_adds_context_and_keeps_status(void **state)
{
  gs_error_t err = NULL;
  (void) state;
  open_config("/etc/x", &err);
  assert_int_equal(gs_error_prepend(&err, "loading %s", "policy"), -1);
  assert_int_equal(gs_error_prepend(&err, "start"), -1);
  assert_string_equal(err->msg, "start: loading policy: open '/etc/x': No such file or directory");
  assert_int_equal(err->status, ENOENT);
  gs_error_release(&err);
}

static void test_prepend_without_error_makes_one(void **state)
{
  gs_error_t err = NULL;
  (void) state;
  gs_error_prepend(&err, "context only");
  assert_string_equal(err->msg, "context only");
  gs_error_release(&err);
}

static void test_make_error_replaces_previous_error(void **state)
{
  gs_error_t err = NULL;
  (void) state;
  gs_make_error(&err, 0, "first");
  gs_make_error(&err, 0, "second"); /* the first is freed: ASan's leak check proves it */
  assert_string_equal(err->msg, "second");
  gs_error_release(&err);
}

/* Found by fuzz/fuzz-quantity: a size typed with a newline in it split the error in two. */
static void test_errors_stay_one_line_whatever_they_quote(void **state)
{
  (void) state;
  gs_error_t err = NULL;
  gs_make_error(&err, 0, "bad size '%s'", "1\nG\t\x7f");
  assert_string_equal(err->msg,
                      "bad size '1?G?"
                      "?'");
  gs_error_prepend(&err, "--vram %s", "a\rb");
  assert_string_equal(err->msg,
                      "--vram a?b: bad size '1?G?"
                      "?'");
  gs_error_release(&err);
}

/* The one scrubber behind every one-line message: errors, the CLI's usage errors, the
 * daemon's {"error": ...} replies. */
static void test_scrub_ctl_replaces_control_characters_and_del_only(void **state)
{
  static const struct {
    const char *in, *want;
  } cases[] = {
    { "plain text", "plain text" },
    { "a\nb\rc\td", "a_b_c_d" },
    { "\x01\x1f\x7f", "___" },
    { " ~", " ~" },                   /* 0x20 and 0x7e are printable */
    { "caf\xc3\xa9", "caf\xc3\xa9" }, /* UTF-8 bytes (>= 0x80) are kept */
    { "", "" },
  };
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%s", cases[i].in);
    assert_ptr_equal(gs_scrub_ctl(buf, '_'), buf);
    assert_string_equal(buf, cases[i].want);
  }
  assert_null(gs_scrub_ctl(NULL, '_'));
}

static void test_utf8_scrub_replaces_each_byte_outside_valid_sequences(void **state)
{
  static const struct {
    const char *in, *want;
    size_t bad;
  } cases[] = {
    { "plain", "plain", 0 },
    { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0 },
    { "\xff\xfe"
      "AA",
      "??AA", 2 },
    { "\xc0\xaf", "??", 2 },           /* overlong '/' */
    { "\xed\xa0\x80", "???", 3 },      /* a surrogate */
    { "\xf4\x90\x80\x80", "????", 4 }, /* past U+10FFFF */
    { "ab\xc3", "ab?", 1 },            /* cut short */
    { "", "", 0 },
  };
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%s", cases[i].in);
    assert_int_equal(gs_utf8_valid(buf), cases[i].bad == 0);
    assert_int_equal(gs_scrub_utf8(buf, '?'), cases[i].bad);
    assert_string_equal(buf, cases[i].want);
    assert_true(gs_utf8_valid(buf));
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_make_error_appends_strerror_and_returns_minus_one),
    cmocka_unit_test(test_make_error_with_status_zero_has_no_system_cause),
    cmocka_unit_test(test_prepend_adds_context_and_keeps_status),
    cmocka_unit_test(test_prepend_without_error_makes_one),
    cmocka_unit_test(test_make_error_replaces_previous_error),
    cmocka_unit_test(test_errors_stay_one_line_whatever_they_quote),
    cmocka_unit_test(test_scrub_ctl_replaces_control_characters_and_del_only),
    cmocka_unit_test(test_utf8_scrub_replaces_each_byte_outside_valid_sequences),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
