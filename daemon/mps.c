/* MPS for the GPUs whose sharing mode is mps (sharing.c): one NVIDIA MPS control daemon per
 * GPU, its clients' limits, its faults, its end.
 *
 * At start, for each such GPU: the GPU is set to exclusive-process through NVML (one context,
 * the MPS server's; the mps_exclusive setting can leave the mode alone), and `nvidia-cuda-mps-control -d` (the `mps_control` setting names it) is
 * started with its own CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY
 * (<state dir>/mps/gpu<N>/pipe and log) and CUDA_VISIBLE_DEVICES the GPU's UUID; its pid is
 * read from the pid file it leaves in the pipe directory.
 *
 * A tenant registered for the GPU (`gpuslice run --gpu N`) is an MPS client of it. MPS runs
 * one server per user, whose limits all that user's clients share, and lets a client lower
 * them for itself through its environment. So, before the tenant's command starts (the
 * registration comes first), the daemon makes sure the user's server runs (start_server -uid)
 * and sets its active thread percentage and pinned device memory limit to the largest its
 * tenants on the GPU have (set_active_thread_percentage, set_device_pinned_mem_limit); the
 * tenant's own, from its compute and memory limits, go to its client through the environment
 * `gpuslice run` gives its command (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, "mps" in the tenant's JSON). gpuslice's own memory quota
 * holds on top.
 *
 * Every 2 s the daemon asks each server's status (get_server_list, get_server_status): a
 * server in FAULT (a fatal GPU exception in one client ends them all, with CUDA errors 805 to
 * 810) is logged with the tenants it serves, reported in GET /v1/gpus, and once its clients
 * have exited (get_client_list) the control daemon is stopped and started again. A control
 * daemon that died is started again. When the daemon stops, each control daemon is told to
 * quit (killed if it does not within 10 s) and the GPU's compute mode is set back. */
#include "daemon.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu-nvml.h"

extern char **environ;

#define MPS_CLIENTS 256
#define TOOL_TIMEOUT_MS 10000
#define CHECK_PERIOD_S 2.0

enum mps_state { MPS_OFF, MPS_RUNNING, MPS_FAULT, MPS_STOPPED };

struct mps_gpu {
  enum mps_state state;
  char pipe[PATH_MAX], log[PATH_MAX];
  char uuid[GS_SNAP_STR];
  pid_t control;
  uint64_t control_start; /* its start time: a zombie, or a pid reused, is not it */
  int prev_mode;          /* nvmlComputeMode_t before the daemon set it; -1 unknown */
  pid_t fault_server;
};

struct mps_client {
  char tenant[GS_LEDGER_NAME_MAX];
  uid_t uid;
  int gpu;
  unsigned pct;    /* active thread percentage; 100 when the tenant has no compute limit */
  uint64_t pinned; /* bytes; GS_LIMIT_NONE when none */
};

struct daemon_mps {
  struct mps_gpu gpu[GS_LEDGER_MAX_GPUS];
  struct mps_client c[MPS_CLIENTS];
  int nc;
  double next_check;
  nvmlReturn_t (*get_mode)(nvmlDevice_t, nvmlComputeMode_t *);
  nvmlReturn_t (*set_mode)(nvmlDevice_t, nvmlComputeMode_t);
};

/* ---- running the control program ---- */

/* environ, with the GPU's MPS directories (and, for the control daemon, its GPU). */
static char **tool_env(const struct mps_gpu *g, bool daemon_start)
{
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = xcalloc(n + 4, sizeof(*env));
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "CUDA_MPS_PIPE_DIRECTORY=", 24) != 0 &&
        strncmp(environ[i], "CUDA_MPS_LOG_DIRECTORY=", 23) != 0 &&
        strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) != 0)
      env[k++] = environ[i];
  xasprintf(&env[k++], "CUDA_MPS_PIPE_DIRECTORY=%s", g->pipe);
  xasprintf(&env[k++], "CUDA_MPS_LOG_DIRECTORY=%s", g->log);
  if (daemon_start)
    xasprintf(&env[k++], "CUDA_VISIBLE_DEVICES=%s", g->uuid);
  return env;
}

static void env_free(char **env)
{
  for (char **p = env; *p; p++)
    if (!strncmp(*p, "CUDA_MPS_", 9) || !strncmp(*p, "CUDA_VISIBLE_DEVICES=", 21))
      free(*p);
  free(env);
}

/* Reads fd into out until EOF or the deadline; false on the deadline. */
static bool read_until(int fd, char *out, size_t len, double deadline)
{
  size_t got = 0;
  for (;;) {
    int ms = (int) ((deadline - daemon_now_mono()) * 1000);
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (ms <= 0 || poll(&p, 1, ms) <= 0)
      return false;
    char sink[256];
    bool room = got + 1 < len;
    ssize_t k = read(fd, room ? out + got : sink, room ? len - got - 1 : sizeof(sink));
    if (k <= 0)
      break;
    got += room ? (size_t) k : 0;
  }
  out[got] = '\0';
  return true;
}

/* Runs `<tool> [arg]` for GPU g with input on its stdin; its output in out. The exit status,
 * or -1 (it could not run, or took too long and was killed) with err. */
static int run_tool(const char *tool, const struct mps_gpu *g, const char *arg, const char *input,
                    char *out, size_t len, gs_error_t *err)
{
  int in[2], o[2], status;
  pid_t pid;
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0)
    return gs_make_error(err, errno, "pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, o[1], STDOUT_FILENO);
  char **env = tool_env(g, arg != NULL);
  const char *argv_c[] = { tool, arg, NULL };
  char *const *argv;
  memcpy(&argv, &(const char *const *){ argv_c }, sizeof(argv));
  int r = posix_spawnp(&pid, tool, &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  env_free(env);
  close(in[0]);
  close(o[1]);
  if (r == 0 && input && write(in[1], input, strlen(input)) < 0)
    r = errno;
  close(in[1]);
  bool in_time = r == 0 && read_until(o[0], out, len, daemon_now_mono() + TOOL_TIMEOUT_MS / 1000.0);
  close(o[0]);
  if (r != 0)
    return gs_make_error(err, r, "cannot run %s (the mps_control setting)", tool);
  if (!in_time)
    kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (!in_time)
    return gs_make_error(err, 0, "%s took more than %d s", tool, TOOL_TIMEOUT_MS / 1000);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* One command to GPU g's control daemon: 0 with its answer, or -1 with err. */
static int command(const struct daemon *d, const struct mps_gpu *g, char *out, size_t len,
                   gs_error_t *err, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int command(const struct daemon *d, const struct mps_gpu *g, char *out, size_t len,
                   gs_error_t *err, const char *fmt, ...)
{
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line) - 1, fmt, ap);
  va_end(ap);
  strcat(line, "\n");
  int r = run_tool(d->cfg.mps_control, g, NULL, line, out, len, err);
  if (r < 0)
    return -1;
  if (r != 0 || strncmp(out, "ERROR", 5) == 0)
    return gs_make_error(err, 0, "'%.*s': %s", (int) strcspn(line, "\n"), line,
                         out[0] ? out : "failed");
  return 0;
}

/* ---- the control daemon ---- */

static pid_t read_pidfile(const struct mps_gpu *g)
{
  char path[PATH_MAX + 40], buf[32] = "";
  snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", g->pipe);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  if (!fgets(buf, sizeof(buf), f))
    buf[0] = '\0';
  fclose(f);
  return (pid_t) strtol(buf, NULL, 10);
}

/* The control daemon is not the daemon's child (it daemonizes): whoever adopted it reaps it,
 * so it may linger as a zombie, which is no running control daemon. */
static bool running(const struct mps_gpu *g)
{
  return g->control > 0 && gs_proc_alive(g->control, g->control_start);
}

static int control_start(const struct daemon *d, struct mps_gpu *g, gs_error_t *err)
{
  char out[256];
  int r = run_tool(d->cfg.mps_control, g, "-d", NULL, out, sizeof(out), err);
  if (r < 0)
    return -1;
  if (r != 0)
    return gs_make_error(err, 0, "%s -d exited %d", d->cfg.mps_control, r);
  double until = daemon_now_mono() + 10;
  for (;;) {
    g->control = read_pidfile(g);
    g->control_start = g->control > 0 ? gs_proc_start_time(g->control) : 0;
    if (running(g) || daemon_now_mono() >= until)
      break;
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
  }
  if (!running(g))
    return gs_make_error(err, 0, "no control daemon pid in %s", g->pipe);
  g->state = MPS_RUNNING;
  g->fault_server = 0;
  return 0;
}

/* Tells the control daemon to quit, and waits for it; kills it past 10 s. */
static void control_quit(const struct daemon *d, struct mps_gpu *g)
{
  char out[256];
  gs_error_t err = NULL;
  if (command(d, g, out, sizeof(out), &err, "quit") < 0) {
    GS_LOG(GS_LOG_WARN, "MPS: GPU %d: quit: %s", (int) (g - d->mps->gpu), err->msg);
    gs_error_release(&err);
  }
  double until = daemon_now_mono() + 10;
  while (running(g) && daemon_now_mono() < until) {
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
  }
  if (running(g)) {
    GS_LOG(GS_LOG_WARN, "MPS: GPU %d: control daemon %d did not quit: killed",
           (int) (g - d->mps->gpu), (int) g->control);
    kill(g->control, SIGKILL);
  }
  g->control = 0;
}

/* ---- the compute mode ---- */

static void mode_open(struct daemon *d)
{
  void *lib = nvml_library(d->nvml);
  void *get = dlsym(lib, "nvmlDeviceGetComputeMode"), *set = dlsym(lib, "nvmlDeviceSetComputeMode");
  memcpy(&d->mps->get_mode, &get, sizeof(get));
  memcpy(&d->mps->set_mode, &set, sizeof(set));
}

static int exclusive(struct daemon *d, int i, gs_error_t *err)
{
  struct mps_gpu *g = &d->mps->gpu[i];
  nvmlComputeMode_t prev;
  nvmlDevice_t dev = nvml_device(d->nvml, i);
  g->prev_mode = -1;
  if (d->cfg.mps_exclusive == VERIFY_OFF)
    return 0;
  if (!d->mps->set_mode || !d->mps->get_mode)
    return gs_make_error(err, 0, "MPS: GPU %d: NVML cannot set the compute mode", i);
  if (d->mps->get_mode(dev, &prev) == NVML_SUCCESS)
    g->prev_mode = (int) prev;
  nvmlReturn_t r = d->mps->set_mode(dev, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
  if (r != NVML_SUCCESS)
    return gs_make_error(err, 0, "MPS: GPU %d: set exclusive-process compute mode: NVML error %d",
                         i, (int) r);
  return 0;
}

/* ---- start and stop ---- */

static int gpu_start(struct daemon *d, int i, gs_error_t *err)
{
  struct mps_gpu *g = &d->mps->gpu[i];
  char dir[PATH_MAX - 16];
  if (strlen(d->cfg.state_dir) > sizeof(dir) - 32)
    return gs_make_error(err, 0, "MPS: the state dir's path is too long");
  snprintf(g->uuid, sizeof(g->uuid), "%s", d->snap.gpus[i].uuid);
  snprintf(dir, sizeof(dir), "%s/mps", d->cfg.state_dir);
  mkdir(dir, 0755);
  snprintf(dir, sizeof(dir), "%s/mps/gpu%d", d->cfg.state_dir, i);
  mkdir(dir, 0755);
  snprintf(g->pipe, sizeof(g->pipe), "%s/pipe", dir);
  snprintf(g->log, sizeof(g->log), "%s/log", dir);
  if ((mkdir(g->pipe, 0755) < 0 && errno != EEXIST) || (mkdir(g->log, 0755) < 0 && errno != EEXIST))
    return gs_make_error(err, errno, "MPS: GPU %d: make %s", i, dir);
  if (exclusive(d, i, err) < 0)
    return -1;
  if (control_start(d, g, err) < 0)
    return gs_error_prepend(err, "MPS: GPU %d", i);
  GS_LOG(GS_LOG_INFO, "MPS: GPU %d: control daemon %d, pipes in %s", i, (int) g->control, g->pipe);
  return 0;
}

int mps_start(struct daemon *d, gs_error_t *err)
{
  d->mps = xcalloc(1, sizeof(*d->mps));
  mode_open(d);
  for (int i = 0; i < d->snap.ngpus; i++)
    if (sharing_of(&d->sharing, i)->kind == SHARING_MPS && gpu_start(d, i, err) < 0)
      return -1;
  return 0;
}

void mps_stop(struct daemon *d)
{
  if (!d->mps)
    return;
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++) {
    struct mps_gpu *g = &d->mps->gpu[i];
    if (g->state == MPS_OFF)
      continue;
    if (g->control)
      control_quit(d, g);
    if (g->prev_mode >= 0 && d->mps->set_mode)
      d->mps->set_mode(nvml_device(d->nvml, i), (nvmlComputeMode_t) g->prev_mode);
    g->state = MPS_STOPPED;
    GS_LOG(GS_LOG_INFO, "MPS: GPU %d: stopped", i);
  }
  free(d->mps);
  d->mps = NULL;
}

/* ---- clients ---- */

static uid_t uid_of(pid_t pid)
{
  char path[64], line[256];
  uid_t uid = (uid_t) -1;
  snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof(line), f))
    if (strncmp(line, "Uid:", 4) == 0)
      uid = (uid_t) strtoul(line + 4, NULL, 10);
  if (f)
    fclose(f);
  return uid;
}

/* The server of uid on g, started when there is none: its pid, or -1 with err. */
static pid_t server_of(const struct daemon *d, const struct mps_gpu *g, uid_t uid, gs_error_t *err)
{
  char out[4096];
  for (int attempt = 0; attempt < 2; attempt++) {
    if (command(d, g, out, sizeof(out), err, "get_server_list") < 0)
      return -1;
    for (char *p = out; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0')) {
      pid_t pid = (pid_t) strtol(p, NULL, 10);
      if (pid > 0 && uid_of(pid) == uid)
        return pid;
    }
    if (attempt == 0 &&
        command(d, g, out, sizeof(out), err, "start_server -uid %u", (unsigned) uid) < 0)
      return -1;
  }
  return gs_make_error(err, 0, "no MPS server for uid %u after start_server", (unsigned) uid);
}

static void prune(struct daemon *d)
{
  struct daemon_mps *m = d->mps;
  int k = 0;
  for (int i = 0; i < m->nc; i++) {
    struct tenant *t = registry_find(&d->reg, m->c[i].tenant);
    if (t && !t->exited)
      m->c[k++] = m->c[i];
  }
  m->nc = k;
}

/* The server's limits: the largest of its user's tenants on the GPU, which each client lowers
 * for itself. */
static int set_server_limits(const struct daemon *d, const struct mps_gpu *g, int gpu, uid_t uid,
                             pid_t server, gs_error_t *err)
{
  char out[256];
  unsigned pct = 0;
  uint64_t pinned = 0;
  for (int i = 0; i < d->mps->nc; i++) {
    const struct mps_client *c = &d->mps->c[i];
    if (c->gpu != gpu || c->uid != uid)
      continue;
    pct = c->pct > pct ? c->pct : pct;
    pinned = c->pinned == GS_LIMIT_NONE || pinned == GS_LIMIT_NONE ? GS_LIMIT_NONE
      : c->pinned > pinned                                         ? c->pinned
                                                                   : pinned;
  }
  if (command(d, g, out, sizeof(out), err, "set_active_thread_percentage %d %u", (int) server,
              pct) < 0)
    return -1;
  if (pinned != GS_LIMIT_NONE &&
      command(d, g, out, sizeof(out), err, "set_device_pinned_mem_limit %d 0 %lluM", (int) server,
              (unsigned long long) (pinned >> 20)) < 0)
    return -1;
  return 0;
}

void mps_tenant_added(struct daemon *d, const struct tenant *t, int gpu)
{
  gs_error_t err = NULL;
  if (!d->mps || gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS || d->mps->gpu[gpu].state != MPS_RUNNING)
    return;
  struct mps_gpu *g = &d->mps->gpu[gpu];
  prune(d);
  if (d->mps->nc == MPS_CLIENTS) {
    GS_LOG(GS_LOG_WARN, "MPS: GPU %d: more than %d clients: tenant '%s' gets no MPS limits", gpu,
           MPS_CLIENTS, t->name);
    return;
  }
  uint32_t ppm = atomic_load(&t->limits->compute.limit_ppm);
  struct mps_client *c = &d->mps->c[d->mps->nc++];
  snprintf(c->tenant, sizeof(c->tenant), "%s", t->name);
  c->uid = t->uid;
  c->gpu = gpu;
  c->pct = ppm ? (ppm + 9999) / 10000 : 100;
  c->pinned = atomic_load(&t->limits->limit_bytes[gpu]);
  pid_t server = server_of(d, g, t->uid, &err);
  if (server < 0 || set_server_limits(d, g, gpu, t->uid, server, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "MPS: GPU %d: tenant '%s': %s", gpu, t->name, err->msg);
    gs_error_release(&err);
    return;
  }
  GS_LOG(GS_LOG_INFO, "MPS: GPU %d: tenant '%s' is a client of server %d (%u%% of the SMs)", gpu,
         t->name, (int) server, c->pct);
}

static const struct mps_client *client_of(const struct daemon *d, const char *tenant)
{
  for (int i = 0; d->mps && i < d->mps->nc; i++)
    if (strcmp(d->mps->c[i].tenant, tenant) == 0)
      return &d->mps->c[i];
  return NULL;
}

json_t *mps_tenant_json(const struct daemon *d, const struct tenant *t)
{
  const struct mps_client *c = client_of(d, t->name);
  if (!c)
    return NULL;
  const struct mps_gpu *g = &d->mps->gpu[c->gpu];
  char pinned[64];
  snprintf(pinned, sizeof(pinned), "0=%lluM", (unsigned long long) (c->pinned >> 20));
  return json_pack("{s:i, s:s, s:s, s:i, s:s?}", "gpu", c->gpu, "pipe_directory", g->pipe,
                   "log_directory", g->log, "active_thread_percentage", (int) c->pct,
                   "pinned_device_mem_limit", c->pinned == GS_LIMIT_NONE ? NULL : pinned);
}

json_t *mps_gpu_json(const struct daemon *d, int gpu)
{
  static const char *const states[] = { "off", "running", "fault", "stopped" };
  if (!d->mps || gpu < 0 || gpu >= GS_LEDGER_MAX_GPUS || d->mps->gpu[gpu].state == MPS_OFF)
    return json_null();
  const struct mps_gpu *g = &d->mps->gpu[gpu];
  return json_pack("{s:s, s:i, s:s, s:s}", "state", states[g->state], "control_pid",
                   (int) g->control, "pipe_directory", g->pipe, "log_directory", g->log);
}

/* ---- faults ---- */

/* The tenants that are clients of GPU gpu, for the log: "'a', 'b'". */
static void clients_text(const struct daemon *d, int gpu, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < d->mps->nc && o < len; i++)
    if (d->mps->c[i].gpu == gpu)
      o += (size_t) snprintf(buf + o, len - o, "%s'%s'", o ? ", " : "", d->mps->c[i].tenant);
  if (!buf[0])
    snprintf(buf, len, "none of gpuslice's");
}

/* A server in FAULT, when one is: its pid; 0 when none; -1 when the control daemon does not answer. */
static pid_t faulted_server(const struct daemon *d, const struct mps_gpu *g)
{
  char list[4096], status[256];
  gs_error_t err = NULL;
  if (command(d, g, list, sizeof(list), &err, "get_server_list") < 0) {
    gs_error_release(&err);
    return -1;
  }
  for (char *p = list; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0')) {
    pid_t pid = (pid_t) strtol(p, NULL, 10);
    if (pid > 0 &&
        command(d, g, status, sizeof(status), &err, "get_server_status %d", (int) pid) == 0 &&
        strstr(status, "FAULT"))
      return pid;
    gs_error_release(&err);
  }
  return 0;
}

static bool has_clients(const struct daemon *d, const struct mps_gpu *g, pid_t server)
{
  char out[4096];
  gs_error_t err = NULL;
  if (command(d, g, out, sizeof(out), &err, "get_client_list %d", (int) server) < 0) {
    gs_error_release(&err);
    return true; /* cannot tell: wait */
  }
  return out[strspn(out, " \n")] != '\0';
}

static void restart(struct daemon *d, int i, const char *why)
{
  struct mps_gpu *g = &d->mps->gpu[i];
  gs_error_t err = NULL;
  if (g->control)
    control_quit(d, g);
  if (control_start(d, g, &err) < 0) {
    GS_LOG(GS_LOG_ERROR, "MPS: GPU %d: restart after %s: %s", i, why, err->msg);
    gs_error_release(&err);
    g->state = MPS_STOPPED;
    return;
  }
  GS_LOG(GS_LOG_INFO, "MPS: GPU %d: control daemon restarted after %s (pid %d)", i, why,
         (int) g->control);
}

static void check_gpu(struct daemon *d, int i)
{
  struct mps_gpu *g = &d->mps->gpu[i];
  char who[1024];
  if (!running(g)) {
    GS_LOG(GS_LOG_ERROR, "MPS: GPU %d: control daemon %d is gone", i, (int) g->control);
    g->control = 0;
    restart(d, i, "its end");
    return;
  }
  if (g->state == MPS_RUNNING) {
    pid_t s = faulted_server(d, g);
    if (s <= 0)
      return;
    clients_text(d, i, who, sizeof(who));
    GS_LOG(GS_LOG_ERROR,
           "MPS: GPU %d: server %d is in FAULT: its clients get CUDA errors 805-810; tenants "
           "affected: %s; it is "
           "restarted once they have exited",
           i, (int) s, who);
    g->state = MPS_FAULT;
    g->fault_server = s;
  }
  if (g->state == MPS_FAULT && !has_clients(d, g, g->fault_server))
    restart(d, i, "a server fault");
}

void mps_check(struct daemon *d)
{
  if (!d->mps || daemon_now_mono() < d->mps->next_check)
    return;
  d->mps->next_check = daemon_now_mono() + CHECK_PERIOD_S;
  prune(d);
  for (int i = 0; i < GS_LEDGER_MAX_GPUS; i++)
    if (d->mps->gpu[i].state == MPS_RUNNING || d->mps->gpu[i].state == MPS_FAULT)
      check_gpu(d, i);
}
