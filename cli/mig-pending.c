/* `gpuslice mig plan --gpu N --pending FILE`: the layout change of GPU N that serves the most
 * pending requests without destroying an instance in use (lib/mig-pending.c), to apply with
 * `gpuslice mig apply`: what it changes no process uses, so no drain is needed.
 *
 * The requests: FILE's lines (the --demand syntax, [COUNTx]SIZE or [COUNTx]PROFILE, commas or
 * one a line, '#' comments; - reads stdin), and Slurm's pending jobs where squeue runs: each
 * pending job's GPU GRES typed with one of the GPU's MIG profiles (--gres=gpu:1g.10gb:2, as
 * Slurm's MIG support names them) is that many requests. The daemon keeps no queue of its
 * own: a tenant it cannot place is not started, so it has no pending requests to give. */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-json.h"
#include "mig-cli.h"

#define FILE_MAX (1024 * 1024)
#define SQUEUE_MAX (256 * 1024)

/* FILE (or stdin) as one comma list: comments and blank lines out. NULL with err. */
static char *read_requests(const char *path, gs_error_t *err)
{
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  if (!f) {
    gs_make_error(err, errno, "--pending '%s'", path);
    return NULL;
  }
  char *out = calloc(1, FILE_MAX + 1), line[4096];
  size_t o = 0;
  while (out && fgets(line, sizeof(line), f)) {
    line[strcspn(line, "#\n")] = '\0';
    char *p = line + strspn(line, " \t");
    size_t len = strlen(p);
    while (len && strchr(" \t,", p[len - 1]))
      p[--len] = '\0';
    if (len && o + len + 2 < FILE_MAX)
      o += (size_t) snprintf(out + o, FILE_MAX - o, "%s%s", o ? "," : "", p);
  }
  if (f != stdin)
    fclose(f);
  return out;
}

/* "gres/gpu:1g.10gb:2" (or "gpu:1g.10gb", count 1) with a profile of t for model: "2x1g.10gb". */
static bool slurm_item(const struct gs_mig_table *t, const char *model, const char *tok, char *out,
                       size_t len)
{
  char type[32];
  gs_error_t err = NULL;
  const char *g = strstr(tok, "gpu:");
  if (!g)
    return false;
  g += 4;
  size_t tl = strcspn(g, ":");
  if (tl == 0 || tl >= sizeof(type))
    return false;
  memcpy(type, g, tl);
  type[tl] = '\0';
  bool known = gs_mig_profile_find(t, model, type, &err) != NULL;
  gs_error_release(&err);
  long count = g[tl] == ':' ? strtol(g + tl + 1, NULL, 10) : 1;
  if (!known || count < 1 || count > 64)
    return false;
  snprintf(out, len, "%ldx%s", count, type);
  return true;
}

/* Slurm's pending jobs' MIG requests, appended to list (its room len); how many items, -1 when
 * squeue is not here, -2 when it failed. */
static int slurm_requests(const struct gs_mig_table *t, const char *model, char *list, size_t len)
{
  static const char *const argv[] = { "squeue", "--states=PENDING", "--noheader", "--format=%b",
                                      NULL };
  if (!mig_on_path("squeue"))
    return -1;
  char *out = calloc(1, SQUEUE_MAX), item[64];
  int n = 0;
  if (!out || mig_run_tool(argv, out, SQUEUE_MAX) != 0)
    n = -2;
  else
    for (char *tok = strtok(out, ",\n "); tok; tok = strtok(NULL, ",\n "))
      if (slurm_item(t, model, tok, item, sizeof(item)) && strlen(list) + strlen(item) + 2 < len) {
        snprintf(list + strlen(list), len - strlen(list), "%s%s", list[0] ? "," : "", item);
        n++;
      }
  free(out);
  return n;
}

static void busy_text(const struct gs_mig_gpu *g, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < g->n && o < len; i++)
    if (g->inst[i].npids)
      o += (size_t) snprintf(buf + o, len - o, "%s%s@%d", o ? " " : "", g->inst[i].profile,
                             g->inst[i].start);
}

static void print_text(const struct mig_opts *o, const struct gs_mig_gpu *g,
                       const struct gs_mig_pending *p, int slurm)
{
  char now[512], want[512], busy[512];
  gs_mig_gpu_layout(g, now, sizeof(now));
  gs_mig_layout_format(&p->target, want, sizeof(want));
  busy_text(g, busy, sizeof(busy));
  printf("GPU %d (%s): %d of %d pending request%s served (%d by the layout now)\n", o->gpu,
         g->model, p->placed, p->nrequests, p->nrequests == 1 ? "" : "s", p->placed_now);
  printf("now:      %s%s%s%s\n", now[0] ? now : "(none)", busy[0] ? " (in use: " : "", busy,
         busy[0] ? ")" : "");
  printf("proposed: %s\n", want[0] ? want : "(none)");
  if (slurm == -1)
    printf("Slurm: no squeue here, no pending jobs read\n");
  else if (slurm == -2)
    printf("Slurm: squeue failed, no pending jobs read\n");
  else
    printf("Slurm: %d pending job request%s\n", slurm, slurm == 1 ? "" : "s");
  if (strcmp(now, want) != 0)
    printf("apply: gpuslice mig apply --gpu %d '%s'\n", o->gpu, want);
}

static void print_json(const struct mig_opts *o, const struct gs_mig_gpu *g,
                       const struct gs_mig_pending *p, const struct gs_mig_profile *const *req,
                       int slurm)
{
  char now[512], want[512];
  json_t *busy = json_array(), *reqs = json_array();
  gs_mig_gpu_layout(g, now, sizeof(now));
  gs_mig_layout_format(&p->target, want, sizeof(want));
  for (int i = 0; i < g->n; i++)
    if (g->inst[i].npids)
      json_array_append_new(busy, json_sprintf("%s@%d", g->inst[i].profile, g->inst[i].start));
  for (int i = 0; i < p->nrequests; i++)
    json_array_append_new(reqs,
                          json_pack("{s:s, s:b}", "profile", req[i]->name, "served", p->served[i]));
  json_print_compact(json_pack("{s:i, s:s, s:s, s:s, s:o, s:i, s:i, s:i, s:o, s:o}", "gpu", o->gpu,
                               "model", g->model, "current", now, "proposed", want, "in_use", busy,
                               "placed_current", p->placed_now, "placed_proposed", p->placed,
                               "kept", p->nkept, "slurm_requests",
                               slurm < 0 ? json_null() : json_integer(slurm), "requests", reqs));
}

static int propose(const struct mig_opts *o, const struct gs_mig_table *t,
                   const struct gs_mig_gpu *g)
{
  gs_error_t err = NULL;
  const struct gs_mig_profile **req = calloc(GS_MIG_MAX_REQUESTS, sizeof(*req));
  char *list = read_requests(o->pending, &err);
  struct gs_mig_pending *p = calloc(1, sizeof(*p));
  int n = 0, r = CLI_OK;
  int slurm = list ? slurm_requests(t, g->model, list, FILE_MAX) : -1;
  if (!req || !p)
    r = cli_fail("mig", (gs_make_error(&err, ENOMEM, "pending requests"), &err));
  else if (!list)
    r = mig_input_error(&err);
  else if (list[0] &&
           mig_read_demands(t, g->model, "--pending", list, req, GS_MIG_MAX_REQUESTS, &n, &err) < 0)
    r = mig_input_error(&err);
  else if (gs_mig_plan_pending(t, g->model, g, req, n, p, &err) < 0)
    r = cli_fail("mig", &err);
  else if (o->json)
    print_json(o, g, p, req, slurm);
  else
    print_text(o, g, p, slurm);
  free(p);
  free(list);
  free(req);
  return r;
}

int mig_plan_pending(const struct mig_opts *o, const struct gs_mig_table *t)
{
  struct gs_mig_nvml *n;
  struct gs_mig_gpu g;
  gs_error_t err = NULL;
  size_t np;
  int r = mig_open_gpu(o, &n, &g);
  if (r != CLI_OK)
    return r;
  gs_mig_nvml_close(n);
  if (!g.capable)
    return cli_usage_error("mig", "GPU %d (%s) has no MIG", o->gpu, g.name);
  if (!g.model[0] || !gs_mig_profiles(t, g.model, &np, &err)) {
    gs_error_release(&err);
    return cli_usage_error("mig", "GPU %d (%s): no MIG profiles for it in the table", o->gpu,
                           g.name);
  }
  return propose(o, t, &g);
}
