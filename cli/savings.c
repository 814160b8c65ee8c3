/* `gpuslice savings`: the stacked-savings waterfall (sharing, then spot, then commitments),
 * every step shown. The arithmetic is gs_cost_stack in lib/cost.c; this file reads the
 * options, takes discounts from the price table when only a model is given, and prints. */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/cost.h>
#include <gpuslice/price.h>
#include "cli-json.h"
#include "cli-table.h"

struct savings_opts {
  double monthly, gpus, sharing, spot_f, spot_d, commit_f, commit_d;
  const char *model, *prices;
  int term; /* the index in savings_terms: 0 1y, 1 3y */
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
static int parse_share(const char *opt, const char *s, double *f, double *d, gs_error_t *err)
{
  const char *at = strchr(s, '@');
  size_t flen = at ? (size_t) (at - s) : strlen(s);
  *d = (double) NAN;
  if (parse_pct(s, flen, f) < 0 || (at && parse_pct(at + 1, strlen(at + 1), d) < 0))
    return gs_make_error(err, 0, "%s '%s': want PCT or PCT@PCT, each 0..100%%", opt, s);
  return 0;
}

/* "10000", "$10,000" or "10000.50" -> dollars. */
static int parse_money(const char *opt, const char *s, double *out, gs_error_t *err)
{
  char buf[64], *end;
  size_t o = 0;
  for (const char *p = s + (*s == '$'); *p && o + 1 < sizeof(buf); p++)
    if (*p != ',')
      buf[o++] = *p;
  buf[o] = '\0';
  errno = 0;
  double v = strtod(buf, &end);
  if (errno || end == buf || *end || !isfinite(v) || v < 0 || v > 1e15)
    return gs_make_error(err, 0, "%s '%s': want a number >= 0", opt, s);
  *out = v;
  return 0;
}

static int set_monthly(void *dst, const char *arg, gs_error_t *err)
{
  return parse_money("--monthly", arg, &((struct savings_opts *) dst)->monthly, err);
}

static int set_gpus(void *dst, const char *arg, gs_error_t *err)
{
  return parse_money("--gpus", arg, &((struct savings_opts *) dst)->gpus, err);
}

static int set_spot(void *dst, const char *arg, gs_error_t *err)
{
  struct savings_opts *o = dst;
  return parse_share("--spot", arg, &o->spot_f, &o->spot_d, err);
}

static int set_commit(void *dst, const char *arg, gs_error_t *err)
{
  struct savings_opts *o = dst;
  return parse_share("--commit", arg, &o->commit_f, &o->commit_d, err);
}

static const char *const savings_terms[] = { "1y", "3y", NULL };
#define OFF(f) offsetof(struct savings_opts, f)
// clang-format off
static const struct gs_opt savings_entries[] = {
  { .name = "monthly", .arg = "AMOUNT", .kind = GS_OPT_CALL, .parse = set_monthly,
    .help = "Today's monthly bill in $, e.g. 10000 or $10,000" },
  { .name = "gpus", .arg = "N", .kind = GS_OPT_CALL, .parse = set_gpus,
    .help = "Or: N GPUs of --model on demand, 730 hours a month, priced from the table" },
  { .name = "model", .arg = "MODEL", .kind = GS_OPT_STRING, .offset = OFF(model),
    .help = "The GPU model whose prices --gpus and discounts without @ read" },
  { .name = "sharing-cut", .arg = "PCT", .kind = GS_OPT_PERCENT, .offset = OFF(sharing), .max = 100,
    .help = "Share of the bill that sharing removes, e.g. 40% (the % is optional)" },
  { .name = "spot", .arg = "PCT[@PCT]", .kind = GS_OPT_CALL, .parse = set_spot,
    .help = "Share of the work on spot, at its discount, e.g. 50%@70%. Without @, the discount is "
            "1 - spot / on-demand from the table for --model" },
  { .name = "commit", .arg = "PCT[@PCT]", .kind = GS_OPT_CALL, .parse = set_commit,
    .help = "Share of the work under a commitment, at its discount, e.g. 50%@50%; without @, from the "
            "table (--term)" },
  { .name = "term", .arg = "1y|3y", .kind = GS_OPT_ENUM, .offset = OFF(term), .choices = savings_terms,
    .def = "1y", .help = "Which commitment rate a discount from the table uses" },
  { .name = "prices", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(prices),
    .help = "Price table CSV instead of the built-in one (docs/cost.md)" },
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json), .help = "Machine-readable output (docs/cli.md)" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_savings_table = {
  .verb = "savings",
  .synopsis = "savings (--monthly AMOUNT | --gpus N --model MODEL) [OPTIONS]",
  .summary = "Show stacked savings: sharing, then spot, then commitments",
  .intro = "Stacks savings multiplicatively and shows every step: sharing GPUs cuts the bill first;\n"
           "then spot covers a share of the work left at its discount; then a commitment covers\n"
           "another share at its discount. Spot and commitment shares are of the work after\n"
           "sharing and may not add up to more than 100%.\n",
  .outro = "Exit status: 0 success, 1 failure, 2 usage error (bad numbers, unknown model, no price).\n",
  GS_OPT_ENTRIES(savings_entries),
};
// clang-format on

/* What the options must say together: one bill, and a model wherever a price is read. */
static int check_args(const struct savings_opts *o)
{
  if (isnan(o->monthly) == isnan(o->gpus))
    return cli_usage_error("savings",
                           "give either --monthly or --gpus with --model "
                           "(see gpuslice savings --help)");
  if (!isnan(o->gpus) && !o->model)
    return cli_usage_error("savings", "--gpus needs --model");
  if ((isnan(o->spot_d) || isnan(o->commit_d)) && !o->model)
    return cli_usage_error("savings",
                           "--%s without @DISCOUNT needs --model, to read the "
                           "discount from the price table",
                           isnan(o->spot_d) ? "spot" : "commit");
  return -1;
}

static int parse_args(int argc, char **argv, struct savings_opts *o)
{
  int r = cli_parse_options(&cli_savings_table, o, argc, argv);
  if (r >= 0)
    return r;
  return check_args(o);
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
    return gs_make_error(err, 0,
                         "no %s price for GPU model '%s' in the price table; give the "
                         "discount as PCT@PCT",
                         what, p->model);
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
    bool y3 = o->term == 1;
    if (!isnan(o->gpus))
      o->monthly = gs_monthly_cost(o->gpus, p->on_demand);
    r = (isnan(o->spot_d) && discount_from(p, p->spot, "spot", &o->spot_d, err) < 0) ||
        (isnan(o->commit_d) &&
         discount_from(p, y3 ? p->commit_3y : p->commit_1y,
                       y3 ? "3-year commitment" : "1-year commitment", &o->commit_d, err) < 0)
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
    const char *row[] = { step_names[i],
                          c,
                          d,
                          fmt_money(b, sizeof(b), s[i].monthly_before),
                          fmt_money(a, sizeof(a), s[i].monthly_after),
                          fmt_money(v, sizeof(v), s[i].monthly_before - s[i].monthly_after) };
    table_add(tb, row);
  }
  double first = s[0].monthly_before, last = s[GS_COST_STACK_STEPS - 1].monthly_after;
  double pct = first > 0 ? gs_cost_round((1 - last / first) * 100, 2) : 0;
  char saved[48];
  snprintf(v, sizeof(v), "%s (%g%%)", fmt_money(saved, sizeof(saved), first - last), pct);
  const char *total[] = {
    "total", "", "", fmt_money(b, sizeof(b), first), fmt_money(a, sizeof(a), last), v
  };
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
  return json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f}", "step", step_names[i], "what", s[i].what,
                   "covers", cover, "discount", disc, "monthly_before", cents(s[i].monthly_before),
                   "monthly_after", cents(s[i].monthly_after), "saved",
                   cents(s[i].monthly_before - s[i].monthly_after));
}

static void print_json(const struct gs_stack_input *in, const struct gs_cost_step *s,
                       const struct gs_price *p)
{
  double first = s[0].monthly_before, last = s[GS_COST_STACK_STEPS - 1].monthly_after;
  json_t *steps = json_array();
  for (int i = 0; i < GS_COST_STACK_STEPS; i++)
    json_array_append_new(steps, step_json(in, s, i));
  json_t *j =
    json_pack("{s:f, s:f, s:f, s:f, s:o, s:o}", "monthly_before", cents(first), "monthly_after",
              cents(last), "saved", cents(first - last), "saved_pct",
              first > 0 ? gs_cost_round((1 - last / first) * 100, 2) : 0.0, "steps", steps, "price",
              p ? json_pack("{s:s, s:f, s:s, s:s}", "model", p->model, "on_demand", p->on_demand,
                            "source", p->source, "as_of", p->as_of)
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
