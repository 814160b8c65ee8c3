/* Trace variants (lib/trace-variant.c): names parse or are refused, the same seed gives the
 * same pods, each variant hits its share, and a pod list without the pods a variant draws
 * from is refused. The base list is made in memory: 40 CPU-only pods, 300 sharing pods of
 * 500 milli, 107 one-GPU pods and 3 eight-GPU pods, with lifetimes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/trace-variant.h>

#define N_BASE 450

static struct gs_place_request base_pods[N_BASE];
static int64_t base_life[N_BASE];
static char names[N_BASE][16];

static struct gs_openb_pods make_base(void)
{
  for (int i = 0; i < N_BASE; i++) {
    struct gs_place_request *r = &base_pods[i];
    snprintf(names[i], sizeof(names[i]), "p%03d", i);
    *r = (struct gs_place_request){
      .name = names[i], .cpu_milli = 1000 + i, .mem_mib = 1024, .model_mask = GS_PLACE_ANY_MODEL
    };
    if (i >= 40 && i < 340)
      r->num_gpu = 1, r->gpu_milli = 500;
    else if (i >= 340 && i < 447)
      r->num_gpu = 1, r->gpu_milli = 1000;
    else if (i >= 447)
      r->num_gpu = 8, r->gpu_milli = 1000;
    base_life[i] = 100 + i;
  }
  return (struct gs_openb_pods){ base_pods, N_BASE, base_life };
}

static struct gs_place_node_spec node_specs[] = {
  { "n0", 96000, 786432, 8, "V100M32" },
  { "n1", 64000, 262144, 2, "T4" },
};
static const struct gs_openb_nodes nodes = { node_specs, 2 };

static struct gs_openb_pods variant(const char *name, uint64_t seed)
{
  struct gs_openb_pods base = make_base(), out;
  struct gs_trace_variant v;
  gs_error_t err = NULL;
  assert_int_equal(gs_trace_variant_parse(name, &v, &err), 0);
  assert_int_equal(gs_trace_variant_make(&base, &nodes, &v, seed, &out, &err), 0);
  return out;
}

static double share_of(const struct gs_openb_pods *l, int sharing)
{
  double part = 0, total = 0;
  for (size_t i = 0; i < l->n; i++) {
    const struct gs_place_request *r = &l->pods[i];
    double req = (double) r->num_gpu * r->gpu_milli;
    total += req;
    if (sharing ? (r->num_gpu == 1 && r->gpu_milli < 1000) : r->num_gpu > 1)
      part += req;
  }
  return part / total;
}

static void test_variant_names_parse_and_bad_ones_are_refused(void **state)
{
  (void) state;
  static const struct {
    const char *name;
    int ok, kind, pct;
  } cases[] = {
    { "gpushare60", 1, GS_VARIANT_GPUSHARE, 60 },
    { "gpuspec33", 1, GS_VARIANT_GPUSPEC, 33 },
    { "multigpu50", 1, GS_VARIANT_MULTIGPU, 50 },
    { "gpushare100", 1, GS_VARIANT_GPUSHARE, 100 },
    { "gpushare101", 0, 0, 0 },
    { "multigpu100", 0, 0, 0 },
    { "gpushare", 0, 0, 0 },
    { "gpushare6x", 0, 0, 0 },
    { "cpu050", 0, 0, 0 },
    { "", 0, 0, 0 },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gs_trace_variant v;
    gs_error_t err = NULL;
    int r = gs_trace_variant_parse(cases[i].name, &v, &err);
    if (cases[i].ok) {
      assert_int_equal(r, 0);
      assert_int_equal(v.kind, cases[i].kind);
      assert_int_equal(v.percent, cases[i].pct);
    } else {
      assert_int_equal(r, -1);
      assert_non_null(strstr(err->msg, "unknown trace variant"));
      gs_error_release(&err);
    }
  }
}

static void test_same_seed_same_pods_other_seed_other_pods(void **state)
{
  (void) state;
  struct gs_openb_pods a = variant("gpushare80", 5), b = variant("gpushare80", 5),
                       c = variant("gpushare80", 6);
  assert_int_equal(a.n, b.n);
  int differ = 0;
  for (size_t i = 0; i < a.n; i++) {
    assert_string_equal(a.pods[i].name, b.pods[i].name);
    assert_int_equal(a.pods[i].cpu_milli, b.pods[i].cpu_milli);
    assert_int_equal(a.life_s[i], b.life_s[i]);
    differ += i < c.n && a.pods[i].cpu_milli != c.pods[i].cpu_milli;
  }
  assert_true(differ > 0);
  gs_openb_pods_release(&a);
  gs_openb_pods_release(&b);
  gs_openb_pods_release(&c);
}

/* gpushareNN keeps every CPU-only pod and the number of GPU pods, and sharing pods ask for
 * NN% of the GPU request (within what drawing whole pods allows). */
static void test_gpushare_hits_its_share_and_keeps_pod_counts(void **state)
{
  (void) state;
  static const int pcts[] = { 40, 60, 80, 100 };
  for (size_t k = 0; k < sizeof(pcts) / sizeof(pcts[0]); k++) {
    char name[16];
    snprintf(name, sizeof(name), "gpushare%d", pcts[k]);
    struct gs_openb_pods v = variant(name, 1);
    assert_int_equal(v.n, N_BASE);
    size_t cpu = 0;
    for (size_t i = 0; i < v.n; i++) {
      cpu += v.pods[i].num_gpu == 0;
      assert_true(v.life_s[i] >= 100); /* lifetimes travel with their pods */
    }
    assert_int_equal(cpu, 40);
    double s = share_of(&v, 1);
    assert_true(s > pcts[k] / 100.0 - 0.03 && s < pcts[k] / 100.0 + 0.03);
    gs_openb_pods_release(&v);
  }
}

/* gpuspecNN constrains NN% of the GPU pods, each to a model that can hold it: the 8-GPU
 * pods only to V100M32 here, the one node with 8 GPUs. */
static void test_gpuspec_constrains_its_share_to_models_that_fit(void **state)
{
  (void) state;
  struct gs_openb_pods v = variant("gpuspec50", 3);
  size_t spec = 0;
  for (size_t i = 0; i < v.n; i++) {
    if (!v.pods[i].gpu_spec)
      continue;
    spec++;
    assert_true(v.pods[i].num_gpu > 0);
    if (v.pods[i].num_gpu == 8)
      assert_non_null(strstr(v.pods[i].gpu_spec, "V100M32"));
  }
  assert_true(spec > 190 && spec <= 205); /* 205 of the 410 GPU pods, less any that fit nowhere */
  gs_openb_pods_release(&v);
}

static void test_multigpu_appends_multi_gpu_pods_to_its_share(void **state)
{
  (void) state;
  struct gs_openb_pods v = variant("multigpu60", 2);
  assert_true(v.n > N_BASE);
  for (size_t i = N_BASE; i < v.n; i++)
    assert_true(v.pods[i].num_gpu > 1);
  assert_true(share_of(&v, 0) >= 0.60 && share_of(&v, 0) < 0.63);
  gs_openb_pods_release(&v);
}

static void test_variant_of_a_list_without_the_pods_it_draws_from_is_refused(void **state)
{
  (void) state;
  struct gs_openb_pods base = make_base(), out;
  base.n = 40; /* CPU-only pods only */
  struct gs_trace_variant v = { GS_VARIANT_GPUSHARE, 60 };
  gs_error_t err = NULL;
  assert_int_equal(gs_trace_variant_make(&base, &nodes, &v, 1, &out, &err), -1);
  assert_non_null(strstr(err->msg, "no GPU-sharing pods"));
  gs_error_release(&err);
  v = (struct gs_trace_variant){ GS_VARIANT_MULTIGPU, 30 };
  assert_int_equal(gs_trace_variant_make(&base, &nodes, &v, 1, &out, &err), -1);
  assert_non_null(strstr(err->msg, "no multi-GPU pods"));
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_variant_names_parse_and_bad_ones_are_refused),
    cmocka_unit_test(test_same_seed_same_pods_other_seed_other_pods),
    cmocka_unit_test(test_gpushare_hits_its_share_and_keeps_pod_counts),
    cmocka_unit_test(test_gpuspec_constrains_its_share_to_models_that_fit),
    cmocka_unit_test(test_multigpu_appends_multi_gpu_pods_to_its_share),
    cmocka_unit_test(test_variant_of_a_list_without_the_pods_it_draws_from_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
