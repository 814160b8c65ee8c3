/* The tenant's JSON (daemon/tenant-json.c), the one module both `gpuslice run` and the daemon
 * use: what the CLI builds, the daemon reads back unchanged; a bad field is an error that
 * names it; and the limits come out with the keys the tenant view documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <gpuslice/limits.h>
#include <gpuslice/tenant-json.h>

static void test_a_registration_reads_back_as_it_was_built(void **state)
{
  struct tenant_json_reg in = {
    .name = "train-1",
    .pid = 4242,
    .state_dir = "/run/gpuslice",
    .labels = "team=ml\nenv=prod\n",
    .gpu = 1,
    .lim = { .vram_bytes = 8ULL << 30,
             .compute_ppm = 400000,
             .policy = GS_COMPUTE_CAP,
             .priority = GS_PRIO_HIGH },
  };
  struct tenant_json_reg out;
  char labels[GS_LEDGER_LABELS_MAX];
  gs_error_t err = NULL;
  (void) state;
  json_t *body = tenant_json_reg(&in);
  assert_int_equal(tenant_json_read_reg(body, &out, labels, sizeof(labels), &err), 0);
  assert_string_equal(out.name, "train-1");
  assert_int_equal(out.pid, 4242);
  assert_string_equal(out.state_dir, "/run/gpuslice");
  assert_string_equal(out.labels, "team=ml\nenv=prod\n");
  assert_int_equal(out.gpu, 1);
  assert_true(out.lim.vram_bytes == 8ULL << 30);
  assert_int_equal(out.lim.vram_ppm, 0);
  assert_int_equal(out.lim.compute_ppm, 400000);
  assert_int_equal(out.lim.policy, GS_COMPUTE_CAP);
  assert_int_equal(out.lim.priority, GS_PRIO_HIGH);
  assert_true(out.vram_given && out.compute_given[0] && out.compute_given[1] &&
              out.compute_given[2]);
  json_decref(body);
}

static void test_unset_fields_are_null_and_read_back_unset(void **state)
{
  struct tenant_json_reg in = { .name = "solo", .gpu = -1, .lim = { .vram_bytes = GS_LIMIT_NONE } };
  struct tenant_json_reg out;
  char labels[64];
  gs_error_t err = NULL;
  (void) state;
  json_t *body = tenant_json_reg(&in);
  const char *nulls[] = { "pid",        "state_dir", "labels",     "gpu",
                          "vram_bytes", "vram_pct",  "compute_pct" };
  for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
    if (!json_is_null(json_object_get(body, nulls[i])))
      fail_msg("'%s' is not null", nulls[i]);
  assert_int_equal(tenant_json_read_reg(body, &out, labels, sizeof(labels), &err), 0);
  assert_true(out.pid == 0 && out.state_dir == NULL && out.labels == NULL && out.gpu == -1);
  assert_true(out.lim.vram_bytes == GS_LIMIT_NONE && out.lim.vram_ppm == 0 &&
              out.lim.compute_ppm == 0);
  json_decref(body);
}

static void test_a_percentage_of_vram_wins_over_bytes(void **state)
{
  json_t *body = json_pack("{s:s, s:I, s:f}", "name", "half", "vram_bytes", (json_int_t) 1 << 30,
                           "vram_pct", 50.0);
  struct tenant_json_reg out;
  char labels[64];
  gs_error_t err = NULL;
  (void) state;
  assert_int_equal(tenant_json_read_reg(body, &out, labels, sizeof(labels), &err), 0);
  assert_int_equal(out.lim.vram_ppm, 500000);
  assert_true(out.lim.vram_bytes == GS_LIMIT_NONE);
  json_decref(body);
}

static void test_the_limits_have_the_five_documented_keys(void **state)
{
  struct tenant_json_limits lim = { .vram_bytes = 1 << 20,
                                    .vram_ppm = 250000,
                                    .policy = GS_COMPUTE_SHARE };
  (void) state;
  json_t *o = tenant_json_limits(&lim);
  assert_int_equal(json_object_size(o), 5);
  assert_int_equal(json_integer_value(json_object_get(o, "vram_bytes")), 1 << 20);
  assert_true(json_real_value(json_object_get(o, "vram_pct")) == 25.0);
  assert_true(json_is_null(json_object_get(o, "compute_pct")));
  assert_string_equal(json_string_value(json_object_get(o, "compute_policy")), "share");
  assert_string_equal(json_string_value(json_object_get(o, "priority")), "normal");
  json_decref(o);
}

static void test_a_bad_field_is_an_error_that_names_it(void **state)
{
  static const struct {
    const char *body, *field;
  } cases[] = {
    { "{}", "'name'" },
    { "{\"name\": \"../etc\"}", "'name'" },
    { "{\"name\": \"ok\", \"pid\": \"x\"}", "'pid'" },
    { "{\"name\": \"ok\", \"state_dir\": \"relative\"}", "'state_dir'" },
    { "{\"name\": \"ok\", \"gpu\": 99}", "'gpu'" },
    { "{\"name\": \"ok\", \"vram_bytes\": -5}", "'vram_bytes'" },
    { "{\"name\": \"ok\", \"vram_pct\": 250}", "'vram_pct'" },
    { "{\"name\": \"ok\", \"compute_pct\": 0}", "'compute_pct'" },
    { "{\"name\": \"ok\", \"compute_policy\": \"greedy\"}", "'compute_policy'" },
    { "{\"name\": \"ok\", \"priority\": \"urgent\"}", "'priority'" },
    { "{\"name\": \"ok\", \"labels\": {\"bad-key\": \"v\"}}", "'labels'" },
    { "{\"name\": \"ok\", \"labels\": {\"k\": \"two\\nlines\"}}", "'labels'" },
    { "{\"name\": \"ok\", \"labels\": [\"k=v\"]}", "'labels'" },
  };
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_t *body = json_loads(cases[i].body, 0, NULL);
    struct tenant_json_reg out;
    char labels[64];
    gs_error_t err = NULL;
    assert_non_null(body);
    if (tenant_json_read_reg(body, &out, labels, sizeof(labels), &err) != -1 || !err)
      fail_msg("%s: accepted", cases[i].body);
    if (!strstr(err->msg, cases[i].field))
      fail_msg("%s: '%s' does not name %s", cases[i].body, err->msg, cases[i].field);
    gs_error_release(&err);
    json_decref(body);
  }
}

static void test_labels_longer_than_the_buffer_are_refused(void **state)
{
  json_t *body =
    json_pack("{s:s, s:{s:s}}", "name", "ok", "labels", "team", "a-rather-long-team-name");
  struct tenant_json_reg out;
  char labels[16];
  gs_error_t err = NULL;
  (void) state;
  assert_int_equal(tenant_json_read_reg(body, &out, labels, sizeof(labels), &err), -1);
  assert_non_null(strstr(err->msg, "more than 15 bytes"));
  gs_error_release(&err);
  json_decref(body);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_a_registration_reads_back_as_it_was_built),
    cmocka_unit_test(test_unset_fields_are_null_and_read_back_unset),
    cmocka_unit_test(test_a_percentage_of_vram_wins_over_bytes),
    cmocka_unit_test(test_the_limits_have_the_five_documented_keys),
    cmocka_unit_test(test_a_bad_field_is_an_error_that_names_it),
    cmocka_unit_test(test_labels_longer_than_the_buffer_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
