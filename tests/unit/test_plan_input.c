/* The plan library's readers (plan/input*.c) through gs_plan_read, on text in memory: the
 * format given picks the reader, the plain CSV keeps quotes as ordinary characters, and
 * what the shared splitter and line reader (gs-csv.h) refuse (too many fields, a NUL byte,
 * a read error) is reported as "FILE:LINE: reason", as the planner's own errors are.
 * The command-line behaviour is tests/integration/test_cli_plan.py. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/plan-io.h>
#include "failing-file.h"

/* Reads len bytes of text as fmt into d; returns what gs_plan_read returned. */
static int read_text(const char *text, size_t len, enum gs_plan_input_format fmt, const char *path,
                     struct gs_plan_data *d, gs_error_t *err)
{
  FILE *f = fmemopen((void *) (uintptr_t) text, len, "r");
  assert_non_null(f);
  int r = gs_plan_read(f, path, fmt, d, err);
  fclose(f);
  return r;
}

/* Expects text, read as fmt from "m.csv", to fail with exactly want. */
static void expect_error(const char *text, size_t len, enum gs_plan_input_format fmt,
                         const char *want)
{
  struct gs_plan_data d;
  gs_error_t err = NULL;
  gs_plan_data_init(&d);
  assert_int_equal(read_text(text, len, fmt, "m.csv", &d, &err), -1);
  assert_non_null(err);
  assert_string_equal(err->msg, want);
  gs_error_release(&err);
  gs_plan_data_release(&d);
}

static void test_the_format_given_picks_the_reader(void **state)
{
  (void) state;
  static const char csv[] = "1700000000,a,10,100\n1700000060,b,20,200\n";
  struct gs_plan_data d;
  gs_error_t err = NULL;
  gs_plan_data_init(&d);
  assert_int_equal(read_text(csv, strlen(csv), GS_PLAN_IN_CSV, "m.csv", &d, &err), 0);
  assert_int_equal(d.n, 2);
  gs_plan_data_release(&d);
  gs_plan_data_init(&d); /* as exposition text, no line is a DCGM sample */
  assert_int_equal(read_text(csv, strlen(csv), GS_PLAN_IN_PROM, "m.prom", &d, &err), 0);
  assert_int_equal(d.n, 0);
  gs_plan_data_release(&d);
  assert_null(err);
}

static void test_csv_keeps_quotes_as_ordinary_characters(void **state)
{
  (void) state;
  static const char csv[] = "1700000000,\"w\",10,100,team=a\"b\n";
  struct gs_plan_data d;
  gs_error_t err = NULL;
  gs_plan_data_init(&d);
  assert_int_equal(read_text(csv, strlen(csv), GS_PLAN_IN_CSV, "m.csv", &d, &err), 0);
  assert_int_equal(d.n, 1);
  assert_string_equal(d.w[0]->name, "\"w\"");
  assert_string_equal(gs_plan_workload_label(d.w[0], "team"), "a\"b");
  gs_plan_data_release(&d);
}

static void test_csv_with_too_many_fields_names_file_and_line(void **state)
{
  (void) state;
  char csv[512] = "timestamp,workload,gpu_util_pct,fb_used_bytes\n1700000000,w,1,1";
  for (int i = 0; i < GS_PLAN_MAX_LABELS + 1; i++) /* 4 + 33 fields: one too many */
    snprintf(csv + strlen(csv), sizeof(csv) - strlen(csv), ",k%d=v", i);
  expect_error(csv, strlen(csv), GS_PLAN_IN_CSV, "m.csv:2: more than 36 fields");
}

static void test_genai_line_with_four_fields_names_file_and_line(void **state)
{
  (void) state;
  static const char util[] = "value,timestamp_anon,container_ip\n1.0,2.0,ip,extra\n";
  expect_error(util, strlen(util), GS_PLAN_IN_GENAI_UTIL, "m.csv:2: more than 3 fields");
}

static void test_nul_byte_names_file_and_line(void **state)
{
  (void) state;
  static const char csv[] = "1700000000,a,10,100\n1700000060,b\0,20,200\n";
  expect_error(csv, sizeof(csv) - 1, GS_PLAN_IN_CSV, "m.csv:2: NUL byte in line");
  expect_error(csv, sizeof(csv) - 1, GS_PLAN_IN_PROM, "m.csv:2: NUL byte in line");
}

static void test_read_error_names_file_and_line_with_its_errno(void **state)
{
  (void) state;
  FILE *f = gs_test_failing_file();
  struct gs_plan_data d;
  gs_error_t err = NULL;
  gs_plan_data_init(&d);
  assert_int_equal(gs_plan_read(f, "m.csv", GS_PLAN_IN_CSV, &d, &err), -1);
  assert_int_equal(err->status, EIO);
  assert_true(strncmp(err->msg, "m.csv:1: read", 13) == 0);
  gs_error_release(&err);
  gs_plan_data_release(&d);
  fclose(f);
}

static void test_format_names_are_the_json_documents(void **state)
{
  (void) state;
  assert_string_equal(gs_plan_input_format_name(GS_PLAN_IN_CSV), "csv");
  assert_string_equal(gs_plan_input_format_name(GS_PLAN_IN_PROMJSON), "prometheus-json");
  assert_string_equal(gs_plan_input_format_name(GS_PLAN_IN_GENAI_MEM), "genai-memory");
  assert_string_equal(gs_plan_input_format_name((enum gs_plan_input_format) 99), "?");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_the_format_given_picks_the_reader),
    cmocka_unit_test(test_csv_keeps_quotes_as_ordinary_characters),
    cmocka_unit_test(test_csv_with_too_many_fields_names_file_and_line),
    cmocka_unit_test(test_genai_line_with_four_fields_names_file_and_line),
    cmocka_unit_test(test_nul_byte_names_file_and_line),
    cmocka_unit_test(test_read_error_names_file_and_line_with_its_errno),
    cmocka_unit_test(test_format_names_are_the_json_documents),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
