/* libFuzzer target for the MIG profile and price table readers (--mig-table, --prices): the
 * first byte picks the reader (odd: MIG, even: prices), the rest is the file. A table that
 * reads must also plan: every layout gs_mig_plan makes from it must pass the validity check,
 * and every model in a price table must have an on-demand rate. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/mig.h>
#include <gpuslice/price.h>

static void check_one_line(gs_error_t *err)
{
  if (*err && strchr((*err)->msg, '\n'))
    abort(); /* errors are one line: the CLI prints them as they are */
  gs_error_release(err);
}

/* Plans a mix of demands on the first model of the table and checks each GPU's layout. */
static void plan_first_model(const struct gs_mig_table *t, const struct gs_mig_profile *p, size_t n)
{
  const struct gs_mig_profile *mix[16];
  struct gs_mig_layout l;
  gs_error_t err = NULL;
  for (size_t i = 0; i < 16; i++)
    mix[i] = &p[(i * 7) % n];
  if (gs_mig_plan_profiles(mix, 16, &l, &err) == 0) {
    for (int i = 0, j; i < l.n; i = j) {
      for (j = i; j < l.n && l.inst[j].gpu == l.inst[i].gpu; j++)
        ;
      if (gs_mig_gpu_validate(&l.inst[i], j - i, &err) < 0)
        abort();
    }
    gs_mig_layout_free(&l);
  }
  check_one_line(&err);
  uint64_t bytes[3] = { 1, 10ULL << 30, 60ULL << 30 };
  if (gs_mig_plan(t, p->model, bytes, 3, &l, &err) == 0)
    gs_mig_layout_free(&l);
  check_one_line(&err);
}

static void fuzz_mig(const char *text, size_t len)
{
  struct gs_mig_table *t = NULL;
  gs_error_t err = NULL;
  if (gs_mig_table_parse(text, len, "fuzz.csv", &t, &err) == 0) {
    const char *const *models = gs_gpu_models();
    for (size_t i = 0; models[i]; i++) {
      size_t n;
      const struct gs_mig_profile *p = gs_mig_profiles(t, models[i], &n, &err);
      if (p)
        plan_first_model(t, p, n);
      check_one_line(&err);
    }
    gs_mig_table_free(t);
  }
  check_one_line(&err);
}

static void fuzz_prices(const char *text, size_t len)
{
  struct gs_price_table *t = NULL;
  gs_error_t err = NULL;
  if (gs_price_table_parse(text, len, "fuzz.csv", &t, &err) == 0) {
    for (size_t i = 0; i < gs_price_table_models(t); i++) {
      const struct gs_price *p = gs_price_table_model_at(t, i);
      if (isnan(p->on_demand) || gs_price_find(t, p->model, &err) != p)
        abort();
    }
    gs_price_table_free(t);
  }
  check_one_line(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  /* A copy of exactly the file's bytes, so that ASan sees any read past its end. */
  char *text = malloc(size - 1 ? size - 1 : 1);
  if (!text)
    return 0;
  memcpy(text, data + 1, size - 1);
  if (data[0] & 1)
    fuzz_mig(text, size - 1);
  else
    fuzz_prices(text, size - 1);
  free(text);
  return 0;
}
