/* `gpuslice savings`: the stacked-savings waterfall (sharing, then spot, then commitments),
 * every step shown. The arithmetic is gs_cost_stack in lib/cost.c; this file reads the
 * options, takes discounts from the price table when only a model is given, and prints. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs-cost.h"
#include "gs-price.h"
#include "json-print.h"
#include "table.h"

static const char savings_usage[] =
  "Usage: gpuslice savings (--monthly AMOUNT | --gpus N --model MODEL) [--sharing-cut PCT]\n"
  "                        [--spot PCT[@PCT]] [--commit PCT[@PCT]] [--term 1y|3y]\n"
  "                        [--prices FILE] [--json]\n"
  "\n"
  "Stacks savings multiplicatively and shows every step: sharing GPUs cuts the bill first;\n"
  "then spot covers a share of the work left at its discount; then a commitment covers\n"
  "another share at its discount. Spot and commitment shares are of the work after\n"
  "sharing and may not add up to more than 100%.\n"
  "\n"
  "Options:\n"
  "  --monthly AMOUNT     Today's monthly bill in $ (e.g. 10000)\n"
  "  --gpus N --model M   Or: N GPUs of model M, on demand, 730 hours a month\n"
  "  --sharing-cut PCT    Share of the bill sharing removes, e.g. 40%\n"
  "  --spot PCT[@PCT]     Work on spot @ its discount, e.g. 50%@70%. Without @, the\n"
  "                       discount comes from the price table for --model\n"
  "  --commit PCT[@PCT]   Work under a commitment @ its discount, e.g. 50%@50%\n"
  "  --term 1y|3y         Commitment term for discounts from the table (default 1y)\n"
  "  --prices FILE        Price table CSV instead of the built-in one (docs/cost.md)\n"
  "  --json               Machine-readable output (docs/cli.md)\n"
  "  -h, --help           Show this help and exit\n"
  "\n"
  "Exit status: 0 success, 1 failure, 2 usage error (bad numbers, unknown model, no price).\n";

struct savings_opts {
  double monthly, gpus, sharing, spot_f, spot_d, commit_f, commit_d;
  const char *model, *prices, *term;
  bool json;
};

/* "40%", "40" (percent) or "12.5%" -> 0.4, 0.125. */
static int parse_pct(const char *s, size_t len, double *out)
{
  char buf[32], *end;
  if (len == 0 || len >= sizeof(buf))
    return -1;
  memcpy(buf, s, len);
  buf[len - (s[len - 1] == '%')] = '\0';
  errno = 0;
  double v = strtod(buf, &end);
  if (errno || end == buf || *end || !isfinite(v) || v < 0 || v > 100)
    return -1;
  *out = v / 100;
  return 0;
}

/* "50%@70%" -> 0.5 and 0.7; "50%" -> 0.5 and NAN (discount from the table). */
static int parse_share(const char *opt, const char *s, double *f, double *d)
{
  const char *at = strchr(s, '@');
  size_t flen = at ? (size_t) (at - s) : strlen(s);
  *d = (double) NAN;
  if (parse_pct(s, flen, f) < 0 || (at && parse_pct(at + 1, strlen(at + 1), d) < 0))
    return cli_usage_error("savings", "%s '%s': want PCT or PCT@PCT, each 0..100%%", opt, s);
  return -1;
}

/* "10000", "$10,000" or "10000.50" -> dollars. */
static int parse_money(const char *opt, const char *s, double min, double *out)
{
  char buf[64], *end;
  size_t o = 0;
  for (const char *p = s + (*s == '$'); *p && o + 1 < sizeof(buf); p++)
    if (*p != ',')
      buf[o++] = *p;
  buf[o] = '\0';
  errno = 0;
  double v = strtod(buf, &end);
  if (errno || end == buf || *end || !isfinite(v) || v < min || v > 1e15)
    return cli_usage_error("savings", "%s '%s': want a number >= %g", opt, s, min);
  *out = v;
  return -1;
}

static int savings_option(struct savings_opts *o, int c, char **argv)
{
  switch (c) {
  case 'h':
    fputs(savings_usage, stdout);
    return CLI_OK;
  case 'M':
    return parse_money("--monthly", optarg, 0, &o->monthly);
  case 'g':
    return parse_money("--gpus", optarg, 0, &o->gpus);
  case 'm':
    o->model = optarg;
    return -1;
  case 'S':
    if (parse_pct(optarg, strlen(optarg), &o->sharing) < 0)
      return cli_usage_error("savings", "--sharing-cut '%s': want a percentage 0..100%%",
                             optarg);
    return -1;
  case 's':
    return parse_share("--spot", optarg, &o->spot_f, &o->spot_d);
  case 'c':
    return parse_share("--commit", optarg, &o->commit_f, &o->commit_d);
  case 't':
    o->term = optarg;
    return strcmp(optarg, "1y") == 0 || strcmp(optarg, "3y") == 0
               ? -1
               : cli_usage_error("savings", "--term '%s': want 1y or 3y", optarg);
  case 'p':
    o->prices = optarg;
    return -1;
  case 'j':
    o->json = true;
    return -1;
  default:
    return cli_bad_option("savings", argv, c);
  }
}

static int parse_args(int argc, char **argv, struct savings_opts *o)
{
  static const struct option opts[] = {
    { "monthly", required_argument, NULL, 'M' }, { "gpus", required_argument, NULL, 'g' },
    { "model", required_argument, NULL, 'm' },   { "sharing-cut", required_argument, NULL, 'S' },
    { "spot", required_argument, NULL, 's' },    { "commit", required_argument, NULL, 'c' },
    { "term", required_argument, NULL, 't' },    { "prices", required_argument, NULL, 'p' },
    { "json", no_argument, NULL, 'j' },          { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c, r;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1)
    if ((r = savings_option(o, c, argv)) >= 0)
      return r;
  if (optind < argc)
    return cli_usage_error("savings", "'%s': unexpected argument (see gpuslice savings --help)",
                           argv[optind]);
  if (isnan(o->monthly) == isnan(o->gpus))
    return cli_usage_error("savings", "give either --monthly or --gpus with --model "
                           "(see gpuslice savings --help)");
  if (!isnan(o->gpus) && !o->model)
    return cli_usage_error("savings", "--gpus needs --model");
  if ((isnan(o->spot_d) || isnan(o->commit_d)) && !o->model)
    return cli_usage_error("savings", "--%s without @DISCOUNT needs --model, to read the "
                           "discount from the price table", isnan(o->spot_d) ? "spot" : "commit");
  return -1;
}

/* Bad input (a table that does not parse, an unknown model, a missing price): exit 2. */
static int input_error(gs_error_t *err)
{
  cli_usage_error("savings", "%s", (*err)->msg);
  gs_error_release(err);
  return CLI_USAGE;
}

/* 1 - rate / on-demand, or an error naming the missing rate. */
static int discount_from(const struct gs_price *p, double rate, const char *what, double *out,
                         gs_error_t *err)
{
  if (isnan(rate) || !(p->on_demand > 0))
    return gs_make_error(err, 0, "no %s price for GPU model '%s' in the price table; give the "
                         "discount as PCT@PCT", what, p->model);
  *out = rate < p->on_demand ? 1 - rate / p->on_demand : 0;
  return 0;
}

/* Fills what --model stands for: the monthly bill from --gpus, and discounts left out. */
static int apply_prices(struct savings_opts *o, const struct gs_price **used, gs_error_t *err)
{
  struct gs_price_table *t = NULL;
  if ((o->prices ? gs_price_table_load(o->prices, &t, err) : gs_price_table_default(&t, err)) < 0)
    return -1;
  const struct gs_price *p = gs_price_find(t, o->model, err);
  static struct gs_price copy; /* outlives the table, for the output */
  int r = -1;
  if (p) {
    copy = *p;
    *used = &copy;
    bool y3 = o->term && strcmp(o->term, "3y") == 0;
    if (!isnan(o->gpus))
      o->monthly = gs_monthly_cost(o->gpus, p->on_demand);
    r = (isnan(o->spot_d) && discount_from(p, p->spot, "spot", &o->spot_d, err) < 0) ||
                (isnan(o->commit_d) &&
                 discount_from(p, y3 ? p->commit_3y : p->commit_1y,
                               y3 ? "3-year commitment" : "1-year commitment", &o->commit_d,
                               err) < 0)
            ? -1
            : 0;
  }
  gs_price_table_free(t);
  return r;
}

static double cents(double v)
{
  return gs_cost_round(v, 2);
}

/* "$10,000.00". */
static const char *fmt_money(char *buf, size_t len, double v)
{
  char digits[48];
  snprintf(digits, sizeof(digits), "%.2f", cents(fabs(v)));
  size_t int_len = strcspn(digits, "."), o = 0;
  o += (size_t) snprintf(buf, len, "%s$", v < 0 ? "-" : "");
  for (size_t i = 0; digits[i] && o + 1 < len; i++) {
    buf[o++] = digits[i];
    if (i + 1 < int_len && (int_len - i - 1) % 3 == 0)
      buf[o++] = ',';
  }
  buf[o] = '\0';
  return buf;
}

static const char *const step_names[GS_COST_STACK_STEPS] = { "sharing", "spot", "commitment" };

static void step_cover(const struct gs_stack_input *in, int i, double *covers, double *discount)
{
  const double c[] = { 1, in->spot_fraction, in->commit_fraction };
  const double d[] = { in->sharing_cut, in->spot_discount, in->commit_discount };
  *covers = c[i];
  *discount = d[i];
}

static void print_text(const struct gs_stack_input *in, const struct gs_cost_step *s,
                       const struct gs_price *p)
{
  static const char *const head[] = { "STEP", "COVERS", "DISCOUNT", "BEFORE", "AFTER", "SAVED" };
  struct table *tb = table_new(6, "lrrrrr", head);
  char c[24], d[24], b[48], a[48], v[64];
  for (int i = 0; i < GS_COST_STACK_STEPS; i++) {
    double cover, disc;
    step_cover(in, i, &cover, &disc);
    snprintf(c, sizeof(c), "%.4g%%", cover * 100);
    snprintf(d, sizeof(d), "%.4g%%", disc * 100);
    const char *row[] = { step_names[i], c, d, fmt_money(b, sizeof(b), s[i].monthly_before),
                          fmt_money(a, sizeof(a), s[i].monthly_after),
                          fmt_money(v, sizeof(v), s[i].monthly_before - s[i].monthly_after) };
    table_add(tb, row);
  }
  double first = s[0].monthly_before, last = s[GS_COST_STACK_STEPS - 1].monthly_after;
  double pct = first > 0 ? gs_cost_round((1 - last / first) * 100, 2) : 0;
  char saved[48];
  snprintf(v, sizeof(v), "%s (%g%%)", fmt_money(saved, sizeof(saved), first - last), pct);
  const char *total[] = { "total", "", "", fmt_money(b, sizeof(b), first),
                          fmt_money(a, sizeof(a), last), v };
  table_add(tb, total);
  if (p)
    printf("%s: $%g per GPU-hour on demand (%s, %s)\n", p->model, p->on_demand, p->source,
           p->as_of);
  table_print(tb, stdout);
  table_free(tb);
}

static json_t *step_json(const struct gs_stack_input *in, const struct gs_cost_step *s, int i)
{
  double cover, disc;
  step_cover(in, i, &cover, &disc);
  return json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "step", step_names[i], "what",
                   s[i].what, "covers", cover, "discount", disc, "monthly_before",
                   cents(s[i].monthly_before), "monthly_after", cents(s[i].monthly_after),
                   "saved", cents(s[i].monthly_before - s[i].monthly_after));
}

static void print_json(const struct gs_stack_input *in, const struct gs_cost_step *s,
                       const struct gs_price *p)
{
  double first = s[0].monthly_before, last = s[GS_COST_STACK_STEPS - 1].monthly_after;
  json_t *steps = json_array();
  for (int i = 0; i < GS_COST_STACK_STEPS; i++)
    json_array_append_new(steps, step_json(in, s, i));
  json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:o, s:o}", "monthly_before", cents(first),
                        "monthly_after", cents(last), "saved", cents(first - last), "saved_pct",
                        first > 0 ? gs_cost_round((1 - last / first) * 100, 2) : 0.0, "steps",
                        steps, "price",
                        p ? json_pack("{s:s, s:f, s:s, s:s}", "model", p->model, "on_demand",
                                      p->on_demand, "source", p->source, "as_of", p->as_of)
                          : json_null());
  json_print_compact(j);
}

int cli_savings(int argc, char **argv)
{
  struct savings_opts o = { .monthly = (double) NAN, .gpus = (double) NAN };
  int r = parse_args(argc, argv, &o);
  if (r >= 0)
    return r;
  gs_error_t err = NULL;
  const struct gs_price *p = NULL;
  if (o.model && apply_prices(&o, &p, &err) < 0)
    return input_error(&err);
  struct gs_stack_input in = { o.monthly, o.sharing, o.spot_f, o.spot_d, o.commit_f, o.commit_d };
  struct gs_cost_step s[GS_COST_STACK_STEPS];
  if (gs_cost_stack_check(&in, &err) < 0 || gs_cost_stack(&in, s, GS_COST_STACK_STEPS) < 0)
    return input_error(&err);
  if (o.json)
    print_json(&in, s, p);
  else
    print_text(&in, s, p);
  return CLI_OK;
}
