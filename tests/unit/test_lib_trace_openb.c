/* The openb CSV reader: good files load with gpu_milli clamped, and every kind of bad line
 * refuses the whole file with "<name>: line N: <reason>". Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <gpuslice/trace-openb.h>

#define NODE_HDR "sn,cpu_milli,memory_mib,gpu,model\n"
#define POD_HDR                                                         \
  "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase," \
  "creation_time,deletion_time,scheduled_time\n"

static FILE *mem(const char *s)
{
  FILE *f = fmemopen((void *) (uintptr_t) s, strlen(s), "r");
  assert_non_null(f);
  return f;
}

static void test_nodes_load(void **state)
{
  (void) state;
  FILE *f = mem(NODE_HDR "n0,64000,262144,2,P100\r\nn1,8000,32768,0,\n");
  struct gs_openb_nodes l;
  gs_error_t err = NULL;
  assert_int_equal(gs_openb_read_nodes(f, "nodes.csv", &l, &err), 0);
  fclose(f);
  assert_int_equal(l.n, 2);
  assert_string_equal(l.nodes[0].name, "n0");
  assert_int_equal(l.nodes[0].cpu_milli, 64000);
  assert_int_equal(l.nodes[0].gpus, 2);
  assert_string_equal(l.nodes[0].model, "P100");
  assert_int_equal(l.nodes[1].gpus, 0);
  gs_openb_nodes_release(&l);
}

static void test_pods_load_and_clamp(void **state)
{
  (void) state;
  FILE *f = mem(POD_HDR "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
                        "p1,6000,12288,1,0,V100M16|T4,BE,Failed,5,,\n"
                        "p2,1000,10,0,450,,LS,Running,1,2,3\n"
                        "p3,1000,10,8,1500,,LS,Running,1,2,3\n");
  struct gs_openb_pods l;
  gs_error_t err = NULL;
  assert_int_equal(gs_openb_read_pods(f, "pods.csv", &l, &err), 0);
  fclose(f);
  assert_int_equal(l.n, 4);
  assert_int_equal(l.pods[0].gpu_milli, 1000);
  assert_null(l.pods[0].gpu_spec);
  assert_int_equal(l.pods[1].gpu_milli, 1); /* clamped up */
  assert_string_equal(l.pods[1].gpu_spec, "V100M16|T4");
  assert_int_equal(l.pods[2].gpu_milli, 0);    /* CPU-only: no GPU share */
  assert_int_equal(l.pods[3].gpu_milli, 1000); /* clamped down */
  gs_openb_pods_release(&l);
}

static void test_short_pod_header_loads(void **state)
{
  (void) state;
  FILE *f = mem("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,2,2,1000\n");
  struct gs_openb_pods l;
  gs_error_t err = NULL;
  assert_int_equal(gs_openb_read_pods(f, "m.csv", &l, &err), 0);
  fclose(f);
  assert_int_equal(l.pods[0].num_gpu, 2);
  gs_openb_pods_release(&l);
}

struct bad {
  const char *text, *want;
};

static const struct bad bad_nodes[] = {
  { "", "n.csv: line 1: empty file" },
  { "sn,cpu,memory_mib,gpu,model\n", "n.csv: line 1: header is not" },
  { NODE_HDR, "n.csv: no nodes" },
  { NODE_HDR "n0,64000,262144,2\n", "n.csv: line 2: 4 fields, expected 5" },
  { NODE_HDR "n0,1,1,1,T4\nn1,-5,1,1,T4\n", "n.csv: line 3: cpu_milli '-5' is not a non-negative" },
  { NODE_HDR "n0,1,1,17,T4\n", "n.csv: line 2: gpu '17' is out of range" },
  { NODE_HDR "n0,1,1,1,\n", "n.csv: line 2: a node with GPUs needs a model" },
  { NODE_HDR "n0,1,1,1,T4\n\nn1,1,1,1,T4\n", "n.csv: line 3: empty line" },
  { NODE_HDR "\"n0\",1,1,1,T4\n", "n.csv: line 2: quoted fields" },
  { NODE_HDR ",1,1,1,T4\n", "n.csv: line 2: empty name" },
  { NODE_HDR "n0,99999999999999999999,1,1,T4\n", "n.csv: line 2: cpu_milli" },
  { NODE_HDR "n0,1e3,1,1,T4\n", "n.csv: line 2: cpu_milli '1e3'" },
};

static const struct bad bad_pods[] = {
  { POD_HDR "p0,1,1,17,1000,,LS,Running,0,1,0\n", "p.csv: line 2: num_gpu '17' is out of range" },
  { POD_HDR "p0,1,1,2,500,,LS,Running,0,1,0\n", "p.csv: line 2: gpu_milli below 1000" },
  { POD_HDR "p0,1,1,1,500,T4||V100,LS,Running,0,1,0\n", "p.csv: line 2: gpu_spec has an empty" },
  { POD_HDR "p0,1,1,1,500,,LS,Running,x,1,0\n", "p.csv: line 2: creation_time 'x'" },
  { POD_HDR "p0,1,1,1,500,,LS,Running,0,1,0,extra\n", "p.csv: line 2: 12 fields, expected 11" },
  { POD_HDR "p0,1,1,1,,,LS,Running,0,1,0\n", "p.csv: line 2: gpu_milli is empty" },
  { "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,5,,\n",
    "p.csv: line 2: 7 fields, expected 5" },
};

static void check_bad(const struct bad *b, int nodes)
{
  FILE *f = mem(b->text);
  gs_error_t err = NULL;
  int r;
  if (nodes) {
    struct gs_openb_nodes l = { 0 };
    r = gs_openb_read_nodes(f, "n.csv", &l, &err);
  } else {
    struct gs_openb_pods l = { 0 };
    r = gs_openb_read_pods(f, "p.csv", &l, &err);
  }
  fclose(f);
  if (r != -1 || !err)
    fail_msg("'%s' was accepted, want '%s'", b->text, b->want);
  if (!strstr(err->msg, b->want))
    fail_msg("got '%s', want '%s'", err->msg, b->want);
  gs_error_release(&err);
}

static void test_bad_files_are_refused_with_line_and_reason(void **state)
{
  (void) state;
  for (size_t i = 0; i < sizeof(bad_nodes) / sizeof(bad_nodes[0]); i++)
    check_bad(&bad_nodes[i], 1);
  for (size_t i = 0; i < sizeof(bad_pods) / sizeof(bad_pods[0]); i++)
    check_bad(&bad_pods[i], 0);
}

static void test_missing_file_names_path(void **state)
{
  (void) state;
  struct gs_openb_nodes l;
  gs_error_t err = NULL;
  assert_int_equal(gs_openb_load_nodes("/nonexistent/n.csv", &l, &err), -1);
  assert_non_null(strstr(err->msg, "/nonexistent/n.csv"));
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_nodes_load),
    cmocka_unit_test(test_pods_load_and_clamp),
    cmocka_unit_test(test_short_pod_header_loads),
    cmocka_unit_test(test_bad_files_are_refused_with_line_and_reason),
    cmocka_unit_test(test_missing_file_names_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
