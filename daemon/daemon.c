/* `gpuslice daemon`: the node daemon's life. It loads its settings, finds the GPUs (one line
 * and exit 1 without a driver), opens the usage ledger, adopts the tenants an earlier run
 * left, takes a first sample, and starts serving; then one poll loop runs the API server, the
 * metrics server and the sampling timer until SIGTERM or SIGINT.
 *
 * Without --foreground it detaches once it serves, and the command returns 0 then (or prints
 * why it could not start and returns 1); the detached daemon logs to syslog. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/daemon-paths.h>
#include <gpuslice/fs.h>

#include "gpu-cuda.h"
#include "idle.h"
#include "suspend.h"

static double now_clock(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

double daemon_now_unix(void)
{
  return now_clock(CLOCK_REALTIME);
}

double daemon_now_mono(void)
{
  return now_clock(CLOCK_MONOTONIC);
}

double daemon_uptime(const struct daemon *d)
{
  return daemon_now_mono() - d->health.started_mono;
}

static void log_sink(int level, const char *line, void *data)
{
  static const char *const names[] = { "error", "warn", "info", "debug" };
  (void) data;
  fprintf(stderr, "gpuslice: daemon: %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], line);
}

/* Once detached there is no terminal to write to: log to syslog instead. */
static void syslog_sink(int level, const char *line, void *data)
{
  static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
  (void) data;
  syslog(prio[level < 0 ? 0 : level > 3 ? 3 : level], "%s", line);
}

/* The interposer reads limits files only beside the socket (gs_daemon_dir): a socket kept
 * elsewhere leaves the tenants with their ledgers' limits, which they can write. */
static void check_socket_dir(const struct daemon_config *c)
{
  const char *slash = strrchr(c->socket, '/');
  size_t n = slash ? (size_t) (slash - c->socket) : 0;
  if (!slash || strlen(c->state_dir) != n || strncmp(c->socket, c->state_dir, n) != 0)
    GS_LOG(
      GS_LOG_WARN,
      "socket %s is not in the state dir %s: tenants' processes will not find their limits files",
      c->socket, c->state_dir);
}

/* The GPU fields of /metrics: dcgm-exporter's default set, or those of a counters file. A file
 * that is not right stops the start, with one line naming its line. */
static int load_fields(struct daemon *d, gs_error_t *err)
{
  d->fields = xcalloc(1, sizeof(*d->fields));
  if (strcmp(d->cfg.counters, "builtin") == 0)
    *d->fields = *gs_metrics_fields_default();
  else if (gs_metrics_fields_load(d->cfg.counters, d->fields, err) < 0)
    return -1;
  d->fields->hostname_lower = d->cfg.hostname_label == HOSTNAME_LABEL_LOWER;
  return 0;
}

/* What start returns for a setting that does not fit the node's GPUs: a usage error. */
#define DAEMON_START_USAGE (-2)

static int start(struct daemon *d, gs_error_t *err)
{
  d->health.started_mono = daemon_now_mono();
  d->health.started_unix = daemon_now_unix();
  proc_watch_init();
  /* A bad idle rule or schedule stops the start, one line naming it and its field. */
  if (idle_init(d, err) < 0)
    return DAEMON_START_USAGE;
  if (load_fields(d, err) < 0 || nvml_open(&d->nvml, err) < 0)
    return -1;
  /* NVML is asked only for what /metrics serves (a counters file of 7 fields costs 7 fields). */
  nvml_want(d->nvml, gs_metrics_fields_readings(d->fields));
  /* The lock comes before the usage ledger and any adoption: two daemons on one state dir
   * would both adopt every tenant and write every interval twice. */
  if (gs_ledger_state_dir_make(d->cfg.state_dir, err) < 0 ||
      gs_daemon_socket_dir_check(d->cfg.socket, true, err) < 0 ||
      state_dir_lock(d->cfg.state_dir, &d->state_lock, err) < 0 ||
      usage_db_open(d->cfg.ledger, &d->db, err) < 0)
    return -1;
  registry_init(&d->reg, d->cfg.state_dir, d->cfg.admin_group);
  if (suspend_watch_open(d) < 0)
    return gs_make_error(err, errno, "the suspend watcher's timer");
  check_socket_dir(&d->cfg);
  sampler_gpus(d);
  if (sharing_parse(d->cfg.sharing, &d->sharing, err) < 0 ||
      sharing_resolve(&d->sharing, &d->snap, err) < 0)
    return DAEMON_START_USAGE;
  if (mps_start(d, err) < 0)
    return -1;
  sampler_adopt(d);
  if (usage_db_close_orphans(d->db, &d->reg, err) < 0)
    return -1;
  sampler_run(d);
  if (api_http_start(d, err) < 0 || metrics_http_start(d, err) < 0)
    return -1;
  state_dir_note_socket(d);
  GS_LOG(GS_LOG_INFO, "serving on %s, metrics on %s; %d GPU(s), %d tenant(s) adopted",
         d->cfg.socket, d->cfg.metrics_listen, d->snap.ngpus, d->reg.n);
  proc_watch_log();
  return 0;
}

static void stop(struct daemon *d)
{
  metrics_http_stop(d);
  api_http_stop(d);
  /* The limits files stay: the tenants keep their limits until a daemon adopts them again. */
  registry_release(&d->reg);
  /* Suspended tenants stay so: a daemon started again adopts them (suspend_adopted). */
  suspend_watch_close(d);
  cuda_close(d->cuda);
  d->cuda = NULL;
  usage_db_close(d->db);
  sampler_release(d);
  mps_stop(d);
  nvml_close(d->nvml);
  state_dir_unlock(&d->state_lock);
  free(d->fields);
  d->fields = NULL;
  idle_release(d);
}

static int make_timer(double interval)
{
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  struct itimerspec it;
  it.it_interval.tv_sec = (time_t) interval;
  it.it_interval.tv_nsec = (long) ((interval - (double) (time_t) interval) * 1e9);
  it.it_value = it.it_interval;
  if (fd >= 0)
    timerfd_settime(fd, 0, &it, NULL);
  return fd;
}

static int make_signalfd(void)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int epoll_fd(struct MHD_Daemon *m)
{
  const union MHD_DaemonInfo *i = m ? MHD_get_daemon_info(m, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
  return i ? i->epoll_fd : -1;
}

/* The poll timeout that libmicrohttpd needs for its connection timeouts, in ms; -1: none. */
static int mhd_timeout(struct daemon *d)
{
  MHD_UNSIGNED_LONG_LONG a = 0, b = 0;
  bool ha = d->api && MHD_get_timeout(d->api, &a) == MHD_YES;
  bool hb = d->metrics && MHD_get_timeout(d->metrics, &b) == MHD_YES;
  if (!ha && !hb)
    return -1;
  MHD_UNSIGNED_LONG_LONG t = ha && hb ? (a < b ? a : b) : ha ? a : b;
  return t > 60000 ? 60000 : (int) t;
}

static void loop(struct daemon *d, int sfd, int tfd)
{
  struct pollfd p[5] = { { .fd = sfd, .events = POLLIN },
                         { .fd = tfd, .events = POLLIN },
                         { .fd = epoll_fd(d->api), .events = POLLIN },
                         { .fd = epoll_fd(d->metrics), .events = POLLIN },
                         { .fd = d->suspend_tfd, .events = POLLIN } };
  uint64_t ticks;
  for (;;) {
    if (poll(p, 5, mhd_timeout(d)) < 0 && errno != EINTR)
      return;
    if (p[0].revents & POLLIN)
      return;
    if ((p[1].revents & POLLIN) && read(tfd, &ticks, sizeof(ticks)) == (ssize_t) sizeof(ticks)) {
      state_dir_watch(d);
      p[2].fd = epoll_fd(d->api); /* a new API server when the socket was made again */
      sampler_run(d);
      mps_check(d);
    }
    if (p[4].revents & POLLIN)
      suspend_watch_tick(d);
    if (d->api)
      MHD_run(d->api);
    if (d->metrics)
      MHD_run(d->metrics);
  }
}

/* Without --foreground: the parent waits until the child serves (a byte on the pipe) or has
 * failed (the pipe closes), and exits with the outcome. Returns the write end in the child. */
static int detach(void)
{
  int pipefd[2];
  char c;
  if (pipe2(pipefd, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid > 0) {
    close(pipefd[1]);
    _exit(read(pipefd[0], &c, 1) == 1 ? 0 : 1);
  }
  close(pipefd[0]);
  setsid();
  return pipefd[1];
}

static void ready(int fd)
{
  if (fd < 0)
    return;
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  openlog("gpuslice-daemon", LOG_PID, LOG_DAEMON);
  gs_log_set_sink(syslog_sink, NULL);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    close(null);
  }
  if (write(fd, "1", 1) < 0)
    GS_LOG(GS_LOG_WARN, "tell the parent: %s", strerror(errno));
  close(fd);
}

int gs_daemon_main(int argc, char **argv)
{
  struct daemon d;
  gs_error_t err = NULL;
  memset(&d, 0, sizeof(d));
  d.state_lock = -1;
  d.suspend_tfd = -1;
  int r = daemon_config_load(&d.cfg, argc, argv);
  if (r >= 0) {
    daemon_config_release(&d.cfg);
    return r;
  }
  gs_log_level = gs_log_level_parse(d.cfg.log_level);
  gs_log_set_sink(log_sink, NULL);
  int notify = d.cfg.foreground ? -1 : detach();
  int sfd = make_signalfd(), tfd = make_timer(d.cfg.interval);
  if (sfd < 0 || tfd < 0 || (r = start(&d, &err)) < 0) {
    fprintf(stderr, "gpuslice: daemon: %s\n", err ? err->msg : strerror(errno));
    gs_error_release(&err);
    stop(&d);
    daemon_config_release(&d.cfg);
    return r == DAEMON_START_USAGE ? 2 : 1;
  }
  ready(notify);
  loop(&d, sfd, tfd);
  GS_LOG(GS_LOG_INFO, "stopping");
  stop(&d);
  close(sfd);
  close(tfd);
  daemon_config_release(&d.cfg);
  return 0;
}
