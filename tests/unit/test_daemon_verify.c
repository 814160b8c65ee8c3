/* Unit tests for the verifier's pure rules (daemon/verify.c): attributing GPU processes to
 * tenants by ancestry, the memory and compute comparisons with their margins, and the choice
 * of processes to act on. The process tree is a table here; /proc is verifier.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "verify.h"

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)

/* pid -> parent: 100 is tenant 0's owner, 200 tenant 1's; 101 its child, 102 a grandchild
 * (a child started without LD_PRELOAD is still one), 300 a stranger under init. */
static const pid_t tree[][2] = {
  { 100, 1 }, { 101, 100 }, { 102, 101 }, { 200, 1 }, { 201, 200 },
  { 300, 1 }, { 400, 401 }, { 401, 400 } /* a cycle, which /proc cannot have but a race could */
};

static int parent_of(pid_t pid, pid_t *ppid, void *data)
{
  int *calls = data;
  (*calls)++;
  for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
    if (tree[i][0] == pid) {
      *ppid = tree[i][1];
      return 0;
    }
  return -1;
}

static void test_ancestry_attributes_descendants_to_their_owner(void **state)
{
  (void) state;
  struct verify_root roots[] = { { 200, 1 }, { 100, 0 } };
  int calls = 0;
  verify_roots_sort(roots, 2);
  static const struct {
    pid_t pid;
    int tenant;
  } cases[] = { { 100, 0 }, { 101, 0 },  { 102, 0 },  { 201, 1 },
                { 200, 1 }, { 300, -1 }, { 999, -1 }, { 400, -1 } };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_int_equal(verify_tenant_of(cases[i].pid, roots, 2, parent_of, &calls), cases[i].tenant);
}

static void test_ancestry_with_no_tenants_finds_none(void **state)
{
  (void) state;
  int calls = 0;
  assert_int_equal(verify_tenant_of(102, NULL, 0, parent_of, &calls), -1);
}

static void test_vram_over_limit_beyond_slack_is_a_violation(void **state)
{
  (void) state;
  static const struct {
    uint64_t nvml, limit;
    int nprocs;
    uint64_t over;
  } cases[] = {
    { 6 * GIB, 2 * GIB, 1, 4 * GIB },               /* the bypass */
    { 2 * GIB, 2 * GIB, 1, 0 },                     /* at the limit */
    { 2 * GIB + VERIFY_VRAM_SLACK, 2 * GIB, 1, 0 }, /* within one context's slack */
    { 2 * GIB + VERIFY_VRAM_SLACK + 1, 2 * GIB, 1, VERIFY_VRAM_SLACK + 1 },
    { 2 * GIB + 2 * VERIFY_VRAM_SLACK, 2 * GIB, 2, 0 }, /* two processes, two slacks */
    { 100 * GIB, UINT64_MAX, 1, 0 },                    /* unlimited */
    { 0, 0, 0, 0 },
    { 1 * GIB, 0, 0, 1 * GIB }, /* limit 0, no process counted: one slack */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_int_equal(verify_vram_over(cases[i].nvml, cases[i].limit, cases[i].nprocs),
                     cases[i].over);
}

static void test_compute_over_cap_counts_only_when_binding(void **state)
{
  (void) state;
  static const struct {
    uint32_t used, limit;
    bool cap, contended;
    uint32_t over;
  } cases[] = {
    { 900000, 300000, true, false, 600000 }, /* cap: binding even alone */
    { 900000, 300000, false, false, 0 },     /* share, GPU otherwise idle: may exceed */
    { 900000, 300000, false, true, 600000 }, /* share, contended: binding */
    { 300000 + VERIFY_COMPUTE_MARGIN_PPM, 300000, true, true, 0 }, /* within the margin */
    { 300000 + VERIFY_COMPUTE_MARGIN_PPM + 1, 300000, true, true, VERIFY_COMPUTE_MARGIN_PPM + 1 },
    { 1000000, 0, true, true, 0 }, /* no limit */
    { 100000, 300000, true, true, 0 },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_int_equal(
      verify_compute_over(cases[i].used, cases[i].limit, cases[i].cap, cases[i].contended),
      cases[i].over);
}

static void test_pick_vram_takes_largest_until_within_limit(void **state)
{
  (void) state;
  struct verify_proc p[] = {
    { .pid = 1, .vram_bytes = 1 * GIB, .tenant = 0 },
    { .pid = 2, .vram_bytes = 6 * GIB, .tenant = 0 },
    { .pid = 3, .vram_bytes = 9 * GIB, .tenant = 1 }, /* another tenant's: never picked */
    { .pid = 4, .vram_bytes = 0, .tenant = 0 },
  };
  assert_int_equal(verify_pick_vram(p, 4, 0, 2 * GIB), 1);
  assert_true(p[1].offender);
  assert_false(p[0].offender || p[2].offender || p[3].offender);
}

static void test_pick_vram_may_take_every_process(void **state)
{
  (void) state;
  struct verify_proc p[] = { { .pid = 1, .vram_bytes = 3 * GIB, .tenant = 0 },
                             { .pid = 2, .vram_bytes = 3 * GIB, .tenant = 0 } };
  assert_int_equal(verify_pick_vram(p, 2, 0, 1 * GIB), 2);
  assert_true(p[0].offender && p[1].offender);
}

static void test_pick_compute_leaves_a_tenant_at_its_limit(void **state)
{
  (void) state;
  struct verify_proc p[] = { { .pid = 1, .sm_pct = 30, .tenant = 0 },
                             { .pid = 2, .sm_pct = 60, .tenant = 0 },
                             { .pid = 3, .sm_pct = 90, .tenant = 1 } };
  assert_int_equal(verify_pick_compute(p, 3, 0, 300000), 1);
  assert_true(p[1].offender);
  assert_false(p[0].offender || p[2].offender);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ancestry_attributes_descendants_to_their_owner),
    cmocka_unit_test(test_ancestry_with_no_tenants_finds_none),
    cmocka_unit_test(test_vram_over_limit_beyond_slack_is_a_violation),
    cmocka_unit_test(test_compute_over_cap_counts_only_when_binding),
    cmocka_unit_test(test_pick_vram_takes_largest_until_within_limit),
    cmocka_unit_test(test_pick_vram_may_take_every_process),
    cmocka_unit_test(test_pick_compute_leaves_a_tenant_at_its_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
