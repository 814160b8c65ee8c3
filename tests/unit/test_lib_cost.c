/* The cost model: the seed examples reproduced exactly (stacked savings, cost per
 * 1,000 requests and its rounding), monthly cost, percentiles and the commitment
 * baseline, and attributing cost to used, idle and unallocated GPU time. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "assert-near.h"
#include <gpuslice/cost.h>

#define EPS 1e-9

static void test_stack_seed_10000_to_2400_in_three_steps(void **state)
{
  (void) state;
  struct gs_stack_input in = { .monthly = 10000,
                               .sharing_cut = 0.4,
                               .spot_fraction = 0.5,
                               .spot_discount = 0.7,
                               .commit_fraction = 0.5,
                               .commit_discount = 0.5 };
  struct gs_cost_step s[GS_COST_STACK_STEPS];
  assert_int_equal(gs_cost_stack(&in, s, GS_COST_STACK_STEPS), 3);
  assert_double_equal(s[0].monthly_before, 10000, EPS);
  assert_double_equal(s[0].monthly_after, 6000, EPS);
  assert_double_equal(s[1].monthly_before, 6000, EPS);
  assert_double_equal(s[1].monthly_after, 3900, EPS);
  assert_double_equal(s[2].monthly_before, 3900, EPS);
  assert_double_equal(s[2].monthly_after, 2400, EPS);
  assert_double_equal(1 - s[2].monthly_after / s[0].monthly_before, 0.76, EPS);
  assert_non_null(strstr(s[0].what, "sharing"));
  assert_non_null(strstr(s[1].what, "spot: 50% of the work at 70% off"));
  assert_non_null(strstr(s[2].what, "commitment: 50% of the work at 50% off"));
}

static void test_stack_is_multiplicative_not_additive(void **state)
{
  (void) state;
  /* Added up, 40% + 35% + 25% would claim everything is saved; stacked it is 76%. */
  struct gs_stack_input in = { 100, 0.4, 0.5, 0.7, 0.5, 0.5 };
  struct gs_cost_step s[3];
  gs_cost_stack(&in, s, 3);
  assert_true(s[2].monthly_after > 0);
  /* With no sharing cut, spot and commitment apply to the whole bill. */
  struct gs_stack_input flat = { 100, 0, 0.25, 0.6, 0.75, 0.3 };
  gs_cost_stack(&flat, s, 3);
  assert_double_equal(s[2].monthly_after, 100 - 25 * 0.6 - 75 * 0.3, EPS);
}

static void test_stack_shows_every_step_even_without_a_cut(void **state)
{
  (void) state;
  struct gs_stack_input in = { .monthly = 500 };
  struct gs_cost_step s[3];
  assert_int_equal(gs_cost_stack(&in, s, 3), 3);
  for (int i = 0; i < 3; i++)
    assert_double_equal(s[i].monthly_after, 500, EPS);
  assert_int_equal(gs_cost_stack(&in, s, 2), 2); /* honours max */
}

static void test_stack_refuses_bad_fractions_with_a_reason(void **state)
{
  (void) state;
  const struct gs_stack_input bad[] = {
    { -1, 0, 0, 0, 0, 0 },   { 1, 1.5, 0, 0, 0, 0 }, { 1, 0, 0.6, 0.5, 0.6, 0.5 },
    { 1, 0, 0, -0.1, 0, 0 }, { NAN, 0, 0, 0, 0, 0 }, { 1, 0, 0, 0, 0, INFINITY },
  };
  const char *why[] = { "monthly",       "sharing cut", "more than 1",
                        "spot discount", "monthly",     "commit discount" };
  struct gs_cost_step s[3];
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    gs_error_t err = NULL;
    errno = 0;
    assert_int_equal(gs_cost_stack(&bad[i], s, 3), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(gs_cost_stack_check(&bad[i], &err), -1);
    assert_non_null(strstr(err->msg, why[i]));
    gs_error_release(&err);
  }
}

static void test_per_1k_seed_t4_alone_and_shared_by_four(void **state)
{
  (void) state;
  /* A T4 at $0.526/h serving 10,000 requests an hour. */
  double alone = gs_cost_per_1k(3600, 0.526, 10000);
  assert_double_equal(alone, 0.0526, EPS);
  assert_double_equal(gs_cost_round(alone, 4), 0.0526, 1e-12);
  /* Four services share it: each is billed a quarter of the GPU-seconds for its 10,000. */
  double shared = gs_cost_per_1k(3600.0 / 4, 0.526, 10000);
  assert_double_equal(shared, 0.01315, EPS);
  assert_double_equal(gs_cost_round(shared, 4), 0.0132, 1e-12);
  assert_true(isnan(gs_cost_per_1k(3600, 0.526, 0)));
}

static void test_round_is_half_away_from_zero_after_snapping_binary_noise(void **state)
{
  (void) state;
  /* 1.005 is stored as 1.00499999999999989..., so naive rounding gives 1.00. */
  assert_double_equal(round(1.005 * 100) / 100, 1.00, 1e-12);
  assert_double_equal(gs_cost_round(1.005, 2), 1.01, 1e-12);
  assert_double_equal(gs_cost_round(0.526 / 40, 4), 0.0132, 1e-12);
  assert_double_equal(gs_cost_round(0.01314999, 4), 0.0131, 1e-12);
  assert_double_equal(gs_cost_round(2.675, 2), 2.68, 1e-12);
  assert_double_equal(gs_cost_round(-2.675, 2), -2.68, 1e-12);
  assert_double_equal(gs_cost_round(2399.999999999, 2), 2400, 1e-12);
  assert_double_equal(gs_cost_round(0, 2), 0, 0);
}

static void test_monthly_cost_is_730_hours(void **state)
{
  (void) state;
  assert_double_equal(gs_monthly_cost(1, 1), 730, EPS);
  assert_double_equal(gs_monthly_cost(20, 0.526), 20 * 0.526 * 730, EPS);
}

static void test_percentile_interpolates_between_ranks(void **state)
{
  (void) state;
  const double v[] = { 5, 1, 4, 2, 3 }; /* unsorted on purpose */
  assert_double_equal(gs_cost_percentile(v, 5, 0), 1, EPS);
  assert_double_equal(gs_cost_percentile(v, 5, 50), 3, EPS);
  assert_double_equal(gs_cost_percentile(v, 5, 100), 5, EPS);
  assert_double_equal(gs_cost_percentile(v, 5, 10), 1.4, EPS);
  assert_double_equal(v[0], 5, 0); /* input untouched */
  assert_true(isnan(gs_cost_percentile(v, 0, 50)));
}

static void test_commit_baseline_is_70_percent_of_p10(void **state)
{
  (void) state;
  /* 100 samples: 10 at 10 GPUs (a quiet night), 90 at 20. p10 interpolates to 11. */
  double g[100];
  for (int i = 0; i < 100; i++)
    g[i] = i < 10 ? 10 : 20;
  double p10 = gs_cost_percentile(g, 100, 10);
  assert_double_equal(p10, 10 + 10 * (9.9 - 9), EPS);
  assert_double_equal(gs_cost_commit_baseline(g, 100, -1, -1), p10 * 0.7, EPS);
  assert_double_equal(gs_cost_commit_baseline(g, 100, 10, 0.6), p10 * 0.6, EPS);
  double mean = (10 * 10 + 90 * 20) / 100.0;
  assert_double_equal(gs_cost_commit_fraction(g, 100, -1, -1), p10 * 0.7 / mean, EPS);
  const double zero[] = { 0, 0 };
  assert_double_equal(gs_cost_commit_fraction(zero, 2, -1, -1), 0, 0);
  assert_true(isnan(gs_cost_commit_baseline(g, 0, -1, -1)));
}

static void test_attribute_splits_used_idle_and_unallocated(void **state)
{
  (void) state;
  /* A day on 2 GPUs at $3.60/h ($0.001 a GPU-second): capacity 172,800 GPU-s. Team a holds
   * one GPU all day and uses 30%; team b holds half a GPU and uses all of it. */
  const struct gs_cost_usage in[] = { { 0.3 * 86400, 86400 }, { 43200, 43200 } };
  struct gs_cost_share out[2];
  struct gs_cost_totals t;
  gs_error_t err = NULL;
  assert_int_equal(gs_cost_attribute(in, 2, 2 * 86400, 3.6, out, &t, &err), 0);
  assert_double_equal(out[0].used_cost, 25.92, EPS);
  assert_double_equal(out[0].idle_cost, 60.48, EPS);
  assert_double_equal(out[1].used_cost, 43.2, EPS);
  assert_double_equal(out[1].idle_cost, 0, EPS);
  assert_double_equal(t.capacity_cost, 172.8, EPS);
  assert_double_equal(t.unallocated_cost, 43.2, EPS);
  assert_double_equal(t.used_cost + t.idle_cost + t.unallocated_cost, t.capacity_cost, EPS);
}

static void test_attribute_counts_use_beyond_allocation_as_allocated(void **state)
{
  (void) state;
  const struct gs_cost_usage in[] = { { 100, 0 } }; /* no limit: allocates what it uses */
  struct gs_cost_share out[1];
  struct gs_cost_totals t;
  gs_error_t err = NULL;
  assert_int_equal(gs_cost_attribute(in, 1, 50, 3600, out, &t, &err), 0);
  assert_double_equal(out[0].idle_cost, 0, EPS);
  assert_double_equal(t.unallocated_cost, 0, EPS); /* never negative */
  const struct gs_cost_usage bad[] = { { -1, 0 } };
  assert_int_equal(gs_cost_attribute(bad, 1, 50, 1, out, NULL, &err), -1);
  assert_non_null(strstr(err->msg, "row 1"));
  gs_error_release(&err);
  assert_int_equal(gs_cost_attribute(in, 1, NAN, 1, out, NULL, &err), -1);
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stack_seed_10000_to_2400_in_three_steps),
    cmocka_unit_test(test_stack_is_multiplicative_not_additive),
    cmocka_unit_test(test_stack_shows_every_step_even_without_a_cut),
    cmocka_unit_test(test_stack_refuses_bad_fractions_with_a_reason),
    cmocka_unit_test(test_per_1k_seed_t4_alone_and_shared_by_four),
    cmocka_unit_test(test_round_is_half_away_from_zero_after_snapping_binary_noise),
    cmocka_unit_test(test_monthly_cost_is_730_hours),
    cmocka_unit_test(test_percentile_interpolates_between_ranks),
    cmocka_unit_test(test_commit_baseline_is_70_percent_of_p10),
    cmocka_unit_test(test_attribute_splits_used_idle_and_unallocated),
    cmocka_unit_test(test_attribute_counts_use_beyond_allocation_as_allocated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
