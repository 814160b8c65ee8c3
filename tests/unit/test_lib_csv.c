/* The CSV splitter and stream line reader (lib/csv.c, gs-csv.h): RFC 4180 quotes undone in
 * GS_CSV_QUOTED, quotes kept as characters and fields left in place in GS_CSV_PLAIN, the
 * field limit, each quoting error naming its field, and lines read without their "\n" or
 * "\r\n", refusing a NUL byte and reporting a read error with its errno. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/csv.h>
#include "failing-file.h"

static void test_quoted_split_undoes_quotes_and_doubled_quotes(void **state)
{
  (void) state;
  char line[] = "a,\"b,c\",\"say \"\"hi\"\"\",";
  char *f[8];
  gs_error_t err = NULL;
  assert_int_equal(gs_csv_split(line, GS_CSV_QUOTED, f, 8, &err), 4);
  assert_string_equal(f[0], "a");
  assert_string_equal(f[1], "b,c");
  assert_string_equal(f[2], "say \"hi\"");
  assert_string_equal(f[3], "");
  assert_null(err);
}

static void test_plain_split_keeps_quotes_and_leaves_fields_in_place(void **state)
{
  (void) state;
  char line[] = "w\"1,\"x\",team=a\"b";
  char *f[8];
  gs_error_t err = NULL;
  assert_int_equal(gs_csv_split(line, GS_CSV_PLAIN, f, 8, &err), 3);
  assert_ptr_equal(f[0], line);
  assert_string_equal(f[0], "w\"1");
  assert_ptr_equal(f[1], line + 4);
  assert_string_equal(f[1], "\"x\"");
  assert_string_equal(f[2], "team=a\"b");
  assert_int_equal(f[1][-1], '\0'); /* the comma, replaced */
}

static void test_empty_line_is_one_empty_field(void **state)
{
  (void) state;
  for (int q = GS_CSV_QUOTED; q <= GS_CSV_PLAIN; q++) {
    char line[] = "";
    char *f[2];
    gs_error_t err = NULL;
    assert_int_equal(gs_csv_split(line, (enum gs_csv_quoting) q, f, 2, &err), 1);
    assert_string_equal(f[0], "");
  }
}

static void test_split_refuses_more_fields_than_max(void **state)
{
  (void) state;
  char ok[] = "a,b,c", over[] = "a,b,c,d";
  char *f[3];
  gs_error_t err = NULL;
  assert_int_equal(gs_csv_split(ok, GS_CSV_PLAIN, f, 3, &err), 3);
  assert_int_equal(gs_csv_split(over, GS_CSV_PLAIN, f, 3, &err), -1);
  assert_string_equal(err->msg, "more than 3 fields");
  assert_int_equal(err->status, 0);
  gs_error_release(&err);
}

static const struct {
  const char *line, *why;
} quote_errors[] = {
  { "a,\"b", "unterminated quoted field 2" },
  { "\"a\"b,c", "text after the closing quote in field 1" },
  { "a,b,c\"d", "quote inside unquoted field 3" },
};

static void test_quoting_errors_name_the_field_and_plain_accepts_them(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(quote_errors) / sizeof(quote_errors[0]); i++) {
    char quoted[32], plain[32], *f[8];
    gs_error_t err = NULL;
    snprintf(quoted, sizeof(quoted), "%s", quote_errors[i].line);
    snprintf(plain, sizeof(plain), "%s", quote_errors[i].line);
    assert_int_equal(gs_csv_split(quoted, GS_CSV_QUOTED, f, 8, &err), -1);
    assert_string_equal(err->msg, quote_errors[i].why);
    gs_error_release(&err);
    assert_true(gs_csv_split(plain, GS_CSV_PLAIN, f, 8, &err) > 0);
    assert_null(err);
  }
}

static void test_getline_strips_lf_and_crlf_then_ends(void **state)
{
  (void) state;
  char text[] = "a,b\r\n\nlast";
  FILE *f = fmemopen(text, strlen(text), "r");
  char *line = NULL;
  size_t cap = 0;
  gs_error_t err = NULL;
  const char *want[] = { "a,b", "", "last" };
  for (int i = 0; i < 3; i++) {
    assert_int_equal(gs_csv_getline(f, &line, &cap, &err), 1);
    assert_string_equal(line, want[i]);
  }
  assert_int_equal(gs_csv_getline(f, &line, &cap, &err), 0);
  assert_null(err);
  free(line);
  fclose(f);
}

static void test_getline_refuses_a_nul_byte(void **state)
{
  (void) state;
  char text[] = "ok\nbad\0byte\n";
  FILE *f = fmemopen(text, sizeof(text) - 1, "r");
  char *line = NULL;
  size_t cap = 0;
  gs_error_t err = NULL;
  assert_int_equal(gs_csv_getline(f, &line, &cap, &err), 1);
  assert_int_equal(gs_csv_getline(f, &line, &cap, &err), -1);
  assert_string_equal(err->msg, "NUL byte in line");
  gs_error_release(&err);
  free(line);
  fclose(f);
}

static void test_getline_reports_a_read_error_with_its_errno(void **state)
{
  (void) state;
  FILE *f = gs_test_failing_file();
  char *line = NULL;
  size_t cap = 0;
  gs_error_t err = NULL;
  assert_non_null(f);
  assert_int_equal(gs_csv_getline(f, &line, &cap, &err), -1);
  assert_int_equal(err->status, EIO);
  assert_non_null(strstr(err->msg, "read"));
  gs_error_release(&err);
  free(line);
  fclose(f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_quoted_split_undoes_quotes_and_doubled_quotes),
    cmocka_unit_test(test_plain_split_keeps_quotes_and_leaves_fields_in_place),
    cmocka_unit_test(test_empty_line_is_one_empty_field),
    cmocka_unit_test(test_split_refuses_more_fields_than_max),
    cmocka_unit_test(test_quoting_errors_name_the_field_and_plain_accepts_them),
    cmocka_unit_test(test_getline_strips_lf_and_crlf_then_ends),
    cmocka_unit_test(test_getline_refuses_a_nul_byte),
    cmocka_unit_test(test_getline_reports_a_read_error_with_its_errno),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
