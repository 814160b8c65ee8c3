/* The daemon's settings, declared once in one table (as redis's static_configs[]): name,
 * type, default, environment variable, flag and help. The table drives the defaults, the
 * config file, the environment, the flags, --help and the sample config file
 * (packaging/gpuslice.conf.sample is `gpuslice daemon --print-config`).
 *
 * Precedence, last wins: built-in default < config file < environment < flag. The config
 * file holds `name value` lines (an `=` between is allowed); `#` starts a comment. It is
 * optional: the default file is read only when it exists, one named with --config must. */
#include "daemon.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs-daemon-paths.h"

#define DEFAULT_CONFIG "/etc/gpuslice/gpuslice.conf"

/* "gpuslice: daemon: <message>" on stderr; returns the usage-error exit status, 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
  va_list ap;
  fputs("gpuslice: daemon: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 2;
}

enum cfg_type { CFG_STRING, CFG_SECONDS, CFG_MODE };

struct setting {
  const char *name;       /* in the config file; the flag is --name with '-' for '_' */
  enum cfg_type type;
  size_t offset;          /* in struct daemon_config */
  const char *(*def)(void);  /* the default here and now */
  const char *root_def;       /* the default of a system daemon, for the sample config */
  const char *env;
  const char *help;
};

static const char *def_socket(void) { return gs_daemon_listen_socket_path(); }
static const char *def_metrics(void) { return GS_DAEMON_METRICS_DEFAULT; }
static const char *def_ledger(void) { return gs_daemon_ledger_path(); }
static const char *def_state_dir(void) { return gs_ledger_state_dir(); }
static const char *def_interval(void) { return "1"; }
static const char *def_mode(void) { return "0666"; }
static const char *def_group(void) { return "gpuslice"; }
static const char *def_log(void) { return "info"; }

#define OFF(f) offsetof(struct daemon_config, f)
static const struct setting settings[] = {
  { "socket", CFG_STRING, OFF(socket), def_socket, "/run/gpuslice/gpuslice.sock", "GPUSLICE_SOCKET",
    "The API's Unix socket (for a daemon not run as root: <state dir>/gpuslice.sock)." },
  { "socket_mode", CFG_MODE, OFF(socket_mode), def_mode, "0666", NULL,
    "Permissions of the socket, octal. Every user who can connect sees only their own tenants." },
  { "metrics_listen", CFG_STRING, OFF(metrics_listen), def_metrics, GS_DAEMON_METRICS_DEFAULT, "GPUSLICE_METRICS_LISTEN",
    "Where GET /metrics and GET /health are served: ADDR:PORT, [V6ADDR]:PORT, or off." },
  { "ledger", CFG_STRING, OFF(ledger), def_ledger, "/var/lib/gpuslice/ledger.db", "GPUSLICE_LEDGER_DB",
    "The SQLite usage ledger (not as root: $XDG_STATE_HOME/gpuslice/ledger.db)." },
  { "state_dir", CFG_STRING, OFF(state_dir), def_state_dir, "/run/gpuslice", "GPUSLICE_STATE_DIR",
    "The state directory: tenant ledgers in tenants/, the daemon's limits files in limits/." },
  { "interval", CFG_SECONDS, OFF(interval), def_interval, "1", "GPUSLICE_INTERVAL",
    "Seconds between samples (0.1 to 3600); each sample is one interval in the usage ledger." },
  { "admin_group", CFG_STRING, OFF(admin_group), def_group, "gpuslice", NULL,
    "Members of this group see and change every tenant, as root does." },
  { "log_level", CFG_STRING, OFF(log_level), def_log, "info", "GPUSLICE_LOG", "error, warn, info or debug." },
};
#define NSETTINGS ((int) (sizeof(settings) / sizeof(settings[0])))

static int set_value(struct daemon_config *c, const struct setting *s, const char *v, const char *from)
{
  char *end = NULL;
  void *field = (char *) c + s->offset;
  if (s->type == CFG_STRING) {
    free(*(char **) field);
    *(char **) field = xstrdup(v);
    return 0;
  }
  if (s->type == CFG_MODE) {
    unsigned long m = strtoul(v, &end, 8);
    if (!*v || *end || m > 0777)
      return usage_error("%s: %s: '%s' is not an octal mode", from, s->name, v);
    *(unsigned *) field = (unsigned) m;
    return 0;
  }
  double x = strtod(v, &end);
  if (!*v || *end || !(x >= 0.1 && x <= 3600))
    return usage_error("%s: %s: '%s' is not a number of seconds in 0.1..3600", from, s->name, v);
  *(double *) field = x;
  return 0;
}

static const struct setting *find_setting(const char *name)
{
  for (int i = 0; i < NSETTINGS; i++)
    if (strcmp(settings[i].name, name) == 0)
      return &settings[i];
  return NULL;
}

/* One `name value` line; 0, or the exit status of a usage error. */
static int file_line(struct daemon_config *c, char *line, const char *path, int lineno)
{
  char from[4200];
  line[strcspn(line, "#\n")] = '\0';
  char *name = line + strspn(line, " \t");
  if (!*name)
    return 0;
  char *v = name + strcspn(name, " \t=");
  if (*v)
    *v++ = '\0';
  v += strspn(v, " \t=");
  for (char *e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t');)
    *--e = '\0';
  snprintf(from, sizeof(from), "%s:%d", path, lineno);
  const struct setting *s = find_setting(name);
  if (!s)
    return usage_error("%s: unknown setting '%s'", from, name);
  return set_value(c, s, v, from);
}

static int load_file(struct daemon_config *c, const char *path, bool must)
{
  _cleanup_fclose_ FILE *f = fopen(path, "re");
  char line[4096];
  int r, lineno = 0;
  if (!f) {
    if (!must && errno == ENOENT)
      return 0;
    fprintf(stderr, "gpuslice: daemon: config '%s': %s\n", path, strerror(errno));
    return 1;
  }
  while (fgets(line, sizeof(line), f))
    if ((r = file_line(c, line, path, ++lineno)) != 0)
      return r;
  return 0;
}

static int load_env(struct daemon_config *c)
{
  int r;
  for (int i = 0; i < NSETTINGS; i++) {
    const char *v = settings[i].env ? gs_getenv_nonempty(settings[i].env) : NULL;
    if (v && (r = set_value(c, &settings[i], v, settings[i].env)) != 0)
      return r;
  }
  return 0;
}

static void usage(void)
{
  printf("Usage: gpuslice daemon [OPTIONS]\n"
         "\n"
         "Runs the node daemon: it registers tenants, holds their limits, samples the GPUs,\n"
         "serves the API on a Unix socket and metrics on TCP, and keeps the usage ledger.\n"
         "\n"
         "Options (each also a setting of the config file, without the dashes):\n");
  for (int i = 0; i < NSETTINGS; i++) {
    char flag[64];
    snprintf(flag, sizeof(flag), "--%s", settings[i].name);
    for (char *p = flag; *p; p++)
      *p = *p == '_' ? '-' : *p;
    printf("  %-22s %s\n", flag, settings[i].help);
    printf("  %-22s Default: %s%s%s\n", "", settings[i].def(), settings[i].env ? "; environment: " : "",
           settings[i].env ? settings[i].env : "");
  }
  printf("  %-22s Read settings from FILE (default %s, when it exists)\n", "--config FILE", DEFAULT_CONFIG);
  printf("  %-22s Stay in the foreground (systemd); else detach once serving\n", "--foreground");
  printf("  %-22s Print the commented sample config and exit\n", "--print-config");
  printf("  %-22s Show this help and exit\n", "-h, --help");
  printf("\nExit status: 0 after SIGTERM or SIGINT, 1 on failure (such as no NVIDIA driver), 2 usage error.\n"
         "With GPUSLICE_SIM set the daemon runs on the simulated GPU.\n");
}

void daemon_config_print_sample(FILE *f)
{
  fprintf(f, "# gpuslice daemon configuration (%s).\n"
             "# Every setting is optional; the values shown are the defaults for root.\n"
             "# Precedence: built-in default < this file < environment < command-line flag.\n"
             "# Generated by `gpuslice daemon --print-config`.\n",
          DEFAULT_CONFIG);
  for (int i = 0; i < NSETTINGS; i++) {
    fprintf(f, "\n# %s\n", settings[i].help);
    if (settings[i].env)
      fprintf(f, "# Environment: %s\n", settings[i].env);
    fprintf(f, "#%s %s\n", settings[i].name, settings[i].root_def);
  }
}

static int load_defaults(struct daemon_config *c)
{
  int r;
  for (int i = 0; i < NSETTINGS; i++)
    if ((r = set_value(c, &settings[i], settings[i].def(), "default")) != 0)
      return r;
  return 0;
}

enum { OPT_CONFIG = 1000, OPT_FOREGROUND, OPT_PRINT, OPT_HELP };

/* getopt's table: one option per setting (val = its index), then the daemon's own. */
static struct option *make_options(char names[][32])
{
  static const struct option extra[] = {
    { "config", required_argument, NULL, OPT_CONFIG },
    { "foreground", no_argument, NULL, OPT_FOREGROUND },
    { "print-config", no_argument, NULL, OPT_PRINT },
    { "help", no_argument, NULL, OPT_HELP },
    { NULL, 0, NULL, 0 },
  };
  struct option *o = xcalloc(NSETTINGS + sizeof(extra) / sizeof(extra[0]), sizeof(*o));
  for (int i = 0; i < NSETTINGS; i++) {
    snprintf(names[i], 32, "%s", settings[i].name);
    for (char *p = names[i]; *p; p++)
      *p = *p == '_' ? '-' : *p;
    o[i] = (struct option) { names[i], required_argument, NULL, i };
  }
  memcpy(o + NSETTINGS, extra, sizeof(extra));
  return o;
}

/* First pass: --config, --help, --print-config; -1 to go on. */
static int early_flags(struct daemon_config *c, int argc, char **argv, const struct option *opts)
{
  int ch;
  opterr = 0;
  optind = 0;
  while ((ch = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
    if (ch == 'h' || ch == OPT_HELP) {
      usage();
      return 0;
    }
    if (ch == OPT_PRINT) {
      daemon_config_print_sample(stdout);
      return 0;
    }
    if (ch == '?' || ch == ':')
      return usage_error("%s '%s' (see gpuslice daemon --help)",
                         ch == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
    if (ch == OPT_CONFIG) {
      free(c->config_file);
      c->config_file = xstrdup(optarg);
    }
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  return -1;
}

static int late_flags(struct daemon_config *c, int argc, char **argv, const struct option *opts)
{
  int ch, r;
  optind = 0;
  while ((ch = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
    if (ch == OPT_FOREGROUND)
      c->foreground = true;
    else if (ch >= 0 && ch < NSETTINGS && (r = set_value(c, &settings[ch], optarg, "option")) != 0)
      return r;
  }
  return 0;
}

int daemon_config_load(struct daemon_config *c, int argc, char **argv)
{
  char names[NSETTINGS][32];
  _cleanup_free_ struct option *opts = make_options(names);
  int r;
  memset(c, 0, sizeof(*c));
  if ((r = early_flags(c, argc, argv, opts)) >= 0)
    return r;
  if ((r = load_defaults(c)) != 0 ||
      (r = load_file(c, c->config_file ? c->config_file : DEFAULT_CONFIG, c->config_file != NULL)) != 0 ||
      (r = load_env(c)) != 0 || (r = late_flags(c, argc, argv, opts)) != 0)
    return r;
  if (gs_log_level_parse(c->log_level) < 0)
    return usage_error("log_level: '%s' is not error, warn, info or debug", c->log_level);
  return -1;
}

void daemon_config_release(struct daemon_config *c)
{
  for (int i = 0; i < NSETTINGS; i++)
    if (settings[i].type == CFG_STRING) {
      free(*(char **) ((char *) c + settings[i].offset));
      *(char **) ((char *) c + settings[i].offset) = NULL;
    }
  free(c->config_file);
  c->config_file = NULL;
}
