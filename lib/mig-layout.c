/* One GPU's MIG layout as text, "1g.10gb@0 1g.10gb@1 3g.40gb@4" or "off" (see
 * gpuslice/mig-apply.h): reading it against a profile table, and writing it, for a target
 * and for what a GPU holds. The rules a layout must keep are mig-plan.c's. */
#include <gpuslice/mig-apply.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_start(const void *a, const void *b)
{
  return ((const struct gs_mig_instance *) a)->start - ((const struct gs_mig_instance *) b)->start;
}

/* "3g.40gb@4" -> the profile and 4. */
static int parse_item(const struct gs_mig_table *t, const char *model, const char *item, size_t len,
                      struct gs_mig_instance *in, gs_error_t *err)
{
  char name[32];
  const char *at = memchr(item, '@', len);
  size_t nlen = at ? (size_t) (at - item) : len;
  if (!at || nlen == 0 || nlen >= sizeof(name) || len - nlen != 2 || at[1] < '0' || at[1] > '9')
    return gs_make_error(err, 0, "'%.*s': want PROFILE@START, e.g. 1g.10gb@0",
                         (int) (len < 40 ? len : 40), item);
  memcpy(name, item, nlen);
  name[nlen] = '\0';
  in->p = gs_mig_profile_find(t, model, name, err);
  if (!in->p)
    return -1;
  in->start = at[1] - '0';
  in->gpu = 0;
  in->demand = -1;
  return 0;
}

int gs_mig_layout_parse(const struct gs_mig_table *t, const char *model, const char *text,
                        struct gs_mig_target *out, gs_error_t *err)
{
  static const char sep[] = " \t\n,";
  memset(out, 0, sizeof(*out));
  size_t lead = strspn(text, sep), body = strcspn(text + lead, sep);
  if (body == 3 && strncmp(text + lead, "off", 3) == 0 &&
      text[lead + 3 + strspn(text + lead + 3, sep)] == '\0') {
    out->off = true;
    return 0;
  }
  for (const char *p = text + lead; *p; p += strspn(p, sep)) {
    size_t len = strcspn(p, sep);
    if (out->n == GS_MIG_MAX_INSTANCES)
      return gs_make_error(err, 0, "more than %d instances: a GPU holds at most %d",
                           GS_MIG_MAX_INSTANCES, GS_MIG_MAX_INSTANCES);
    if (parse_item(t, model, p, len, &out->inst[out->n], err) < 0)
      return -1;
    out->n++;
    p += len;
  }
  qsort(out->inst, (size_t) out->n, sizeof(out->inst[0]), cmp_start);
  if (gs_mig_gpu_validate(out->inst, out->n, err) < 0)
    return gs_error_prepend(err, "the layout does not fit a %s", model);
  return 0;
}

void gs_mig_layout_format(const struct gs_mig_target *l, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  if (l->off) {
    snprintf(buf, len, "off");
    return;
  }
  for (int i = 0; i < l->n && o < len; i++)
    o += (size_t) snprintf(buf + o, len - o, "%s%s@%d", i ? " " : "", l->inst[i].p->name,
                           l->inst[i].start);
}

void gs_mig_gpu_layout(const struct gs_mig_gpu *g, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  if (!g->mode) {
    snprintf(buf, len, "off");
    return;
  }
  for (int i = 0; i < g->n && o < len; i++)
    o += (size_t) snprintf(buf + o, len - o, "%s%s@%d", i ? " " : "", g->inst[i].profile,
                           g->inst[i].start);
}
