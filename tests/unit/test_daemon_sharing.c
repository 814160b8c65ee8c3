/* The daemon's sharing setting (daemon/sharing.c): items read per GPU and for the others,
 * written back as the API and /metrics show them, and bad items refused with what is wrong;
 * each mig: layout checked against its GPU's model at start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon.h"

static const char *mode_of(const struct daemon_sharing *s, int gpu)
{
  static char buf[GS_SNAP_SHARING_MAX];
  sharing_text(sharing_of(s, gpu), buf, sizeof(buf));
  return buf;
}

static void test_items_set_their_gpus_and_the_rest(void **state)
{
  (void) state;
  struct daemon_sharing s;
  gs_error_t err = NULL;
  assert_int_equal(sharing_parse(" 0=mps ; 2=mig:1g.10gb@0 3g.40gb@4 ;", &s, &err), 0);
  assert_string_equal(mode_of(&s, 0), "mps");
  assert_string_equal(mode_of(&s, 1), "timeslice");
  assert_string_equal(mode_of(&s, 2), "mig:1g.10gb@0 3g.40gb@4");
  assert_int_equal(sharing_parse("mps;1=timeslice", &s, &err), 0);
  assert_string_equal(mode_of(&s, 0), "mps");
  assert_string_equal(mode_of(&s, 1), "timeslice");
  assert_string_equal(mode_of(&s, 15), "mps");
  assert_int_equal(sharing_parse("", &s, &err), 0);
  assert_string_equal(mode_of(&s, 3), "timeslice");
}

static void test_bad_items_say_what_is_wrong(void **state)
{
  (void) state;
  static const struct {
    const char *text, *says;
  } cases[] = {
    { "mpx", "'mpx': want timeslice, mps or mig:LAYOUT" },
    { "0=mps;0=timeslice", "GPU 0 is named twice" },
    { "mps;timeslice", "two items without GPU=" },
    { "16=mps", "GPU 16: at most 16 GPUs" },
    { "mig:", "want timeslice, mps or mig:LAYOUT" },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct daemon_sharing s;
    gs_error_t err = NULL;
    assert_int_equal(sharing_parse(cases[i].text, &s, &err), -1);
    if (!strstr(err->msg, cases[i].says))
      fail_msg("'%s': '%s'", cases[i].text, err->msg);
    assert_false(sharing_valid(cases[i].text));
    gs_error_release(&err);
  }
}

static void test_a_mig_layout_is_checked_against_its_gpu_and_written_in_order(void **state)
{
  (void) state;
  struct gs_snap_gpu gpus[2] = { { .index = 0 }, { .index = 1 } };
  strcpy(gpus[0].model, "NVIDIA H100 80GB HBM3");
  strcpy(gpus[1].model, "Tesla T4");
  struct gs_snapshot snap = { .ngpus = 2, .gpus = gpus };
  struct daemon_sharing s;
  gs_error_t err = NULL;
  assert_int_equal(sharing_parse("0=mig:3g.40gb@4 1g.10gb@0", &s, &err), 0);
  assert_int_equal(sharing_resolve(&s, &snap, &err), 0);
  assert_string_equal(mode_of(&s, 0), "mig:1g.10gb@0 3g.40gb@4");
  assert_int_equal(sharing_parse("1=mig:1g.10gb@0", &s, &err), 0);
  assert_int_equal(sharing_resolve(&s, &snap, &err), -1);
  assert_string_equal(err->msg, "sharing: GPU 1 (Tesla T4) has no MIG");
  gs_error_release(&err);
  /* A mig: for every GPU is checked against each: the T4 has none. */
  assert_int_equal(sharing_parse("mig:7g.80gb@0", &s, &err), 0);
  assert_int_equal(sharing_resolve(&s, &snap, &err), -1);
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_items_set_their_gpus_and_the_rest),
    cmocka_unit_test(test_bad_items_say_what_is_wrong),
    cmocka_unit_test(test_a_mig_layout_is_checked_against_its_gpu_and_written_in_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
