/* Price tables and GPU model names: the built-in table's derived rates (lower median per
 * column), the spellings gs_gpu_model_canon accepts, a user's smaller table with quoted
 * fields, and bad tables refused with their line number and reason. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "assert-near.h"
#include <gpuslice/price.h>

static void test_canon_accepts_sim_data_and_nvml_spellings(void **state)
{
  (void) state;
  const char *cases[][2] = {
    { "h100-80gb", "h100-80gb" },
    { "H100-80GB(SXM5 HBM3)", "h100-80gb" },
    { "NVIDIA H100 80GB HBM3", "h100-80gb" },
    { "Tesla T4", "t4" },
    { "T4-16GB", "t4" },
    { "NVIDIA A100-SXM4-40GB", "a100-40gb" },
    { "NVIDIA A100 80GB PCIe", "a100-80gb" },
    { "H200-141GB(SXM5/NVL)", "h200-141gb" },
    { "NVIDIA H200", "h200-141gb" },
    { "L4-24GB", "l4" },
    { "NVIDIA L4", "l4" },
    { "H100-94GB(NVL)", "h100-94gb" },
    { "NVIDIA H100 NVL", "h100-94gb" },
    { "H100-96GB(GH200/H20)", "h100-96gb" },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char out[24];
    gs_error_t err = NULL;
    assert_int_equal(gs_gpu_model_canon(cases[i][0], out, sizeof(out), &err), 0);
    assert_string_equal(out, cases[i][1]);
  }
}

static void test_canon_refuses_unknown_and_ambiguous_names_listing_known(void **state)
{
  (void) state;
  const char *bad[] = { "a100", "rtx4090", "", "h100-80gb-extra" };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char out[24];
    gs_error_t err = NULL;
    assert_int_equal(gs_gpu_model_canon(bad[i], out, sizeof(out), &err), -1);
    assert_non_null(strstr(err->msg, "unknown GPU model"));
    assert_non_null(strstr(err->msg, "known: t4, l4"));
    gs_error_release(&err);
  }
}

static const struct gs_price *find(const struct gs_price_table *t, const char *model)
{
  gs_error_t err = NULL;
  const struct gs_price *p = gs_price_find(t, model, &err);
  if (!p)
    fail_msg("%s", err->msg);
  return p;
}

static void test_default_table_rates_are_lower_medians(void **state)
{
  (void) state;
  struct gs_price_table *t;
  gs_error_t err = NULL;
  assert_int_equal(gs_price_table_default(&t, &err), 0);
  /* T4: g4dn.xlarge 0.526 and g4dn.12xlarge 0.978 per GPU; the lower median is the seed's. */
  const struct gs_price *t4 = find(t, "t4");
  assert_double_equal(t4->on_demand, 0.526, 1e-12);
  assert_true(isnan(t4->spot) && isnan(t4->commit_1y));
  assert_int_equal(t4->rows, 2);
  /* H100: nine rows from 2.69 to 11.0612; the fifth is Lambda's 4.29. Only GCP publishes
   * spot and commitments: its discounts apply to that on-demand rate. */
  const struct gs_price *h100 = find(t, "NVIDIA H100 80GB HBM3");
  assert_double_equal(h100->on_demand, 4.29, 1e-12);
  assert_double_equal(h100->spot, 4.29 * (6.3262 / 11.0612), 1e-12);
  assert_double_equal(h100->commit_1y, 4.29 * (7.673 / 11.0612), 1e-12);
  assert_double_equal(h100->commit_3y, 4.29 * (4.858 / 11.0612), 1e-12);
  assert_string_equal(h100->as_of, "2026-09-25");
  assert_non_null(strstr(h100->source, "lower median of 9 rows: aws, gcp, runpod"));
  const struct gs_price *l4 = find(t, "l4");
  assert_double_equal(l4->on_demand, 1.0004, 1e-12);
  /* L4 spot: GCP's two SKUs are 0.3973/0.7068 and 0.5624/1.0004 of on-demand. */
  assert_double_equal(l4->spot, 1.0004 * (0.3973 / 0.7068), 1e-12);
  assert_double_equal(find(t, "a100-40gb")->on_demand, 2.7447, 1e-12);
  /* Every model the planner can meet has an on-demand price. */
  const char *sim[] = { "t4", "l4", "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb" };
  for (size_t i = 0; i < sizeof(sim) / sizeof(sim[0]); i++)
    assert_true(find(t, sim[i])->on_demand > 0);
  assert_int_equal(gs_price_table_rows(t), 32); /* 33 lines less the header */
  gs_price_table_free(t);
}

static void test_missing_price_names_model_and_table(void **state)
{
  (void) state;
  struct gs_price_table *t;
  gs_error_t err = NULL;
  assert_int_equal(gs_price_table_default(&t, &err), 0);
  assert_null(gs_price_find(t, "H100-94GB(NVL)", &err));
  assert_string_equal(err->msg,
                      "no price for GPU model 'h100-94gb' in built-in "
                      "(data/prices/gpu_prices.csv)");
  gs_error_release(&err);
  assert_null(gs_price_find(t, "rtx4090", &err));
  assert_non_null(strstr(err->msg, "unknown GPU model 'rtx4090'"));
  gs_error_release(&err);
  gs_price_table_free(t);
}

static void test_user_table_with_few_columns_and_quotes(void **state)
{
  (void) state;
  static const char csv[] = "# my prices\n"
                            "gpu,od_gpu_hr,spot_gpu_hr,source,as_of\r\n"
                            "T4,0.40,0.12,\"our \"\"deal\"\", 2026\",2026-10-01\r\n"
                            "\n"
                            "h100-80gb,2.00,,quote,\n";
  struct gs_price_table *t;
  gs_error_t err = NULL;
  assert_int_equal(gs_price_table_parse(csv, strlen(csv), "mine.csv", &t, &err), 0);
  const struct gs_price *t4 = find(t, "t4");
  assert_double_equal(t4->on_demand, 0.40, 1e-12);
  assert_double_equal(t4->spot, 0.12, 1e-12);
  assert_string_equal(t4->source, "our \"deal\", 2026");
  assert_string_equal(t4->as_of, "2026-10-01");
  assert_true(isnan(find(t, "h100-80gb")->spot));
  assert_int_equal(gs_price_table_row_at(t, 1)->line, 5);
  assert_int_equal(gs_price_table_models(t), 2);
  assert_string_equal(gs_price_table_model_at(t, 0)->model, "h100-80gb"); /* sorted */
  gs_price_table_free(t);
}

struct bad_table {
  const char *csv, *msg;
};

static const struct bad_table bad_tables[] = {
  { "", "t.csv: empty table, expected a header" },
  { "# only a comment\n", "t.csv: empty table, expected a header" },
  { "gpu,od_gpu_hr\n", "t.csv: no price rows after the header" },
  { "model,price\nT4,1\n", "t.csv: line 1: header has no 'gpu' column" },
  { "gpu\nT4\n", "t.csv: line 1: header has no 'od_gpu_hr' column" },
  { "gpu,od_gpu_hr\nT4,abc\n", "t.csv: line 2: od_gpu_hr 'abc' is not a number" },
  { "gpu,od_gpu_hr\nT4,-1\n", "t.csv: line 2: od_gpu_hr '-1' is out of range" },
  { "gpu,od_gpu_hr\nT4,\n", "t.csv: line 2: od_gpu_hr is empty" },
  { "gpu,od_gpu_hr\nT4,1\nRTX9,1\n", "t.csv: line 3: unknown GPU model 'RTX9'" },
  { "gpu,od_gpu_hr\n,1\n", "t.csv: line 2: gpu is empty" },
  { "gpu,od_gpu_hr\n\"T4,1\n", "t.csv: line 2: unterminated quoted field 1" },
  { "gpu,od_gpu_hr\nT\"4,1\n", "t.csv: line 2: quote inside unquoted field 1" },
  { "gpu,od_gpu_hr,as_of\nT4,1,yesterday\n", "t.csv: line 2: as_of 'yesterday' is not a date" },
  { "gpu,od_gpu_hr,gpus\nT4,1,1.5\n", "t.csv: line 2: gpus '1.5' is not a whole number" },
  { "gpu,od_gpu_hr\nT4,1\0\n", "t.csv: line 2: NUL byte in line" },
};

static void test_bad_tables_name_line_and_reason(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(bad_tables) / sizeof(bad_tables[0]); i++) {
    struct gs_price_table *t = NULL;
    gs_error_t err = NULL;
    const char *csv = bad_tables[i].csv;
    size_t len = strlen(csv) + (strstr(bad_tables[i].msg, "NUL") ? 2 : 0);
    assert_int_equal(gs_price_table_parse(csv, len, "t.csv", &t, &err), -1);
    assert_null(t);
    if (strncmp(err->msg, bad_tables[i].msg, strlen(bad_tables[i].msg)) != 0)
      fail_msg("case %zu: got '%s', want '%s...'", i, err->msg, bad_tables[i].msg);
    gs_error_release(&err);
  }
}

static void test_load_reports_missing_file(void **state)
{
  (void) state;
  struct gs_price_table *t = NULL;
  gs_error_t err = NULL;
  assert_int_equal(gs_price_table_load("/nonexistent/prices.csv", &t, &err), -1);
  assert_non_null(strstr(err->msg, "open '/nonexistent/prices.csv'"));
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_canon_accepts_sim_data_and_nvml_spellings),
    cmocka_unit_test(test_canon_refuses_unknown_and_ambiguous_names_listing_known),
    cmocka_unit_test(test_default_table_rates_are_lower_medians),
    cmocka_unit_test(test_missing_price_names_model_and_table),
    cmocka_unit_test(test_user_table_with_few_columns_and_quotes),
    cmocka_unit_test(test_bad_tables_name_line_and_reason),
    cmocka_unit_test(test_load_reports_missing_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
