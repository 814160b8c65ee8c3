/* Price tables (see gs-price.h): reading the CSV into rows, and deriving one set of rates
 * per GPU model from them, per column the lower median of the rows that have a value. */
#include <gpuslice/price.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv-read.h"

#define MAX_PRICE 1e6 /* $ per GPU-hour; anything above is a typo */

struct gs_price_table {
  char name[128];
  struct gs_price_row *rows;
  size_t nrows;
  struct gs_price *models;
  size_t nmodels;
};

/* Where each known column sits in the file (-1: absent). */
struct price_cols {
  int provider, region, sku, gpu, gpus, od, spot, c1y, c3y, source, as_of;
};

static int find_columns(const struct gs__csv *c, struct price_cols *k, gs_error_t *err)
{
  *k = (struct price_cols){
    gs__csv_column(c, "provider"),
    gs__csv_column(c, "region"),
    gs__csv_column(c, "sku"),
    gs__csv_column(c, "gpu"),
    gs__csv_column(c, "gpus"),
    gs__csv_column(c, "od_gpu_hr"),
    gs__csv_column(c, "spot_gpu_hr"),
    gs__csv_column(c, "commit1y_gpu_hr"),
    gs__csv_column(c, "commit3y_gpu_hr"),
    gs__csv_column(c, "source"),
    gs__csv_column(c, "as_of"),
  };
  if (k->gpu < 0 || k->od < 0)
    return gs__csv_error(c, err, "header has no '%s' column (need at least gpu,od_gpu_hr)",
                         k->gpu < 0 ? "gpu" : "od_gpu_hr");
  return 0;
}

/* Copies a free-text field, cutting it with "..." rather than refusing a long source. */
static void copy_text(char *out, size_t len, const char *s)
{
  if (strlen(s) < len) {
    memcpy(out, s, strlen(s) + 1);
    return;
  }
  memcpy(out, s, len - 4);
  memcpy(out + len - 4, "...", 4);
}

static int check_date(const struct gs__csv *c, const char *s, gs_error_t *err)
{
  static const char shape[] = "dddd-dd-dd";
  if (!*s)
    return 0;
  for (size_t i = 0; i <= strlen(shape); i++)
    if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
      return gs__csv_error(c, err, "as_of '%s' is not a date YYYY-MM-DD", s);
  return 0;
}

static int read_rates(const struct gs__csv *c, const struct price_cols *k, struct gs_price_row *r,
                      gs_error_t *err)
{
  double gpus = (double) NAN;
  if (gs__csv_number(c, k->od, "od_gpu_hr", 0, MAX_PRICE, 0, &r->on_demand, err) < 0 ||
      gs__csv_number(c, k->spot, "spot_gpu_hr", 0, MAX_PRICE, 1, &r->spot, err) < 0 ||
      gs__csv_number(c, k->c1y, "commit1y_gpu_hr", 0, MAX_PRICE, 1, &r->commit_1y, err) < 0 ||
      gs__csv_number(c, k->c3y, "commit3y_gpu_hr", 0, MAX_PRICE, 1, &r->commit_3y, err) < 0 ||
      gs__csv_number(c, k->gpus, "gpus", 1, 1024, 1, &gpus, err) < 0)
    return -1;
  if (!isnan(gpus) && gpus != floor(gpus))
    return gs__csv_error(c, err, "gpus '%s' is not a whole number", gs__csv_get(c, k->gpus));
  r->gpus = isnan(gpus) ? 0 : (int) gpus;
  return 0;
}

static int read_row(const struct gs__csv *c, const struct price_cols *k, struct gs_price_row *r,
                    gs_error_t *err)
{
  memset(r, 0, sizeof(*r));
  r->line = c->line;
  const char *gpu = gs__csv_get(c, k->gpu);
  if (!*gpu)
    return gs__csv_error(c, err, "gpu is empty");
  if (gs_gpu_model_canon(gpu, r->model, sizeof(r->model), err) < 0)
    return gs_error_prepend(err, "%s: line %d", c->name, c->line);
  if (gs__csv_string(c, k->as_of, "as_of", r->as_of, sizeof(r->as_of), err) < 0 ||
      check_date(c, r->as_of, err) < 0 || read_rates(c, k, r, err) < 0)
    return -1;
  copy_text(r->provider, sizeof(r->provider), gs__csv_get(c, k->provider));
  copy_text(r->region, sizeof(r->region), gs__csv_get(c, k->region));
  copy_text(r->sku, sizeof(r->sku), gs__csv_get(c, k->sku));
  copy_text(r->source, sizeof(r->source), gs__csv_get(c, k->source));
  return 0;
}

static int read_rows(struct gs__csv *c, struct gs_price_table *t, gs_error_t *err)
{
  struct price_cols k;
  size_t cap = 0;
  int r = gs__csv_next(c, err);
  if (r <= 0)
    return r < 0 ? -1 : gs_make_error(err, 0, "%s: empty table, expected a header", c->name);
  if (find_columns(c, &k, err) < 0)
    return -1;
  while ((r = gs__csv_next(c, err)) > 0) {
    if (t->nrows == cap) {
      cap = cap ? cap * 2 : 32;
      void *p = realloc(t->rows, cap * sizeof(*t->rows));
      if (!p)
        return gs_make_error(err, ENOMEM, "%s", c->name);
      t->rows = p;
    }
    if (read_row(c, &k, &t->rows[t->nrows], err) < 0)
      return -1;
    t->nrows++;
  }
  if (r == 0 && t->nrows == 0)
    return gs_make_error(err, 0, "%s: no price rows after the header", c->name);
  return r;
}

/* ---- deriving per-model rates ---- */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The lower median of the values that are not NAN; NAN when there are none. */
static double lower_median(double *v, size_t n)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(v[i]))
      v[k++] = v[i];
  if (!k)
    return (double) NAN;
  qsort(v, k, sizeof(*v), cmp_double);
  return v[(k - 1) / 2];
}

/* The four rates of a row or a model, by column, so that one loop derives them all. */
enum { RATE_OD, RATE_SPOT, RATE_1Y, RATE_3Y, RATE_COLS };

static double row_rate(const struct gs_price_row *r, int col)
{
  const double v[RATE_COLS] = { r->on_demand, r->spot, r->commit_1y, r->commit_3y };
  return v[col];
}

static double *model_rate(struct gs_price *p, int col)
{
  double *v[RATE_COLS] = { &p->on_demand, &p->spot, &p->commit_1y, &p->commit_3y };
  return v[col];
}

static void describe_sources(struct gs_price *p, const struct gs_price_row *rows, size_t n)
{
  if (p->rows == 1) {
    for (size_t i = 0; i < n; i++)
      if (strcmp(rows[i].model, p->model) == 0)
        copy_text(p->source, sizeof(p->source), rows[i].source);
    return;
  }
  char s[sizeof(p->source)];
  size_t o = (size_t) snprintf(s, sizeof(s), "lower median of %d rows", p->rows);
  for (size_t i = 0; i < n && o < sizeof(s); i++) {
    if (strcmp(rows[i].model, p->model) != 0 || !rows[i].provider[0])
      continue;
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++)
      seen =
        strcmp(rows[j].model, p->model) == 0 && strcmp(rows[j].provider, rows[i].provider) == 0;
    if (!seen)
      o += (size_t) snprintf(s + o, sizeof(s) - o, "%s%s", strchr(s, ':') ? ", " : ": ",
                             rows[i].provider);
  }
  copy_text(p->source, sizeof(p->source), s);
}

/* Collects column col of the model's rows into tmp: the rate itself for on-demand, and for
 * the others the rate as a fraction of the same row's on-demand rate. */
static size_t collect(const struct gs_price *p, const struct gs_price_row *rows, size_t n, int col,
                      double *tmp)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(rows[i].model, p->model) != 0)
      continue;
    double v = row_rate(&rows[i], col), od = rows[i].on_demand;
    tmp[k++] = col == RATE_OD ? v : od > 0 ? v / od : (double) NAN;
  }
  return k;
}

/* On-demand is the lower median of the rows. Spot and commitment rates are on-demand times
 * the lower median of (rate / on-demand) over the rows that publish both, so that a discount
 * seen at one provider is never compared with another provider's on-demand price. */
static void derive_model(struct gs_price *p, const struct gs_price_row *rows, size_t n, double *tmp)
{
  for (int col = 0; col < RATE_COLS; col++) {
    size_t k = collect(p, rows, n, col, tmp);
    double m = lower_median(tmp, k);
    *model_rate(p, col) = col == RATE_OD ? m : m * p->on_demand;
    p->rows = (int) k;
  }
  for (size_t i = 0; i < n; i++)
    if (strcmp(rows[i].model, p->model) == 0 && strcmp(rows[i].as_of, p->as_of) > 0)
      memcpy(p->as_of, rows[i].as_of, sizeof(p->as_of));
  describe_sources(p, rows, n);
}

static int cmp_price(const void *a, const void *b)
{
  return strcmp(((const struct gs_price *) a)->model, ((const struct gs_price *) b)->model);
}

static int derive(struct gs_price_table *t, gs_error_t *err)
{
  t->models = calloc(t->nrows, sizeof(*t->models));
  double *tmp = calloc(t->nrows, sizeof(*tmp));
  if (!t->models || !tmp) {
    free(tmp);
    return gs_make_error(err, ENOMEM, "%s", t->name);
  }
  for (size_t i = 0; i < t->nrows; i++) {
    size_t j = 0;
    while (j < t->nmodels && strcmp(t->models[j].model, t->rows[i].model) != 0)
      j++;
    if (j == t->nmodels)
      memcpy(t->models[t->nmodels++].model, t->rows[i].model, sizeof(t->rows[i].model));
  }
  for (size_t j = 0; j < t->nmodels; j++)
    derive_model(&t->models[j], t->rows, t->nrows, tmp);
  qsort(t->models, t->nmodels, sizeof(*t->models), cmp_price);
  free(tmp);
  return 0;
}

/* ---- the public interface ---- */

int gs_price_table_parse(const char *text, size_t len, const char *name,
                         struct gs_price_table **out, gs_error_t *err)
{
  struct gs_price_table *t = calloc(1, sizeof(*t));
  if (!t)
    return gs_make_error(err, ENOMEM, "%s", name);
  copy_text(t->name, sizeof(t->name), name);
  struct gs__csv *c = malloc(sizeof(*c));
  if (!c) {
    free(t);
    return gs_make_error(err, ENOMEM, "%s", name);
  }
  gs__csv_init(c, text, len, name);
  int r = read_rows(c, t, err);
  free(c);
  if (r < 0 || derive(t, err) < 0) {
    gs_price_table_free(t);
    return -1;
  }
  *out = t;
  return 0;
}

int gs_price_table_default(struct gs_price_table **out, gs_error_t *err)
{
  return gs_price_table_parse(gs__builtin_prices_csv, gs__builtin_prices_csv_len,
                              "built-in (data/prices/gpu_prices.csv)", out, err);
}

static int parse_into(const char *text, size_t len, const char *name, void *out, gs_error_t *err)
{
  return gs_price_table_parse(text, len, name, out, err);
}

int gs_price_table_load(const char *csv_path, struct gs_price_table **out, gs_error_t *err)
{
  return gs__parse_text_file(csv_path, parse_into, out, err);
}

void gs_price_table_free(struct gs_price_table *t)
{
  if (!t)
    return;
  free(t->rows);
  free(t->models);
  free(t);
}

const struct gs_price *gs_price_find(const struct gs_price_table *t, const char *model,
                                     gs_error_t *err)
{
  char canon[24];
  if (gs_gpu_model_canon(model, canon, sizeof(canon), err) < 0)
    return NULL;
  for (size_t i = 0; i < t->nmodels; i++)
    if (strcmp(t->models[i].model, canon) == 0)
      return &t->models[i];
  gs_make_error(err, 0, "no price for GPU model '%s' in %s", canon, t->name);
  return NULL;
}

size_t gs_price_table_models(const struct gs_price_table *t)
{
  return t->nmodels;
}

const struct gs_price *gs_price_table_model_at(const struct gs_price_table *t, size_t i)
{
  return i < t->nmodels ? &t->models[i] : NULL;
}

size_t gs_price_table_rows(const struct gs_price_table *t)
{
  return t->nrows;
}

const struct gs_price_row *gs_price_table_row_at(const struct gs_price_table *t, size_t i)
{
  return i < t->nrows ? &t->rows[i] : NULL;
}

const char *gs_price_table_name(const struct gs_price_table *t)
{
  return t->name;
}
