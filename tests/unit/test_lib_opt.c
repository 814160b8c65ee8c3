/* Option tables: defaults come from the entries, getopt parsing with typed values, bounds
 * and the error lines the CLI prints, config files and the environment through the same
 * setters, and --help and Markdown rendered from the same entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include <gpuslice/opt.h>
#include <gpuslice/xalloc.h>

struct opts {
  bool json;
  const char *name;
  long long seed;
  double seconds, headroom;
  int format;
  unsigned mode;
  char *owned;
  const char *level;
  bool stop;
  int calls;
};

static bool error_or_info(const char *value)
{
  return strcmp(value, "error") == 0 || strcmp(value, "info") == 0;
}

static int count_call(void *dst, const char *arg, gs_error_t *err)
{
  if (strcmp(arg, "bad") == 0)
    return gs_make_error(err, 0, "--call: '%s' is bad", arg);
  ((struct opts *) dst)->calls++;
  return 0;
}

static const char *const formats[] = { "table", "json", "html", NULL };
#define OFF(f) offsetof(struct opts, f)
// clang-format off
static const struct gs_opt entries[] = {
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json), .help = "Print JSON" },
  { .name = "name", .arg = "NAME", .kind = GS_OPT_STRING, .offset = OFF(name), .help = "A name" },
  { .name = "seed", .arg = "N", .kind = GS_OPT_INT, .offset = OFF(seed), .def = "42", .max = 1e18,
    .want = "a non-negative integer", .help = "Seed" },
  { .name = "seconds", .letter = 's', .arg = "N", .kind = GS_OPT_DOUBLE, .offset = OFF(seconds), .def = "4",
    .min = 0.5, .max = 3600, .help = "How long" },
  { .name = "headroom", .arg = "P", .kind = GS_OPT_PERCENT, .offset = OFF(headroom), .def = "12%", .max = 100,
    .help = "Headroom" },
  { .name = "format", .arg = "F", .kind = GS_OPT_ENUM, .offset = OFF(format), .choices = formats, .help = "Output" },
  { .name = "socket-mode", .arg = "MODE", .kind = GS_OPT_MODE, .offset = OFF(mode), .def = "0666",
    .env = "GS_TEST_MODE", .flags = GS_OPT_SETTING, .help = "Permissions of the socket, octal." },
  { .name = "owned", .arg = "S", .kind = GS_OPT_STRING, .offset = OFF(owned), .flags = GS_OPT_OWNED | GS_OPT_SETTING,
    .help = "Kept" },
  { .name = "level", .arg = "L", .kind = GS_OPT_STRING, .offset = OFF(level), .valid = error_or_info,
    .want = "error or info", .flags = GS_OPT_SETTING, .help = "Checked" },
  { .name = "call", .arg = "X", .kind = GS_OPT_CALL, .parse = count_call, .flags = GS_OPT_REPEAT, .help = "Counted" },
  { .name = "stop", .kind = GS_OPT_FLAG, .offset = OFF(stop), .flags = GS_OPT_STOP, .help = "Acts at once" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on
// clang-format off
static const struct gs_opt_table table = {
  .verb = "demo", .synopsis = "demo [OPTIONS]", .intro = "Intro.\n", .outro = "Exit status: 0.\n",
  .opts = entries, .nopts = GS_OPT_COUNT(entries), .flags = GS_OPTS_ONCE,
};
// clang-format on

/* Every word parse() hands to gs_opt_parse, kept for the whole run as a process keeps its
 * argv: parsed values point into them. */
static char *kept_words[512];
static size_t nkept_words;

static char *kept_word(const char *a)
{
  assert_true(nkept_words < sizeof(kept_words) / sizeof(kept_words[0]));
  return kept_words[nkept_words++] = xstrdup(a);
}

/* Parses the NULL-terminated words after the verb; returns gs_opt_parse's result. */
static int parse(struct opts *o, char **msg, int *next, ...)
{
  char *argv[32] = { kept_word("demo") };
  int argc = 1;
  va_list ap;
  va_start(ap, next);
  for (const char *a; (a = va_arg(ap, const char *));)
    argv[argc++] = kept_word(a);
  va_end(ap);
  gs_error_t err = NULL;
  int r = gs_opt_parse(&table, o, argc, argv, next, &err);
  *msg = err ? xstrdup(err->msg) : NULL;
  gs_error_release(&err);
  /* Values point into argv: they stay, as a verb's argv does. */
  return r;
}

static void test_defaults_come_from_the_entries(void **state)
{
  (void) state;
  struct opts o = { 0 };
  gs_error_t err = NULL;
  assert_int_equal(gs_opt_defaults(&table, &o, &err), 0);
  assert_int_equal(o.seed, 42);
  assert_true(o.seconds == 4);
  assert_true(o.headroom > 0.1199 && o.headroom < 0.1201);
  assert_int_equal(o.mode, 0666);
  assert_false(o.json);
}

static void test_typed_values_land_in_the_struct_and_parsing_stops_at_an_operand(void **state)
{
  (void) state;
  struct opts o = { 0 };
  char *msg;
  int next = 0;
  assert_int_equal(parse(&o, &msg, &next, "--json", "--name", "x", "-s", "0.5", "--headroom", "20",
                         "--format", "html", "--call", "a", "--call", "b", "CMD", "--seed", "1",
                         NULL),
                   GS_OPT_GO_ON);
  assert_null(msg);
  assert_true(o.json);
  assert_string_equal(o.name, "x");
  assert_true(o.seconds == 0.5);
  assert_true(o.headroom > 0.1999 && o.headroom < 0.2001);
  assert_int_equal(o.format, 2);
  assert_int_equal(o.calls, 2);
  assert_int_equal(next, 14);
  assert_int_equal(o.seed, 0);
}

static void test_help_stops_parsing(void **state)
{
  (void) state;
  struct opts o = { 0 };
  char *msg;
  int next;
  assert_int_equal(parse(&o, &msg, &next, "-h", "--bogus", NULL), GS_OPT_HELP_ASKED);
  assert_null(msg);
}

static void test_a_stop_option_acts_when_met(void **state)
{
  (void) state;
  struct opts o = { 0 };
  char *msg;
  int next = 0;
  assert_int_equal(parse(&o, &msg, &next, "--json", "--stop", "--bogus", "--seconds", "x", NULL),
                   GS_OPT_GO_ON);
  assert_null(msg);
  assert_true(o.json && o.stop);
  assert_int_equal(next, 3);
  /* What comes before it is still read, and refused when bad. */
  assert_int_equal(parse(&o, &msg, &next, "--bogus", "--stop", NULL), -1);
  assert_string_equal(msg, "--bogus: unknown option (see gpuslice demo --help)");
  free(msg);
}

static void test_bad_input_gives_one_line_naming_it(void **state)
{
  (void) state;
  const char *cases[][3] = {
    { "--bogus", NULL, "--bogus: unknown option (see gpuslice demo --help)" },
    { "-x", NULL, "-x: unknown option (see gpuslice demo --help)" },
    { "--seconds", NULL, "--seconds: missing value (see gpuslice demo --help)" },
    { "--seconds", "soon", "--seconds 'soon': want a number from 0.5 to 3600" },
    { "--seconds", "0.4", "--seconds '0.4': want a number from 0.5 to 3600" },
    { "--seed", "-1", "--seed '-1': want a non-negative integer" },
    { "--seed", "1.5", "--seed '1.5': want a non-negative integer" },
    { "--headroom", "150%", "--headroom '150%': want a percentage from 0 to 100" },
    { "--format", "xml", "--format 'xml': want table, json or html" },
    { "--socket-mode", "0999", "--socket-mode '0999': want an octal mode" },
    { "--call", "bad", "--call: 'bad' is bad" },
    { "--level", "loud", "--level 'loud': want error or info" },
    { "--name", "--", "--name: missing value" },
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct opts o = { 0 };
    char *msg;
    int next;
    assert_int_equal(parse(&o, &msg, &next, cases[i][0], cases[i][1], NULL), -1);
    assert_non_null(msg);
    assert_string_equal(msg, cases[i][2]);
    free(msg);
  }
}

static void test_once_tables_refuse_a_repeat_but_not_a_repeatable(void **state)
{
  (void) state;
  struct opts o = { 0 };
  char *msg;
  int next;
  assert_int_equal(parse(&o, &msg, &next, "--name", "a", "--name", "b", NULL), -1);
  assert_string_equal(msg, "--name: given more than once");
  free(msg);
}

/* Writes text to path and checks that loading it fails with an error holding expect. */
static void assert_load_fails(const char *path, const char *text, const char *expect)
{
  struct opts o = { 0 };
  gs_error_t err = NULL;
  int fd = open(path, O_WRONLY | O_TRUNC);
  assert_true(fd >= 0);
  dprintf(fd, "%s", text);
  close(fd);
  assert_int_equal(gs_opt_load_file(&table, &o, path, true, &err), -1);
  assert_non_null(strstr(err->msg, expect));
  gs_error_release(&err);
}

static void test_config_file_and_environment_use_the_same_setters(void **state)
{
  (void) state;
  char path[] = "/tmp/test-opt-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  dprintf(fd, "# comment\nsocket_mode = 0600\nowned  kept value \n");
  close(fd);
  struct opts o = { 0 };
  gs_error_t err = NULL;
  assert_int_equal(gs_opt_load_file(&table, &o, path, true, &err), 0);
  assert_int_equal(o.mode, 0600);
  assert_string_equal(o.owned, "kept value");
  assert_null(o.level);
  setenv("GS_TEST_MODE", "0640", 1);
  assert_int_equal(gs_opt_load_env(&table, &o, &err), 0);
  assert_int_equal(o.mode, 0640);
  setenv("GS_TEST_MODE", "rw", 1);
  assert_int_equal(gs_opt_load_env(&table, &o, &err), -1);
  assert_string_equal(err->msg, "GS_TEST_MODE: socket_mode 'rw': want an octal mode");
  gs_error_release(&err);
  unsetenv("GS_TEST_MODE");
  gs_opt_release(&table, &o);
  assert_null(o.owned);
  assert_load_fails(path, "json yes\n", ":1: unknown setting 'json'");
  /* A string its check refuses names the file, the line and the key, as a bad number does. */
  assert_load_fails(path, "level info\nlevel loud\n", ":2: level 'loud': want error or info");
  unlink(path);
}

static char *render(void (*fn)(const struct gs_opt_table *, FILE *))
{
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  fn(&table, f);
  fclose(f);
  return text;
}

static void test_help_and_markdown_show_every_entry_with_its_default(void **state)
{
  (void) state;
  char *help = render(gs_opt_help);
  assert_true(strncmp(help, "Usage: gpuslice demo [OPTIONS]\n\nIntro.\n\nOptions:\n", 48) == 0);
  assert_non_null(strstr(help, "  -s, --seconds N     How long (default 4)\n"));
  /* A long help wraps under its column. */
  assert_non_null(strstr(help,
                         "  --socket-mode MODE  Permissions of the socket, octal. Default: 0666.\n"
                         "                      Environment: GS_TEST_MODE.\n"));
  assert_non_null(
    strstr(help, "  -h, --help          Show this help and exit\n\nExit status: 0.\n"));
  free(help);
  char *md = render(gs_opt_markdown);
  assert_non_null(strstr(md, "| Option | Environment | Effect |\n"));
  assert_non_null(strstr(md, "| `--headroom P` |  | Headroom (default `12%`) |\n"));
  assert_non_null(strstr(md,
                         "| `--socket-mode MODE` | `GS_TEST_MODE` | Permissions of the socket, "
                         "octal. Default: `0666`. |\n"));
  free(md);
}

static void test_settings_render_as_sample_config_and_settings_table(void **state)
{
  (void) state;
  char *sample = render(gs_opt_sample);
  assert_non_null(strstr(
    sample,
    "\n# Permissions of the socket, octal.\n# Environment: GS_TEST_MODE\n#socket_mode 0666\n"));
  assert_null(strstr(sample, "json"));
  free(sample);
  char *md = render(gs_opt_markdown_settings);
  assert_true(strncmp(md, "| Setting | Flag | Environment | Default | Effect |\n", 51) == 0);
  assert_non_null(strstr(md,
                         "| `socket_mode` | `--socket-mode` | `GS_TEST_MODE` | `0666` | "
                         "Permissions of the socket, octal. |\n"));
  assert_null(strstr(md, "--json"));
  free(md);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_defaults_come_from_the_entries),
    cmocka_unit_test(test_typed_values_land_in_the_struct_and_parsing_stops_at_an_operand),
    cmocka_unit_test(test_help_stops_parsing),
    cmocka_unit_test(test_a_stop_option_acts_when_met),
    cmocka_unit_test(test_bad_input_gives_one_line_naming_it),
    cmocka_unit_test(test_once_tables_refuse_a_repeat_but_not_a_repeatable),
    cmocka_unit_test(test_config_file_and_environment_use_the_same_setters),
    cmocka_unit_test(test_help_and_markdown_show_every_entry_with_its_default),
    cmocka_unit_test(test_settings_render_as_sample_config_and_settings_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
