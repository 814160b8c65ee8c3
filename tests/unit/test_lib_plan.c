/* The sharing planner (lib/plan-*.c) on hand-made series whose percentiles are known:
 * nearest-rank percentiles, the join of utilization and memory samples, each rule of the
 * recommendation hit by a workload built for it (dedicated, large training, MIG profile by
 * name, MPS group, time-slice, fraction), fleet packing (40 pods at about half a GPU need
 * 20 GPUs) and the cost before and after. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/plan.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static void test_percentile_is_nearest_rank(void **state)
{
  (void) state;
  double v[20];
  for (int i = 0; i < 20; i++)
    v[i] = i + 1;                                   /* 1..20 */
  assert_true(gs_plan_percentile(v, 20, 50) == 10); /* rank ceil(10) */
  assert_true(gs_plan_percentile(v, 20, 95) == 19); /* rank ceil(19) */
  assert_true(gs_plan_percentile(v, 20, 96) == 20); /* rank ceil(19.2) */
  assert_true(gs_plan_percentile(v, 20, 0) == 1);
  assert_true(gs_plan_percentile(v, 20, 100) == 20);
  assert_true(gs_plan_percentile(v, 1, 50) == 1);
  assert_true(isnan(gs_plan_percentile(v, 0, 50)));
}

/* A workload whose n samples repeat the pattern util[0..k-1], all at mem bytes. */
static struct gs_plan_workload *add(struct gs_plan_data *d, const char *name, const double *util,
                                    int k, int n, double mem)
{
  gs_error_t err = NULL;
  struct gs_plan_workload *w = gs_plan_data_workload(d, name, &err);
  assert_non_null(w);
  for (int i = 0; i < n; i++)
    assert_int_equal(gs_plan_workload_add(w, 60.0 * i, util[i % k], mem, &err), 0);
  return w;
}

static void test_series_stats_of_a_known_series(void **state)
{
  (void) state;
  struct gs_plan_data d;
  gs_plan_data_init(&d);
  gs_error_t err = NULL;
  struct gs_plan_workload *w = gs_plan_data_workload(&d, "w", &err);
  for (int i = 19; i >= 0; i--) /* out of order on purpose: finish sorts by time */
    assert_int_equal(gs_plan_workload_add(w, i, 5.0 * i, (i + 1) * GIB, &err), 0);
  struct gs_plan_finish fin;
  gs_plan_data_finish(&d, &fin);
  struct gs_plan_stats st;
  assert_int_equal(gs_plan_series_stats(w, &st, &err), 0);
  assert_int_equal(st.samples, 20);
  assert_true(st.util_p50 == 45 && st.util_p95 == 90 && st.util_max == 95);
  assert_true(st.mem_p50 == 10 * GIB && st.mem_p95 == 19 * GIB && st.mem_max == 20 * GIB);
  assert_true(st.idle_fraction == 0.05); /* only the 0% sample */
  assert_true(st.t_first == 0 && st.t_last == 19);
  gs_plan_data_release(&d);
}

static void test_join_pairs_util_and_memory_of_one_instant(void **state)
{
  (void) state;
  struct gs_plan_data d;
  gs_plan_data_init(&d);
  gs_error_t err = NULL;
  struct gs_plan_workload *a = gs_plan_data_workload(&d, "a", &err);
  gs_plan_workload_add(a, 1, 30, NAN, &err);
  gs_plan_workload_add(a, 1, NAN, 5 * GIB, &err);
  gs_plan_workload_add(a, 2, 40, NAN, &err); /* no memory at t=2 */
  struct gs_plan_workload *b = gs_plan_data_workload(&d, "b", &err);
  gs_plan_workload_add(b, 1, NAN, GIB, &err); /* memory only: dropped */
  assert_ptr_equal(gs_plan_data_workload(&d, "a", &err), a);
  struct gs_plan_finish fin;
  gs_plan_data_finish(&d, &fin);
  assert_int_equal(d.n, 1);
  assert_int_equal(fin.samples_unjoined, 2);
  assert_int_equal(fin.workloads_dropped, 1);
  assert_string_equal(fin.dropped_example, "b");
  assert_int_equal(a->n, 1);
  assert_true(a->s[0].util_pct == 30 && a->s[0].mem_bytes == 5 * GIB);
  assert_ptr_equal(gs_plan_data_workload(&d, "a", &err), a); /* index rebuilt */
  gs_plan_data_release(&d);
}

struct planned {
  struct gs_plan_data d;
  struct gs_mig_table *mig;
  struct gs_plan_gpu gpu;
  struct gs_plan_stats st[16];
  struct gs_plan_rec rec[16];
};

static void plan_all(struct planned *p)
{
  gs_error_t err = NULL;
  struct gs_plan_finish fin;
  struct gs_plan_rules rules;
  gs_plan_data_finish(&p->d, &fin);
  gs_plan_rules_default(&rules);
  assert_int_equal(gs_mig_table_default(&p->mig, &err), 0);
  assert_int_equal(gs_plan_gpu_init(&p->gpu, "H100-80GB", p->mig, &err), 0);
  assert_string_equal(p->gpu.model, "h100-80gb");
  assert_true(p->gpu.mem_bytes == 80ULL << 30);
  for (size_t i = 0; i < p->d.n; i++)
    assert_int_equal(gs_plan_series_stats(p->d.w[i], &p->st[i], &err), 0);
  assert_int_equal(gs_plan_recommend(&p->d, p->st, &p->gpu, &rules, p->rec, &err), 0);
}

static void done(struct planned *p)
{
  gs_plan_data_release(&p->d);
  gs_mig_table_free(p->mig);
}

static const double busy80[] = { 80 }, train55[] = { 55 }, steady10[] = { 10 }, steady40[] = { 40 },
                    small15[] = { 15 };
/* 7 idle samples in 10, bursts of 60: idle 70%. */
static const double bursty[] = { 0, 0, 0, 60, 0, 0, 60, 0, 0, 60 };
/* p50 20, p95 70: too wide to be steady, busy. */
static const double wide[] = { 10, 15, 20, 20, 20, 20, 30, 40, 50, 70 };
/* p50 10, p95 50: a fraction of half a GPU. */
static const double half[] = { 5, 10, 10, 10, 10, 10, 20, 30, 40, 50 };

static void test_each_rule_is_hit_by_its_workload(void **state)
{
  (void) state;
  struct planned p = { 0 };
  gs_plan_data_init(&p.d);
  add(&p.d, "busy", busy80, 1, 20, 20 * GIB);   /* 0 dedicated: p50 80 */
  add(&p.d, "train", train55, 1, 20, 50 * GIB); /* 1 dedicated: training */
  add(&p.d, "small", steady10, 1, 20, 8 * GIB); /* 2 MIG 1g.10gb */
  add(&p.d, "mid", steady40, 1, 20, 8 * GIB);   /* 3 MIG 3g.40gb (compute) */
  for (int i = 0; i < 3; i++) {                 /* 4..6 MPS of alice */
    char name[16];
    snprintf(name, sizeof(name), "svc%d", i);
    struct gs_plan_workload *w = add(&p.d, name, small15, 1, 20, 4 * GIB);
    gs_plan_workload_set_label(w, "user", "alice", NULL);
  }
  struct gs_plan_workload *b = add(&p.d, "bob1", small15, 1, 20, 4 * GIB); /* 7: only 1 */
  gs_plan_workload_set_label(b, "user", "bob", NULL);
  add(&p.d, "bursty", bursty, 10, 20, 30 * GIB); /* 8 time-slice */
  add(&p.d, "wide", wide, 10, 20, 10 * GIB);     /* 9 fraction */
  add(&p.d, "huge", steady10, 1, 20, 79 * GIB);  /* 10 dedicated: memory */
  plan_all(&p);
  const enum gs_plan_mechanism want[] = { GS_PLAN_DEDICATED, GS_PLAN_DEDICATED, GS_PLAN_MIG,
                                          GS_PLAN_MIG,       GS_PLAN_MPS,       GS_PLAN_MPS,
                                          GS_PLAN_MPS,       GS_PLAN_MIG,       GS_PLAN_TIME_SLICE,
                                          GS_PLAN_FRACTION,  GS_PLAN_DEDICATED };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    print_message("%s: %s: %s\n", p.d.w[i]->name, gs_plan_mechanism_name(p.rec[i].mech),
                  p.rec[i].reason);
    assert_int_equal(p.rec[i].mech, want[i]);
    assert_true(strlen(p.rec[i].reason) > 20);
  }
  assert_non_null(strstr(p.rec[0].reason, "p50 utilization 80.0%"));
  assert_non_null(strstr(p.rec[1].reason, "large training"));
  assert_string_equal(p.rec[2].profile->name, "1g.10gb");
  assert_non_null(strstr(p.rec[2].reason, "1g.10gb"));
  assert_string_equal(p.rec[3].profile->name, "3g.40gb");
  assert_int_equal(p.rec[4].mps_group, 0);
  assert_int_equal(p.rec[6].mps_group, 0);
  assert_int_equal(p.rec[7].mps_group, -1);
  assert_string_equal(p.rec[7].profile->name, "2g.20gb"); /* 1g's 1/7 < p95 15% */
  assert_non_null(strstr(p.rec[8].reason, "idle in 70%"));
  assert_non_null(strstr(p.rec[10].reason, "exceeds one h100-80gb"));
  /* fraction: vram = p95 memory x 1.12, compute = p95 70% */
  assert_true(p.rec[9].vram_bytes == (uint64_t) ceil(10 * GIB * 1.12));
  assert_int_equal(p.rec[9].compute_pct, 70);
  assert_int_equal(p.rec[9].share_milli, 700);
  assert_non_null(strstr(p.rec[9].reason, "--compute 70%"));
  done(&p);
}

static void test_idle_workloads_are_flagged(void **state)
{
  (void) state;
  static const double idle[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 5 };   /* idle 90% */
  static const double almost[] = { 0, 0, 0, 0, 0, 0, 0, 0, 5, 5 }; /* idle 80% */
  struct planned p = { 0 };
  gs_plan_data_init(&p.d);
  add(&p.d, "idle", idle, 10, 20, GIB);
  add(&p.d, "almost", almost, 10, 20, GIB);
  plan_all(&p);
  assert_true(p.rec[0].idle);
  assert_false(p.rec[1].idle);
  assert_int_equal(p.rec[0].mech, GS_PLAN_TIME_SLICE);
  done(&p);
}

static void test_unknown_gpu_model_is_an_error(void **state)
{
  (void) state;
  struct gs_plan_gpu g;
  gs_error_t err = NULL;
  assert_int_equal(gs_plan_gpu_init(&g, "voodoo5", NULL, &err), -1);
  assert_non_null(err);
  assert_non_null(strstr(err->msg, "voodoo5"));
  gs_error_release(&err);
  assert_int_equal(gs_plan_gpu_init(&g, "t4", NULL, &err), 0);
  assert_true(g.mem_bytes == 16ULL << 30);
}

static void test_forty_half_gpu_pods_pack_onto_twenty_gpus(void **state)
{
  (void) state;
  int share[40], gpus = -1;
  gs_error_t err = NULL;
  for (int i = 0; i < 40; i++)
    share[i] = 450 + (i * 7) % 51; /* about half a GPU: 450..500 */
  assert_int_equal(gs_plan_pack_gpus(share, 40, &gpus, &err), 0);
  assert_int_equal(gpus, 20);
  int three[] = { 400, 400, 400 }, big[] = { 1000, 600, 300, 100 };
  assert_int_equal(gs_plan_pack_gpus(three, 3, &gpus, &err), 0);
  assert_int_equal(gpus, 2);
  assert_int_equal(gs_plan_pack_gpus(big, 4, &gpus, &err), 0);
  assert_int_equal(gpus, 2);
  assert_int_equal(gs_plan_pack_gpus(NULL, 0, &gpus, &err), 0);
  assert_int_equal(gpus, 0);
  int bad[] = { 0 };
  assert_int_equal(gs_plan_pack_gpus(bad, 1, &gpus, &err), -1);
  gs_error_release(&err);
}

static void test_fleet_counts_gpus_and_prices_them(void **state)
{
  (void) state;
  struct planned p = { 0 };
  gs_plan_data_init(&p.d);
  for (int i = 0; i < 4; i++) { /* four fractions of 0.5 GPU (p95 50%), two on one GPU today */
    char name[16];
    snprintf(name, sizeof(name), "w%d", i);
    struct gs_plan_workload *w = add(&p.d, name, half, 10, 20, 4 * GIB);
    if (i < 2)
      gs_plan_workload_set_label(w, "gpu", "GPU-shared", NULL);
  }
  struct gs_plan_workload *multi = add(&p.d, "trainer", busy80, 1, 20, 60 * GIB);
  gs_plan_workload_set_label(multi, "gpus", "4", NULL);
  plan_all(&p);
  struct gs_price price = {
    .model = "h100-80gb", .on_demand = 2.0, .spot = 1.0, .commit_1y = 1.5, .commit_3y = NAN
  };
  struct gs_plan_fleet_opts o = { .price = &price, .commit_cover = 0.7 };
  struct gs_plan_fleet f;
  gs_error_t err = NULL;
  assert_int_equal(gs_plan_fleet(&p.d, p.rec, &p.gpu, &o, &f, &err), 0);
  assert_int_equal(f.gpus_today, 1 + 2 + 4); /* GPU-shared once, w2, w3, trainer's 4 */
  assert_int_equal(f.gpus_dedicated, 4);
  for (int i = 0; i < 4; i++)
    assert_int_equal(p.rec[i].share_milli, 500);
  assert_int_equal(f.gpus_shared, 2);
  assert_int_equal(f.gpus_after, f.gpus_dedicated + f.gpus_mig + f.gpus_shared);
  assert_true(fabs(f.monthly_before - 7 * 2.0 * 730) < 1e-6);
  assert_true(f.nsteps == 3);
  assert_true(fabs(f.steps[0].monthly_after - f.gpus_after * 2.0 * 730) < 1e-6);
  assert_true(f.monthly_after <= f.steps[0].monthly_after);
  gs_plan_fleet_release(&f);
  price.on_demand = NAN;
  assert_int_equal(gs_plan_fleet(&p.d, p.rec, &p.gpu, &o, &f, &err), -1);
  assert_non_null(strstr(err->msg, "no on-demand price"));
  gs_error_release(&err);
  done(&p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_percentile_is_nearest_rank),
    cmocka_unit_test(test_series_stats_of_a_known_series),
    cmocka_unit_test(test_join_pairs_util_and_memory_of_one_instant),
    cmocka_unit_test(test_each_rule_is_hit_by_its_workload),
    cmocka_unit_test(test_idle_workloads_are_flagged),
    cmocka_unit_test(test_unknown_gpu_model_is_an_error),
    cmocka_unit_test(test_forty_half_gpu_pods_pack_onto_twenty_gpus),
    cmocka_unit_test(test_fleet_counts_gpus_and_prices_them),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
