/* gs_paths_find: the install layout follows the executable, and GPUSLICE_LIBDIR
 * replaces the library directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <gpuslice.h>

/* A fake prefix with bin/gpuslice in it, so realpath has something to resolve. */
static char prefix[] = "/tmp/gs-paths-XXXXXX";
static char exe[256];

static int setup(void **state)
{
  char bin[256];
  (void) state;
  if (!mkdtemp(prefix))
    return -1;
  snprintf(bin, sizeof(bin), "%s/bin", prefix);
  snprintf(exe, sizeof(exe), "%s/bin/gpuslice", prefix);
  if (mkdir(bin, 0700) < 0)
    return -1;
  FILE *f = fopen(exe, "w");
  if (!f)
    return -1;
  fclose(f);
  return 0;
}

static int teardown(void **state)
{
  char bin[256];
  (void) state;
  snprintf(bin, sizeof(bin), "%s/bin", prefix);
  unlink(exe);
  rmdir(bin);
  rmdir(prefix);
  return 0;
}

static void expect_path(const char *got, const char *suffix)
{
  char want[512];
  snprintf(want, sizeof(want), "%s%s", prefix, suffix);
  assert_string_equal(got, want);
}

static void test_paths_follow_the_executable(void **state)
{
  struct gs_paths p;
  gs_error_t err = NULL;
  (void) state;
  unsetenv("GPUSLICE_LIBDIR");
  assert_int_equal(gs_paths_find(&p, exe, &err), 0);
  expect_path(p.exe, "/bin/gpuslice");
  expect_path(p.bindir, "/bin");
  expect_path(p.libdir, "/lib");
  expect_path(p.preload, "/lib/libgpuslice.so");
  expect_path(p.workload, "/bin/gpusim-workload");
  gs_paths_release(&p);
}

static void test_paths_libdir_from_env(void **state)
{
  struct gs_paths p;
  gs_error_t err = NULL;
  (void) state;
  setenv("GPUSLICE_LIBDIR", "/opt/gs/lib64", 1);
  assert_int_equal(gs_paths_find(&p, exe, &err), 0);
  assert_string_equal(p.libdir, "/opt/gs/lib64");
  assert_string_equal(p.preload, "/opt/gs/lib64/libgpuslice.so");
  expect_path(p.workload, "/bin/gpusim-workload");
  gs_paths_release(&p);
  unsetenv("GPUSLICE_LIBDIR");
}

static void test_paths_missing_executable_is_an_error(void **state)
{
  struct gs_paths p;
  gs_error_t err = NULL;
  (void) state;
  assert_int_equal(gs_paths_find(&p, "/nonexistent/bin/gpuslice", &err), -1);
  assert_non_null(strstr(err->msg, "/nonexistent/bin/gpuslice"));
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_paths_follow_the_executable),
    cmocka_unit_test(test_paths_libdir_from_env),
    cmocka_unit_test(test_paths_missing_executable_is_an_error),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
