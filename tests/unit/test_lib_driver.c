/* gs_driver_find and gs_driver_check: GPUSLICE_SIM alone picks the simulator under
 * <libdir>/sim, a fallback applies only where no system driver loads, and a device list is
 * judged by the simulator's own exported parser, found at run time. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <gpuslice.h>

/* A layout whose libdir holds the simulator this build made. */
static char built_libdir[] = GS_TEST_LIBDIR;
static struct gs_paths built = { .libdir = built_libdir };

static void find_ok(struct gs_driver *d, const struct gs_paths *paths, const char *fallback)
{
  gs_error_t err = NULL;
  assert_int_equal(gs_driver_find(d, paths, fallback, &err), 0);
  assert_null(err);
}

static void expect_system(const struct gs_driver *d)
{
  assert_int_equal(d->source, GS_DRIVER_SYSTEM);
  assert_string_equal(d->cuda, "libcuda.so.1");
  assert_string_equal(d->nvml, "libnvidia-ml.so.1");
  assert_null(d->libdir);
  assert_null(d->spec);
}

static void test_driver_without_sim_is_the_systems(void **state)
{
  struct gs_driver d;
  gs_error_t err = NULL;
  (void) state;
  unsetenv("GPUSLICE_SIM");
  find_ok(&d, &built, NULL);
  expect_system(&d);
  /* Nothing to check, and nothing loaded: the system's driver is the loader's business. */
  assert_int_equal(gs_driver_check(&d, &err), 0);
  gs_driver_release(&d);
}

static void test_driver_empty_sim_counts_as_unset(void **state)
{
  struct gs_driver d;
  (void) state;
  setenv("GPUSLICE_SIM", "", 1);
  find_ok(&d, &built, NULL);
  expect_system(&d);
  gs_driver_release(&d);
  unsetenv("GPUSLICE_SIM");
}

static void test_driver_with_sim_is_under_libdir_sim(void **state)
{
  char libdir[] = "/opt/gs/lib";
  struct gs_paths p = { .libdir = libdir };
  struct gs_driver d;
  (void) state;
  setenv("GPUSLICE_SIM", "h100-80gb:2,t4", 1);
  find_ok(&d, &p, NULL);
  assert_int_equal(d.source, GS_DRIVER_SIM);
  assert_string_equal(d.spec, "h100-80gb:2,t4");
  assert_string_equal(d.libdir, "/opt/gs/lib/sim");
  assert_string_equal(d.cuda, "/opt/gs/lib/sim/libcuda.so.1");
  assert_string_equal(d.nvml, "/opt/gs/lib/sim/libnvidia-ml.so.1");
  gs_driver_release(&d);
  unsetenv("GPUSLICE_SIM");
}

/* The simulator moves with the layout: GPUSLICE_LIBDIR, read by gs_paths_find. */
static void test_driver_sim_follows_gpuslice_libdir(void **state)
{
  struct gs_paths p;
  struct gs_driver d;
  gs_error_t err = NULL;
  (void) state;
  setenv("GPUSLICE_LIBDIR", "/opt/gs/lib64", 1);
  setenv("GPUSLICE_SIM", "t4", 1);
  assert_int_equal(gs_paths_find(&p, "/proc/self/exe", &err), 0);
  find_ok(&d, &p, NULL);
  assert_string_equal(d.libdir, "/opt/gs/lib64/sim");
  gs_driver_release(&d);
  gs_paths_release(&p);
  unsetenv("GPUSLICE_SIM");
  unsetenv("GPUSLICE_LIBDIR");
}

static void test_driver_fallback_never_overrides_gpuslice_sim(void **state)
{
  struct gs_driver d;
  (void) state;
  setenv("GPUSLICE_SIM", "t4", 1);
  find_ok(&d, &built, "h100-80gb");
  assert_int_equal(d.source, GS_DRIVER_SIM);
  assert_string_equal(d.spec, "t4");
  gs_driver_release(&d);
  unsetenv("GPUSLICE_SIM");
}

/* Which way this goes depends on the machine, so the test asks the loader the same question. */
static void test_driver_fallback_only_without_a_loadable_driver(void **state)
{
  struct gs_driver d;
  void *real = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  (void) state;
  if (real)
    dlclose(real);
  unsetenv("GPUSLICE_SIM");
  find_ok(&d, &built, "h100-80gb");
  if (real) {
    expect_system(&d);
  } else {
    assert_int_equal(d.source, GS_DRIVER_SIM_FALLBACK);
    assert_string_equal(d.spec, "h100-80gb");
    assert_string_equal(d.libdir, GS_TEST_LIBDIR "/sim");
  }
  gs_driver_release(&d);
}

static int check_spec(const struct gs_paths *paths, const char *spec, gs_error_t *err)
{
  struct gs_driver d;
  setenv("GPUSLICE_SIM", spec, 1);
  find_ok(&d, paths, NULL);
  int r = gs_driver_check(&d, err);
  gs_driver_release(&d);
  unsetenv("GPUSLICE_SIM");
  return r;
}

static void test_driver_check_accepts_lists_the_simulator_accepts(void **state)
{
  static const char *good[] = { "t4", "h100-80gb:2,t4", "a100-40gb:8,l4:8" };
  gs_error_t err = NULL;
  (void) state;
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    assert_int_equal(check_spec(&built, good[i], &err), 0);
    assert_null(err);
  }
}

static void test_driver_check_rejects_a_bad_list_naming_the_token(void **state)
{
  static const struct {
    const char *spec, *token;
  } bad[] = { { "bogus", "bogus" },
              { "t4:x", "t4:x" },
              { "t4,,l4", "t4,,l4" },
              { "t4:0", "t4:0" },
              { "t4,bo\ngus", "bo?gus" } };
  gs_error_t err = NULL;
  (void) state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_int_equal(check_spec(&built, bad[i].spec, &err), GS_DRIVER_BAD_SPEC);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "GPUSLICE_SIM: "));
    assert_non_null(strstr(err->msg, bad[i].token));
    gs_error_release(&err);
  }
}

static void test_driver_check_names_a_missing_simulator(void **state)
{
  char libdir[] = "/nonexistent/lib";
  struct gs_paths p = { .libdir = libdir };
  gs_error_t err = NULL;
  (void) state;
  assert_int_equal(check_spec(&p, "t4", &err), -1);
  assert_non_null(strstr(err->msg, "/nonexistent/lib/sim/libcuda.so.1"));
  gs_error_release(&err);
}

/* A libnvidia-ml.so.1 that loads but is not the simulator (here: the simulated libcuda,
 * which does not export the check) is a failure, not a bad list. */
static void test_driver_check_fails_on_a_library_without_the_check(void **state)
{
  char dir[] = "/tmp/gs-driver-XXXXXX", sim[64], cuda[96], nvml[96];
  struct gs_paths p = { .libdir = dir };
  gs_error_t err = NULL;
  (void) state;
  assert_non_null(mkdtemp(dir));
  snprintf(sim, sizeof(sim), "%s/sim", dir);
  snprintf(cuda, sizeof(cuda), "%s/libcuda.so.1", sim);
  snprintf(nvml, sizeof(nvml), "%s/libnvidia-ml.so.1", sim);
  assert_int_equal(mkdir(sim, 0700), 0);
  assert_int_equal(symlink(GS_TEST_LIBDIR "/sim/libcuda.so.1", cuda), 0);
  assert_int_equal(symlink(GS_TEST_LIBDIR "/sim/libcuda.so.1", nvml), 0);
  int r = check_spec(&p, "t4", &err);
  unlink(cuda);
  unlink(nvml);
  rmdir(sim);
  rmdir(dir);
  assert_int_equal(r, -1);
  assert_non_null(strstr(err->msg, GS_DRIVER_SPEC_CHECK));
  gs_error_release(&err);
}

/* A table of a library's functions: the required ones must be there, the others may not. */
static void test_driver_resolve_fills_a_table_and_names_a_missing_required_symbol(void **state)
{
  struct fns {
    size_t (*len)(const char *);
    int (*none)(void);
  } t;
  static const struct gs_driver_sym syms[] = {
    { offsetof(struct fns, len), "strlen" },
    { offsetof(struct fns, none), "gs_test_no_such_function" },
  };
  const char *missing = NULL;
  void *lib = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  (void) state;
  assert_non_null(lib);
  memset(&t, 0xff, sizeof(t));
  assert_int_equal(gs_driver_resolve(lib, syms, 2, 1, &t, &missing), 0);
  assert_int_equal(t.len("four"), 4);
  assert_null(t.none);
  assert_int_equal(gs_driver_resolve(lib, syms, 2, 2, &t, &missing), -1);
  assert_string_equal(missing, "gs_test_no_such_function");
  dlclose(lib);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_driver_without_sim_is_the_systems),
    cmocka_unit_test(test_driver_empty_sim_counts_as_unset),
    cmocka_unit_test(test_driver_with_sim_is_under_libdir_sim),
    cmocka_unit_test(test_driver_sim_follows_gpuslice_libdir),
    cmocka_unit_test(test_driver_fallback_never_overrides_gpuslice_sim),
    cmocka_unit_test(test_driver_fallback_only_without_a_loadable_driver),
    cmocka_unit_test(test_driver_check_accepts_lists_the_simulator_accepts),
    cmocka_unit_test(test_driver_check_rejects_a_bad_list_naming_the_token),
    cmocka_unit_test(test_driver_check_names_a_missing_simulator),
    cmocka_unit_test(test_driver_check_fails_on_a_library_without_the_check),
    cmocka_unit_test(test_driver_resolve_fills_a_table_and_names_a_missing_required_symbol),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
