/* The replay with departures (lib/place-churn.c) on a cluster small enough to follow by
 * hand, and the lifetimes it reads (lib/trace-openb.c's life_s). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/place.h>
#include <gpuslice/trace-openb.h>

static const struct gs_place_node_spec one_gpu[] = { { "n0", 8000, 65536, 1, "T4" } };

/* Three whole-GPU pods for one GPU. Without departures one fits. With them, the time step
 * is such that only the last would run at the end (load 1 × capacity), so each pod has left
 * before the next arrives and all three run in turn. */
static void test_departures_free_what_ended_for_later_pods(void **state)
{
  (void) state;
  struct gs_place_request pods[3];
  int64_t life[3] = { 10, 10, 10 };
  for (int i = 0; i < 3; i++)
    pods[i] = (struct gs_place_request){ .name = i == 0 ? "a"
                                           : i == 1     ? "b"
                                                        : "c",
                                         .cpu_milli = 1000,
                                         .mem_mib = 1024,
                                         .num_gpu = 1,
                                         .gpu_milli = 1000 };
  struct gs_place_replay_opts o = { .policy = GS_PLACE_FGD_MEM_TIE, .inflate = 1.0, .seed = 1 };
  struct gs_place_churn_result r;
  gs_error_t err = NULL;
  assert_int_equal(gs_place_replay_churn(one_gpu, 1, pods, life, 3, &o, &r, &err), 0);
  assert_int_equal(r.decisions, 3);
  assert_int_equal(r.pods_placed, 3);
  assert_int_equal(r.pods_failed, 0);
  assert_int_equal(r.departures, 2);
  assert_true(r.gpu_alloc_ratio == 1.0);
  assert_true(r.life_known == 1.0);

  struct gs_place_replay_result once;
  o.inflate = 3.0;
  assert_int_equal(gs_place_replay(one_gpu, 1, pods, 3, &o, &once, &err), 0);
  assert_int_equal(once.pods_placed, 1); /* the same pods with no departures */
  assert_int_equal(once.pods_failed, 2);
}

/* Without lifetimes in the trace they are drawn, from the seed: the same seed gives the
 * same replay, and the report says none was known. */
static void test_unknown_lifetimes_are_drawn_from_the_seed(void **state)
{
  (void) state;
  struct gs_place_request pods[4];
  for (int i = 0; i < 4; i++)
    pods[i] = (struct gs_place_request){
      .name = "p", .cpu_milli = 100, .mem_mib = 10, .num_gpu = 1, .gpu_milli = 300 + 100 * i
    };
  struct gs_place_replay_opts o = { .policy = GS_PLACE_FGD, .inflate = 1.0, .seed = 9 };
  struct gs_place_churn_result a, b;
  gs_error_t err = NULL;
  assert_int_equal(gs_place_replay_churn(one_gpu, 1, pods, NULL, 4, &o, &a, &err), 0);
  assert_int_equal(gs_place_replay_churn(one_gpu, 1, pods, NULL, 4, &o, &b, &err), 0);
  assert_true(a.life_known == 0.0);
  assert_true(a.decisions > 4); /* arrivals go to three times the load */
  assert_int_equal(a.pods_placed, b.pods_placed);
  assert_int_equal(a.departures, b.departures);
  assert_true(a.departures > 0);
  assert_true(a.gpu_alloc_ratio == b.gpu_alloc_ratio);
}

static void test_bad_inflate_is_refused(void **state)
{
  (void) state;
  struct gs_place_request p = { .name = "p", .cpu_milli = 1, .mem_mib = 1 };
  struct gs_place_replay_opts o = { .policy = GS_PLACE_FGD, .inflate = 0 };
  struct gs_place_churn_result r;
  gs_error_t err = NULL;
  assert_int_equal(gs_place_replay_churn(one_gpu, 1, &p, NULL, 1, &o, &r, &err), -1);
  assert_non_null(strstr(err->msg, "inflate"));
  gs_error_release(&err);
}

/* life_s is deletion_time − creation_time; -1 where a time is missing or out of order,
 * and for the 5-column form, which has none. */
static void test_reader_keeps_lifetimes(void **state)
{
  (void) state;
  static const char csv[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                            "creation_time,deletion_time,scheduled_time\n"
                            "p0,1,1,1,500,,LS,Running,100,350,100\n"
                            "p1,1,1,0,0,,LS,Running,100,,\n"
                            "p2,1,1,0,0,,LS,Running,400,300,\n";
  FILE *f = fmemopen((void *) (uintptr_t) csv, strlen(csv), "r");
  struct gs_openb_pods l;
  gs_error_t err = NULL;
  assert_int_equal(gs_openb_read_pods(f, "pods.csv", &l, &err), 0);
  fclose(f);
  assert_int_equal(l.life_s[0], 250);
  assert_int_equal(l.life_s[1], -1);
  assert_int_equal(l.life_s[2], -1);
  gs_openb_pods_release(&l);
  static const char short_csv[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,500\n";
  f = fmemopen((void *) (uintptr_t) short_csv, strlen(short_csv), "r");
  assert_int_equal(gs_openb_read_pods(f, "pods.csv", &l, &err), 0);
  fclose(f);
  assert_int_equal(l.life_s[0], -1);
  gs_openb_pods_release(&l);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_departures_free_what_ended_for_later_pods),
    cmocka_unit_test(test_unknown_lifetimes_are_drawn_from_the_seed),
    cmocka_unit_test(test_bad_inflate_is_refused),
    cmocka_unit_test(test_reader_keeps_lifetimes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
