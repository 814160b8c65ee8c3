/* The route table's path matcher (daemon/api-routes.c): literal segments, "{}" taking one
 * non-empty segment, and one trailing '/' allowed. The routes themselves, with their 404s and
 * 405s, are checked over HTTP in tests/integration/test_daemon_api.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "api.h"

static void test_path_matches_literal_patterns_and_one_trailing_slash(void **state)
{
  static const struct {
    const char *pattern, *path;
    bool want;
  } cases[] = {
    { "/v1/gpus", "/v1/gpus", true },
    { "/v1/gpus", "/v1/gpus/", true },
    { "/v1/gpus", "/v1/gpus//", false },
    { "/v1/gpus", "/v1/gpu", false },
    { "/v1/gpus", "/v1/gpusx", false },
    { "/v1/gpus", "/v1/gpus/0", false },
    { "/v1/tenants", "/v1/tenants/", true },
    { "/health", "/v1/health", false },
    { "/v1/health", "", false },
  };
  char arg[16];
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bool got = api_path_matches(cases[i].pattern, cases[i].path, arg, sizeof(arg));
    if (got != cases[i].want)
      fail_msg("'%s' against '%s': got %d", cases[i].path, cases[i].pattern, got);
  }
}

static void test_path_matches_a_placeholder_as_one_nonempty_segment(void **state)
{
  static const struct {
    const char *pattern, *path, *arg; /* arg NULL: no match */
  } cases[] = {
    { "/v1/tenants/{}", "/v1/tenants/job-1", "job-1" },
    { "/v1/tenants/{}", "/v1/tenants/job-1/", "job-1" },
    { "/v1/tenants/{}", "/v1/tenants/", NULL },
    { "/v1/tenants/{}", "/v1/tenants", NULL },
    { "/v1/tenants/{}", "/v1/tenants/a/served", NULL },
    { "/v1/tenants/{}/served", "/v1/tenants/a/served", "a" },
    { "/v1/tenants/{}/served", "/v1/tenants//served", NULL },
    { "/v1/tenants/{}/served", "/v1/tenants/a/serve", NULL },
    { "/v1/tenants/{}", "/v1/tenants/0123456789abcdef", NULL }, /* longer than arg */
    { "/v1/tenants/{}", "/v1/tenants/0123456789abcde", "0123456789abcde" },
  };
  char arg[16];
  (void) state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bool got = api_path_matches(cases[i].pattern, cases[i].path, arg, sizeof(arg));
    if (got != (cases[i].arg != NULL))
      fail_msg("'%s' against '%s': got %d", cases[i].path, cases[i].pattern, got);
    if (got)
      assert_string_equal(arg, cases[i].arg);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_path_matches_literal_patterns_and_one_trailing_slash),
    cmocka_unit_test(test_path_matches_a_placeholder_as_one_nonempty_segment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
