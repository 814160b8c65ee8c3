/* The daemon's `sharing` setting: how each GPU is shared. `timeslice` (software fractions
 * taking turns, the default), `mps` (the daemon runs an MPS control daemon for it, mps.c) or
 * `mig:<layout>` (the MIG layout the GPU should have, as `gpuslice mig plan` prints it).
 *
 * The value is `[GPU=]MODE` items separated by ';', e.g. "timeslice" (every GPU), "mps" or
 * "0=mps; 1=mig:1g.10gb@0 1g.10gb@1 3g.40gb@4" (GPU 0 MPS, GPU 1 that layout, the others
 * time-sliced): an item without GPU= sets the GPUs no other item names. Its syntax is checked
 * with the other settings (exit 2); at start, each mig: layout against its GPU's model and the
 * MIG table (a GPU without MIG, a layout that does not fit: exit 2), and a GPU whose layout is
 * not the one configured is logged with the command that applies it. The daemon reports the
 * mode (GET /v1/gpus, `gpuslice gpus`, /metrics, the Kubernetes and Slurm integrations); it
 * changes no MIG layout on its own: `gpuslice mig apply` does, draining what it must. */
#include "daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/gpu-model.h>
#include <gpuslice/mig-apply.h>

#define SEP " \t"

static int parse_mode(const char *s, size_t len, struct sharing_gpu *g, gs_error_t *err)
{
  while (len && strchr(SEP, s[len - 1]))
    len--;
  memset(g, 0, sizeof(*g));
  g->set = true;
  if (len == 9 && strncmp(s, "timeslice", 9) == 0) {
    g->kind = SHARING_TIMESLICE;
  } else if (len == 3 && strncmp(s, "mps", 3) == 0) {
    g->kind = SHARING_MPS;
  } else if (len > 4 && strncmp(s, "mig:", 4) == 0 && len - 4 < sizeof(g->layout)) {
    g->kind = SHARING_MIG;
    memcpy(g->layout, s + 4, len - 4);
  } else {
    return gs_make_error(err, 0, "'%.*s': want timeslice, mps or mig:LAYOUT",
                         (int) (len < 60 ? len : 60), s);
  }
  return 0;
}

static int parse_item(const char *s, size_t len, struct daemon_sharing *out, gs_error_t *err)
{
  size_t lead = strspn(s, SEP), digits = strspn(s + lead, "0123456789");
  struct sharing_gpu g;
  if (digits && s[lead + digits] == '=') {
    long index = strtol(s + lead, NULL, 10);
    if (index >= GS_LEDGER_MAX_GPUS)
      return gs_make_error(err, 0, "GPU %ld: at most %d GPUs", index, GS_LEDGER_MAX_GPUS);
    if (parse_mode(s + lead + digits + 1, len - lead - digits - 1, &g, err) < 0)
      return -1;
    if (out->gpu[index].set)
      return gs_make_error(err, 0, "GPU %ld is named twice", index);
    out->gpu[index] = g;
    return 0;
  }
  if (parse_mode(s + lead, len - lead, &g, err) < 0)
    return -1;
  if (out->dflt.set)
    return gs_make_error(err, 0, "two items without GPU=");
  out->dflt = g;
  return 0;
}

int sharing_parse(const char *text, struct daemon_sharing *out, gs_error_t *err)
{
  memset(out, 0, sizeof(*out));
  for (const char *p = text ? text : "";;) {
    size_t len = strcspn(p, ";");
    if (p[strspn(p, SEP)] != ';' && p[strspn(p, SEP)] != '\0' && parse_item(p, len, out, err) < 0)
      return gs_error_prepend(err, "sharing");
    if (!p[len])
      break;
    p += len + 1;
  }
  if (!out->dflt.set)
    out->dflt = (struct sharing_gpu){ .kind = SHARING_TIMESLICE, .set = true };
  return 0;
}

bool sharing_valid(const char *text)
{
  struct daemon_sharing s;
  gs_error_t err = NULL;
  int r = sharing_parse(text, &s, &err);
  gs_error_release(&err);
  return r == 0;
}

const struct sharing_gpu *sharing_of(const struct daemon_sharing *s, int gpu)
{
  return gpu >= 0 && gpu < GS_LEDGER_MAX_GPUS && s->gpu[gpu].set ? &s->gpu[gpu] : &s->dflt;
}

void sharing_text(const struct sharing_gpu *g, char *buf, size_t len)
{
  static const char *const names[] = { "timeslice", "mps", "mig" };
  if (g->kind == SHARING_MIG)
    snprintf(buf, len, "mig:%s", g->layout);
  else
    snprintf(buf, len, "%s", names[g->kind]);
}

/* A configured layout, against GPU g's model: written back in the planner's order. */
static int check_mig(const struct gs_mig_table *t, const struct gs_snap_gpu *g,
                     struct sharing_gpu *s, gs_error_t *err)
{
  char model[32];
  struct gs_mig_target target;
  size_t n;
  if (gs_gpu_model_canon(g->model, model, sizeof(model), err) < 0 ||
      !gs_mig_profiles(t, model, &n, err))
    return gs_make_error(err, 0, "sharing: GPU %d (%s) has no MIG", g->index, g->model);
  if (gs_mig_layout_parse(t, model, s->layout, &target, err) < 0)
    return gs_error_prepend(err, "sharing: GPU %d", g->index);
  if (target.off)
    return gs_make_error(err, 0, "sharing: GPU %d: mig:off is timeslice", g->index);
  gs_mig_layout_format(&target, s->layout, sizeof(s->layout));
  return 0;
}

/* Whether the GPU holds the layout's profiles, each as often: the snapshot has its GPU
 * instances by id, not by start, which is enough to tell that a layout is not the one set. */
static bool holds(const struct gs_snap_gpu *g, const char *layout)
{
  bool used[GS_SNAP_MIG_MAX] = { false };
  int n = 0;
  for (const char *p = layout; *p; p += strspn(p, " ")) {
    size_t len = strcspn(p, "@");
    int k = 0;
    while (k < g->nmig &&
           (used[k] || strlen(g->mig[k].profile) != len || strncmp(g->mig[k].profile, p, len)))
      k++;
    if (k == g->nmig)
      return false;
    used[k] = true;
    n++;
    p += strcspn(p, " ");
  }
  return n == g->nmig;
}

static void warn_if_other(const struct gs_snap_gpu *g, const struct sharing_gpu *s)
{
  if (!holds(g, s->layout))
    GS_LOG(
      GS_LOG_WARN,
      "GPU %d: sharing says mig:%s, which the GPU does not have (it has %d MIG instances): apply "
      "it with gpuslice mig apply --gpu %d --drain '%s'",
      g->index, s->layout, g->nmig, g->index, s->layout);
}

int sharing_resolve(struct daemon_sharing *s, const struct gs_snapshot *snap, gs_error_t *err)
{
  struct gs_mig_table *t = NULL;
  int r = 0;
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++)
    if (s->gpu[i].set && i >= snap->ngpus)
      return gs_make_error(err, 0, "sharing: GPU %d: there %s %d GPU%s", i,
                           snap->ngpus == 1 ? "is" : "are", snap->ngpus,
                           snap->ngpus == 1 ? "" : "s");
  if (gs_mig_table_default(&t, err) < 0)
    return -1;
  for (int i = 0; i < snap->ngpus && r == 0; i++) {
    struct sharing_gpu *g = s->gpu[i].set ? &s->gpu[i] : NULL;
    if (!g && s->dflt.kind == SHARING_MIG) {
      s->gpu[i] = s->dflt; /* each GPU's layout is checked against its own model */
      g = &s->gpu[i];
    }
    if (g && g->kind == SHARING_MIG && (r = check_mig(t, &snap->gpus[i], g, err)) == 0)
      warn_if_other(&snap->gpus[i], g);
  }
  gs_mig_table_free(t);
  return r;
}
