/* `gpuslice usage`: what tenants used over a period, from the daemon's SQLite ledger
 * (GET /v1/usage), grouped by tenant, user or one label. Human table, --json (the daemon's
 * reply, docs/cli.md) or --csv. The ledger itself is the daemon's; this only asks and prints. */
#include "cli.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon-verb.h"
#include "table.h"
#include "usage-cost.h"

static const char usage_usage[] =
  "Usage: gpuslice usage [--by tenant|user|label:KEY] [--since AGE|TIME] [--json|--csv]\n"
  "                      [--cost [--prices FILE] [--gpu-model M]] [--socket PATH]\n"
  "\n"
  "Reports the GPU time and memory each group of tenants used, from the daemon's usage\n"
  "ledger. A local user sees their own tenants; root and the gpuslice group see all.\n"
  "\n"
  "Options:\n"
  "  --by GROUP      tenant (default), user, or label:KEY (e.g. label:team)\n"
  "  --since WHEN    An age such as 30m, 24h, 7d (default), 2w, or an RFC 3339 time\n"
  "                  such as 2025-01-31T00:00:00Z\n"
  "  --json          Print JSON (keys documented in docs/cli.md)\n"
  "  --csv           Print CSV: key,tenants,gpu_seconds,vram_byte_seconds,vram_gib_hours,\n"
  "                  wall_seconds,served_requests,allocated_gpu_seconds (and with --cost:\n"
  "                  used_cost,idle_cost,total_cost,cost_per_1k_requests)\n"
  "  --cost          Price it: the cost of what each group used, the idle cost of what it\n"
  "                  held but did not use, the node's unallocated cost apart, and the cost\n"
  "                  per 1,000 served requests (docs/cost.md)\n"
  "  --prices FILE   A price CSV for --cost (default: the built-in table, `gpuslice prices`)\n"
  "  --gpu-model M   The GPU model to price (default: the node's first GPU)\n"
  "  --socket PATH   The daemon's socket (default: $GPUSLICE_SOCKET, else\n"
  "                  /run/gpuslice/gpuslice.sock for root)\n"
  "  -h, --help      Show this help and exit\n"
  "\n"
  "Exit status: 0 success, 1 failure (no daemon answers, the daemon refuses), 2 usage error.\n";

enum usage_format { FMT_TABLE, FMT_JSON, FMT_CSV };

struct usage_opts {
  const char *socket, *by, *since;
  enum usage_format format;
  bool cost;
  struct usage_cost_opts price;
};

static bool valid_by(const char *by)
{
  return strcmp(by, "tenant") == 0 || strcmp(by, "user") == 0 ||
         (strncmp(by, "label:", 6) == 0 && by[6] != '\0');
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

static int usage_option(struct usage_opts *o, int c, char **argv)
{
  switch (c) {
  case 'h':
    fputs(usage_usage, stdout);
    return CLI_OK;
  case 'S': o->socket = optarg; return -1;
  case 'C': o->cost = true; return -1;
  case 'p': o->price.prices = optarg; return -1;
  case 'm': o->price.model = optarg; return -1;
  case 'b':
    if (!valid_by(optarg))
      return cli_usage_error("usage", "--by '%s': want tenant, user or label:KEY", optarg);
    o->by = optarg;
    return -1;
  case 's':
    if (!valid_age(optarg) && !valid_rfc3339(optarg))
      return cli_usage_error("usage", "--since '%s': want an age (30m, 24h, 7d, 2w) or an "
                             "RFC 3339 time", optarg);
    o->since = optarg;
    return -1;
  case 'j':
  case 'c':
    if (o->format != FMT_TABLE)
      return cli_usage_error("usage", "--json and --csv: choose one");
    o->format = c == 'j' ? FMT_JSON : FMT_CSV;
    return -1;
  default:
    return cli_bad_option("usage", argv, c);
  }
}

static int parse_args(int argc, char **argv, struct usage_opts *o)
{
  static const struct option opts[] = {
    { "by", required_argument, NULL, 'b' },   { "since", required_argument, NULL, 's' },
    { "json", no_argument, NULL, 'j' },       { "csv", no_argument, NULL, 'c' },
    { "socket", required_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' },
    { "cost", no_argument, NULL, 'C' },       { "prices", required_argument, NULL, 'p' },
    { "gpu-model", required_argument, NULL, 'm' },
    { NULL, 0, NULL, 0 },
  };
  int c, r;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1)
    if ((r = usage_option(o, c, argv)) >= 0)
      return r;
  if (optind < argc)
    return cli_usage_error("usage", "'%s': unexpected argument (see gpuslice usage --help)",
                           argv[optind]);
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
         "allocated_gpu_seconds%s\n", cost ? ",used_cost,idle_cost,total_cost,cost_per_1k_requests" : "");
  json_array_foreach(rows, i, row) {
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
  json_array_foreach(rows, i, row) {
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
  struct usage_opts o = { .by = "tenant", .since = "7d", .format = FMT_TABLE };
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
  if (o.format == FMT_JSON)
    return verb_print_json(reply);
  if (o.format == FMT_CSV)
    print_csv(json_object_get(reply, "rows"), o.cost);
  else if (o.cost)
    usage_cost_print(reply, o.by);
  else
    print_table(reply, o.by);
  return fflush(stdout) == 0 ? CLI_OK : CLI_FAILURE;
}
