/* The daemon's settings, declared once in one option table (lib's gs-opt.h, as redis's
 * static_configs[]): name, type, default, bounds, environment variable and help. The table
 * drives the defaults, the config file, the environment, the flags, --help, the sample config
 * (packaging/gpuslice.conf.sample is `gpuslice daemon --print-config`) and the daemon's tables
 * in docs/cli.md and docs/configuration.md (`gpuslice __docs`).
 *
 * Precedence, last wins: built-in default < config file < environment < flag. The config
 * file holds `name value` lines (an `=` between is allowed); `#` starts a comment. It is
 * optional: the default file is read only when it exists, one named with --config must.
 * Reading the files and the environment is lib/opt-config.c's; this file orders the sources
 * and turns their errors into exit statuses. */
#include "daemon.h"

#include <stdio.h>
#include <string.h>

#include <gpuslice/daemon-paths.h>
#include <gpuslice/opt.h>

#define DEFAULT_CONFIG "/etc/gpuslice/gpuslice.conf"

enum { DAEMON_FAILURE = 1, DAEMON_USAGE = 2 };

/* "gpuslice: daemon: <err>" on stderr; returns status. */
static int fail(gs_error_t *err, int status)
{
  fprintf(stderr, "gpuslice: daemon: %s\n", *err ? (*err)->msg : "unknown error");
  gs_error_release(err);
  return status;
}

static bool valid_log_level(const char *value)
{
  return gs_log_level_parse(value) >= 0;
}

/* A setting: a flag, a key of the config file, and its default for root (def, what the docs
 * and the sample show) beside the default here and now (def_now, for other users). */
static const char *const verify_modes[] = { "on", "off", NULL }; /* enum verify_mode */
static const char *const violation_actions[] = { "none", "signal", "kill",
                                                 NULL }; /* enum violation_action */
static const char *const hostname_labels[] = { "Hostname", "hostname",
                                               NULL };                  /* enum hostname_label */
static const char *const oversubscribe_modes[] = { "off", "on", NULL }; /* enum oversubscribe */
static const char *const idle_modes[] = { "dry-run", "act", NULL };     /* enum idle_mode */

#define OFF(f) offsetof(struct daemon_config, f)
#define SETTING .flags = GS_OPT_SETTING | GS_OPT_OWNED
// clang-format off
static const struct gs_opt daemon_entries[] = {
  { .name = "socket", .arg = "PATH", .kind = GS_OPT_STRING, .offset = OFF(socket), SETTING,
    .def = "/run/gpuslice/gpuslice.sock", .def_now = gs_daemon_listen_socket_path, .env = "GPUSLICE_SOCKET",
    .help = "The API's Unix socket (for a daemon not run as root: <state dir>/gpuslice.sock)." },
  { .name = "socket-mode", .arg = "MODE", .kind = GS_OPT_MODE, .offset = OFF(socket_mode), SETTING, .def = "0666",
    .help = "Permissions of the socket, octal. Every user who can connect sees only their own tenants." },
  { .name = "metrics-listen", .arg = "ADDR:PORT", .kind = GS_OPT_STRING, .offset = OFF(metrics_listen), SETTING,
    .def = GS_DAEMON_METRICS_DEFAULT, .env = "GPUSLICE_METRICS_LISTEN", .valid = metrics_listen_valid,
    .want = "ADDR:PORT with a numeric address and a port 1..65535, or off",
    .help = "Where GET /metrics and GET /health are served: ADDR:PORT, [V6ADDR]:PORT, or off." },
  { .name = "ledger", .arg = "PATH", .kind = GS_OPT_STRING, .offset = OFF(ledger), SETTING,
    .def = "/var/lib/gpuslice/ledger.db", .def_now = gs_daemon_ledger_path, .env = "GPUSLICE_LEDGER_DB",
    .help = "The SQLite usage ledger (not as root: $XDG_STATE_HOME/gpuslice/ledger.db)." },
  { .name = "state-dir", .arg = "DIR", .kind = GS_OPT_STRING, .offset = OFF(state_dir), SETTING,
    .def = "/run/gpuslice", .def_now = gs_ledger_state_dir, .env = "GPUSLICE_STATE_DIR",
    .help = "The state directory: tenant ledgers in tenants/, the daemon's limits files in limits/." },
  { .name = "interval", .arg = "SECONDS", .kind = GS_OPT_DOUBLE, .offset = OFF(interval), SETTING, .def = "1",
    .min = 0.1, .max = 3600, .env = "GPUSLICE_INTERVAL", .want = "a number of seconds from 0.1 to 3600",
    .help = "Seconds between samples (0.1 to 3600); each sample is one interval in the usage ledger." },
  { .name = "verify", .arg = "on|off", .kind = GS_OPT_ENUM, .offset = OFF(verify), SETTING, .def = "on",
    .choices = verify_modes, .env = "GPUSLICE_VERIFY",
    .help = "Check each interval, from NVML's per-process accounting, that no tenant exceeds its limits." },
  { .name = "violation-action", .arg = "ACTION", .kind = GS_OPT_ENUM, .offset = OFF(violation_action), SETTING,
    .def = "none", .choices = violation_actions, .env = "GPUSLICE_VIOLATION_ACTION",
    .help = "What a violation does to the offending processes, at every interval it lasts: none (record "
            "it), signal (SIGTERM) or kill (SIGKILL)." },
  { .name = "counters", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(counters), SETTING, .def = "builtin",
    .env = "GPUSLICE_COUNTERS",
    .help = "The GPU fields of /metrics, chosen by a counters file in dcgm-exporter's CSV format (its "
            "--collectors file works as it is); builtin: dcgm-exporter's default set." },
  { .name = "hostname-label", .arg = "Hostname|hostname", .kind = GS_OPT_ENUM, .offset = OFF(hostname_label), SETTING,
    .def = "Hostname", .choices = hostname_labels, .env = "GPUSLICE_HOSTNAME_LABEL",
    .help = "The spelling of /metrics' host name label: Hostname, as released dcgm-exporter 4.x has it, or "
            "hostname, as its main branch does. NODE_NAME, when set, is its value." },
  { .name = "sharing", .arg = "SPEC", .kind = GS_OPT_STRING, .offset = OFF(sharing), SETTING,
    .def = "timeslice", .env = "GPUSLICE_SHARING", .valid = sharing_valid,
    .want = "[GPU=]MODE items separated by ';', MODE timeslice, mps or mig:LAYOUT",
    .help = "How each GPU is shared: [GPU=]MODE items separated by ';' (an item without GPU= sets the others), "
            "MODE timeslice, mps (the daemon runs an MPS control daemon for the GPU) or mig:LAYOUT (the MIG "
            "layout it should have, e.g. mig:1g.10gb@0 3g.40gb@4; gpuslice mig apply sets it)." },
  { .name = "mps-control", .arg = "PATH", .kind = GS_OPT_STRING, .offset = OFF(mps_control), SETTING,
    .def = "nvidia-cuda-mps-control", .env = "GPUSLICE_MPS_CONTROL",
    .help = "The MPS control program the daemon runs for each GPU in mps mode (found on PATH unless a path)." },
  { .name = "mps-exclusive", .arg = "on|off", .kind = GS_OPT_ENUM, .offset = OFF(mps_exclusive), SETTING,
    .def = "on", .choices = verify_modes, .env = "GPUSLICE_MPS_EXCLUSIVE",
    .help = "Set each GPU in mps mode to exclusive-process while its control daemon runs (off: leave its compute "
            "mode alone, and processes outside MPS may use it too)." },
  { .name = "oversubscribe", .arg = "off|on", .kind = GS_OPT_ENUM, .offset = OFF(oversubscribe), SETTING,
    .def = "off", .choices = oversubscribe_modes, .env = "GPUSLICE_OVERSUBSCRIBE",
    .help = "Whether a suspended tenant's GPU memory may be lent to others (on); off keeps it the tenant's, "
            "held by the daemon, so that its resume never waits." },
  { .name = "resume-timeout", .arg = "SECONDS", .kind = GS_OPT_DOUBLE, .offset = OFF(resume_timeout), SETTING,
    .def = "30", .min = 0.1, .max = 3600, .env = "GPUSLICE_RESUME_TIMEOUT",
    .want = "a number of seconds from 0.1 to 3600",
    .help = "How long a resume waits for its memory to be free again (oversubscribe on) before it fails "
            "and the tenant stays suspended." },
  { .name = "lock-timeout", .arg = "SECONDS", .kind = GS_OPT_DOUBLE, .offset = OFF(lock_timeout), SETTING,
    .def = "10", .min = 0.001, .max = 600, .env = "GPUSLICE_LOCK_TIMEOUT",
    .want = "a number of seconds from 0.001 to 600",
    .help = "How long a suspend waits for the tenant's submitted GPU work before it gives up and the tenant "
            "keeps running (gpuslice suspend --lock-timeout overrides it)." },
  { .name = "idle-rules", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(idle_rules), SETTING,
    .def = "", .env = "GPUSLICE_IDLE_RULES",
    .help = "The idle rules and schedules, a JSON file (docs/idle.md); empty: none. A bad rule stops the "
            "start with one line naming the rule and the field." },
  { .name = "idle-mode", .arg = "dry-run|act", .kind = GS_OPT_ENUM, .offset = OFF(idle_mode), SETTING,
    .def = "dry-run", .choices = idle_modes, .env = "GPUSLICE_IDLE_MODE",
    .help = "What the idle rules and schedules do: dry-run (detect, report and record what they would do) "
            "or act." },
  { .name = "admin-group", .arg = "GROUP", .kind = GS_OPT_STRING, .offset = OFF(admin_group), SETTING,
    .def = "gpuslice", .help = "Members of this group see and change every tenant, as root does." },
  { .name = "log-level", .arg = "LEVEL", .kind = GS_OPT_STRING, .offset = OFF(log_level), SETTING, .def = "info",
    .env = "GPUSLICE_LOG", .valid = valid_log_level, .want = "error, warn, info or debug",
    .help = "error, warn, info or debug." },
  { .name = "config", .arg = "FILE", .kind = GS_OPT_STRING, .offset = OFF(config_file), .flags = GS_OPT_OWNED,
    .help = "Read settings from FILE (default " DEFAULT_CONFIG ", when it exists)" },
  { .name = "foreground", .kind = GS_OPT_FLAG, .offset = OFF(foreground),
    .help = "Stay in the foreground (systemd); else detach once serving, and log to syslog" },
  { .name = "print-config", .kind = GS_OPT_FLAG, .offset = OFF(print_config), .flags = GS_OPT_STOP,
    .help = "Print the commented sample config and exit" },
  GS_OPT_HELP_ENTRY,
};
// clang-format on
#undef SETTING
#undef OFF

// clang-format off
const struct gs_opt_table daemon_opt_table = {
  .verb = "daemon",
  .synopsis = "daemon [OPTIONS]",
  .summary = "Run the node daemon: tenants, live limits, metrics and the usage ledger",
  .intro = "Runs the node daemon: it registers tenants, holds their limits, samples the GPUs,\n"
           "serves the API on a Unix socket and metrics on TCP, and keeps the usage ledger.\n"
           "\n"
           "Each option but the last four is also a setting of the config file, named without\n"
           "the dashes and with '_' for '-' (socket_mode). Precedence, last wins: default,\n"
           "config file, environment, option.\n",
  .outro = "Exit status: 0 after SIGTERM or SIGINT, 1 on failure (such as no NVIDIA driver), 2 usage error.\n"
           "With GPUSLICE_SIM set the daemon runs on the simulated GPU.\n",
  GS_OPT_ENTRIES(daemon_entries),
};
// clang-format on

void daemon_config_print_sample(FILE *f)
{
  fprintf(f,
          "# gpuslice daemon configuration (%s).\n"
          "# Every setting is optional; the values shown are the defaults for root.\n"
          "# Precedence: built-in default < this file < environment < command-line flag.\n"
          "# Generated by `gpuslice daemon --print-config`.\n",
          DEFAULT_CONFIG);
  gs_opt_sample(&daemon_opt_table, f);
}

/* First pass over argv, before any other source: --help, --print-config, bad options and
 * operands, and --config, which says where the file is. Returns -1 to go on, or the exit
 * status. */
static int first_pass(struct daemon_config *c, int argc, char **argv)
{
  struct daemon_config seen = { 0 };
  gs_error_t err = NULL;
  int next, r = gs_opt_parse(&daemon_opt_table, &seen, argc, argv, &next, &err);
  if (r == GS_OPT_HELP_ASKED) {
    gs_opt_help(&daemon_opt_table, stdout);
    r = 0;
  } else if (r < 0) {
    r = fail(&err, DAEMON_USAGE);
  } else if (seen.print_config) {
    daemon_config_print_sample(stdout);
    r = 0;
  } else if (next < argc) {
    fprintf(stderr, "gpuslice: daemon: '%s': unexpected argument (see gpuslice daemon --help)\n",
            argv[next]);
    r = DAEMON_USAGE;
  } else {
    c->config_file = seen.config_file;
    seen.config_file = NULL;
    r = -1;
  }
  gs_opt_release(&daemon_opt_table, &seen);
  return r;
}

/* Defaults, the config file, the environment, then the flags again, each over the last. A
 * file that cannot be read is a failure (1); a bad line or value, a usage error (2). */
static int load_sources(struct daemon_config *c, int argc, char **argv)
{
  const struct gs_opt_table *t = &daemon_opt_table;
  const char *path = c->config_file ? c->config_file : DEFAULT_CONFIG;
  gs_error_t err = NULL;
  int next;
  if (gs_opt_defaults(t, c, &err) < 0)
    return fail(&err, DAEMON_FAILURE);
  if (gs_opt_load_file(t, c, path, c->config_file != NULL, &err) < 0)
    return fail(&err, err->status ? DAEMON_FAILURE : DAEMON_USAGE);
  if (gs_opt_load_env(t, c, &err) < 0 || gs_opt_parse(t, c, argc, argv, &next, &err) < 0)
    return fail(&err, DAEMON_USAGE);
  return -1;
}

int daemon_config_load(struct daemon_config *c, int argc, char **argv)
{
  int r;
  memset(c, 0, sizeof(*c));
  if ((r = first_pass(c, argc, argv)) >= 0)
    return r;
  return load_sources(c, argc, argv);
}

void daemon_config_release(struct daemon_config *c)
{
  gs_opt_release(&daemon_opt_table, c);
}
