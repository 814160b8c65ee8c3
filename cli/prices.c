/* `gpuslice prices`: the price table in effect, the rates per model that the planner and
 * `savings` use, and with --rows every row with its source and date. Reading and deriving
 * the rates is in lib/price-table.c. */
#include "cli.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/price.h>
#include "cli-json.h"
#include "cli-table.h"

struct prices_opts {
  const char *prices;
  bool rows, json;
};

// clang-format off
static const struct gs_opt prices_entries[] = {
  { .name = "prices", .arg = "FILE", .kind = GS_OPT_STRING, .offset = offsetof(struct prices_opts, prices),
    .help = "Price table CSV instead of the built-in one (columns: docs/cost.md)" },
  { .name = "rows", .kind = GS_OPT_FLAG, .offset = offsetof(struct prices_opts, rows),
    .help = "Also list every row of the table" },
  { .name = "json", .kind = GS_OPT_FLAG, .offset = offsetof(struct prices_opts, json),
    .help = "Machine-readable output, always with the rows (docs/cli.md)" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on

// clang-format off
const struct gs_opt_table cli_prices_table = {
  .verb = "prices",
  .synopsis = "prices [--prices FILE] [--rows] [--json]",
  .summary = "Show the GPU price table in effect, with sources and dates",
  .intro = "Shows the GPU price table in effect, in $ per GPU-hour: per model the on-demand, spot,\n"
           "1-year and 3-year commitment rates, with the sources and the latest date they come from.\n"
           "On-demand is the lower median of the model's rows; spot and commitment rates apply the\n"
           "discount the rows that publish them give (rate / their own on-demand) to it.\n",
  .outro = "Exit status: 0 success, 1 failure, 2 usage error (including a malformed table).\n",
  GS_OPT_ENTRIES(prices_entries),
};
// clang-format on

static const char *rate_text(char *buf, size_t len, double v)
{
  if (isnan(v))
    return "-";
  snprintf(buf, len, "%.4f", v);
  return buf;
}

static void print_models(const struct gs_price_table *t)
{
  static const char *const head[] = { "MODEL",     "ON_DEMAND", "SPOT",  "COMMIT_1Y",
                                      "COMMIT_3Y", "ROWS",      "AS_OF", "SOURCE" };
  struct table *tb = table_new(8, "lrrrrrll", head);
  for (size_t i = 0; i < gs_price_table_models(t); i++) {
    const struct gs_price *p = gs_price_table_model_at(t, i);
    char od[24], sp[24], c1[24], c3[24], n[16];
    snprintf(n, sizeof(n), "%d", p->rows);
    const char *row[] = { p->model,
                          rate_text(od, sizeof(od), p->on_demand),
                          rate_text(sp, sizeof(sp), p->spot),
                          rate_text(c1, sizeof(c1), p->commit_1y),
                          rate_text(c3, sizeof(c3), p->commit_3y),
                          n,
                          p->as_of,
                          p->source };
    table_add(tb, row);
  }
  table_print(tb, stdout);
  table_free(tb);
}

static void print_rows(const struct gs_price_table *t)
{
  static const char *const head[] = { "LINE",      "PROVIDER",  "REGION",    "SKU",
                                      "MODEL",     "GPUS",      "ON_DEMAND", "SPOT",
                                      "COMMIT_1Y", "COMMIT_3Y", "AS_OF" };
  struct table *tb = table_new(11, "rlllllrrrrl", head);
  for (size_t i = 0; i < gs_price_table_rows(t); i++) {
    const struct gs_price_row *r = gs_price_table_row_at(t, i);
    char line[16], g[16], od[24], sp[24], c1[24], c3[24];
    snprintf(line, sizeof(line), "%d", r->line);
    snprintf(g, sizeof(g), "%d", r->gpus);
    const char *row[] = { line,
                          r->provider,
                          r->region,
                          r->sku,
                          r->model,
                          r->gpus ? g : "-",
                          rate_text(od, sizeof(od), r->on_demand),
                          rate_text(sp, sizeof(sp), r->spot),
                          rate_text(c1, sizeof(c1), r->commit_1y),
                          rate_text(c3, sizeof(c3), r->commit_3y),
                          r->as_of };
    table_add(tb, row);
  }
  putchar('\n');
  table_print(tb, stdout);
  table_free(tb);
}

static json_t *rate_json(double v)
{
  return isnan(v) ? json_null() : json_real(v);
}

static json_t *models_json(const struct gs_price_table *t)
{
  json_t *a = json_array();
  for (size_t i = 0; i < gs_price_table_models(t); i++) {
    const struct gs_price *p = gs_price_table_model_at(t, i);
    json_array_append_new(a,
                          json_pack("{s:s, s:o, s:o, s:o, s:o, s:i, s:s, s:s}", "model", p->model,
                                    "on_demand", rate_json(p->on_demand), "spot",
                                    rate_json(p->spot), "commit_1y", rate_json(p->commit_1y),
                                    "commit_3y", rate_json(p->commit_3y), "rows", p->rows, "source",
                                    p->source, "as_of", p->as_of));
  }
  return a;
}

static json_t *rows_json(const struct gs_price_table *t)
{
  json_t *a = json_array();
  for (size_t i = 0; i < gs_price_table_rows(t); i++) {
    const struct gs_price_row *r = gs_price_table_row_at(t, i);
    json_array_append_new(
      a,
      json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:o, s:o, s:o, s:o, s:s, s:s}", "line", r->line,
                "provider", r->provider, "region", r->region, "sku", r->sku, "model", r->model,
                "gpus", r->gpus, "on_demand", rate_json(r->on_demand), "spot", rate_json(r->spot),
                "commit_1y", rate_json(r->commit_1y), "commit_3y", rate_json(r->commit_3y),
                "source", r->source, "as_of", r->as_of));
  }
  return a;
}

static void print_json(const struct gs_price_table *t)
{
  json_print_compact(json_pack("{s:s, s:s, s:o, s:o}", "table", gs_price_table_name(t), "rule",
                               "lower median on-demand; spot and commitments by discount", "models",
                               models_json(t), "rows", rows_json(t)));
}

int cli_prices(int argc, char **argv)
{
  struct prices_opts o = { 0 };
  int r = cli_parse_options(&cli_prices_table, &o, argc, argv);
  if (r >= 0)
    return r;
  gs_error_t err = NULL;
  struct gs_price_table *t = NULL;
  if ((o.prices ? gs_price_table_load(o.prices, &t, &err) : gs_price_table_default(&t, &err)) < 0) {
    cli_usage_error("prices", "%s", err->msg);
    gs_error_release(&err);
    return CLI_USAGE;
  }
  if (o.json) {
    print_json(t);
  } else {
    printf("Prices in $ per GPU-hour from %s. On-demand: the lower median of the model's "
           "rows; spot and commitments: their rows' discounts applied to it.\n",
           gs_price_table_name(t));
    print_models(t);
    if (o.rows)
      print_rows(t);
  }
  gs_price_table_free(t);
  return CLI_OK;
}
