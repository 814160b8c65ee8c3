/* `gpuslice demo [--seconds N]`: three workloads share one GPU, each under `gpuslice run`,
 * and a table shows what each one measured it got. Without an NVIDIA driver the demo uses
 * the simulated GPU with state private to this run.
 *
 * Each tenant has a memory limit (--vram), and one of them grows until gpuslice refuses it.
 * The two busy ones both want the whole GPU and have compute shares (--compute 70 and 30),
 * which decide what each gets. The demo prints only what the workloads reported. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GIB (1024ULL * 1024 * 1024)
#define SIM_SPEC "h100-80gb"
#define DEMO_KERNEL_US 1000 /* each busy kernel runs for 1 ms */

extern char **environ;

struct demo_opts {
  double seconds; /* how long the busy workloads run */
};

// clang-format off
static const struct gs_opt demo_entries[] = {
  { .name = "seconds", .letter = 's', .arg = "N", .kind = GS_OPT_DOUBLE, .offset = offsetof(struct demo_opts, seconds),
    .def = "4", .min = 0.5, .max = 3600, .help = "How long the busy workloads run, from 0.5 to 3600 seconds" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on

// clang-format off
const struct gs_opt_table cli_demo_table = {
  .verb = "demo",
  .synopsis = "demo [--seconds N]",
  .summary = "Run three workloads side by side on one GPU and show what each got",
  .intro = "Runs three workloads side by side on one GPU, each under 'gpuslice run' with its own\n"
           "memory limit, two of them with compute shares of 70% and 30%, and shows the memory each\n"
           "held and the GPU time each got. One of them\n"
           "allocates until gpuslice refuses it at its limit. Without an NVIDIA driver (and without\n"
           "GPUSLICE_SIM) it uses a simulated H100 80GB, private to this run.\n",
  .outro = "Exit status: 0 success, 1 a workload or gpuslice failed, 2 usage error.\n",
  GS_OPT_ENTRIES(demo_entries),
};
// clang-format on

struct tenant {
  const char *name;
  const char *role;    /* what it does, for the table */
  const char *mode;    /* gpusim-workload's mode: busy, or alloc-until-oom */
  double duty;         /* busy: the fraction of the time it launches kernels */
  uint64_t hold_bytes; /* busy: what it holds; alloc-until-oom: the size of each chunk */
  uint64_t vram;       /* its limit, `gpuslice run --vram` */
  int compute;         /* its share, `gpuslice run --compute`, or 0 */
  pid_t pid;
  int out_fd, err_fd;
  int status;     /* exit status as a shell reports it, -1 when it hung */
  json_t *result; /* its JSON lines with a "mode", merged */
};

static struct tenant tenants[] = {
  { "training", "busy, wants 100% of GPU", "busy", 1.0, 40 * GIB, 48 * GIB, 70, -1, -1, -1, -1,
    NULL },
  { "inference", "busy, wants 100% of GPU", "busy", 1.0, 16 * GIB, 20 * GIB, 30, -1, -1, -1, -1,
    NULL },
  { "notebook", "allocates all it can", "alloc-until-oom", 0.0, 1 * GIB, 8 * GIB, 0, -1, -1, -1, -1,
    NULL },
};
#define NTENANTS (sizeof(tenants) / sizeof(tenants[0]))

/* Chooses the GPU: the user's GPUSLICE_SIM, else a real driver, else a simulated H100
 * (include/gpuslice/driver.h decides). The tenants' ledgers, and the simulator's state when the demo
 * picks the simulator, go in a fresh directory (*state_dir, removed at the end), so demos
 * never meet other tenants. */
static int choose_device(const struct gs_paths *paths, char **state_dir, gs_error_t *err)
{
  struct gs_driver drv;
  char dir[] = "/tmp/gpuslice-demo-XXXXXX";
  if (!mkdtemp(dir))
    return gs_make_error(err, errno, "creating a directory for the demo's state");
  *state_dir = xstrdup(dir);
  setenv("GPUSLICE_STATE_DIR", dir, 1);
  if (gs_driver_find(&drv, paths, SIM_SPEC, err) < 0)
    return -1;
  switch (drv.source) {
  case GS_DRIVER_SIM:
    printf("Using the simulated GPU set in GPUSLICE_SIM (%s).\n", drv.spec);
    break;
  case GS_DRIVER_SYSTEM: printf("Using the NVIDIA driver on this machine.\n"); break;
  case GS_DRIVER_SIM_FALLBACK:
    /* The tenants' `gpuslice run` follow GPUSLICE_SIM to the simulator. */
    setenv("GPUSLICE_SIM", drv.spec, 1);
    setenv("GPUSIM_STATE_DIR", dir, 1);
    printf("No NVIDIA driver found: using a simulated H100 80GB (GPUSLICE_SIM=%s).\n", drv.spec);
    break;
  }
  gs_driver_release(&drv);
  return 0;
}

/* Empties the directory open as fd, one level of subdirectories deep: the demo's state holds
 * files, and directories of files (tenants/, gpus/). */
static void empty_dir(int fd, int depth)
{
  DIR *d = fdopendir(fd);
  struct dirent *e;
  if (!d) {
    close(fd);
    return;
  }
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR || depth == 0)
      continue;
    int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub >= 0)
      empty_dir(sub, depth - 1);
    unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
  }
  closedir(d);
}

/* Removes the demo's state directory: the simulator's state file, the tenants/ directory that
 * `gpuslice run` emptied of ledgers as each tenant ended, and the GPUs' compute boards. */
static void remove_state_dir(const char *path)
{
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0)
    empty_dir(fd, 1);
  if (rmdir(path) < 0)
    fprintf(stderr, "gpuslice: demo: removing '%s': %s\n", path, strerror(errno));
}

/* An argument list of owned strings; execve wants `char *const[]`, not const strings. */
struct arglist {
  char *v[32];
  int n;
};

static void arg_add(struct arglist *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg_add(struct arglist *a, const char *fmt, ...)
{
  va_list ap;
  if (a->n + 1 >= (int) (sizeof(a->v) / sizeof(a->v[0])))
    abort(); /* a programming error: the demo's command lines are fixed */
  va_start(ap, fmt);
  xvasprintf(&a->v[a->n], fmt, ap);
  va_end(ap);
  a->v[++a->n] = NULL;
}

static void arg_release(struct arglist *a)
{
  for (int i = 0; i < a->n; i++)
    free(a->v[i]);
  a->n = 0;
}

/* The workload's command line, under `gpuslice run`. */
static void tenant_argv(const struct tenant *t, const struct gs_paths *paths, double seconds,
                        struct arglist *a)
{
  unsigned long long bytes = (unsigned long long) t->hold_bytes;
  a->n = 0;
  arg_add(a, "%s", paths->exe);
  arg_add(a, "run");
  arg_add(a, "--name");
  arg_add(a, "%s", t->name);
  arg_add(a, "--vram");
  arg_add(a, "%llu", (unsigned long long) t->vram);
  if (t->compute) {
    arg_add(a, "--compute");
    arg_add(a, "%d", t->compute);
  }
  arg_add(a, "--");
  arg_add(a, "%s", paths->workload);
  arg_add(a, "%s", t->mode);
  if (strcmp(t->mode, "busy") != 0) {
    arg_add(a, "--chunk");
    arg_add(a, "%llu", bytes);
    return;
  }
  arg_add(a, "--seconds");
  arg_add(a, "%g", seconds);
  arg_add(a, "--duty");
  arg_add(a, "%g", t->duty);
  arg_add(a, "--kernel-us");
  arg_add(a, "%d", DEMO_KERNEL_US);
  arg_add(a, "--hold-bytes");
  arg_add(a, "%llu", bytes);
}

/* Opens the tenant's standard streams: output into anonymous files we read afterwards (no
 * pipe to drain while waiting), input from /dev/null. *child_in receives the stdin descriptor. */
static int tenant_streams(struct tenant *t, int *child_in, gs_error_t *err)
{
  t->out_fd = memfd_create("stdout", MFD_CLOEXEC);
  t->err_fd = memfd_create("stderr", MFD_CLOEXEC);
  if (t->out_fd < 0 || t->err_fd < 0)
    return gs_make_error(err, errno, "%s: memfd_create", t->name);
  *child_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  return *child_in < 0 ? gs_make_error(err, errno, "open /dev/null") : 0;
}

static int tenant_start(struct tenant *t, const struct gs_paths *paths, double seconds,
                        gs_error_t *err)
{
  struct arglist args;
  posix_spawn_file_actions_t fa;
  int child_in = -1, r;

  if (tenant_streams(t, &child_in, err) < 0)
    return -1;
  tenant_argv(t, paths, seconds, &args);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, child_in, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, t->out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, t->err_fd, STDERR_FILENO);
  r = posix_spawn(&t->pid, paths->exe, &fa, NULL, args.v, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(child_in);
  arg_release(&args);
  if (r != 0) {
    t->pid = -1;
    return gs_make_error(err, r, "%s: starting '%s'", t->name, paths->exe);
  }
  return 0;
}

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* Waits for the tenant until deadline; past it, asks it to stop (`gpuslice run` forwards
 * SIGTERM to the workload), then kills it. t->status is -1 when it had to be stopped. */
static void tenant_wait(struct tenant *t, uint64_t deadline)
{
  const struct timespec tick = { 0, 20 * 1000 * 1000 };
  int st;
  bool termed = false;

  while (t->pid > 0) {
    pid_t r = waitpid(t->pid, &st, WNOHANG);
    if (r == t->pid || (r < 0 && errno != EINTR)) {
      t->status = r == t->pid && !termed ? cli_wait_status(st) : -1;
      t->pid = -1;
      return;
    }
    if (now_ns() > deadline) {
      kill(t->pid, termed ? SIGKILL : SIGTERM);
      termed = true;
      deadline = now_ns() + 3000000000ULL;
    }
    nanosleep(&tick, NULL);
  }
}

/* Reads the whole of an anonymous output file (bounded: workloads print a few lines). */
static char *read_output(int fd)
{
  size_t cap = 65536, len = 0;
  char *buf = xmalloc(cap + 1);
  ssize_t n;
  lseek(fd, 0, SEEK_SET);
  while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
    len += (size_t) n;
  buf[len] = '\0';
  return buf;
}

/* Merges the JSON objects printed on out, later lines overriding earlier keys: a hold
 * workload prints what it allocated when ready and what it released at the end. Returns
 * NULL when no line is an object with a "mode". */
static json_t *merged_result(char *out)
{
  json_t *all = json_object();
  for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    json_t *j = line[0] == '{' ? json_loads(line, 0, NULL) : NULL;
    if (j && json_is_object(j) && json_object_get(j, "mode"))
      json_object_update(all, j);
    json_decref(j);
  }
  if (!json_object_get(all, "mode")) {
    json_decref(all);
    return NULL;
  }
  return all;
}

/* The last non-empty line of err, trimmed, for a one-line failure report. */
static const char *last_line(char *err)
{
  char *end = err + strlen(err);
  while (end > err && (end[-1] == '\n' || end[-1] == ' '))
    *--end = '\0';
  char *nl = strrchr(err, '\n');
  const char *line = nl ? nl + 1 : err;
  /* `gpuslice run` speaks as "gpuslice: run: ...": we say "gpuslice: demo: <tenant>: " already. */
  return strncmp(line, "gpuslice: ", 10) == 0 ? line + 10 : line;
}

/* Collects the tenant's result. Returns 0, or -1 after printing one line naming it. */
static int tenant_collect(struct tenant *t)
{
  _cleanup_free_ char *out = read_output(t->out_fd);
  _cleanup_free_ char *err = read_output(t->err_fd);
  const char *why = last_line(err);

  t->result = merged_result(out);
  if (t->status == 0 && t->result)
    return 0;
  if (t->status == -1)
    fprintf(stderr, "gpuslice: demo: %s: did not finish in time and was stopped%s%s\n", t->name,
            *why ? ": " : "", why);
  else if (*why)
    fprintf(stderr, "gpuslice: demo: %s: %s\n", t->name, why);
  else if (t->status != 0)
    fprintf(stderr, "gpuslice: demo: %s: exited with status %d\n", t->name, t->status);
  else
    fprintf(stderr, "gpuslice: demo: %s: printed no result\n", t->name);
  return -1;
}

static double result_number(const struct tenant *t, const char *key)
{
  return json_number_value(json_object_get(t->result, key));
}

/* Memory the tenant held: what it reported, or else what it was told to hold, which a busy
 * workload that exits 0 did allocate (it fails when an allocation fails). */
static uint64_t held_bytes(const struct tenant *t)
{
  json_t *v = json_object_get(t->result, "allocated_bytes");
  return json_is_integer(v) ? (uint64_t) json_integer_value(v) : t->hold_bytes;
}

/* Device time the tenant's kernels occupied: kernels completed times the duration each
 * one runs for. The workload's event timings (kernel_seconds) also count the time a kernel
 * waited behind other tenants' kernels, so they would overstate what it got. */
static double gpu_seconds(const struct tenant *t)
{
  return result_number(t, "requested_kernel_seconds");
}

static void print_table(void)
{
  printf("\n%-10s %-24s %9s %12s %8s %9s %10s\n", "tenant", "workload", "limit", "memory held",
         "compute", "GPU time", "GPU share");
  for (size_t i = 0; i < NTENANTS; i++) {
    const struct tenant *t = &tenants[i];
    char lim[32], mem[32], asked[32] = "-", got[32] = "-", share[32] = "-";
    snprintf(lim, sizeof(lim), "%.0f GiB", (double) t->vram / (double) GIB);
    snprintf(mem, sizeof(mem), "%.1f GiB", (double) held_bytes(t) / (double) GIB);
    if (t->compute)
      snprintf(asked, sizeof(asked), "%d%%", t->compute);
    if (strcmp(t->mode, "busy") == 0) {
      double wall = result_number(t, "wall_seconds");
      snprintf(got, sizeof(got), "%.2f s", gpu_seconds(t));
      if (wall > 0)
        snprintf(share, sizeof(share), "%.0f%%", 100.0 * gpu_seconds(t) / wall);
    }
    printf("%-10s %-24s %9s %12s %8s %9s %10s\n", t->name, t->role, lim, mem, asked, got, share);
  }
  printf(
    "\nGPU time: kernels completed x %d ms each. GPU share: GPU time / the workload's run time.\n"
    "Memory limits (--vram) hold on every allocation path: the notebook kept allocating\n"
    "1 GiB chunks and was refused at its limit (%s).\n"
    "Compute shares (--compute) hold too: training and inference both want the whole GPU,\n"
    "and each gets the share it was given.\n",
    DEMO_KERNEL_US / 1000, json_string_value(json_object_get(tenants[2].result, "stopped_by")));
}

/* Starts every tenant and waits for them all. */
static int run_tenants(const struct gs_paths *paths, double seconds, gs_error_t *err)
{
  for (size_t i = 0; i < NTENANTS; i++)
    if (tenant_start(&tenants[i], paths, seconds, err) < 0)
      return -1;
  uint64_t deadline = now_ns() + (uint64_t) ((seconds + 60) * 1e9);
  for (size_t i = 0; i < NTENANTS; i++)
    tenant_wait(&tenants[i], deadline);
  return 0;
}

static void tenants_release(void)
{
  for (size_t i = 0; i < NTENANTS; i++) {
    struct tenant *t = &tenants[i];
    if (t->pid > 0)
      tenant_wait(t, 0);
    if (t->out_fd >= 0)
      close(t->out_fd);
    if (t->err_fd >= 0)
      close(t->err_fd);
    json_decref(t->result);
  }
}

static int demo(double seconds)
{
  struct gs_paths paths;
  gs_error_t err = NULL;
  _cleanup_free_ char *state_dir = NULL;
  int rc = CLI_FAILURE;

  if (gs_paths_find(&paths, "/proc/self/exe", &err) < 0)
    return cli_fail("demo", &err);
  if (access(paths.workload, X_OK) < 0) {
    gs_make_error(&err, errno, "workload program '%s'", paths.workload);
  } else if (choose_device(&paths, &state_dir, &err) == 0) {
    fflush(stdout);
    if (run_tenants(&paths, seconds, &err) == 0) {
      rc = CLI_OK;
      for (size_t i = 0; i < NTENANTS; i++)
        if (tenant_collect(&tenants[i]) < 0)
          rc = CLI_FAILURE;
      if (rc == CLI_OK)
        print_table();
    }
  }
  tenants_release();
  if (state_dir)
    remove_state_dir(state_dir);
  gs_paths_release(&paths);
  return err ? cli_fail("demo", &err) : rc;
}

int cli_demo(int argc, char **argv)
{
  struct demo_opts o;
  int r = cli_parse_options(&cli_demo_table, &o, argc, argv);
  return r >= 0 ? r : demo(o.seconds);
}
