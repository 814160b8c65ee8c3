/* `gpuslice run [--] COMMAND [ARGS...]`: runs COMMAND with the interposer preloaded.
 *
 * The interposer reaches COMMAND and everything it starts through the environment alone
 * (LD_PRELOAD, and LD_LIBRARY_PATH for the simulated driver), which fork and exec pass on.
 * That is the whole contract, so a Slurm or Kubernetes integration can set the same
 * variables itself; docs/cli.md lists them. gpuslice stays as COMMAND's parent to forward
 * signals and to exit with COMMAND's status. */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run-register.h"
#include "run-tenant.h"

#define ENTRY(n, a, fn, text)                                           \
  {                                                                     \
    .name = n, .arg = a, .kind = GS_OPT_CALL, .parse = fn, .help = text \
  }
// clang-format off
static const struct gs_opt run_entries[] = {
  ENTRY("vram", "SIZE", run_tenant_set_vram,
        "Device memory limit: bytes, K/M/G/T (x1000), Ki/Mi/Gi/Ti (x1024), or a percentage of the device "
        "such as 25%"),
  ENTRY("gpu", "N", run_tenant_set_gpu, "Apply --vram to GPU N only (CUDA ordinal); default: every GPU"),
  ENTRY("name", "NAME", run_tenant_set_name, "Tenant name (A-Z a-z 0-9 . _ -); default: run-<pid>"),
  { .name = "label", .arg = "KEY=VALUE", .kind = GS_OPT_CALL, .parse = run_tenant_add_label, .flags = GS_OPT_REPEAT,
    .help = "A label for the tenant; may be repeated" },
  { .name = "context-reserve", .arg = "SIZE", .kind = GS_OPT_CALL, .parse = run_tenant_set_reserve, .def = "0",
    .help = "Memory charged for each CUDA context" },
  ENTRY("compute", "PCT", run_tenant_set_compute, "The tenant's share of each GPU's time, 0.0001 to 100; decimals allowed"),
  { .name = "compute-policy", .arg = "P", .kind = GS_OPT_CALL, .parse = run_tenant_set_compute_policy, .def = "share",
    .help = "share: PCT is guaranteed under contention and spare time goes to whoever has work; cap: never "
            "more than PCT, even when idle" },
  { .name = "priority", .arg = "P", .kind = GS_OPT_CALL, .parse = run_tenant_set_priority, .def = "normal",
    .help = "high, normal or low: high-priority kernels wait at most one turn behind lower-priority work" },
  ENTRY("slice-ms", "N", run_tenant_set_slice,
        "Ask the tenant's GPUs for exclusive turns of N ms (1..10000), weighted by share: honest time-slicing"),
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef ENTRY

// clang-format off
const struct gs_opt_table cli_run_table = {
  .verb = "run",
  .synopsis = "run [OPTIONS] [--] COMMAND [ARGS...]",
  .summary = "Run a command with the gpuslice interposer loaded",
  .intro = "Runs COMMAND, and every process it starts, as one tenant with the gpuslice interposer\n"
           "(libgpuslice.so) preloaded. The tenant's device memory is held to --vram on every\n"
           "allocation path, and its share of GPU time to --compute on every kernel launch path. When GPUSLICE_SIM is set, the simulated NVIDIA driver is put first on\n"
           "LD_LIBRARY_PATH as well.\n",
  .outro = "Environment set for COMMAND:\n"
           "  LD_PRELOAD          <libdir>/libgpuslice.so, ahead of any existing value\n"
           "  LD_LIBRARY_PATH     <libdir>/sim ahead of any existing value, only when GPUSLICE_SIM is set\n"
           "  GPUSLICE_TENANT     the tenant's name\n"
           "  GPUSLICE_STATE_DIR  the state directory that holds the tenant's ledger\n"
           "\n"
           "Exit status: COMMAND's status; 128+N when COMMAND is killed by signal N; 127 when\n"
           "COMMAND cannot be run; 1 when gpuslice itself fails; 2 on a usage error.\n",
  GS_OPT_ENTRIES(run_entries),
  .flags = GS_OPTS_ONCE,
};
// clang-format on

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
  if (child_pid > 0)
    kill((pid_t) child_pid, sig);
}

/* Parses run's options. Returns -1 to go on, with *next at COMMAND, or the exit status. */
static int parse_options(int argc, char **argv, struct run_tenant *t, int *next)
{
  int r = cli_parse(&cli_run_table, t, argc, argv, next);
  if (r >= 0)
    return r;
  if (*next >= argc)
    return cli_usage_error(
      "run", "missing command (usage: gpuslice run [OPTIONS] [--] COMMAND [ARGS...])");
  return -1;
}

/* Puts value first in the path list `name`, unless it is first already (nested runs). */
static void env_prepend(const char *name, const char *value)
{
  const char *old = getenv(name);
  _cleanup_free_ char *joined = NULL;
  size_t n = strlen(value);

  if (!old || !*old) {
    setenv(name, value, 1);
    return;
  }
  if (strncmp(old, value, n) == 0 && (old[n] == '\0' || old[n] == ':' || old[n] == ' '))
    return;
  xasprintf(&joined, "%s:%s", value, old);
  setenv(name, joined, 1);
}

/* The interposer is built with UBSan alone in sanitizer builds, but the programs of the
 * test suite are built with ASan, which insists on coming first in the load order: a
 * preloaded library is ahead of it. That order is harmless here (the interposer does not
 * define malloc), so sanitizer builds tell ASan not to check it. */
static void relax_asan_link_order(void)
{
#ifdef GS_ASAN_BUILD
  const char *old = getenv("ASAN_OPTIONS");
  _cleanup_free_ char *opts = NULL;
  if (old && strstr(old, "verify_asan_link_order"))
    return;
  xasprintf(&opts, "%s%sverify_asan_link_order=0", old ? old : "", old && *old ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
#endif
}

/* Sets the environment COMMAND inherits: the interposer, and the simulated driver when
 * GPUSLICE_SIM asks for it (include/gpuslice/driver.h decides). A bad device list is rejected here,
 * before anything starts, so that the user sees one clear line instead of every process of
 * the workload failing on its own: GS_DRIVER_BAD_SPEC. Returns 0, or < 0 with err. */
static int setup_environment(gs_error_t *err)
{
  struct gs_paths paths;
  struct gs_driver drv;
  int r;

  if (gs_paths_find(&paths, "/proc/self/exe", err) < 0)
    return -1;
  if ((r = gs_driver_find(&drv, &paths, NULL, err)) < 0) {
    gs_paths_release(&paths);
    return r;
  }
  if ((r = gs_driver_check(&drv, err)) == 0 && access(paths.preload, R_OK) < 0)
    r = gs_make_error(err, errno, "interposer '%s'", paths.preload);
  if (r == 0) {
    if (drv.libdir)
      env_prepend("LD_LIBRARY_PATH", drv.libdir);
    env_prepend("LD_PRELOAD", paths.preload);
    relax_asan_link_order();
  }
  gs_driver_release(&drv);
  gs_paths_release(&paths);
  return r;
}

/* A failed setup_environment: a bad device list is a usage error, anything else a failure. */
static int setup_failed(int r, gs_error_t *err)
{
  if (r != GS_DRIVER_BAD_SPEC)
    return cli_fail("run", err);
  r = cli_usage_error("run", "%s", (*err)->msg);
  gs_error_release(err);
  return r;
}

static void install_forwarding(void)
{
  static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = forward_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
    sigaction(sigs[i], &sa, NULL);
}

/* How often the tenant's dead processes are looked for while the command runs: memory of a
 * process killed with SIGKILL goes back to the tenant within this period. */
#define REAP_PERIOD_NS 200000000L

/* Waits for the child, reaping the tenant's dead processes as it goes. SIGCHLD is blocked by
 * the caller, so sigtimedwait wakes as soon as the child ends. */
static int supervise(pid_t pid, struct run_tenant *t)
{
  const struct timespec period = { 0, REAP_PERIOD_NS };
  sigset_t chld;
  int status;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return cli_wait_status(status);
    if (r < 0 && errno != EINTR) {
      fprintf(stderr, "gpuslice: run: waitpid: %s\n", strerror(errno));
      return CLI_FAILURE;
    }
    gs_ledger_reap(t->ledger);
    sigtimedwait(&chld, NULL, &period);
  }
}

/* Starts cmd and waits for it. The forwarded signals stay blocked from before fork until
 * the handler knows the child's pid, so none is lost and none goes to pid 0 (our group). */
static int spawn_and_wait(char **cmd, struct run_tenant *t)
{
  sigset_t fwd, old;

  sigemptyset(&fwd);
  sigaddset(&fwd, SIGINT);
  sigaddset(&fwd, SIGTERM);
  sigaddset(&fwd, SIGHUP);
  sigaddset(&fwd, SIGCHLD);
  sigprocmask(SIG_BLOCK, &fwd, &old);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    fprintf(stderr, "gpuslice: run: fork: %s\n", strerror(e));
    return CLI_FAILURE;
  }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    execvp(cmd[0], cmd);
    dprintf(STDERR_FILENO, "gpuslice: run: %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  install_forwarding();
  sigdelset(&fwd, SIGCHLD);
  sigprocmask(SIG_UNBLOCK, &fwd, NULL);
  return supervise(pid, t);
}

int cli_run(int argc, char **argv)
{
  gs_error_t err = NULL;
  struct run_tenant tenant = RUN_TENANT_INIT;
  int next, r = parse_options(argc, argv, &tenant, &next);
  if (r >= 0)
    return r;

  if ((r = setup_environment(&err)) < 0)
    return setup_failed(r, &err);
  if (run_tenant_create(&tenant, &err) < 0)
    return cli_fail("run", &err);
  if (run_register(&tenant, &err) < 0) {
    run_tenant_end(&tenant);
    return cli_fail("run", &err);
  }
  r = spawn_and_wait(argv + next, &tenant);
  run_unregister(&tenant, r);
  run_tenant_end(&tenant);
  return r;
}
