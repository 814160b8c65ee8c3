/* `gpuslice slurm gres`: the slurm.conf, gres.conf and plugstack.conf lines for the node's
 * GPUs as NVML sees them (the simulated GPU under GPUSLICE_SIM), with shards of each GPU for
 * the SPANK plugin's shard fractions (docs/slurm.md). What the plugin does with them is
 * integrations/slurm/'s; the GPUs are read through the daemon's NVML module.
 *
 * How each GPU is shared (the daemon's sharing setting, asked of the daemon when one answers)
 * becomes the node's Slurm features (gpuslice-mps, gpuslice-mig, gpuslice-timeslice; left out
 * when every GPU is time-sliced), a comment per GPU, and for a GPU in MPS mode Slurm's own
 * gres/mps (Count=100: a job's --gres=mps:N is its percent of the GPU). */
#include "cli.h"
#include "daemon.h"

#include <gpuslice/daemon-client.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gpuslice/fs.h>
#include <gpuslice/snapshot.h>

struct slurm_opts {
  long long shards;
  const char *node, *dev_dir, *plugin, *socket;
};

#define SHARING_TEXT 160

static int set_node(void *opts, const char *arg, gs_error_t *err)
{
  if (!*arg || strcspn(arg, " \t\n=#,") != strlen(arg))
    return gs_make_error(err, 0, "--node: '%s' is not a node name", arg);
  ((struct slurm_opts *) opts)->node = arg;
  return 0;
}

static int check_abs(const char *opt, const char *arg, gs_error_t *err)
{
  if (arg[0] != '/' || strcspn(arg, " \t\n") != strlen(arg))
    return gs_make_error(err, 0, "--%s: '%s' is not an absolute path without spaces", opt, arg);
  return 0;
}

static int set_dev_dir(void *opts, const char *arg, gs_error_t *err)
{
  ((struct slurm_opts *) opts)->dev_dir = arg;
  return check_abs("dev-dir", arg, err);
}

static int set_plugin(void *opts, const char *arg, gs_error_t *err)
{
  ((struct slurm_opts *) opts)->plugin = arg;
  return check_abs("plugin", arg, err);
}

#define OFF(f) offsetof(struct slurm_opts, f)
// clang-format off
static const struct gs_opt slurm_entries[] = {
  { .name = "shards", .arg = "N", .kind = GS_OPT_INT, .offset = OFF(shards), .def = "0", .max = 1000,
    .want = "a whole number of shards per GPU, 0..1000",
    .help = "Shards per GPU, for --gres=shard:N (0: no shard lines)" },
  { .name = "node", .arg = "NAME", .kind = GS_OPT_CALL, .parse = set_node,
    .help = "The node's name in slurm.conf (default: the short host name)" },
  { .name = "dev-dir", .arg = "DIR", .kind = GS_OPT_CALL, .parse = set_dev_dir,
    .help = "Where the GPUs' device files are (default /dev)" },
  { .name = "plugin", .arg = "PATH", .kind = GS_OPT_CALL, .parse = set_plugin,
    .help = "The SPANK plugin's path for plugstack.conf (default: gpuslice_spank.so beside the interposer)" },
  { .name = "socket", .arg = "PATH", .kind = GS_OPT_STRING, .offset = OFF(socket),
    .help = "The daemon's socket, asked how each GPU is shared (default as for ps; no daemon: time-sliced)" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef OFF

// clang-format off
const struct gs_opt_table cli_slurm_table = {
  .verb = "slurm",
  .synopsis = "slurm gres [--shards N] [--node NAME] [--dev-dir DIR] [--plugin PATH] [--socket PATH]",
  .summary = "Print the Slurm configuration lines for this node's GPUs",
  .intro = "gres: prints the lines for slurm.conf (GresTypes, the node's Gres=), gres.conf (one gpu\n"
           "line per GPU, and the shards) and plugstack.conf (the SPANK plugin with shards_per_gpu)\n"
           "for the GPUs NVML sees on this node (the simulated ones under GPUSLICE_SIM). How each GPU\n"
           "is shared, as the daemon says, adds the node's features (gpuslice-mps, gpuslice-mig) and,\n"
           "for a GPU in MPS mode, Slurm's gres/mps.\n",
  .outro = "Exit status: 0 success, 1 failure (no NVML, no GPU), 2 usage error.\n",
  GS_OPT_ENTRIES(slurm_entries),
  .flags = GS_OPTS_PERMUTE,
};
// clang-format on

static int parse_args(int argc, char **argv, struct slurm_opts *o)
{
  int next, r = cli_parse(&cli_slurm_table, o, argc, argv, &next);
  if (r >= 0)
    return r;
  if (next >= argc)
    return cli_usage_error("slurm", "missing subcommand: gres (see gpuslice slurm --help)");
  if (strcmp(argv[next], "gres") != 0)
    return cli_usage_error("slurm", "'%s': unknown subcommand, want gres", argv[next]);
  return cli_no_operands("slurm", argc, argv, next + 1);
}

/* The GPUs' device names ("nvidia0", ...) and the first one's model, through NVML. */
static int read_gpus(char dev[][16], int *n, char *model, size_t len, gs_error_t *err)
{
  struct nvml *nvml = NULL;
  struct gs_snap_gpu g;
  if (nvml_open(&nvml, err) < 0)
    return -1;
  *n = nvml_gpu_count(nvml);
  for (int i = 0; i < *n; i++) {
    if (nvml_sample(nvml, i, &g, err) < 0) {
      nvml_close(nvml);
      return -1;
    }
    snprintf(dev[i], 16, "%s", g.device);
    if (i == 0)
      snprintf(model, len, "%s", g.model);
  }
  nvml_close(nvml);
  return *n ? 0 : gs_make_error(err, 0, "NVML sees no GPU on this node");
}

static void default_plugin(char *out, size_t n)
{
  struct gs_paths paths;
  char dir[PATH_MAX - 32];
  snprintf(out, n, "/usr/local/lib/gpuslice_spank.so");
  if (gs_paths_find(&paths, "/proc/self/exe", NULL) < 0)
    return;
  gs_dir_of(paths.preload, dir, sizeof(dir));
  snprintf(out, n, "%s/gpuslice_spank.so", dir);
  gs_paths_release(&paths);
}

/* Each GPU's sharing mode as the daemon says ("timeslice", "mps", "mig:<layout>"); every GPU
 * time-sliced when no daemon answers (false). */
static bool read_sharing(const char *socket, char sharing[][SHARING_TEXT], int n)
{
  gs_error_t err = NULL;
  json_t *reply = NULL, *g;
  size_t i;
  for (int k = 0; k < n; k++)
    snprintf(sharing[k], SHARING_TEXT, "timeslice");
  struct daemon_client *c = daemon_client_new(socket, &err);
  bool asked = c && daemon_client_get(c, "/v1/gpus", &reply, &err) == 0;
  daemon_client_free(c);
  gs_error_release(&err);
  json_array_foreach(json_object_get(reply, "gpus"), i, g)
  {
    json_int_t index = json_integer_value(json_object_get(g, "index"));
    const char *mode = json_string_value(json_object_get(g, "sharing"));
    if (index >= 0 && index < n && mode && *mode)
      snprintf(sharing[index], SHARING_TEXT, "%s", mode);
  }
  json_decref(reply);
  return asked;
}

static bool is_mps(const char *sharing)
{
  return strcmp(sharing, "mps") == 0;
}

/* " Features=gpuslice-mig,gpuslice-mps,..." for the modes other than time-slicing, or "". */
static void features(char sharing[][SHARING_TEXT], int n, char *out, size_t len)
{
  static const char *const modes[] = { "mig", "mps", "timeslice" };
  bool other = false, has[3] = { false };
  for (int i = 0; i < n; i++)
    for (int m = 0; m < 3; m++) {
      has[m] |= strncmp(sharing[i], modes[m], strlen(modes[m])) == 0;
      other |= m < 2 && has[m];
    }
  size_t o = 0;
  out[0] = '\0';
  for (int m = 0; m < 3 && other; m++)
    if (has[m])
      o += (size_t) snprintf(out + o, len - o, "%sgpuslice-%s", o ? "," : " Features=", modes[m]);
}

static void print_lines(const struct slurm_opts *o, char dev[][16], int n, const char *model,
                        char sharing[][SHARING_TEXT], bool asked)
{
  char host[256] = "", plugin[PATH_MAX];
  const char *node = o->node, *dir = o->dev_dir ? o->dev_dir : "/dev";
  if (!node) {
    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    node = host;
  }
  printf("# gpuslice slurm gres: %d GPU%s (%s)", n, n == 1 ? "" : "s", model);
  if (o->shards)
    printf(", %lld shards each", o->shards);
  putchar('\n');
  int nmps = 0;
  char feat[128], shard[64] = "", mps[64] = "";
  for (int i = 0; i < n; i++)
    nmps += is_mps(sharing[i]);
  features(sharing, n, feat, sizeof(feat));
  if (o->shards)
    snprintf(shard, sizeof(shard), ",shard:%lld", n * o->shards);
  if (nmps)
    snprintf(mps, sizeof(mps), ",mps:%d", 100 * nmps);
  printf("# slurm.conf\n");
  printf("GresTypes=gpu%s%s\n", o->shards ? ",shard" : "", nmps ? ",mps" : "");
  printf("NodeName=%s Gres=gpu:%d%s%s%s\n", node, n, shard, mps, feat);
  printf("# gres.conf\n");
  for (int i = 0; i < n; i++) {
    printf("# GPU %d: sharing %s%s\n", i, sharing[i], asked ? "" : " (no daemon answered)");
    printf("NodeName=%s Name=gpu File=%s/%s\n", node, strcmp(dir, "/") ? dir : "", dev[i]);
  }
  if (o->shards)
    printf("NodeName=%s Name=shard Count=%lld\n", node, n * o->shards);
  for (int i = 0; i < n; i++)
    if (is_mps(sharing[i]))
      printf("NodeName=%s Name=mps Count=100 File=%s/%s\n", node, strcmp(dir, "/") ? dir : "",
             dev[i]);
  if (o->plugin)
    snprintf(plugin, sizeof(plugin), "%s", o->plugin);
  else
    default_plugin(plugin, sizeof(plugin));
  printf("# plugstack.conf\n");
  if (o->shards)
    printf("required %s shards_per_gpu=%lld\n", plugin, o->shards);
  else
    printf("required %s\n", plugin);
}

int cli_slurm(int argc, char **argv)
{
  struct slurm_opts o = { 0 };
  char dev[GS_LEDGER_MAX_GPUS][16], model[GS_SNAP_STR], sharing[GS_LEDGER_MAX_GPUS][SHARING_TEXT];
  int n = 0, r = parse_args(argc, argv, &o);
  gs_error_t err = NULL;
  if (r >= 0)
    return r;
  if (read_gpus(dev, &n, model, sizeof(model), &err) < 0)
    return cli_fail("slurm", &err);
  bool asked = read_sharing(o.socket, sharing, n);
  print_lines(&o, dev, n, model, sharing, asked);
  return CLI_OK;
}
