/* `gpuslice mig apply --drain`: who uses what a layout change takes (NVML's processes, given
 * to the daemon's tenants they descend from), the node cordoned in Slurm and Kubernetes where
 * they run it, the users stopped, and the node given back in the exit step.
 *
 * The suspend hook: a tenant is offered to drain_suspend_tenant first, where suspending a
 * tenant (checkpointing its GPU state, to resume it after the change) will plug in; until
 * then it suspends nothing and every user is stopped: SIGTERM (a tenant's `gpuslice run`
 * passes it to its command), then SIGKILL after --grace. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/daemon-client.h>
#include <gpuslice/proc.h>

#include "mig-cli.h"

extern char **environ;

/* ---- who uses it ---- */

struct tenant_ref {
  const char *name;
  pid_t pid;
};

/* The tenant whose owner pid is pid or its nearest ancestor (32 steps at most), or -1. */
static int tenant_of(pid_t pid, const struct tenant_ref *t, int nt)
{
  for (int step = 0; step < 32 && pid > 1; step++) {
    for (int i = 0; i < nt; i++)
      if (t[i].pid == pid)
        return i;
    pid_t parent;
    uint64_t start;
    if (gs_proc_parent(pid, &parent, &start) < 0)
      return -1;
    pid = parent;
  }
  return -1;
}

static void add_tenant(struct mig_users *u, const char *name, pid_t pid)
{
  for (int i = 0; i < u->ntenants; i++)
    if (strcmp(u->tenant[i], name) == 0)
      return;
  if (u->ntenants == MIG_MAX_USERS)
    return;
  snprintf(u->tenant[u->ntenants], sizeof(u->tenant[0]), "%s", name);
  u->tenant_pid[u->ntenants++] = pid;
}

/* Whether the daemon's tenant t holds memory on GPU index by its own count. */
static bool holds_on(const json_t *t, int index)
{
  size_t i;
  json_t *g;
  json_array_foreach(json_object_get(t, "gpus"), i, g)
  {
    if (json_integer_value(json_object_get(g, "index")) == index &&
        json_integer_value(json_object_get(g, "vram_used_bytes")) > 0)
      return true;
  }
  return false;
}

/* The daemon's running tenants, when one answers; NULL when none does. */
static json_t *daemon_tenants(const char *socket)
{
  gs_error_t err = NULL;
  json_t *reply = NULL;
  struct daemon_client *c = daemon_client_new(socket, &err);
  if (c && daemon_client_get(c, "/v1/tenants", &reply, &err) < 0)
    reply = NULL;
  daemon_client_free(c);
  gs_error_release(&err);
  return reply;
}

void mig_find_users(const struct mig_opts *o, const struct gs_mig_gpu *g,
                    const struct gs_mig_plan *plan, struct mig_users *u)
{
  pid_t pids[MIG_MAX_USERS];
  struct tenant_ref refs[MIG_MAX_USERS];
  int np = gs_mig_plan_pids(g, plan, pids, MIG_MAX_USERS), nt = 0;
  json_t *reply = daemon_tenants(o->socket), *t;
  size_t i;
  memset(u, 0, sizeof(*u));
  json_array_foreach(json_object_get(reply, "tenants"), i, t)
  {
    const char *state = json_string_value(json_object_get(t, "state"));
    if (nt == MIG_MAX_USERS || !state || strcmp(state, "running") != 0)
      continue;
    refs[nt] = (struct tenant_ref){ json_string_value(json_object_get(t, "name")),
                                    (pid_t) json_integer_value(json_object_get(t, "pid")) };
    if (refs[nt].name && plan->whole_gpu && holds_on(t, o->gpu))
      add_tenant(u, refs[nt].name, refs[nt].pid);
    nt += refs[nt].name != NULL;
  }
  for (int k = 0; k < np; k++) {
    int ti = tenant_of(pids[k], refs, nt);
    if (ti >= 0)
      add_tenant(u, refs[ti].name, refs[ti].pid);
    else if (u->nothers < MIG_MAX_USERS)
      u->other[u->nothers++] = pids[k];
  }
  json_decref(reply);
}

void mig_users_text(const struct mig_users *u, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < u->ntenants && o < len; i++)
    o += (size_t) snprintf(buf + o, len - o, "%stenant '%s' (pid %d)", o ? ", " : "", u->tenant[i],
                           (int) u->tenant_pid[i]);
  for (int i = 0; i < u->nothers && o < len; i++)
    o += (size_t) snprintf(buf + o, len - o, "%sprocess %d", o ? ", " : "", (int) u->other[i]);
}

/* ---- Slurm and Kubernetes ---- */

bool mig_on_path(const char *prog)
{
  const char *path = getenv("PATH");
  char buf[4096];
  for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
    size_t len = strcspn(p, ":");
    snprintf(buf, sizeof(buf), "%.*s/%s", (int) len, p, prog);
    if (len && access(buf, X_OK) == 0)
      return true;
    p += len + (p[len] == ':');
  }
  return false;
}

/* Reads fd to its end, the first len - 1 bytes into out (may be NULL). */
static void read_all(int fd, char *out, size_t len)
{
  size_t got = 0;
  char sink[512];
  for (;;) {
    bool room = out && got + 1 < len;
    ssize_t k = read(fd, room ? out + got : sink, room ? len - got - 1 : sizeof(sink));
    if (k <= 0)
      break;
    if (room)
      got += (size_t) k;
  }
  if (out && len)
    out[got] = '\0';
}

/* Runs argv (found on PATH), its output in out (may be NULL); the exit status, or -1. */
int mig_run_tool(const char *const argv[], char *out, size_t len)
{
  char *const *args;
  int fd[2], status;
  memcpy(&args, &argv, sizeof(args)); /* posix_spawnp's type; it writes nothing there */
  pid_t pid;
  posix_spawn_file_actions_t fa;
  if (pipe2(fd, O_CLOEXEC) < 0)
    return -1;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  int r = posix_spawnp(&pid, argv[0], &fa, NULL, args, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  if (r == 0)
    read_all(fd[0], out, len);
  close(fd[0]);
  if (r != 0 || waitpid(pid, &status, 0) < 0)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void node_name(const struct mig_opts *o, char *buf, size_t len)
{
  const char *env = getenv("SLURMD_NODENAME");
  if (!env || !*env)
    env = getenv("NODE_NAME");
  if (o->node)
    env = o->node;
  if (env && *env) {
    snprintf(buf, len, "%s", env);
    return;
  }
  if (gethostname(buf, len) < 0)
    snprintf(buf, len, "localhost");
  buf[len - 1] = '\0';
  buf[strcspn(buf, ".")] = '\0';
}

static void cordon_slurm(int gpu, struct mig_drain *d)
{
  char out[4096], node_arg[300];
  if (!mig_on_path("scontrol")) {
    printf("GPU %d: Slurm: no scontrol here, node not drained\n", gpu);
    return;
  }
  snprintf(node_arg, sizeof(node_arg), "NodeName=%s", d->node);
  const char *const show[] = { "scontrol", "show", "node", d->node, "-o", NULL };
  if (mig_run_tool(show, out, sizeof(out)) != 0) {
    printf("GPU %d: Slurm: scontrol does not know node %s, not drained\n", gpu, d->node);
    return;
  }
  if (strstr(out, "DRAIN")) {
    printf("GPU %d: Slurm: node %s was drained already\n", gpu, d->node);
    return;
  }
  const char *const drain[] = {
    "scontrol", "update", node_arg, "State=DRAIN", "Reason=gpuslice mig apply", NULL
  };
  d->slurm_drained = mig_run_tool(drain, NULL, 0) == 0;
  printf("GPU %d: Slurm: node %s %s\n", gpu, d->node,
         d->slurm_drained ? "drained" : "could not be drained");
}

static void cordon_k8s(int gpu, struct mig_drain *d)
{
  char out[256];
  if (!mig_on_path("kubectl")) {
    printf("GPU %d: Kubernetes: no kubectl here, node not cordoned\n", gpu);
    return;
  }
  const char *const get[] = { "kubectl", "get", "node",
                              d->node,   "-o",  "jsonpath={.spec.unschedulable}",
                              NULL };
  if (mig_run_tool(get, out, sizeof(out)) != 0) {
    printf("GPU %d: Kubernetes: kubectl does not know node %s, not cordoned\n", gpu, d->node);
    return;
  }
  if (strncmp(out, "true", 4) == 0) {
    printf("GPU %d: Kubernetes: node %s was cordoned already\n", gpu, d->node);
    return;
  }
  const char *const cordon[] = { "kubectl", "cordon", d->node, NULL };
  d->k8s_cordoned = mig_run_tool(cordon, NULL, 0) == 0;
  printf("GPU %d: Kubernetes: node %s %s\n", gpu, d->node,
         d->k8s_cordoned ? "cordoned" : "could not be cordoned");
}

void mig_cordon(const struct mig_opts *o, struct mig_drain *d)
{
  memset(d, 0, sizeof(*d));
  node_name(o, d->node, sizeof(d->node));
  cordon_slurm(o->gpu, d);
  cordon_k8s(o->gpu, d);
  fflush(stdout);
}

void mig_uncordon(struct mig_drain *d)
{
  char node_arg[300];
  snprintf(node_arg, sizeof(node_arg), "NodeName=%s", d->node);
  if (d->slurm_drained) {
    const char *const resume[] = { "scontrol", "update", node_arg, "State=RESUME", NULL };
    int r = mig_run_tool(resume, NULL, 0);
    printf("Slurm: node %s %s\n", d->node,
           r == 0 ? "resumed" : "could not be resumed: resume it by hand");
  }
  if (d->k8s_cordoned) {
    const char *const uncordon[] = { "kubectl", "uncordon", d->node, NULL };
    int r = mig_run_tool(uncordon, NULL, 0);
    printf("Kubernetes: node %s %s\n", d->node,
           r == 0 ? "uncordoned" : "could not be uncordoned: do it by hand");
  }
  d->slurm_drained = d->k8s_cordoned = false;
  fflush(stdout);
}

/* ---- stopping the users ---- */

/* THE SUSPEND HOOK. Suspending a tenant (its GPU state checkpointed, to be resumed once the
 * layout has changed) plugs in here when the suspend issue lands: return true when the tenant
 * was suspended and holds nothing on the GPU any more. Until then no tenant can be: false. */
static bool drain_suspend_tenant(const char *name, pid_t owner)
{
  (void) name;
  (void) owner;
  return false;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The processes NVML still shows on what the plan takes, into left; how many (-1: cannot read). */
static int still_there(const struct gs_mig_ops *ops, const struct gs_mig_plan *plan, pid_t *left,
                       int cap)
{
  struct gs_mig_gpu g;
  gs_error_t err = NULL;
  if (ops->read(ops->ctx, &g, &err) < 0) {
    gs_error_release(&err);
    return -1;
  }
  return gs_mig_plan_pids(&g, plan, left, cap);
}

/* Waits until nothing is left or `until` passes; what is left. */
static int wait_gone(const struct gs_mig_ops *ops, const struct gs_mig_plan *plan, double until,
                     pid_t *left, int cap)
{
  int n;
  while ((n = still_there(ops, plan, left, cap)) != 0 && now_s() < until) {
    struct timespec ts = { 0, 200 * 1000 * 1000 };
    nanosleep(&ts, NULL);
  }
  return n;
}

static void signal_users(int gpu, const struct mig_users *u, int sig, const char *signame)
{
  for (int i = 0; i < u->ntenants; i++) {
    if (sig == SIGTERM && drain_suspend_tenant(u->tenant[i], u->tenant_pid[i])) {
      printf("GPU %d: tenant '%s' suspended\n", gpu, u->tenant[i]);
      continue;
    }
    if (kill(u->tenant_pid[i], sig) == 0)
      printf("GPU %d: tenant '%s' (pid %d): %s\n", gpu, u->tenant[i], (int) u->tenant_pid[i],
             signame);
  }
  for (int i = 0; i < u->nothers; i++)
    if (kill(u->other[i], sig) == 0)
      printf("GPU %d: process %d: %s\n", gpu, (int) u->other[i], signame);
  fflush(stdout);
}

int mig_stop_users(const struct mig_opts *o, const struct gs_mig_ops *ops,
                   const struct gs_mig_plan *plan, const struct mig_users *u, gs_error_t *err)
{
  pid_t left[MIG_MAX_USERS];
  signal_users(o->gpu, u, SIGTERM, "SIGTERM");
  int n = wait_gone(ops, plan, now_s() + o->grace, left, MIG_MAX_USERS);
  if (n == 0)
    return 0;
  /* What is left gets SIGKILL: the tenants' own processes too, which a killed `gpuslice run`
   * would leave behind. */
  struct mig_users rest = *u;
  rest.nothers = 0;
  for (int k = 0; k < n && k < MIG_MAX_USERS; k++)
    rest.other[rest.nothers++] = left[k];
  signal_users(o->gpu, &rest, SIGKILL, "SIGKILL");
  n = wait_gone(ops, plan, now_s() + 10, left, MIG_MAX_USERS);
  if (n < 0)
    return gs_make_error(err, 0, "cannot read GPU %d to see its processes go", o->gpu);
  if (n > 0)
    return gs_make_error(err, 0, "%d process%s still on GPU %d after SIGKILL (first: pid %d)", n,
                         n == 1 ? "" : "es", o->gpu, (int) left[0]);
  return 0;
}
