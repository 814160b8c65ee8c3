/* `gpuslice mig plan|profiles|show|apply`: MIG layouts from a list of memory demands, shown
 * the way operators read them (profile@start per GPU), and a model's profile table; the GPUs'
 * MIG mode and instances (mig-show.c); a layout applied to a GPU (mig-apply.c, mig-drain.c);
 * the layout change pending requests want (mig-pending.c). The planning is in lib/mig-plan.c;
 * this file holds the verb's one option table, parses the demand list, and prints. */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/mig.h>
#include <gpuslice/price.h>
#include "cli-json.h"
#include "cli-table.h"
#include "mig-cli.h"

#define MAX_DEMANDS 4096
#define TEXT(x) #x
#define NUMBER_TEXT(x) TEXT(x)
#define GIB 1073741824.0

#define OFF(f) offsetof(struct mig_opts, f)
// clang-format off
static const struct gs_opt mig_entries[] = {
  { .name = "model", .arg = "MODEL", .kind = GS_OPT_STRING, .offset = OFF(model),
    .help = "a100-40gb, a100-80gb, h100-80gb, h100-94gb, h100-96gb, h200-141gb (NVML and data-file "
            "spellings such as 'H100-80GB' work too)" },
  { .name = "demand", .arg = "LIST", .kind = GS_OPT_STRING, .offset = OFF(demand),
    .help = "plan: comma-separated [COUNTx]SIZE or [COUNTx]PROFILE items, e.g. 3x10G,1x35G or "
            "2x3g.40gb,20GiB. SIZE as for --vram (10G = 10^9 bytes, 10GiB = 2^30); add your own headroom. COUNT 1.."
            NUMBER_TEXT(MAX_DEMANDS) "." },
  { .name = "mig-table", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(table),
    .help = "Profile table CSV instead of the built-in one (docs/mig.md)" },
  { .name = "gpu", .arg = "N", .kind = GS_OPT_STRING, .offset = OFF(gpu_text),
    .help = "apply, plan --pending: the GPU (NVML index); show: only this GPU" },
  { .name = "pending", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(pending),
    .help = "plan: propose the layout of GPU --gpu that serves the most pending requests, those in FILE "
            "([COUNTx]SIZE or [COUNTx]PROFILE items, one a line or comma-separated, '#' comments; - for stdin) "
            "and Slurm's pending jobs' MIG-typed GPU GRES, without destroying an instance in use" },
  { .name = "drain", .kind = GS_OPT_FLAG, .offset = OFF(drain),
    .help = "apply: when tenants or processes use what the change takes, cordon the node (Slurm, Kubernetes), "
            "stop them (SIGTERM, then SIGKILL after --grace), apply, and uncordon" },
  { .name = "grace", .arg = "SECONDS", .kind = GS_OPT_DOUBLE, .offset = OFF(grace), .def = "10",
    .min = 0, .max = 3600, .help = "apply --drain: how long stopped processes get before SIGKILL" },
  { .name = "node", .arg = "NAME", .kind = GS_OPT_STRING, .offset = OFF(node),
    .help = "apply --drain: the node's name in Slurm and Kubernetes (default: $SLURMD_NODENAME, $NODE_NAME, "
            "else the short host name)" },
  { .name = "socket", .arg = "PATH", .kind = GS_OPT_STRING, .offset = OFF(socket),
    .help = "apply: the daemon's socket, asked for the tenants (default as for ps)" },
  { .name = "json", .kind = GS_OPT_FLAG, .offset = OFF(json), .help = "Machine-readable output (docs/cli.md)" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_mig_table = {
  .verb = "mig",
  .synopsis = "mig plan --model MODEL --demand LIST [--mig-table FILE] [--json]\n"
              "mig plan --gpu N --pending FILE [--mig-table FILE] [--json]\n"
              "mig profiles --model MODEL [--mig-table FILE] [--json]\n"
              "mig show [--gpu N] [--json]\n"
              "mig apply --gpu N [--drain [--grace SECONDS] [--node NAME]] [--socket PATH] LAYOUT",
  .summary = "Plan MIG layouts, list profiles, show and apply a GPU's MIG layout",
  .intro = "plan: picks the smallest MIG profile that holds each demand and lays the instances onto\n"
           "as few GPUs as it can, at valid start positions, and prints each GPU's layout as\n"
           "profile@start (start = first memory slice, 0..7) and which demand each instance serves.\n"
           "With --pending, proposes the layout of GPU --gpu that places the most pending requests\n"
           "without destroying an instance in use.\n"
           "profiles: lists a model's MIG profiles.\n"
           "show: each GPU's MIG mode and instances, as profile@start.\n"
           "apply: makes GPU --gpu's instances those of LAYOUT (as plan prints it, e.g. '1g.10gb@0\n"
           "3g.40gb@4', or plan's --json, or 'off'; - reads it from stdin) through NVML, keeping the\n"
           "instances that stay. Refused while tenants or processes use what it changes, unless\n"
           "--drain. A failed apply rolls back to the layout the GPU had.\n",
  .outro = "Exit status: 0 success, 1 failure (a GPU in use, a failed and rolled-back apply), 2 usage\n"
           "error (bad demand, unknown model or profile, a layout that does not fit the GPU, a GPU\n"
           "without MIG, a malformed table).\n",
  GS_OPT_ENTRIES(mig_entries),
  .flags = GS_OPTS_PERMUTE,
};
// clang-format on

static bool is(const struct mig_opts *o, const char *sub)
{
  return strcmp(o->sub, sub) == 0;
}

/* --gpu N: an NVML index. */
static int check_gpu(struct mig_opts *o)
{
  char *end = NULL;
  o->gpu = -1;
  if (!o->gpu_text)
    return -1;
  long v = strtol(o->gpu_text, &end, 10);
  if (!*o->gpu_text || *end || v < 0 || v > 63)
    return cli_usage_error("mig", "--gpu: '%s' is not a GPU index", o->gpu_text);
  o->gpu = (int) v;
  return -1;
}

/* What each subcommand needs, and takes: apply alone has an operand, its LAYOUT. */
static int check_needs(int argc, char **argv, int next, struct mig_opts *o)
{
  if (is(o, "apply")) {
    if (next + 1 >= argc)
      return cli_usage_error("mig", "apply: missing LAYOUT (see gpuslice mig --help)");
    o->layout = argv[next + 1];
    if (cli_no_operands("mig", argc, argv, next + 2) >= 0)
      return CLI_USAGE;
  } else if (cli_no_operands("mig", argc, argv, next + 1) >= 0) {
    return CLI_USAGE;
  }
  if ((is(o, "apply") || (is(o, "plan") && o->pending)) && o->gpu < 0)
    return cli_usage_error("mig", "%s: --gpu is required (see gpuslice mig --help)", o->sub);
  if ((is(o, "profiles") || (is(o, "plan") && !o->pending)) && !o->model)
    return cli_usage_error("mig", "--model is required (see gpuslice mig --help)");
  if (is(o, "plan") && !o->demand && !o->pending)
    return cli_usage_error("mig",
                           "plan: --demand is required (or --pending; see gpuslice mig --help)");
  if (is(o, "plan") && o->demand && o->pending)
    return cli_usage_error("mig", "plan: --demand and --pending do not go together");
  return -1;
}

/* The subcommand, and the options it needs. */
static int check_args(int argc, char **argv, int next, struct mig_opts *o)
{
  static const char *const subs[] = { "plan", "profiles", "show", "apply" };
  if (next >= argc)
    return cli_usage_error(
      "mig", "missing subcommand: plan, profiles, show or apply (see gpuslice mig --help)");
  o->sub = argv[next];
  bool known = false;
  for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
    known |= strcmp(o->sub, subs[i]) == 0;
  if (!known)
    return cli_usage_error("mig", "'%s': unknown subcommand, want plan, profiles, show or apply",
                           o->sub);
  int r = check_gpu(o);
  return r >= 0 ? r : check_needs(argc, argv, next, o);
}

static int parse_args(int argc, char **argv, struct mig_opts *o)
{
  int next, r = cli_parse(&cli_mig_table, o, argc, argv, &next);
  return r >= 0 ? r : check_args(argc, argv, next, o);
}

/* One demand item as typed, expanded COUNT times. */
struct demand {
  const char *text; /* points into the typed list */
  size_t text_len;
  uint64_t bytes;                 /* 0 when a profile was named */
  const struct gs_mig_profile *p; /* the profile named, or NULL */
};

/* Any error from here on is about what was typed or the table given: exit 2. */
int mig_input_error(gs_error_t *err)
{
  cli_usage_error("mig", "%s", (*err)->msg);
  gs_error_release(err);
  return CLI_USAGE;
}

/* "3x10G" -> count 3 and "10G"; without "Nx" the count is 1. */
static int split_count(const char *item, size_t len, long *count, size_t *skip)
{
  const char *x = memchr(item, 'x', len);
  *count = 1;
  *skip = 0;
  if (!x || x == item || strspn(item, "0123456789") != (size_t) (x - item))
    return 0;
  *count = strtol(item, NULL, 10);
  *skip = (size_t) (x - item) + 1;
  return *count >= 1 && *count <= MAX_DEMANDS ? 0 : -1;
}

/* Reads one item's size or profile. */
static int parse_item(const struct gs_mig_table *t, const char *model, const char *what,
                      struct demand *d, gs_error_t *err)
{
  if (strchr(what, '.') && strchr(what, 'g') && what[strspn(what, "0123456789")] == 'g') {
    d->p = gs_mig_profile_find(t, model, what, err);
    return d->p ? 0 : -1;
  }
  if (gs_parse_size(what, 0, &d->bytes, err) < 0)
    return -1;
  return 0;
}

/* src names where the items come from in messages: "--demand", "--pending". */
static int add_item(const struct gs_mig_table *t, const char *model, const char *src,
                    const char *item, size_t len, struct demand *out, int *n, gs_error_t *err)
{
  long count;
  size_t skip;
  char what[64];
  if (len == 0 || len >= sizeof(what) || split_count(item, len, &count, &skip) < 0)
    return gs_make_error(err, 0,
                         "%s item '%.*s': want [COUNTx]SIZE or [COUNTx]PROFILE "
                         "with COUNT 1..%d",
                         src, (int) (len < 60 ? len : 60), item, MAX_DEMANDS);
  memcpy(what, item + skip, len - skip);
  what[len - skip] = '\0';
  struct demand d = { item, len, 0, NULL };
  if (parse_item(t, model, what, &d, err) < 0)
    return gs_error_prepend(err, "%s item '%.*s'", src, (int) len, item);
  if (*n + count > MAX_DEMANDS)
    return gs_make_error(err, 0, "%s: more than %d instances", src, MAX_DEMANDS);
  for (long i = 0; i < count; i++)
    out[(*n)++] = d;
  return 0;
}

static int parse_demands(const struct gs_mig_table *t, const char *model, const char *src,
                         const char *list, struct demand *out, int *n, gs_error_t *err)
{
  *n = 0;
  for (const char *p = list;;) {
    size_t len = strcspn(p, ",");
    if (add_item(t, model, src, p, len, out, n, err) < 0)
      return -1;
    if (!p[len])
      return 0;
    p += len + 1;
  }
}

static int choose_profiles(const struct gs_mig_table *t, const char *model, const char *src,
                           struct demand *d, int n, const struct gs_mig_profile **p,
                           gs_error_t *err)
{
  for (int i = 0; i < n; i++) {
    p[i] = d[i].p ? d[i].p : gs_mig_smallest_fit(t, model, d[i].bytes, err);
    if (!p[i])
      return gs_error_prepend(err, "%s item '%.*s'", src, (int) d[i].text_len, d[i].text);
    d[i].p = p[i];
  }
  return 0;
}

int mig_read_demands(const struct gs_mig_table *t, const char *model, const char *src,
                     const char *list, const struct gs_mig_profile **p, int cap, int *n,
                     gs_error_t *err)
{
  struct demand *d = calloc(MAX_DEMANDS, sizeof(*d));
  const struct gs_mig_profile **all = calloc(MAX_DEMANDS, sizeof(*all));
  int r = -1;
  if (!d || !all)
    gs_make_error(err, ENOMEM, "demands");
  else if (parse_demands(t, model, src, list, d, n, err) == 0 &&
           choose_profiles(t, model, src, d, *n, all, err) == 0)
    r = *n <= cap ? 0 : gs_make_error(err, 0, "more than %d requests", cap);
  if (r == 0)
    memcpy(p, all, (size_t) *n * sizeof(*p));
  free(all);
  free(d);
  return r;
}

/* "1g.10gb@0 1g.10gb@1 3g.40gb@4" for GPU g. */
static void layout_line(const struct gs_mig_layout *l, int g, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < l->n && o < len; i++)
    if (l->inst[i].gpu == g)
      o += (size_t) snprintf(buf + o, len - o, "%s%s@%d", o ? " " : "", l->inst[i].p->name,
                             l->inst[i].start);
}

static void print_plan_text(const char *model, const struct gs_mig_layout *l,
                            const struct demand *d)
{
  char line[512];
  printf("%s: %d instance%s on %d GPU%s\n", model, l->n, l->n == 1 ? "" : "s", l->ngpus,
         l->ngpus == 1 ? "" : "s");
  for (int g = 0; g < l->ngpus; g++) {
    layout_line(l, g, line, sizeof(line));
    printf("GPU %d: %s\n", g, line);
    for (int i = 0; i < l->n; i++) {
      const struct gs_mig_instance *in = &l->inst[i];
      if (in->gpu != g)
        continue;
      snprintf(line, sizeof(line), "%s@%d", in->p->name, in->start);
      printf("  %-14s demand %d '%.*s'", line, in->demand + 1, (int) d[in->demand].text_len,
             d[in->demand].text);
      if (d[in->demand].bytes)
        printf(": %.2f GiB in %s%.2f GiB", (double) d[in->demand].bytes / GIB,
               in->p->mem_estimated ? "~" : "", in->p->mem_gib);
      putchar('\n');
    }
  }
}

static json_t *instance_json(const struct gs_mig_instance *in, const struct demand *d)
{
  const struct demand *x = &d[in->demand];
  return json_pack("{s:i, s:s, s:i, s:i, s:i, s:f, s:b, s:i, s:s%, s:o}", "gpu", in->gpu, "profile",
                   in->p->name, "start", in->start, "mem_slices", in->p->mem_slices,
                   "compute_slices", in->p->compute_slices, "mem_gib", in->p->mem_gib,
                   "mem_estimated", in->p->mem_estimated, "demand", in->demand + 1, "demand_text",
                   x->text, x->text_len, "demand_bytes",
                   x->bytes ? json_integer((json_int_t) x->bytes) : json_null());
}

static void print_plan_json(const char *model, const struct gs_mig_layout *l,
                            const struct demand *d)
{
  char line[512];
  json_t *layout = json_array(), *inst = json_array();
  for (int g = 0; g < l->ngpus; g++) {
    layout_line(l, g, line, sizeof(line));
    json_array_append_new(layout, json_string(line));
  }
  for (int i = 0; i < l->n; i++)
    json_array_append_new(inst, instance_json(&l->inst[i], d));
  json_print_compact(json_pack("{s:s, s:i, s:o, s:o}", "model", model, "gpus", l->ngpus, "layout",
                               layout, "instances", inst));
}

static int mig_plan(const struct mig_opts *o, const struct gs_mig_table *t, const char *model)
{
  gs_error_t err = NULL;
  struct demand *d = calloc(MAX_DEMANDS, sizeof(*d));
  const struct gs_mig_profile **p = calloc(MAX_DEMANDS, sizeof(*p));
  struct gs_mig_layout l = { 0 };
  int n, r = CLI_OK;
  if (!d || !p) {
    r = cli_fail("mig", (gs_make_error(&err, ENOMEM, "plan"), &err));
  } else if (parse_demands(t, model, "--demand", o->demand, d, &n, &err) < 0 ||
             choose_profiles(t, model, "--demand", d, n, p, &err) < 0) {
    r = mig_input_error(&err);
  } else if (gs_mig_plan_profiles(p, n, &l, &err) < 0) {
    r = cli_fail("mig", &err);
  } else if (o->json) {
    print_plan_json(model, &l, d);
  } else {
    print_plan_text(model, &l, d);
  }
  gs_mig_layout_free(&l);
  free(p);
  free(d);
  return r;
}

/* "0|4" from a start mask. */
static const char *starts_text(uint8_t mask, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  for (int s = 0; s < GS_MIG_POSITIONS && o < len; s++)
    if (mask & (1u << s))
      o += (size_t) snprintf(buf + o, len - o, "%s%d", o ? "|" : "", s);
  return buf;
}

static void print_profiles_text(const struct gs_mig_profile *p, size_t n)
{
  static const char *const head[] = { "PROFILE", "COMPUTE", "MEMORY", "MEM_GIB",
                                      "MAX",     "STARTS",  "MEDIA" };
  struct table *tb = table_new(7, "lrrrrll", head);
  for (size_t i = 0; i < n; i++) {
    char c[16], m[16], g[24], mx[16], st[32];
    snprintf(c, sizeof(c), "%d/7", p[i].compute_slices);
    snprintf(m, sizeof(m), "%d/8", p[i].mem_slices);
    snprintf(g, sizeof(g), "%s%.2f", p[i].mem_estimated ? "~" : "", p[i].mem_gib);
    snprintf(mx, sizeof(mx), "%d", p[i].max_instances);
    const char *row[] = {
      p[i].name, c, m, g, mx, starts_text(p[i].start_mask, st, sizeof(st)), p[i].media ? "+me" : ""
    };
    table_add(tb, row);
  }
  table_print(tb, stdout);
  table_free(tb);
}

static void print_profiles_json(const char *model, const struct gs_mig_profile *p, size_t n)
{
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *starts = json_array();
    for (int s = 0; s < GS_MIG_POSITIONS; s++)
      if (p[i].start_mask & (1u << s))
        json_array_append_new(starts, json_integer(s));
    json_array_append_new(a,
                          json_pack("{s:s, s:i, s:i, s:i, s:o, s:f, s:b, s:b}", "profile",
                                    p[i].name, "compute_slices", p[i].compute_slices, "mem_slices",
                                    p[i].mem_slices, "max_instances", p[i].max_instances, "starts",
                                    starts, "mem_gib", p[i].mem_gib, "mem_estimated",
                                    p[i].mem_estimated, "media", p[i].media));
  }
  json_print_compact(json_pack("{s:s, s:o}", "model", model, "profiles", a));
}

static int mig_profiles(const struct mig_opts *o, const struct gs_mig_profile *p, size_t n)
{
  if (o->json)
    print_profiles_json(p->model, p, n);
  else
    print_profiles_text(p, n);
  return CLI_OK;
}

int cli_mig(int argc, char **argv)
{
  struct mig_opts o = { 0 };
  int r = parse_args(argc, argv, &o);
  if (r >= 0)
    return r;
  if (is(&o, "show"))
    return mig_show(&o);
  gs_error_t err = NULL;
  struct gs_mig_table *t = NULL;
  size_t n;
  if ((o.table ? gs_mig_table_load(o.table, &t, &err) : gs_mig_table_default(&t, &err)) < 0)
    return mig_input_error(&err);
  if (is(&o, "apply") || o.pending) {
    r = is(&o, "apply") ? mig_apply(&o, t) : mig_plan_pending(&o, t);
    gs_mig_table_free(t);
    return r;
  }
  const struct gs_mig_profile *p = gs_mig_profiles(t, o.model, &n, &err);
  if (!p)
    r = mig_input_error(&err);
  else if (strcmp(o.sub, "profiles") == 0)
    r = mig_profiles(&o, p, n);
  else
    r = mig_plan(&o, t, p->model);
  gs_mig_table_free(t);
  return r;
}
