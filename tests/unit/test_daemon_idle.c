/* Unit tests for the idle rules and schedules (daemon/idle-rules.c, daemon/idle-schedule.c):
 * parsing, the one line a mistake gives, label selectors, and the windows of a schedule in its
 * time zone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "idle.h"

static struct idle_rules parse_ok(const char *text)
{
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  struct idle_rules r;
  gs_error_t err = NULL;
  assert_non_null(j);
  if (idle_rules_parse(j, &r, &err) < 0)
    fail_msg("%s", err->msg);
  json_decref(j);
  return r;
}

static void test_rule_fields_and_defaults(void **state)
{
  (void) state;
  struct idle_rules r =
    parse_ok("{\"rules\": [{\"name\": \"nb\", \"match\": \"type=notebook\", \"duration\": \"30m\", "
             "\"grace\": 600,"
             " \"cpu_exempt\": 0.5, \"actions\": [{\"action\": \"signal\"}, {\"action\": "
             "\"suspend\", \"after\": \"1h\"},"
             " {\"action\": \"stop\", \"after\": \"2h\", \"grace\": \"45s\"}]},"
             " {\"name\": \"serving\", \"match\": \"type=serving\", \"never\": true}]}");
  assert_int_equal(r.n, 2);
  assert_string_equal(r.r[0].name, "nb");
  assert_true(r.r[0].threshold > 0.0099 && r.r[0].threshold < 0.0101); /* the default */
  assert_true(r.r[0].duration_s == 1800 && r.r[0].grace_s == 600 && r.r[0].cpu_exempt == 0.5);
  assert_int_equal(r.r[0].nactions, 3);
  assert_int_equal(r.r[0].actions[0].kind, IDLE_SIGNAL);
  assert_int_equal(r.r[0].actions[0].signo, 10); /* SIGUSR1 */
  assert_true(r.r[0].actions[1].after_s == 3600 && r.r[0].actions[2].grace_s == 45);
  assert_true(r.r[1].never);
  idle_rules_release(&r);
}

static void test_mistakes_name_rule_and_field_in_one_line(void **state)
{
  (void) state;
  static const struct {
    const char *json, *want;
  } cases[] = {
    { "{\"rules\": [{\"name\": \"a\", \"duration\": \"5 min\"}]}",
      "rule 'a': field 'duration': want" },
    { "{\"rules\": [{\"name\": \"a\"}]}", "rule 'a': field 'duration': want" },
    { "{\"rules\": [{\"duration\": 5}]}", "rule '#1': field 'name'" },
    { "{\"rules\": [{\"name\": \"a\", \"duration\": 5, \"exempt\": \"x\"}]}",
      "rule 'a': field 'exempt'" },
    { "{\"rules\": [{\"name\": \"a\", \"duration\": 5, \"actions\": []}]}",
      "rule 'a': field 'actions'" },
    { "{\"rules\": [{\"name\": \"a\", \"duration\": 5, \"actions\": [{\"action\": \"notify\", "
      "\"url\": \"ftp://x\"}]}]}",
      "rule 'a': field 'actions[].url'" },
    { "{\"rules\": [{\"name\": \"a\", \"duration\": 5}, {\"name\": \"a\", \"duration\": 6}]}",
      "rule 'a': field 'name': used twice" },
    { "{\"schedules\": [{\"name\": \"s\", \"windows\": [\"Mon-Fri 08:00-08:00\"]}]}",
      "schedule 's': field 'windows'" },
    { "{\"schedules\": [{\"name\": \"s\", \"tz\": \"../etc/passwd\", \"windows\": [\"Sat\"]}]}",
      "schedule 's': field 'tz'" },
    { "{\"rulez\": []}", "field 'rulez'" },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_t *j = json_loads(cases[i].json, 0, NULL);
    struct idle_rules r;
    gs_error_t err = NULL;
    assert_non_null(j);
    assert_int_equal(idle_rules_parse(j, &r, &err), -1);
    if (!strstr(err->msg, cases[i].want))
      fail_msg("case %zu: '%s' lacks '%s'", i, err->msg, cases[i].want);
    assert_null(strchr(err->msg, '\n'));
    gs_error_release(&err);
    json_decref(j);
  }
}

static void test_selectors_need_every_item(void **state)
{
  (void) state;
  const char *labels = "type=notebook\nteam=dev\n";
  assert_true(idle_selector_matches("", labels));
  assert_true(idle_selector_matches("type=notebook", labels));
  assert_true(idle_selector_matches("team=dev,type=notebook", labels));
  assert_false(idle_selector_matches("type=note", labels));
  assert_false(idle_selector_matches("type=notebook,team=ops", labels));
  assert_false(idle_selector_matches("type=notebook", ""));
}

/* Friday 2026-01-09 00:00:00 UTC. */
#define FRI0 1767916800.0
#define H 3600.0

static void test_night_and_weekend_windows_in_paris(void **state)
{
  (void) state;
  struct idle_rules r = parse_ok("{\"schedules\": [{\"name\": \"dev\", \"tz\": \"Europe/Paris\","
                                 " \"windows\": [\"Mon-Fri 18:00-08:00\", \"Sat-Sun\"]}]}");
  const struct idle_schedule *s = &r.s[0];
  static const struct {
    double at; /* hours after Friday 00:00 UTC; Paris is UTC+1 in January */
    bool on;
  } cases[] = {
    { 6.5, true },       /* Fri 07:30 Paris */
    { 7.0, false },      /* Fri 08:00 Paris: resumed */
    { 12, false },       /* Fri 13:00 */
    { 16.99, false },    /* Fri 17:59 */
    { 17.0, true },      /* Fri 18:00 */
    { 24 + 11, true },   /* Sat 12:00 */
    { 48 + 22, true },   /* Sun 23:00 */
    { 72 + 6.99, true }, /* Mon 07:59 */
    { 72 + 7, false },   /* Mon 08:00 */
    { 96 + 3, true },    /* Tue 04:00 */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    if (idle_schedule_active(s, FRI0 + cases[i].at * H) != cases[i].on)
      fail_msg("case %zu (%.2f h): want %d", i, cases[i].at, cases[i].on);
  idle_rules_release(&r);
}

static void test_window_syntax(void **state)
{
  (void) state;
  struct idle_window w;
  gs_error_t err = NULL;
  assert_int_equal(idle_window_parse("daily 12:00-13:00", &w, &err), 0);
  assert_true(w.days == 0x7f && w.start_min == 720 && w.end_min == 780);
  assert_int_equal(idle_window_parse("Fri-Mon", &w, &err), 0);
  assert_true(w.days == (1 << 4 | 1 << 5 | 1 << 6 | 1 << 0) && w.end_min == 1440);
  assert_int_equal(idle_window_parse("Mon,Wed 09:00-24:00", &w, &err), 0);
  assert_true(w.days == (1 | 4) && w.end_min == 1440);
  assert_int_equal(idle_window_parse("Someday", &w, &err), -1);
  gs_error_release(&err);
  assert_int_equal(idle_window_parse("Mon 9:00-10:00", &w, &err), -1);
  gs_error_release(&err);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rule_fields_and_defaults),
    cmocka_unit_test(test_mistakes_name_rule_and_field_in_one_line),
    cmocka_unit_test(test_selectors_need_every_item),
    cmocka_unit_test(test_night_and_weekend_windows_in_paris),
    cmocka_unit_test(test_window_syntax),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
