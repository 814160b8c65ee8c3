/* Internal interface of the node daemon (`gpuslice daemon`): the pieces of daemon/ and the
 * state they share. One thread runs everything: the API server on the Unix socket, the
 * metrics server on TCP, and the sampler, driven from one poll loop (daemon.c), so nothing
 * here locks.
 *
 *   config.c        the settings table: defaults, config file, environment, flags, --help
 *   gpu-nvml.c      NVML loaded at run time: discovery and per-GPU samples
 *   registry.c      the tenants: registering, adopting, limits files, ending
 *   tenant-read.c   sampling a tenant's ledger (lib's reader calls), mirroring limits, its owner's end
 *   proc-watch.c    noticing that a known process has ended: a pidfd polled, else /proc
 *   sampler.c       one sample: the node snapshot and the usage database's interval rows
 *   verifier.c      checks NVML's per-process accounting against the limits (verify.c: the
 *                   pure rules), records violations and acts on them
 *   usage-db.c      the usage database (SQLite; "the usage ledger" in the docs);
 *                   usage-db-schema.c its schema and migrations;
 *                   usage-db-report.c the usage report read from it
 *   access.c        who is calling (SO_PEERCRED) and what they may see
 *   api-http.c      the HTTP server on the Unix socket: bodies, errors
 *   api-routes.c    the route table: {method, path pattern, handler}, 404 and 405
 *   api-tenants.c, api-node.c, api-usage.c   the handlers
 *   metrics-http.c  GET /metrics and GET /health on TCP
 *   state-dir.c     the lock that keeps one daemon per state dir; making it again when removed
 *   registry-restore.c  the tenants' limits files and ledgers in a state dir made again
 *   gpu-cuda.c      the CUDA driver, loaded at the first suspend: the checkpoint API
 *   suspend.c, resume.c, suspend-watch.c, suspend-rules.c   suspending tenants and resuming
 *                   them (suspend.h) */
#ifndef GS_DAEMON_H
#define GS_DAEMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <gpuslice.h>
#include <gpuslice/limits.h>
#include <gpuslice/metrics.h>
#include <gpuslice/snapshot.h>

#define DAEMON_BODY_MAX (64 * 1024)
/* The API answers a longer request URI (path and query, as sent) with 414, and a larger header
 * block (names, values, ": " and CRLF) with 431, in JSON. Both sit well below the memory pool
 * libmicrohttpd gives each connection: a request line and headers that do not fit the pool it
 * refuses on its own, in HTML, before the daemon sees them. */
#define DAEMON_URI_MAX (8 * 1024)
#define DAEMON_HEADERS_MAX (32 * 1024)
#define DAEMON_HTTP_POOL (256 * 1024)
#define DAEMON_API_CONNECTIONS 256

/* ---- configuration (config.c) ---- */

struct daemon_config {
  char *config_file;
  char *socket;
  unsigned socket_mode;
  char *metrics_listen; /* "ADDR:PORT", or "off" */
  char *ledger;
  char *state_dir;
  double interval; /* seconds between samples */
  char *admin_group;
  char *counters; /* a dcgm-exporter counters file, or "builtin" */
  char *log_level;
  bool foreground;
  bool print_config;     /* --print-config: print the sample config and exit */
  int verify;            /* enum verify_mode: check NVML's accounting against the limits */
  int violation_action;  /* enum violation_action */
  int hostname_label;    /* enum hostname_label */
  char *sharing;         /* the sharing setting's text (sharing.c) */
  char *mps_control;     /* the MPS control program (mps.c) */
  int mps_exclusive;     /* enum verify_mode's on/off: set exclusive-process (mps.c) */
  int oversubscribe;     /* enum oversubscribe: lend a suspended tenant's memory to others */
  double resume_timeout; /* seconds a resume waits for room */
  double lock_timeout;   /* seconds a suspend waits for the tenant's submitted work */
  char *idle_rules;      /* the idle rules file (docs/idle.md), "" none */
  int idle_mode;         /* enum idle_mode */
};

enum idle_mode { IDLE_MODE_DRY_RUN, IDLE_MODE_ACT };

enum oversubscribe { OVERSUBSCRIBE_OFF, OVERSUBSCRIBE_ON };

enum verify_mode { VERIFY_ON, VERIFY_OFF };
/* What the daemon does to the offending processes of a violation, at every interval it lasts. */
enum violation_action { VIOLATION_NONE, VIOLATION_SIGNAL, VIOLATION_KILL };
/* The host name label's spelling on /metrics. */
enum hostname_label { HOSTNAME_LABEL_DCGM4, HOSTNAME_LABEL_LOWER };

/* Fills c from defaults, the config file, the environment and argv, in that order of
 * precedence (last wins). Returns -1 to go on, or the exit status to return now (--help,
 * a usage error). */
int daemon_config_load(struct daemon_config *c, int argc, char **argv);
void daemon_config_release(struct daemon_config *c);
/* Writes the commented sample configuration (packaging/gpuslice.conf.sample). */
void daemon_config_print_sample(FILE *f);
/* The settings and the daemon's own options, for `gpuslice __docs` (cli/docs.c). */
struct gs_opt_table;
extern const struct gs_opt_table daemon_opt_table;

/* ---- how each GPU is shared (sharing.c) ---- */

enum sharing_kind { SHARING_TIMESLICE, SHARING_MPS, SHARING_MIG };

struct sharing_gpu {
  enum sharing_kind kind;
  char layout[GS_SNAP_SHARING_MAX]; /* SHARING_MIG: the layout, profile@start */
  bool set;
};

struct daemon_sharing {
  struct sharing_gpu dflt;                    /* the item without GPU= (timeslice when none) */
  struct sharing_gpu gpu[GS_LEDGER_MAX_GPUS]; /* the GPUs named */
};

/* Reads the `sharing` setting's value. 0, or -1 with err naming the bad item. */
int sharing_parse(const char *text, struct daemon_sharing *out, gs_error_t *err);
/* The setting's check of its syntax, for the option table. */
bool sharing_valid(const char *text);
/* At start, against the GPUs found: each mig: layout against its GPU (one without MIG, a
 * layout that does not fit: -1 with err); a GPU whose layout differs is logged. */
int sharing_resolve(struct daemon_sharing *s, const struct gs_snapshot *snap, gs_error_t *err);
const struct sharing_gpu *sharing_of(const struct daemon_sharing *s, int gpu);
/* "timeslice", "mps", "mig:<layout>". */
void sharing_text(const struct sharing_gpu *g, char *buf, size_t len);

/* ---- MPS (mps.c) ---- */

struct daemon;
struct daemon_mps;
struct tenant;
/* For each GPU in mps mode: exclusive-process, and its control daemon. 0, or -1 with err. */
int mps_start(struct daemon *d, gs_error_t *err);
/* Each control daemon told to quit, each GPU's compute mode set back. */
void mps_stop(struct daemon *d);
/* At most every 2 s: each server's status; a fault reported, the control daemon started
 * again once the faulted server's clients are gone; a control daemon that died started again. */
void mps_check(struct daemon *d);
/* A tenant registered for GPU gpu: when that GPU is in mps mode, its user's server made sure
 * of and set, before the tenant's command starts. */
void mps_tenant_added(struct daemon *d, const struct tenant *t, int gpu);
/* The tenant's MPS client settings ("mps" of its JSON), or NULL when it is no MPS client. */
json_t *mps_tenant_json(const struct daemon *d, const struct tenant *t);
/* GPU gpu's MPS state for GET /v1/gpus, or JSON null. */
json_t *mps_gpu_json(const struct daemon *d, int gpu);

/* ---- GPUs (gpu-nvml.c) ---- */

struct nvml;
/* Loads NVML (the simulated one from libdir/sim when GPUSLICE_SIM is set) and initializes it. */
int nvml_open(struct nvml **out, gs_error_t *err);
void nvml_close(struct nvml *n);
/* Takes only the optional readings in `readings` (GS_SNAP_HAVE_* bits) from now on. */
void nvml_want(struct nvml *n, uint32_t readings);
int nvml_gpu_count(const struct nvml *n);
const char *nvml_driver_version(const struct nvml *n);
/* Fills g with the GPU's identity and current readings. A reading the device does not
 * support is left 0. Returns 0, or -1 with err. */
int nvml_sample(struct nvml *n, int index, struct gs_snap_gpu *g, gs_error_t *err);
/* The GPU's free memory, as NVML says (memory info v2 where the driver has it): 0, or -1. */
int nvml_memory_free(struct nvml *n, int index, uint64_t *free_);
/* True when the GPU is in MIG mode (where the driver can say). */
bool nvml_mig_enabled(struct nvml *n, int index);
/* The number of compute processes on the GPU, or -1 when unknown. */
int nvml_process_count(struct nvml *n, int index);
/* GPU index's CUDA compute capability, "9.0"; "" when the driver does not say. Read at open. */
const char *nvml_compute_capability(const struct nvml *n, int index);
struct verify_proc;
/* The GPU's compute processes with their usedGpuMemory into out (room for cap; tenant -1,
 * sm_pct 0). Returns how many, or -1 when NVML cannot say (or there are more than cap). */
int nvml_processes(struct nvml *n, int index, struct verify_proc *out, int cap);
/* Fills the sm_pct of p[] from NVML's per-process utilization since the last call, and appends
 * (up to cap) an entry marked gone, tenant -1, for each process with a sample that p[] lacks:
 * one that has ended since it ran. Returns the new count. */
int nvml_process_util(struct nvml *n, int index, struct verify_proc *p, int np, int cap);

/* ---- watched processes (proc-watch.c) ---- */

/* A process the daemon knows, as (pid, start time), with a pidfd when one could be had. */
struct watched_proc {
  pid_t pid;
  uint64_t start_time;
  int pidfd;       /* -1: watched by reading /proc */
  bool subscribed; /* pidfd is in the set of proc-watch-set.c */
};

/* Raises the soft open files limit to the hard one and sets how many pidfds watched processes
 * may hold: half of what a reserve of 1024 leaves (none at 1024 or less). */
void proc_watch_init(void);
/* Logs that figure (info). */
void proc_watch_log(void);
int proc_watch_budget(void);
/* The pidfds watched processes hold now. */
int proc_watch_held(void);
/* Starts watching (pid, start_time): true when that process runs now, w filled (a pidfd when
 * one can be had); false when it has ended or pid is another process, w holding nothing. With
 * no descriptor to read /proc with either (EMFILE), it counts as running until /proc can tell. */
bool proc_watch_open(struct watched_proc *w, pid_t pid, uint64_t start_time);
/* True while the process runs: a poll of its pidfd, else a read of /proc. */
bool proc_watch_alive(const struct watched_proc *w);
/* Closes what w holds. */
void proc_watch_close(struct watched_proc *w);
/* The set of proc-watch-set.c, for a process checked at every sample (a tenant's owner): adds
 * w's pidfd to it; true when w is in it. */
bool proc_watch_subscribe(struct watched_proc *w);
/* Takes w's pidfd out of the set (proc_watch_close does). */
void proc_watch_unsubscribe(struct watched_proc *w);
/* Learns, with one epoll_wait, which processes of the set have ended since the last call. */
void proc_watch_collect(void);
/* True while the process runs, as the last proc_watch_collect found for one in the set;
 * proc_watch_alive for any other. */
bool proc_watch_running(const struct watched_proc *w);
/* Drops (and closes) the processes of v[0..n) that have ended, keeping the order of the
 * others; one poll per 64 pidfds. Returns how many are left. */
int proc_watch_prune(struct watched_proc *v, int n);

/* ---- tenants (registry.c, tenant-read.c) ---- */

/* One GPU of a tenant, as last sampled from its ledger. */
struct tenant_gpu {
  uint64_t used_bytes, peak_bytes, throttled_ns;
  /* Device time: gate_ns is what the tenant's compute gates measured (the ledger's); gpu_ns is
   * the daemon's count, which takes NVML's word (smUtil) for the intervals the gates measured
   * nothing in, since an open gate measures nothing (sampler_gpu_time). */
  uint64_t gpu_ns, gate_ns, gate_seen_ns;
  bool gate_seen;
  uint64_t nvml_ns; /* device time NVML's readings gave it since the sampler last counted */
  uint32_t share_ppm;
  uint64_t last_gpu_ns, last_throttled_ns; /* at the previous interval row */
  /* What NVML says, from the verifier (verifier.c): the tenant's processes' usedGpuMemory and
   * smUtil summed, what exceeds the limits (0: no violation now), and the violations counted
   * since the daemon started (one per start of an excess). */
  uint64_t nvml_bytes, vram_over_bytes;
  uint32_t nvml_ppm, compute_over_ppm;
  uint64_t vram_violations, compute_violations;
};

/* A tenant's suspension as the daemon keeps it (suspend.c, resume.c); its state is the limits
 * file's run_state, which the tenant's processes read. */
struct tenant_suspend {
  uint64_t hold[GS_LEDGER_MAX_GPUS]; /* the daemon's allocation keeping its memory; 0: none */
  uint64_t requests_seen;            /* the ledger's resume requests acted on so far */
  double asked_mono, deadline_mono;  /* a resume asked for and not done: when, until when */
  char asked_by[8];                  /* "api", "demand", "restart" */
  double started_unix;               /* when the current suspension began */
  uint64_t suspensions, resumes;
  double suspended_s;         /* ended suspensions' time, summed */
  double suspend_s, resume_s; /* how long the last suspend took; the last resume, from asked */
  char error[384];            /* why the last suspend or resume failed; "" when it did not */
  int64_t db_row;             /* its row in the usage ledger's suspensions; 0: none open */
  struct gs_ledger_resume_copy asked; /* the ledger's resume block, as last sampled */
  bool known; /* the daemon suspended it, or looked at how an earlier daemon left it */
};

/* The idle detector's view of a tenant (idle.c, docs/idle.md). Times are the idle clock's
 * (idle_clock_now) but last_mono and kill_mono, which are the monotonic clock's. */
struct tenant_idle {
  bool seen;
  double first_seen, last_active, last_mono;
  uint64_t last_gpu_ns, last_cpu_ticks, last_requests;
  double fraction, cpu; /* device-time fraction and CPU cores over the last sample */
  bool holding;         /* it holds GPU memory */
  uint64_t vram_bytes;
  double idle_s;
  unsigned fired;   /* bit i: the rule's action i was done (or recorded) in this idle episode */
  char rule[64];    /* the rule that applies, "" none */
  char state[24];   /* "active", "idle", "grace", "exempt", "never", "no-rule", "suspended" */
  char would[96];   /* what the rule does next, and when */
  char did[192];    /* what was last done to it */
  double kill_mono; /* a stop's SIGKILL due then; 0 none */
  char sched[64];   /* the schedule that suspended it, "" none */
};

struct tenant {
  char name[GS_LEDGER_NAME_MAX];
  uid_t uid;
  char user[64];
  pid_t owner_pid;
  uint64_t owner_start_time;
  uint64_t created_unix_ns;
  char ledger_dir[1024];
  char labels[GS_LEDGER_LABELS_MAX];
  struct gs_limits *limits; /* daemon-owned, mapped read-write */
  /* The limits file a removed state dir held, still mapped by the tenant's older processes;
   * kept in step with limits (registry-restore.c). NULL when none. */
  struct gs_limits *limits_prev;
  int64_t db_id; /* row in the usage ledger's tenants table, 0 until written */
  bool exited;
  bool held;       /* GS_LIMITS_HELD: only a DELETE ends it, never its owner's end */
  int exit_status; /* -1 when unknown */
  uint64_t served_requests;
  double last_end;     /* end of its last interval row, unix seconds; 0: none yet */
  bool sampled;        /* gpu[] holds a reading */
  int ledger_fd;       /* the ledger, kept open for sampling; -1 until first read */
  bool ledger_checked; /* the file on ledger_fd was found regular and owned by uid */
  /* The ledger's count of slots at the last reading, read next with the head. */
  uint32_t slots_used;
  uint8_t resume_settle, resume_skips; /* when the sampler reads the resume block (tenant-read.c) */
  /* The owner, to notice its end without reading /proc; watched from the first sample. */
  struct watched_proc owner;
  enum { OWNER_UNWATCHED, OWNER_WATCHED, OWNER_ENDED } owner_state;
  /* The tenant's processes the daemon has seen live (tenant_track_procs). */
  struct watched_proc *procs;
  int nprocs, procs_cap;
  struct tenant_gpu gpu[GS_LEDGER_MAX_GPUS];
  struct tenant_suspend sus;
  struct tenant_idle idle;
};

struct registry {
  struct tenant **v;
  int n, cap;
  const char *state_dir;
  gid_t limits_gid; /* the group of the limits files: the admin group, else the daemon's */
  /* The state dir's limits/ and tenants/ as last scanned for tenants to adopt (registry.c). */
  struct registry_scan {
    bool valid; /* nothing was left undecided, and the directory had been quiet for 1 s */
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    unsigned skipped;
  } scanned[2];
  bool changed; /* tenants came or went since the last scan */
};

/* The processes a ledger's live slots named at a reading: v has room for GS_LEDGER_MAX_PROCS. */
struct ledger_procs {
  struct gs_ledger_pid *v;
  int n;
};

/* Reads the tenant's ledger into buf and its live slots' processes into procs
 * (gs_ledger_read_fd: with pread, never mapped, owned by t->uid) through t->ledger_fd, opened
 * at the first call; once the file on it has passed that check, gs_ledger_read_kept_procs:
 * sampling costs one read per tenant (the head with the slots it last had), and the resume
 * block's while the tenant is suspended or just resumed and every tenth sample (into
 * t->sus.asked); no path lookup or fstat. Returns 0, or -1. */
int tenant_reread(struct tenant *t, struct gs_ledger_copy *buf, struct ledger_procs *procs);
/* True while the tenant's owner runs: a poll of a pidfd (proc_watch_alive), checked against
 * the owner's start time once when it is opened. */
bool tenant_owner_alive(struct tenant *t);
/* Adds the processes the ledger's live slots name to t->procs (each watched by pidfd), first
 * dropping those that ended when there is a new one. A process once seen stays the tenant's
 * until it ends, whatever its slot says later: the tenant writes its slots. */
void tenant_track_procs(struct tenant *t, const struct ledger_procs *now);
/* How many of t->procs still run, not counting pid except. */
int tenant_live_procs(struct tenant *t, pid_t except);
/* Stops watching the tenant's owner and processes (what they hold is closed). */
void tenant_forget_procs(struct tenant *t);
/* Writes the limits of lim into the tenant's ledger too, for processes that started before the
 * daemon wrote the limits file. Best effort: a ledger the daemon cannot write is left alone. */
void tenant_mirror_limits(const struct tenant *t);

/* What a registration asks for. */
struct tenant_request {
  const char *name;
  const char *ledger_dir; /* NULL: the daemon's state dir */
  pid_t pid;              /* 0: the caller */
  bool held;              /* a held tenant (GS_LIMITS_HELD): the daemon makes its ledger */
  const char *labels;     /* "k=v" lines, or NULL for the ledger's */
  bool limits_given;      /* else the ledger's limits are adopted */
  bool compute_given;     /* a compute limit (share, policy or priority) was asked for */
  uint64_t limit_bytes[GS_LEDGER_MAX_GPUS];
  uint32_t limit_ppm[GS_LEDGER_MAX_GPUS];
  struct gs_ledger_compute compute;
};

void registry_init(struct registry *r, const char *state_dir, const char *admin_group);
void registry_release(struct registry *r);
struct tenant *registry_find(struct registry *r, const char *name);
/* Registers (or re-registers) a tenant for caller uid; *status gets the HTTP status to answer
 * (201 new, 200 same tenant again, 4xx refused). Returns the tenant, or NULL with err. */
struct tenant *registry_add(struct registry *r, const struct tenant_request *req, uid_t caller,
                            bool admin, const uint64_t *gpu_totals, int ngpus, int *status,
                            gs_error_t *err);
/* True when req asks for the same instance of the tenant as t: the ledger t was registered
 * from (same dir, same creation time), not another one under its name. */
bool registry_same_tenant(struct registry *r, const struct tenant *t,
                          const struct tenant_request *req);
/* Takes the tenant out: removes its limits file. The tenant is freed. */
void registry_remove(struct registry *r, struct tenant *t);
/* Adopts tenants the daemon does not know: its limits files left by an earlier run, and live
 * ledgers in its state dir. A directory is read again only when it changed (its mtime), when
 * tenants came or went, when an entry was left undecided (a ledger not yet written), and at
 * every tenth call whatever. Returns how many were adopted. */
int registry_adopt(struct registry *r, const uint64_t *gpu_totals, int ngpus);
/* After the state dir was removed and made again (state-dir.c): writes each tenant's limits
 * file again, and gives each ledger that was in it its path back (registry-restore.c). */
void registry_restore(struct registry *r);
/* Changes limits live (limits file, then the ledger's mirror). */
void registry_set_vram(struct tenant *t, int gpu, uint64_t bytes, uint32_t ppm,
                       const uint64_t *gpu_totals, int ngpus);
void registry_set_compute(struct tenant *t, const uint32_t *ppm, const uint32_t *policy,
                          const uint32_t *priority);
/* Replaces the tenant's labels ("k=v" lines), in the registry and its limits file. */
void registry_set_labels(struct tenant *t, const char *labels);
/* The first GPU (of gpu, or of all when gpu < 0) where a memory limit of bytes, or ppm of the
 * GPU, would be above the ceiling an admin set (struct gs_limits.ceiling_bytes), or -1. */
int registry_vram_above_ceiling(const struct tenant *t, int gpu, uint64_t bytes, uint32_t ppm,
                                const uint64_t *gpu_totals, int ngpus);
/* Makes the memory limits of gpu (all when gpu < 0), as they are now, the tenant's ceilings. */
void registry_set_ceiling(struct tenant *t, int gpu);
/* Which of the compute limits given (not NULL) would go above the ceiling an admin set
 * (struct gs_limits.ceiling_compute_ppm and after): its bit of enum gs_compute_field, or 0. */
unsigned registry_compute_above_ceiling(const struct tenant *t, const uint32_t *ppm,
                                        const uint32_t *policy, const uint32_t *priority);
/* Makes the tenant's compute limits, as they are now, its compute ceiling. */
void registry_set_compute_ceiling(struct tenant *t);
/* Reads every tenant's ledger into t->gpu; marks those whose owner has gone as exited. */
void registry_sample(struct registry *r);
/* Reads tenant t's ledger again, as a sample does (its usage and its gates' device time). */
void registry_sample_one(struct tenant *t);

/* True when the tenant's rows (snapshot, usage ledger) include GPU g: it has used it or has a
 * limit there. A tenant that has touched none gets GPU 0, so that it always has a row. */
bool tenant_gpu_row(const struct tenant *t, int g, int ngpus);

/* ---- usage database (usage-db.c, usage-db-schema.c, usage-db-report.c) ---- */

struct sqlite3;

struct usage_db;
int usage_db_open(const char *path, struct usage_db **out, gs_error_t *err);
void usage_db_close(struct usage_db *db);
/* Brings the schema to the current version. */
int usage_db_schema_migrate(struct sqlite3 *db, gs_error_t *err);
/* The database's schema version, or -1 with err when unreadable or newer than this daemon knows. */
int usage_db_schema_check(struct sqlite3 *db, gs_error_t *err);
int usage_db_schema_version(struct sqlite3 *db);
/* Finds or writes the tenant's row (t->db_id), and restores its counters at the last
 * interval so that a restarted daemon loses nothing. */
int usage_db_tenant(struct usage_db *db, struct tenant *t, gs_error_t *err);
/* Writes one interval [start, end] for every tenant, in one transaction. */
int usage_db_interval(struct usage_db *db, struct tenant **v, int n, int ngpus,
                      const uint64_t *gpu_totals, double end, gs_error_t *err);
/* One violation, as the verifier found it (a row of the violations table). */
struct usage_violation {
  int gpu;
  const char *kind; /* "vram" (bytes) or "compute" (millionths of the GPU's time) */
  double at;        /* unix seconds */
  uint64_t measured, limit, over;
  const char *action; /* "none", "signal", "kill" */
  const char *pids;   /* the offending processes, comma-separated */
};
int usage_db_violation(struct usage_db *db, const struct tenant *t, const struct usage_violation *v,
                       gs_error_t *err);
/* One row of idle_actions: what an idle rule or a schedule did (or would do) to t, and why. */
struct usage_idle_action {
  double at;
  const char *rule, *action;
  bool dry_run;
  double idle_s, fraction, threshold, cpu;
  uint64_t vram_bytes;
  const char *reason, *error;
};
int usage_db_idle_action(struct usage_db *db, const struct tenant *t,
                         const struct usage_idle_action *a, gs_error_t *err);
/* A suspension of t begins (t->sus.db_row gets its row) and ends: rows of the suspensions table. */
int usage_db_suspended(struct usage_db *db, struct tenant *t, uint64_t bytes, gs_error_t *err);
int usage_db_resumed(struct usage_db *db, struct tenant *t, const char *by, gs_error_t *err);
/* Marks ended every tenant row left open by an earlier run that is not in the registry. */
int usage_db_close_orphans(struct usage_db *db, const struct registry *r, gs_error_t *err);
/* Writes the tenant's labels again, after an admin changed them (PATCH). */
int usage_db_tenant_labels(struct usage_db *db, const struct tenant *t, gs_error_t *err);
int usage_db_tenant_end(struct usage_db *db, const struct tenant *t, double end, gs_error_t *err);
int usage_db_served(struct usage_db *db, const struct tenant *t, uint64_t requests,
                    gs_error_t *err);
/* The usage report: rows grouped by "tenant", "user" or "label:KEY" since `since`, only of
 * uid unless uid is (uid_t) -1. Returns a JSON array, or NULL with err. */
json_t *usage_db_usage(struct usage_db *db, const char *by, double since, double until, uid_t uid,
                       gs_error_t *err);
/* The start of the first interval overlapping [since, until], or 0 when there is none. */
double usage_db_first_start(struct usage_db *db, double since, double until);
struct sqlite3 *usage_db_handle(struct usage_db *db);
/* The time of the last interval written, or 0. */
double usage_db_last_end(struct usage_db *db);

/* ---- access (access.c) ---- */

struct peer {
  uid_t uid;
  gid_t gid;
  pid_t pid;
  bool admin; /* root, the daemon's own user, or a member of the admin group: sees everything */
};
int access_peer(int fd, const char *admin_group, struct peer *p, gs_error_t *err);
bool access_may_see(const struct peer *p, const struct tenant *t);

/* ---- the daemon ---- */

struct daemon_health {
  double started_mono;
  double started_unix;
  uint64_t samples_total;
  uint64_t sample_errors_total;
  double last_sample_duration_s;
  double last_sample_unix;
  double sample_seconds_total; /* time spent sampling, all in all */
  double nvml_seconds_total;   /* of which in NVML's calls (the driver's share) */
};

struct daemon {
  struct daemon_config cfg;
  struct nvml *nvml;
  struct registry reg;
  struct usage_db *db;
  struct gs_snapshot snap;          /* the last sample */
  struct gs_metrics_fields *fields; /* the GPU fields /metrics serves (the counters setting) */
  struct daemon_sharing sharing;    /* how each GPU is shared (sharing.c) */
  struct daemon_mps *mps;           /* the MPS control daemons (mps.c); NULL before start */
  uint64_t gpu_totals[GS_LEDGER_MAX_GPUS];
  struct daemon_health health;
  struct MHD_Daemon *api;
  struct MHD_Daemon *metrics;
  bool reg_changed; /* tenants came or went since the last sample */
  int state_lock;   /* the fd holding <state dir>/daemon.lock, -1 before */
  ino_t socket_ino; /* the socket file the API server listens on */
  bool state_lost;  /* the state dir or socket is gone and could not be made again (logged) */
  struct verify_proc *vprocs; /* the verifier's buffers, kept between samples */
  struct verify_root *vroots;
  int vroots_cap;
  /* The processes NVML reported, watched, with their tenants (verifier-seen.c): sorted by pid
   * up to nseen_sorted, the ones new in this sample after. Verdicts hold while vseen_sig does. */
  struct verify_seen *vseen;
  int nseen, nseen_sorted, seen_cap;
  uint64_t vseen_sig;
  uint64_t vsample;                          /* the verifier's runs, counted */
  uint64_t util_read_ns[GS_LEDGER_MAX_GPUS]; /* when NVML's utilization was last read, per GPU */
  uint64_t verify_ns_total;                  /* time the verifier took, all in all */
  struct cuda *cuda;       /* the CUDA driver, loaded at the first suspend (gpu-cuda.c) */
  int suspend_tfd;         /* the watcher's timer (suspend-watch.c), -1 before */
  bool suspend_armed;      /* ... armed: some tenant is suspended or resuming */
  struct idle_state *idle; /* the idle rules and counters (idle.c) */
};

double daemon_now_unix(void);
double daemon_now_mono(void);
double daemon_uptime(const struct daemon *d);

/* sampler.c */
/* Adopts the tenants the registry does not know yet (registry_adopt) and gives each its row
 * in the usage ledger. */
void sampler_adopt(struct daemon *d);
/* Reads the GPUs only: the snapshot's GPU part and d->gpu_totals. Returns how many failed. */
int sampler_gpus(struct daemon *d);
int sampler_run(struct daemon *d);
void sampler_release(struct daemon *d);
/* Ends a tenant: a last interval row, its end in the usage ledger, then out of the registry. */
void sampler_end_tenant(struct daemon *d, struct tenant *t, int exit_status);

/* verifier-seen.c: the processes the verifier has seen NVML report. A process's ancestors can
 * drop out of its chain (reparented when a parent ends) but never join it, so the tenant once
 * found for a process stays true of where it came from: it is found again only when tenants
 * come or go (verify_seen_forget_verdicts). */
#define VERIFY_UNKNOWN (-2)
struct verify_seen {
  struct watched_proc w;
  int tenant;      /* -1: none; VERIFY_UNKNOWN: to be found */
  uint64_t sample; /* the last run (d->vsample) NVML reported it in */
};
/* The entry of pid, whatever process it was, or NULL. */
const struct verify_seen *verify_seen_find(const struct daemon *d, pid_t pid);
/* The process that is pid now: its entry when it is the process seen before (its pidfd says it
 * runs), else a new one, its verdict VERIFY_UNKNOWN; NULL when pid runs no process (a zombie
 * included). Marks it seen in this run. */
struct verify_seen *verify_seen_get(struct daemon *d, pid_t pid);
/* Every verdict to be found again; the processes stay watched. */
void verify_seen_forget_verdicts(struct daemon *d);
/* At the end of a run: stops watching the processes NVML did not report in it. */
void verify_seen_sweep(struct daemon *d);
void verify_seen_release(struct daemon *d);

/* verifier.c */
/* Checks NVML's per-process accounting against every tenant's limits: violations into the
 * tenants' gpu[], the log, the usage ledger, and the configured action. */
void verifier_run(struct daemon *d);
/* Reads NVML's per-process utilization since the last reading and adds each tenant's share to
 * its nvml_ns, acting on nothing: for a tenant that ends between samples, so that its last
 * moments are counted before its final interval is written. */
void verifier_account(struct daemon *d);
void verifier_release(struct daemon *d);

/* api-http.c */
int api_http_start(struct daemon *d, gs_error_t *err);
void api_http_stop(struct daemon *d);

/* metrics-http.c */
/* "off", ADDR:PORT or [V6ADDR]:PORT with a numeric address and a port 1..65535. */
bool metrics_listen_valid(const char *spec);
int metrics_http_start(struct daemon *d, gs_error_t *err);
void metrics_http_stop(struct daemon *d);

/* state-dir.c */
/* Takes <dir>/daemon.lock (flock, not waiting) into *fd and writes the pid there; when another
 * daemon holds it, fails naming dir and that daemon's pid. */
int state_dir_lock(const char *dir, int *fd, gs_error_t *err);
void state_dir_unlock(int *fd);
/* Remembers the socket file the API server has just bound. */
void state_dir_note_socket(struct daemon *d);
/* Each interval: makes the state dir, its lock and the socket again when they were removed. */
void state_dir_watch(struct daemon *d);

/* daemon.c: the verb's entry point */
int gs_daemon_main(int argc, char **argv);

#endif
