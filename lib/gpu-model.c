/* gs_gpu_model_canon: one spelling for each GPU model, whatever wrote the name (the
 * simulator, the MIG and price tables, NVML). Declared in gpuslice/gpu-model.h. Only names;
 * what a model can do lives in the MIG table and the simulator's catalogue. */
#include <gpuslice/gpu-model.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const canon_names[] = {
  "t4",        "l4",        "a10g",      "l40s",       "a100-40gb",  "a100-80gb",
  "h100-80gb", "h100-94gb", "h100-96gb", "h200-141gb", "b200-180gb", NULL,
};

/* Other spellings, after normalizing (see normalize()). */
static const struct {
  const char *alias, *canon;
} aliases[] = {
  { "t4-16gb", "t4" },      { "l4-24gb", "l4" },          { "a10g-24gb", "a10g" },
  { "l40s-48gb", "l40s" },  { "h100", "h100-80gb" },      { "h100-nvl", "h100-94gb" },
  { "h200", "h200-141gb" }, { "h200-nvl", "h200-141gb" }, { "b200", "b200-180gb" },
};

/* Words that say how a GPU is packaged, not which one it is. */
static const char *const noise[] = { "nvidia", "tesla", "sxm",  "sxm4",
                                     "sxm5",   "pcie",  "hbm3", "hbm3e" };

static int is_noise(const char *w, size_t n)
{
  for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++)
    if (strlen(noise[i]) == n && strncmp(noise[i], w, n) == 0)
      return 1;
  return 0;
}

/* Lowercases, drops "(...)" remarks and packaging words, and joins the words with '-':
 * "NVIDIA A100-SXM4-40GB" -> "a100-40gb", "H100-80GB(SXM5 HBM3)" -> "h100-80gb". */
static void normalize(const char *in, char *out, size_t len)
{
  char low[96];
  size_t n = 0, o = 0;
  int depth = 0;
  for (const char *p = in; *p && n + 1 < sizeof(low); p++) {
    depth += *p == '(' ? 1 : *p == ')' && depth ? -1 : 0;
    if (!depth && *p != ')')
      low[n++] = (char) tolower((unsigned char) *p);
  }
  low[n] = '\0';
  for (char *w = low; *w;) {
    size_t wl = strcspn(w, " -_\t");
    if (wl && !is_noise(w, wl) && o + wl + 2 < len) {
      if (o)
        out[o++] = '-';
      memcpy(out + o, w, wl);
      o += wl;
    }
    w += wl + (w[wl] != '\0');
  }
  out[o] = '\0';
}

const char *const *gs_gpu_models(void)
{
  return canon_names;
}

static const char *lookup(const char *norm)
{
  for (size_t i = 0; canon_names[i]; i++)
    if (strcmp(canon_names[i], norm) == 0)
      return canon_names[i];
  for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
    if (strcmp(aliases[i].alias, norm) == 0)
      return aliases[i].canon;
  return NULL;
}

int gs_gpu_model_canon(const char *in, char *out, size_t len, gs_error_t *err)
{
  char norm[96];
  normalize(in ? in : "", norm, sizeof(norm));
  const char *c = lookup(norm);
  if (!c) {
    char known[256] = "";
    for (size_t i = 0; canon_names[i]; i++)
      snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
               canon_names[i]);
    return gs_make_error(err, 0, "unknown GPU model '%s' (known: %s)", in ? in : "", known);
  }
  if (strlen(c) >= len)
    return gs_make_error(err, 0, "GPU model '%s': name buffer too small", c);
  memcpy(out, c, strlen(c) + 1);
  return 0;
}
