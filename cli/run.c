/* `gpuslice run [--] COMMAND [ARGS...]`: runs COMMAND with the interposer preloaded.
 *
 * The interposer reaches COMMAND and everything it starts through the environment alone
 * (LD_PRELOAD, and LD_LIBRARY_PATH for the simulated driver), which fork and exec pass on.
 * That is the whole contract, so a Slurm or Kubernetes integration can set the same
 * variables itself; docs/cli.md lists them. gpuslice stays as COMMAND's parent to forward
 * signals and to exit with COMMAND's status. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim-models.h"

static const char run_usage[] =
  "Usage: gpuslice run [--] COMMAND [ARGS...]\n"
  "\n"
  "Runs COMMAND with the gpuslice interposer (libgpuslice.so) preloaded, so that COMMAND\n"
  "and every process it starts load it. When GPUSLICE_SIM is set, the simulated NVIDIA\n"
  "driver is put first on LD_LIBRARY_PATH as well.\n"
  "\n"
  "Options:\n"
  "  -h, --help  Show this help and exit\n"
  "\n"
  "Environment set for COMMAND:\n"
  "  LD_PRELOAD       <libdir>/libgpuslice.so, ahead of any existing value\n"
  "  LD_LIBRARY_PATH  <libdir>/sim ahead of any existing value, only when GPUSLICE_SIM is set\n"
  "\n"
  "Exit status: COMMAND's status; 128+N when COMMAND is killed by signal N; 127 when\n"
  "COMMAND cannot be run; 1 when gpuslice itself fails; 2 on a usage error.\n";

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
  if (child_pid > 0)
    kill((pid_t) child_pid, sig);
}

/* Parses run's options. Returns -1 to go on, or the exit status to return now. */
static int parse_options(int argc, char **argv)
{
  static const struct option opts[] = {
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
    if (c != 'h')
      return cli_bad_option("run", argv, c);
    fputs(run_usage, stdout);
    return CLI_OK;
  }
  if (optind >= argc)
    return cli_usage_error("run", "missing command (usage: gpuslice run [--] COMMAND [ARGS...])");
  return -1;
}

/* Rejects a bad GPUSLICE_SIM before anything starts, so that the user sees one clear line
 * instead of every process of the workload failing on its own. */
static int check_sim_spec(const char *spec)
{
  int dev[GPUSIM_MAX_DEVICES];
  char msg[256];
  if (gpusim_spec_parse(spec, dev, msg, sizeof(msg)) < 0)
    return cli_usage_error("run", "%s", msg);
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

static int setup_environment(const char *sim_spec, gs_error_t *err)
{
  struct gs_paths paths;
  _cleanup_free_ char *simcuda = NULL;

  if (gs_paths_find(&paths, "/proc/self/exe", err) < 0)
    return -1;
  if (access(paths.preload, R_OK) < 0) {
    gs_make_error(err, errno, "interposer '%s'", paths.preload);
    goto fail;
  }
  if (sim_spec) {
    xasprintf(&simcuda, "%s/libcuda.so.1", paths.simdir);
    if (access(simcuda, R_OK) < 0) {
      gs_make_error(err, errno, "simulated driver '%s'", simcuda);
      goto fail;
    }
    env_prepend("LD_LIBRARY_PATH", paths.simdir);
  }
  env_prepend("LD_PRELOAD", paths.preload);
  relax_asan_link_order();
  gs_paths_release(&paths);
  return 0;
fail:
  gs_paths_release(&paths);
  return -1;
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

/* Starts cmd and waits for it. The forwarded signals stay blocked from before fork until
 * the handler knows the child's pid, so none is lost and none goes to pid 0 (our group). */
static int spawn_and_wait(char **cmd)
{
  sigset_t fwd, old;
  int status;

  sigemptyset(&fwd);
  sigaddset(&fwd, SIGINT);
  sigaddset(&fwd, SIGTERM);
  sigaddset(&fwd, SIGHUP);
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
  sigprocmask(SIG_SETMASK, &old, NULL);
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "gpuslice: run: waitpid: %s\n", strerror(errno));
      return CLI_FAILURE;
    }
  return cli_wait_status(status);
}

int cli_run(int argc, char **argv)
{
  gs_error_t err = NULL;
  int r = parse_options(argc, argv);
  if (r >= 0)
    return r;

  const char *sim = gs_getenv_nonempty("GPUSLICE_SIM");
  if (sim && (r = check_sim_spec(sim)) >= 0)
    return r;
  if (setup_environment(sim, &err) < 0)
    return cli_fail("run", &err);
  return spawn_and_wait(argv + optind);
}
