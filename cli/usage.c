/* `gpuslice usage`: what tenants used over a period, from the daemon's SQLite ledger
 * (GET /v1/usage), grouped by tenant, user or one label. Human table, --json (the daemon's
 * reply, docs/cli.md) or --csv. The ledger itself is the daemon's; this only asks and prints. */
#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli-daemon-request.h"
#include "cli-table.h"
#include "usage-cost.h"

struct usage_opts {
  const char *socket, *by, *since;
  bool json, csv, cost;
  struct usage_cost_opts price;
};

/* label:KEY with KEY a label name as run --label takes it, short enough for a ledger's labels. */
static bool valid_by(const char *by)
{
  static const char name_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
  if (strcmp(by, "tenant") == 0 || strcmp(by, "user") == 0)
    return true;
  const char *key = by + 6;
  size_t n = strlen(key);
  return strncmp(by, "label:", 6) == 0 && n > 0 && n < GS_LEDGER_LABELS_MAX &&
    strspn(key, name_chars) == n && !isdigit((unsigned char) key[0]);
}

/* "30m", "24h", "7d", "2w", "90s": digits, optionally a fraction, then one unit. */
static bool valid_age(const char *s)
{
  const char *p = s;
  while (isdigit((unsigned char) *p))
    p++;
  if (p == s)
    return false;
  if (*p == '.') {
    const char *f = ++p;
    while (isdigit((unsigned char) *p))
      p++;
    if (p == f)
      return false;
  }
  return p[0] != '\0' && strchr("smhdw", p[0]) && p[1] == '\0';
}

/* RFC 3339: date, 'T' or ' ', time, optional fraction, then Z or an offset. */
static bool valid_rfc3339(const char *s)
{
  struct tm tm = { 0 };
  const char *p = strptime(s, "%Y-%m-%d", &tm);
  if (!p || (*p != 'T' && *p != 't' && *p != ' '))
    return false;
  p = strptime(p + 1, "%H:%M:%S", &tm);
  if (!p)
    return false;
  if (*p == '.' && isdigit((unsigned char) p[1]))
    for (p++; isdigit((unsigned char) *p); p++) {
    }
  if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
    return true;
  int hh, mm, n = 0;
  return (*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &n) == 2 &&
    p[1 + n] == '\0' && n == 5;
}

static bool valid_since(const char *s)
{
  if (strlen(s) > 64) /* no age or time is longer; the daemon would refuse the request line */
    return false;
  return valid_age(s) || valid_rfc3339(s);
}

#define OFF(f) offsetof(struct usage_opts, f)
// clang-format off
static const struct gs_opt usage_entries[] = {
  { .name = "by", .arg = "GROUP", .kind = GS_OPT_STRING, .offset = OFF(by), .def = "tenant", .valid = valid_by,
    .want = "tenant, user or label:KEY", .help = "tenant, user, or label:KEY (e.g. label:team)" },
  { .name = "since", .arg = "WHEN", .kind = GS_OPT_STRING, .offset = OFF(since), .def = "7d", .valid = valid_since,
    .want = "an age (30m, 24h, 7d, 2w) or an RFC 3339 time",
    .help = "An age such as 30m, 24h, 7d, 2w, or an RFC 3339 time such as 2025-01-31T00:00:00Z" },
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json), .help = "Print JSON (keys documented in docs/cli.md)" },
  { .name = "csv", .kind = GS_OPT_FLAG, .offset = OFF(csv),
    .help = "Print CSV with the columns key, tenants, gpu_seconds, vram_byte_seconds, vram_gib_hours, "
            "wall_seconds, served_requests, allocated_gpu_seconds (and with --cost: used_cost, idle_cost, "
            "total_cost, cost_per_1k_requests)" },
  { .name = "cost", .kind = GS_OPT_FLAG, .offset = OFF(cost),
    .help = "Price it: the cost of what each group used, the idle cost of what it held but did not use, the "
            "node's unallocated cost apart, and the cost per 1,000 served requests (docs/cost.md)" },
  { .name = "prices", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(price.prices),
    .help = "A price CSV for --cost (default: the built-in table; see gpuslice prices)" },
  { .name = "gpu-model", .arg = "M", .kind = GS_OPT_STRING, .offset = OFF(price.model),
    .help = "The GPU model to price (default: the node's first GPU)" },
  VERB_SOCKET_ENTRY(struct usage_opts),
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_usage_table = {
  .verb = "usage",
  .synopsis = "usage [--by tenant|user|label:KEY] [--since AGE|TIME] [--json|--csv]\n"
              "usage --cost [--prices FILE] [--gpu-model M] [OPTIONS]",
  .summary = "Report GPU time and memory used, by tenant, user or label",
  .intro = "Reports the GPU time and memory each group of tenants used, from the daemon's usage\n"
           "ledger. A local user sees their own tenants; root and the gpuslice group see all.\n",
  .outro = "Exit status: 0 success, 1 failure (no daemon answers, the daemon refuses), 2 usage error.\n",
  GS_OPT_ENTRIES(usage_entries),
};
// clang-format on

static int parse_args(int argc, char **argv, struct usage_opts *o)
{
  int r = cli_parse_options(&cli_usage_table, o, argc, argv);
  if (r >= 0)
    return r;
  if (o->json && o->csv)
    return cli_usage_error("usage", "--json and --csv: choose one");
  if (!o->cost && (o->price.prices || o->price.model))
    return cli_usage_error("usage", "--prices and --gpu-model go with --cost");
  return -1;
}

/* A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180). */
static void csv_field(const char *s)
{
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, stdout);
    return;
  }
  putchar('"');
  for (; *s; s++) {
    if (*s == '"')
      putchar('"');
    putchar(*s);
  }
  putchar('"');
}

/* A cost cell: the number, or empty when there is none (no served requests). */
static void csv_cost(const json_t *row, const char *key)
{
  const json_t *v = json_object_get(json_object_get(row, "cost"), key);
  if (json_is_number(v))
    printf(",%.15g", json_number_value(v));
  else
    fputs(",", stdout);
}

static void print_csv(const json_t *rows, bool cost)
{
  size_t i;
  const json_t *row;
  printf("key,tenants,gpu_seconds,vram_byte_seconds,vram_gib_hours,wall_seconds,served_requests,"
         "allocated_gpu_seconds%s\n",
         cost ? ",used_cost,idle_cost,total_cost,cost_per_1k_requests" : "");
  json_array_foreach(rows, i, row)
  {
    const char *key = jstr(row, "key");
    csv_field(key ? key : "");
    printf(",%.0f,%.15g,%.15g,%.15g,%.15g,%.0f,%.15g", jnum(row, "tenants", 0),
           jnum(row, "gpu_seconds", 0), jnum(row, "vram_byte_seconds", 0),
           jnum(row, "vram_gib_hours", 0), jnum(row, "wall_seconds", 0),
           jnum(row, "served_requests", 0), jnum(row, "allocated_gpu_seconds", 0));
    if (cost) {
      csv_cost(row, "used");
      csv_cost(row, "idle");
      csv_cost(row, "total");
      csv_cost(row, "per_1k_requests");
    }
    putchar('\n');
  }
}

static void print_table(const json_t *reply, const char *by)
{
  const json_t *rows = json_object_get(reply, "rows");
  char head[80];
  snprintf(head, sizeof(head), "%s", by);
  for (char *p = head; *p; p++)
    *p = (char) toupper((unsigned char) *p);
  const char *headers[] = { head, "TENANTS", "GPU-HOURS", "VRAM-GIB-HOURS", "WALL-HOURS" };
  struct table *t = table_new(5, "lrrrr", headers);
  size_t i;
  const json_t *row;
  json_array_foreach(rows, i, row)
  {
    char n[TABLE_CELL], gh[TABLE_CELL], vh[TABLE_CELL], wh[TABLE_CELL];
    const char *cells[] = { jstr(row, "key"), fmt_number(n, jnum(row, "tenants", 0), 0),
                            fmt_number(gh, jnum(row, "gpu_seconds", 0) / 3600, 3),
                            fmt_number(vh, jnum(row, "vram_gib_hours", 0), 3),
                            fmt_number(wh, jnum(row, "wall_seconds", 0) / 3600, 3) };
    table_add(t, cells);
  }
  const char *since = jstr(reply, "since"), *until = jstr(reply, "until");
  printf("Usage from %s to %s, by %s\n\n", since ? since : "?", until ? until : "?", by);
  table_print(t, stdout);
  table_free(t);
}

int cli_usage(int argc, char **argv)
{
  struct usage_opts o = { 0 };
  int r = parse_args(argc, argv, &o);
  if (r >= 0)
    return r;
  _cleanup_free_ char *by = daemon_client_escape(o.by);
  _cleanup_free_ char *since = daemon_client_escape(o.since);
  _cleanup_free_ char *path = NULL;
  xasprintf(&path, "/v1/usage?by=%s&since=%s", by, since);
  _cleanup_json_ json_t *reply = NULL;
  if ((r = verb_request("usage", o.socket, "GET", path, NULL, &reply)) != CLI_OK)
    return r;
  if (!json_is_array(json_object_get(reply, "rows"))) {
    fprintf(stderr, "gpuslice: usage: daemon reply has no \"rows\" array\n");
    return CLI_FAILURE;
  }
  o.price.socket = o.socket;
  if (o.cost && (r = usage_cost_add(reply, &o.price)) != CLI_OK)
    return r;
  if (o.json)
    return verb_print_json(reply);
  if (o.csv)
    print_csv(json_object_get(reply, "rows"), o.cost);
  else if (o.cost)
    usage_cost_print(reply, o.by);
  else
    print_table(reply, o.by);
  return fflush(stdout) == 0 ? CLI_OK : CLI_FAILURE;
}
