/* `gpuslice idle [--json]`: every tenant the caller may see, as the daemon's idle detector
 * sees it (GET /v1/idle, docs/idle.md): how long it has been idle (time since its last GPU
 * activity while it holds memory), its state, the rule that applies, what the rule would do
 * next and what it did last; then the GPUs no tenant holds memory on. */
#include "cli.h"

#include <stdio.h>

#include "cli-daemon-request.h"
#include "cli-table.h"

struct idle_opts {
  const char *socket;
  bool json;
};

#define OFF(f) offsetof(struct idle_opts, f)
// clang-format off
static const struct gs_opt idle_entries[] = {
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json),
    .help = "Print GET /v1/idle's JSON (docs/idle.md)" },
  VERB_SOCKET_ENTRY(struct idle_opts),
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_idle_table = {
  .verb = "idle",
  .synopsis = "idle [--json] [--socket PATH]",
  .summary = "List tenants with their idle time, the idle rule that applies, and what it did",
  .intro = "Lists every tenant you may see with idle_seconds (time since its last GPU activity\n"
           "while it holds GPU memory), its state (active, idle, busy-cpu, serving, grace, exempt,\n"
           "never, suspended, no-memory), the idle rule that applies, what the rule would do\n"
           "next and what it did. The daemon's idle_mode says whether rules act or only report\n"
           "(dry-run, the default). Rules and schedules: docs/idle.md.\n",
  .outro = "Exit status: 0 ok, 1 failure (no daemon answers), 2 usage error.\n",
  GS_OPT_ENTRIES(idle_entries),
};
// clang-format on

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
  const char *s = json_string_value(json_object_get(o, key));
  return s && s[0] ? s : dflt;
}

static void print_table(const json_t *reply)
{
  static const char *const head[] = { "TENANT", "IDLE",   "STATE", "RULE",
                                      "GPU",    "MEMORY", "WOULD", "DID" };
  struct table *tb = table_new(8, "lrllrrll", head);
  size_t i;
  const json_t *t;
  json_array_foreach(json_object_get(reply, "tenants"), i, t)
  {
    char idle[TABLE_CELL], gpu[TABLE_CELL], mem[TABLE_CELL];
    const char *row[] = {
      str_or(t, "name", "?"),
      fmt_seconds(idle, json_number_value(json_object_get(t, "idle_seconds"))),
      str_or(t, "state", "-"),
      str_or(t, "rule", "-"),
      fmt_share(gpu, json_number_value(json_object_get(t, "device_time_fraction"))),
      fmt_bytes(mem, (double) json_integer_value(json_object_get(t, "vram_bytes"))),
      str_or(t, "would", "-"),
      str_or(t, "did", "-"),
    };
    table_add(tb, row);
  }
  table_print(tb, stdout);
  table_free(tb);
  printf("mode: %s; empty GPUs:", str_or(reply, "mode", "?"));
  const json_t *g;
  size_t n = json_array_size(json_object_get(reply, "empty_gpus"));
  json_array_foreach(json_object_get(reply, "empty_gpus"), i, g)
    printf(" %lld", (long long) json_integer_value(g));
  printf("%s\n", n ? "" : " none");
}

int cli_idle(int argc, char **argv)
{
  struct idle_opts o = { 0 };
  int r = cli_parse_options(&cli_idle_table, &o, argc, argv);
  if (r >= 0)
    return r;
  _cleanup_json_ json_t *reply = NULL;
  if ((r = verb_request("idle", o.socket, "GET", "/v1/idle", NULL, &reply)) != CLI_OK)
    return r;
  if (o.json)
    return verb_print_json(reply);
  print_table(reply);
  return CLI_OK;
}
