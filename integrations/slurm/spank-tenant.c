/* The remote side of the plugin, in slurmstepd: a step given any gpuslice option runs its
 * tasks as one gpuslice tenant, through the contract `gpuslice run` uses. The step makes
 * the tenant's ledger (named slurm-<job>.<step>, labelled with job, step, user, account and
 * partition, holding the job's limits), and the tasks' environment gets the interposer in
 * LD_PRELOAD, GPUSLICE_TENANT and GPUSLICE_STATE_DIR. When a node daemon answers, the tenant
 * is registered with it as `gpuslice run` registers its own (the library's client,
 * gpuslice/daemon-register.h), and the tasks get GPUSLICE_SOCKET so that they read the
 * daemon's limits file. While the step runs, slurmstepd holds a descriptor on the ledger
 * (gs_ledger_hold) and a thread of its own reaps the tenant's dead processes, as run does
 * while its command runs. At the step's end the daemon is told (with the last task's exit
 * status) and the ledger is removed.
 *
 * What does not live here: the simulated driver: a job that wants it sets GPUSLICE_SIM (and
 * LD_LIBRARY_PATH) itself, as it would for any program. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include <gpuslice/daemon-paths.h>
#include <gpuslice/daemon-register.h>
#include <gpuslice/error.h>
#include <gpuslice/limits.h>
#include <gpuslice/paths.h>
#include <gpuslice/tenant-ledger.h>

#include "spank-internal.h"

/* How long slurmstepd waits for the daemon: a step's start is delayed by at most this when a
 * daemon hangs. */
#define REGISTER_TIMEOUT_MS 2000L
/* How often the tenant's dead processes are looked for, as `gpuslice run` does (run.c). */
#define REAP_PERIOD_NS 200000000L

static struct {
  struct spank_job_opts opts; /* the job's options, with its shards' fraction where it gave none */
  uint32_t shards;            /* the step's shards on this node, 0 for none */
  struct gs_ledger *ledger;
  char name[GS_LEDGER_NAME_MAX];
  char dir[PATH_MAX];
  char socket[PATH_MAX];
  int fd; /* gs_ledger_hold's, or -1 */
  bool registered;
  int exit_status; /* the last task's, as a shell has it */
  bool reaping;
  pthread_t reaper;
  pthread_mutex_t lock;
  pthread_cond_t stop;
  bool stopping;
} tenant = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .stop = PTHREAD_COND_INITIALIZER };

/* "batch", "extern", "interactive" or the step's number, as sacct names steps. */
static void step_name(uint32_t step, char *buf, size_t n)
{
  if (step == SLURM_BATCH_SCRIPT)
    snprintf(buf, n, "batch");
  else if (step == SLURM_EXTERN_CONT)
    snprintf(buf, n, "extern");
  else if (step == SLURM_INTERACTIVE_STEP)
    snprintf(buf, n, "interactive");
  else
    snprintf(buf, n, "%u", step);
}

/* The job's environment variable name, or "" when it has none. */
static void job_env(spank_t sp, const char *name, char *buf, int n)
{
  if (spank_getenv(sp, name, buf, n) != ESPANK_SUCCESS)
    buf[0] = '\0';
}

/* shards_per_gpu=N from plugstack.conf: how many shards gres.conf gives each GPU. 0: not
 * given, or not a whole number in 1..1000000. */
static uint32_t shards_per_gpu(int ac, char **av)
{
  for (int i = 0; i < ac; i++)
    if (strncmp(av[i], "shards_per_gpu=", 15) == 0) {
      char *end = NULL;
      unsigned long n = strtoul(av[i] + 15, &end, 10);
      return *end || n < 1 || n > 1000000 ? 0 : (uint32_t) n;
    }
  return 0;
}

/* The shards the step was given on this node. Slurm 22.05 says only how many
 * (SLURM_SHARDS_ON_NODE), and on which GPUs (SLURM_STEP_GPUS, SLURM_JOB_GPUS), not how many
 * each GPU has: that is shards_per_gpu's. */
static uint32_t step_shards(spank_t sp)
{
  char buf[32], *end = NULL;
  if (spank_getenv(sp, "SLURM_SHARDS_ON_NODE", buf, sizeof(buf)) != ESPANK_SUCCESS)
    return 0;
  unsigned long n = strtoul(buf, &end, 10);
  return *end || n > 1000000 ? 0 : (uint32_t) n;
}

int spank_tenant_wanted(spank_t sp, int ac, char **av)
{
  uint32_t per_gpu = shards_per_gpu(ac, av);
  tenant.opts = spank_job_opts;
  tenant.shards = step_shards(sp);
  if (tenant.shards && !per_gpu)
    slurm_info("gpuslice: the step has %u shards, but plugstack.conf gives the plugin no "
               "shards_per_gpu=N: they give it no share of the GPU",
               tenant.shards);
  if (!tenant.shards || !per_gpu)
    return tenant.opts.given;
  /* N shards of a GPU's per_gpu are that fraction of its memory and of its time, where the
   * job gave no explicit fraction. */
  uint64_t ppm = (uint64_t) tenant.shards * 1000000u / per_gpu;
  ppm = ppm > 1000000u ? 1000000u : ppm ? ppm : 1;
  if (!tenant.opts.vram_set) {
    tenant.opts.vram_set = true;
    tenant.opts.vram_ppm = ppm;
    tenant.opts.vram_bytes = 0;
  }
  if (!tenant.opts.compute_ppm)
    tenant.opts.compute_ppm = (uint32_t) ppm;
  tenant.opts.given = true;
  return 1;
}

/* Appends "key=value\n" to labels, or the line value alone when key is "" (value is then a
 * whole "k=v"). An empty value adds nothing. */
static int add_label(char *labels, size_t n, const char *key, const char *value)
{
  size_t used = strlen(labels);
  if (!*value || strchr(value, '\n'))
    return 0;
  if (used + strlen(key) + strlen(value) + 3 > n)
    return -1;
  snprintf(labels + used, n - used, "%s%s%s\n", key, *key ? "=" : "", value);
  return 0;
}

/* The job's comment as labels, when it is nothing but KEY=VALUE words (spaces or commas
 * between them): "team=vision project=x1". A comment that is anything else is a comment, and
 * a key the plugin sets itself (job, step, ...) is not taken from it. Slurm 22.05 puts the
 * comment in no step's environment (SLURM_JOB_COMMENT is the prolog's and epilog's), so it is
 * asked of slurmctld through slurmstepd's own libslurm, found at run time: the plugin links
 * no libslurm of its own. */
typedef int (*load_job_fn)(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags);
typedef void (*free_job_fn)(job_info_msg_t *msg);

static bool comment_is_labels(const char *c)
{
  size_t words = 0;
  for (const char *p = c; *p;) {
    size_t len = strcspn(p, " ,\t\n"), key = strcspn(p, "=");
    if (len && (key >= len || !gs_label_key_valid(p, key) || key + 1 == len))
      return false;
    words += len > 0;
    p += len;
    p += *p ? 1 : 0;
  }
  return words > 0 && gs_utf8_valid(c);
}

static int add_comment_labels(uint32_t job, char *labels, size_t n)
{
  load_job_fn load = (load_job_fn) dlsym(RTLD_DEFAULT, "slurm_load_job");
  free_job_fn release = (free_job_fn) dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg");
  job_info_msg_t *msg = NULL;
  if (!load || !release || load(&msg, job, SHOW_DETAIL) != 0 || !msg)
    return 0;
  const char *c = msg->record_count > 0 ? msg->job_array[0].comment : NULL;
  int rc = 0;
  for (const char *p = c && comment_is_labels(c) ? c : ""; *p && rc == 0;) {
    char word[512], key[128];
    size_t len = strcspn(p, " ,\t\n"), klen = strcspn(p, "=");
    if (len && len < sizeof(word) && klen < sizeof(key)) {
      snprintf(word, sizeof(word), "%.*s", (int) len, p);
      snprintf(key, sizeof(key), "\n%.*s=", (int) klen, p);
      /* Labels are "k=v" lines: "\nk=" in "\n" + labels is a key already there. */
      char lines[GS_LEDGER_LABELS_MAX + 2];
      snprintf(lines, sizeof(lines), "\n%s", labels);
      if (!strstr(lines, key))
        rc = add_label(labels, n, "", word);
    }
    p += len;
    p += *p ? 1 : 0;
  }
  release(msg);
  return rc;
}

static int make_labels(spank_t sp, uint32_t job, const char *step, char *labels, size_t n)
{
  char buf[256], id[16];
  uid_t uid = 0;
  struct passwd *pw = NULL;
  labels[0] = '\0';
  snprintf(id, sizeof(id), "%u", job);
  if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS)
    pw = getpwuid(uid);
  if (add_label(labels, n, "job", id) < 0 || add_label(labels, n, "step", step) < 0 ||
      add_label(labels, n, "user", pw ? pw->pw_name : "") < 0)
    return -1;
  job_env(sp, "SLURM_JOB_ACCOUNT", buf, sizeof(buf));
  if (add_label(labels, n, "account", buf) < 0)
    return -1;
  job_env(sp, "SLURM_JOB_PARTITION", buf, sizeof(buf));
  if (add_label(labels, n, "partition", buf) < 0)
    return -1;
  snprintf(buf, sizeof(buf), "%u", tenant.shards);
  if (add_label(labels, n, "shards", tenant.shards ? buf : "") < 0)
    return -1;
  return add_comment_labels(job, labels, n);
}

static void fill_spec(struct gs_ledger_spec *spec, const char *labels)
{
  const struct spank_job_opts *o = &tenant.opts;
  memset(spec, 0, sizeof(*spec));
  spec->name = tenant.name;
  spec->labels = labels;
  spec->compute_ppm = o->compute_ppm;
  spec->compute_policy = o->policy;
  spec->priority = o->priority;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    spec->limit_bytes[g] = o->vram_set && !o->vram_ppm ? o->vram_bytes : GS_LIMIT_NONE;
    spec->limit_ppm[g] = o->vram_set ? (uint32_t) o->vram_ppm : 0;
  }
}

/* The interposer: preload=PATH from plugstack.conf, else libgpuslice.so where the layout
 * (paths.h) puts it beside this plugin, which lives in <prefix>/lib as the interposer does. */
static int find_preload(int ac, char **av, char *out, size_t n, gs_error_t *err)
{
  for (int i = 0; i < ac; i++)
    if (strncmp(av[i], "preload=", 8) == 0) {
      snprintf(out, n, "%s", av[i] + 8);
      return access(out, R_OK) == 0 ? 0 : gs_make_error(err, errno, "interposer '%s'", out);
    }
  Dl_info info;
  struct gs_paths paths;
  if (!dladdr((void *) find_preload, &info) || !info.dli_fname)
    return gs_make_error(err, 0, "cannot find where gpuslice_spank.so is");
  if (gs_paths_find(&paths, info.dli_fname, err) < 0)
    return -1;
  snprintf(out, n, "%s", paths.preload);
  gs_paths_release(&paths);
  return access(out, R_OK) == 0 ? 0 : gs_make_error(err, errno, "interposer '%s'", out);
}

/* As cli/run.c does: in sanitizer builds the test suite's programs are built with ASan,
 * which insists on coming first in the load order, and a preloaded interposer is ahead of
 * it. That order is harmless (the interposer does not define malloc), so sanitizer builds
 * tell ASan not to check it. */
static int relax_asan_link_order(spank_t sp, gs_error_t *err)
{
#ifdef GS_ASAN_BUILD
  char old[1024], opts[1100];
  job_env(sp, "ASAN_OPTIONS", old, sizeof(old));
  if (strstr(old, "verify_asan_link_order"))
    return 0;
  snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", old, *old ? ":" : "");
  if (spank_setenv(sp, "ASAN_OPTIONS", opts, 1) != ESPANK_SUCCESS)
    return gs_make_error(err, 0, "cannot set the step's ASAN_OPTIONS");
#else
  (void) sp;
  (void) err;
#endif
  return 0;
}

/* LD_PRELOAD for the tasks: the interposer ahead of what the job had. */
static int set_preload(spank_t sp, const char *preload, gs_error_t *err)
{
  char old[PATH_MAX * 2], joined[PATH_MAX * 3];
  job_env(sp, "LD_PRELOAD", old, sizeof(old));
  if (*old)
    snprintf(joined, sizeof(joined), "%s:%s", preload, old);
  else
    snprintf(joined, sizeof(joined), "%s", preload);
  if (spank_setenv(sp, "LD_PRELOAD", joined, 1) != ESPANK_SUCCESS)
    return gs_make_error(err, 0, "cannot set the step's LD_PRELOAD");
  return relax_asan_link_order(sp, err);
}

static int set_env(spank_t sp, gs_error_t *err)
{
  if (spank_setenv(sp, "GPUSLICE_TENANT", tenant.name, 1) != ESPANK_SUCCESS ||
      spank_setenv(sp, "GPUSLICE_STATE_DIR", tenant.dir, 1) != ESPANK_SUCCESS)
    return gs_make_error(err, 0, "cannot set the step's GPUSLICE_TENANT and GPUSLICE_STATE_DIR");
  return 0;
}

/* The daemon's socket: socket=PATH from plugstack.conf, else the job's GPUSLICE_SOCKET, else
 * the default as slurmstepd sees it (gpuslice/daemon-paths.h). */
static void find_socket(spank_t sp, int ac, char **av)
{
  for (int i = 0; i < ac; i++)
    if (strncmp(av[i], "socket=", 7) == 0) {
      snprintf(tenant.socket, sizeof(tenant.socket), "%s", av[i] + 7);
      return;
    }
  job_env(sp, "GPUSLICE_SOCKET", tenant.socket, sizeof(tenant.socket));
  if (!*tenant.socket)
    snprintf(tenant.socket, sizeof(tenant.socket), "%s", gs_daemon_socket_path());
}

/* Registers the tenant when a daemon answers; a daemon's refusal fails the step, as it fails
 * `gpuslice run`. The tasks then read the daemon's limits file, found beside its socket. */
static int register_tenant(spank_t sp, const char *labels, gs_error_t *err)
{
  const struct spank_job_opts *o = &tenant.opts;
  char dir[PATH_MAX];
  struct gs_daemon_reg reg = {
    .name = tenant.name,
    .pid = (long) getpid(),
    .state_dir = realpath(tenant.dir, dir) ? dir : tenant.dir,
    .labels = labels,
    .gpu = -1,
    .vram_bytes = o->vram_set && !o->vram_ppm ? o->vram_bytes : GS_LIMIT_NONE,
    .vram_ppm = o->vram_set ? (uint32_t) o->vram_ppm : 0,
    .compute_ppm = o->compute_ppm,
    .compute_policy = o->policy,
    .priority = o->priority,
  };
  gs_error_t e = NULL;
  int rc = gs_daemon_register(tenant.socket, &reg, REGISTER_TIMEOUT_MS, &e);
  if (rc < 0) {
    gs_make_error(err, 0, "%s", e->msg);
    gs_error_release(&e);
    return -1;
  }
  if (rc == GS_DAEMON_ABSENT) {
    slurm_debug("gpuslice: step tenant %s: not registered: %s", tenant.name, e->msg);
    gs_error_release(&e);
    return 0;
  }
  tenant.registered = true;
  if (spank_setenv(sp, "GPUSLICE_SOCKET", tenant.socket, 1) != ESPANK_SUCCESS)
    return gs_make_error(err, 0, "cannot set the step's GPUSLICE_SOCKET");
  return 0;
}

/* slurmstepd's thread that gives back the memory of the tenant's dead processes while the step
 * runs: a task's child killed with SIGKILL leaves a slot nobody else frees before the step
 * ends. */
static void *reap_loop(void *arg)
{
  (void) arg;
  pthread_mutex_lock(&tenant.lock);
  while (!tenant.stopping) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += REAP_PERIOD_NS;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&tenant.stop, &tenant.lock, &until);
    if (!tenant.stopping)
      gs_ledger_reap(tenant.ledger);
  }
  pthread_mutex_unlock(&tenant.lock);
  return NULL;
}

static void start_reaper(void)
{
  tenant.stopping = false;
  tenant.reaping = pthread_create(&tenant.reaper, NULL, reap_loop, NULL) == 0;
  if (!tenant.reaping)
    slurm_error("gpuslice: step tenant %s: no reaper thread: dead processes' memory comes "
                "back at the step's end",
                tenant.name);
}

static void stop_reaper(void)
{
  if (!tenant.reaping)
    return;
  pthread_mutex_lock(&tenant.lock);
  tenant.stopping = true;
  pthread_cond_signal(&tenant.stop);
  pthread_mutex_unlock(&tenant.lock);
  pthread_join(tenant.reaper, NULL);
  tenant.reaping = false;
}

/* Everything spank_tenant_create does, with err for its one line. */
static int create(spank_t sp, int ac, char **av, gs_error_t *err)
{
  uint32_t job = 0, step = 0;
  char stepname[16], labels[GS_LEDGER_LABELS_MAX], preload[PATH_MAX];
  struct gs_ledger_spec spec;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
    return gs_make_error(err, 0, "cannot read the job and step ids");
  step_name(step, stepname, sizeof(stepname));
  snprintf(tenant.name, sizeof(tenant.name), "slurm-%u.%s", job, stepname);
  if (find_preload(ac, av, preload, sizeof(preload), err) < 0)
    return -1;
  /* The job's GPUSLICE_STATE_DIR, as a program it started would see it; else the default. */
  job_env(sp, "GPUSLICE_STATE_DIR", tenant.dir, sizeof(tenant.dir));
  if (!*tenant.dir)
    snprintf(tenant.dir, sizeof(tenant.dir), "%s", gs_ledger_state_dir());
  if (make_labels(sp, job, stepname, labels, sizeof(labels)) < 0)
    return gs_make_error(err, 0, "labels exceed %zu bytes", sizeof(labels) - 1);
  fill_spec(&spec, labels);
  if (gs_ledger_state_dir_make(tenant.dir, err) < 0 ||
      gs_ledger_create(tenant.dir, &spec, &tenant.ledger, err) < 0)
    return -1;
  tenant.fd = gs_ledger_hold(tenant.dir, tenant.ledger);
  find_socket(sp, ac, av);
  if (set_preload(sp, preload, err) < 0 || set_env(sp, err) < 0 ||
      register_tenant(sp, labels, err) < 0)
    return -1;
  start_reaper();
  return 0;
}

int spank_tenant_create(spank_t sp, int ac, char **av)
{
  gs_error_t err = NULL;
  if (create(sp, ac, av, &err) == 0)
    return 0;
  slurm_error("gpuslice: step tenant %s: %s", tenant.name, gs_scrub_ctl(err->msg, '?'));
  gs_error_release(&err);
  spank_tenant_end();
  return -1;
}

void spank_tenant_task_exit(int wait_status)
{
  if (!tenant.ledger)
    return;
  tenant.exit_status =
    WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
  pthread_mutex_lock(&tenant.lock);
  gs_ledger_reap(tenant.ledger);
  pthread_mutex_unlock(&tenant.lock);
}

void spank_tenant_end(void)
{
  gs_error_t err = NULL;
  if (!tenant.ledger)
    return;
  stop_reaper();
  if (tenant.registered &&
      gs_daemon_unregister(tenant.socket, tenant.name, tenant.exit_status, REGISTER_TIMEOUT_MS,
                           &err) < 0) {
    slurm_error("gpuslice: step tenant %s: tell the daemon it ended: %s", tenant.name,
                gs_scrub_ctl(err->msg, '?'));
    gs_error_release(&err);
  }
  tenant.registered = false;
  gs_ledger_detach(tenant.ledger);
  tenant.ledger = NULL;
  if (tenant.fd >= 0)
    close(tenant.fd);
  tenant.fd = -1;
  if (gs_ledger_remove(tenant.dir, tenant.name, &err) < 0) {
    slurm_error("gpuslice: step tenant %s: %s", tenant.name, gs_scrub_ctl(err->msg, '?'));
    gs_error_release(&err);
  }
}
