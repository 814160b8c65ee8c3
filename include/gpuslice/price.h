/* GPU prices per GPU-hour, and the one function that names GPU models.
 *
 * A price table is a CSV with a header line; columns are found by name, so the table
 * shipped in data/prices/ (provider,region,sku,gpu,gpus,od_hr,od_gpu_hr,spot_hr,
 * spot_gpu_hr,commit1y_gpu_hr,commit3y_gpu_hr,source,as_of) and a user's smaller table
 * (gpu,od_gpu_hr[,spot_gpu_hr,commit1y_gpu_hr,commit3y_gpu_hr,source,as_of]) read alike.
 * Required columns: gpu and od_gpu_hr. An empty cell means "unknown". Lines starting
 * with '#' are comments. The first bad line refuses the file: "<file>: line N: <reason>".
 *
 * A table may hold several rows (providers, SKUs) per model. The rates used for a model:
 *   - on-demand: the lower median of the rows' on-demand rates (for an even count, the
 *     lower of the two middle values), so that one outlier provider does not set the price
 *     and savings are never overstated by averaging;
 *   - spot, 1-year and 3-year commitment: on-demand x the lower median of (rate / on-demand)
 *     over the rows that publish both, so a provider's discount is never measured against
 *     another provider's on-demand price. NAN when no row has the rate.
 * A table with one row per model gives exactly its rows' rates. See docs/cost.md.
 *
 * The default table is data/prices/gpu_prices.csv, embedded at build time. */
#ifndef GS_PRICE_H
#define GS_PRICE_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/error.h>
#include <gpuslice/gpu-model.h>

/* ---- prices ---- */

/* Rates for one model, in $ per GPU-hour; NAN where unknown. */
struct gs_price {
  char model[24]; /* canonical, see gs_gpu_model_canon */
  double on_demand, spot, commit_1y, commit_3y;
  char source[160]; /* where the rates come from (one row's source, or a summary) */
  char as_of[16];   /* the latest date among the rows used, YYYY-MM-DD, or "" */
  int rows;         /* how many table rows the rates were derived from */
};

/* One row of the table as read (for `gpuslice prices`). */
struct gs_price_row {
  char provider[24], region[24], sku[32];
  char model[24];                               /* canonical */
  int gpus;                                     /* GPUs in the SKU, 0 when the column is absent */
  double on_demand, spot, commit_1y, commit_3y; /* per GPU-hour; NAN if empty */
  char source[160];
  char as_of[16];
  int line; /* line number in the file */
};

struct gs_price_table; /* opaque */

int gs_price_table_default(struct gs_price_table **out, gs_error_t *err); /* built-in */
int gs_price_table_load(const char *csv_path, struct gs_price_table **out, gs_error_t *err);
/* Parses CSV text held in memory; name is used in error messages. */
int gs_price_table_parse(const char *text, size_t len, const char *name,
                         struct gs_price_table **out, gs_error_t *err);
void gs_price_table_free(struct gs_price_table *t);

/* The derived per-model rates. NULL with "no price for model 'x' in <table>" when the table
 * has no row for it; the model name goes through gs_gpu_model_canon first. */
const struct gs_price *gs_price_find(const struct gs_price_table *t, const char *model,
                                     gs_error_t *err);

/* Iteration: per-model rates (sorted by model) and raw rows (file order). */
size_t gs_price_table_models(const struct gs_price_table *t);
const struct gs_price *gs_price_table_model_at(const struct gs_price_table *t, size_t i);
size_t gs_price_table_rows(const struct gs_price_table *t);
const struct gs_price_row *gs_price_table_row_at(const struct gs_price_table *t, size_t i);
/* "built-in (data/prices/gpu_prices.csv)" or the path loaded. */
const char *gs_price_table_name(const struct gs_price_table *t);

#endif
