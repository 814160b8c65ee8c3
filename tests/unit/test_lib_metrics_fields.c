/* The counters file (gs_metrics_fields_parse, _load): dcgm-exporter's own default file gives
 * exactly the built-in set; a file's fields, TYPEs and HELP texts are served in its order; and
 * every kind of bad line is refused with one line naming the line and its text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice.h>
#include <gpuslice/metrics.h>

#include "metrics-internal.h"

static void test_catalogue_is_in_its_enum_order(void **state)
{
  (void) state;
  for (size_t i = 0; i < gs__dcgm_nfields; i++)
    assert_int_equal(gs__dcgm_fields[i].field, i);
  assert_int_equal(gs__dcgm_nfields, 25);
}

static void test_dcgm_exporters_default_file_is_the_builtin_set(void **state)
{
  (void) state;
  struct gs_metrics_fields f;
  gs_error_t err = NULL;
  assert_int_equal(gs_metrics_fields_load(GS_DCGM_COUNTERS, &f, &err), 0);
  assert_null(err);
  const struct gs_metrics_fields *def = gs_metrics_fields_default();
  assert_int_equal(f.n, def->n);
  assert_true(f.driver_label && def->driver_label);
  for (int i = 0; i < f.n; i++) {
    assert_int_equal(f.field[i].id, def->field[i].id);
    assert_int_equal(f.field[i].counter, def->field[i].counter);
    assert_string_equal(f.field[i].help, def->field[i].help);
  }
}

static void test_readings_are_those_the_fields_are_made_of(void **state)
{
  (void) state;
  uint32_t all = 0;
  for (size_t i = 0; i < gs__dcgm_nfields; i++)
    all |= gs__dcgm_fields[i].have;
  assert_int_equal(gs_metrics_fields_readings(gs_metrics_fields_default()), all);
  struct gs_metrics_fields f;
  gs_error_t err = NULL;
  /* The 7 fields of before #16 need no optional reading: the daemon skips those NVML calls. */
  const char *seven = "DCGM_FI_DEV_SM_CLOCK, gauge, a\nDCGM_FI_DEV_MEM_CLOCK, gauge, b\n"
                      "DCGM_FI_DEV_GPU_TEMP, gauge, c\nDCGM_FI_DEV_POWER_USAGE, gauge, d\n"
                      "DCGM_FI_DEV_GPU_UTIL, gauge, e\nDCGM_FI_DEV_FB_FREE, gauge, f\n"
                      "DCGM_FI_DEV_FB_USED, gauge, g\n";
  assert_int_equal(gs_metrics_fields_parse(seven, &f, &err), 0);
  assert_int_equal(gs_metrics_fields_readings(&f), 0);
  assert_int_equal(gs_metrics_fields_parse("DCGM_FI_DEV_ENC_UTIL, gauge, e\n"
                                           "DCGM_FI_PROF_DRAM_ACTIVE, gauge, d\n",
                                           &f, &err),
                   0);
  assert_int_equal(gs_metrics_fields_readings(&f), GS_SNAP_HAVE_ENC | GS_SNAP_HAVE_PROF_DRAM);
}

static void test_a_file_chooses_fields_types_help_and_order(void **state)
{
  (void) state;
  struct gs_metrics_fields f;
  gs_error_t err = NULL;
  const char *text = "# mine\n"
                     "\n"
                     "  DCGM_FI_DEV_FB_USED , gauge , Used, in MiB \r\n"
                     "DCGM_FI_DEV_GPU_TEMP,counter,\"Hot, or not\"\n"
                     "   # indented comment\n"
                     "DCGM_FI_PROF_PCIE_TX_BYTES, counter, Total PCIe TX";
  assert_int_equal(gs_metrics_fields_parse(text, &f, &err), -1); /* "Used, in MiB": 4 fields */
  assert_non_null(strstr(err->msg, "line 3: 4 fields, want 3"));
  gs_error_release(&err);
  text = "DCGM_FI_DEV_FB_USED , gauge , Used in MiB \r\n"
         "DCGM_FI_DEV_GPU_TEMP,counter,\"Hot, or not\"\n"
         "DCGM_FI_PROF_PCIE_TX_BYTES, counter, Total PCIe TX";
  assert_int_equal(gs_metrics_fields_parse(text, &f, &err), 0);
  assert_int_equal(f.n, 3);
  assert_false(f.driver_label);
  assert_string_equal(gs__dcgm_fields[f.field[0].id].name, "DCGM_FI_DEV_FB_USED");
  assert_string_equal(f.field[0].help, "Used in MiB");
  assert_false(f.field[0].counter);
  assert_string_equal(gs__dcgm_fields[f.field[1].id].name, "DCGM_FI_DEV_GPU_TEMP");
  assert_string_equal(f.field[1].help, "Hot, or not");
  assert_true(f.field[1].counter && f.field[2].counter);
}

static void test_served_text_follows_the_file(void **state)
{
  (void) state;
  struct gs_metrics_fields f;
  gs_error_t err = NULL;
  assert_int_equal(
    gs_metrics_fields_parse("DCGM_FI_DEV_GPU_TEMP, gauge, Die temperature.\n", &f, &err), 0);
  struct gs_snap_gpu g = { .index = 0, .temp_c = 41, .util_pct = 9 };
  strcpy(g.uuid, "GPU-1");
  struct gs_snapshot s = { .ngpus = 1, .gpus = &g };
  char *out = NULL;
  size_t len = 0;
  assert_int_equal(gs_metrics_render_fields(&s, &f, NULL, &out, &len, &err), 0);
  /* The GPU section is the file's one field; gpuslice's tenant series follow. */
  static const char want[] =
    "# HELP DCGM_FI_DEV_GPU_TEMP Die temperature.\n"
    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\",pci_bus_id=\"\",device=\"\",modelName=\"\"} 41\n"
    "# HELP gpuslice_tenant_";
  assert_memory_equal(out, want, sizeof(want) - 1);
  free(out);
}

static const struct {
  const char *text, *want;
} bad[] = {
  { "DCGM_FI_DEV_GPU_TEMP, gauge, ok\nDCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total SBE.\n",
    "line 2: unknown field 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL' (gpuslice serves dcgm-exporter's "
    "default set) "
    "(`DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total SBE.`)" },
  { "# c\nDCGM_FI_DEV_GPU_TEMP gauge ok\n",
    "line 2: 1 field, want 3: DCGM field, Prometheus type, help "
    "(`DCGM_FI_DEV_GPU_TEMP gauge ok`)" },
  { "DCGM_FI_DEV_GPU_TEMP, gauge\n", "line 1: 2 fields, want 3" },
  { "DCGM_FI_DEV_GPU_TEMP, histogram, h\n",
    "line 1: type 'histogram' of DCGM_FI_DEV_GPU_TEMP, want gauge, counter or label" },
  { "DCGM_FI_DEV_GPU_TEMP, gauge, a\nDCGM_FI_DEV_GPU_TEMP, gauge, b\n",
    "line 2: DCGM_FI_DEV_GPU_TEMP listed twice" },
  { "DCGM_FI_DRIVER_VERSION, gauge, v\n",
    "line 1: DCGM_FI_DRIVER_VERSION is a label field, not a gauge" },
  { "DCGM_FI_DEV_GPU_TEMP, label, t\n", "line 1: DCGM_FI_DEV_GPU_TEMP is a metric, not a label" },
  { "DCGM_FI_DEV_GPU_TEMP, gauge,\"open\n", "line 1: unterminated quoted field 3" },
  { "DCGM_FI_DEV_GPU_TEMP, gauge, \"a, b\"\n",
    "line 1: quote inside unquoted field 3" }, /* as dcgm-exporter's reader */
  { "# nothing\n\n", "no fields" },
};

static void test_bad_lines_are_refused_naming_the_line(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct gs_metrics_fields f;
    gs_error_t err = NULL;
    assert_int_equal(gs_metrics_fields_parse(bad[i].text, &f, &err), -1);
    assert_non_null(err);
    if (!strstr(err->msg, bad[i].want))
      fail_msg("case %zu: got \"%s\", want \"%s\"", i, err->msg, bad[i].want);
    assert_null(strchr(err->msg, '\n'));
    gs_error_release(&err);
  }
}

static void test_a_missing_file_names_its_path(void **state)
{
  (void) state;
  struct gs_metrics_fields f;
  gs_error_t err = NULL;
  assert_int_equal(gs_metrics_fields_load("/nonexistent/counters.csv", &f, &err), -1);
  assert_string_equal(err->msg,
                      "counters file /nonexistent/counters.csv: No such file or directory");
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_catalogue_is_in_its_enum_order),
    cmocka_unit_test(test_dcgm_exporters_default_file_is_the_builtin_set),
    cmocka_unit_test(test_readings_are_those_the_fields_are_made_of),
    cmocka_unit_test(test_a_file_chooses_fields_types_help_and_order),
    cmocka_unit_test(test_served_text_follows_the_file),
    cmocka_unit_test(test_bad_lines_are_refused_naming_the_line),
    cmocka_unit_test(test_a_missing_file_names_its_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
