/* The daemon's limits file: while the node daemon runs it, not the tenant, decides a
 * tenant's limits. A tenant's processes must write its ledger (gs-ledger.h) to charge
 * usage, so a limit kept there could be raised by the tenant itself. The daemon therefore
 * writes each tenant's limits into a file of its own, <daemon state dir>/limits/<name>,
 * owned by the daemon's user, mode 0640 with the admin group and, by ACL, read for the
 * tenant's owner, which the interposer maps read-only. It looks only in the daemon's own
 * directory (where the socket it would talk to lives) and takes only a file that the owner
 * of that limits directory owns and no one else may write. When such a file matches the
 * tenant, its limits take precedence over the ledger's own fields (see
 * gs_ledger_set_authority): neither the environment, nor the shared ledger, nor a copy of
 * the file elsewhere can raise them.
 *
 * The daemon changes limits in place with atomic stores, so every process of the tenant
 * sees a new limit at its next allocation, without a syscall. The file also records what the
 * daemon needs to adopt the tenant again after a restart (where its ledger lives, its owner).
 *
 * Like every shared layout it starts with a magic, a version and a size. libc only. */
#ifndef GS_LIMITS_H
#define GS_LIMITS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpuslice/error.h>
#include <gpuslice/tenant-ledger.h>

#define GS_LIMITS_MAGIC 0x4753544c494d4931ULL /* "GSTLIMI1" */
#define GS_LIMITS_VERSION 4
/* The sizes of version-2 and version-3 files: version 3 only added the compute ceiling at the
 * end of version 2, and version 4 the tenant's suspension at the end of version 3, so a
 * restarted daemon extends such a file in place (gs_limits_upgrade). */
#define GS_LIMITS_V2_SIZE 2504
#define GS_LIMITS_V3_SIZE 2520
/* A compute ceiling that is not there: no admin has set it, or the admin lifted the limit. */
#define GS_CEILING_NONE UINT32_MAX

struct gs_limits {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  char name[GS_LEDGER_NAME_MAX];
  uint32_t uid;      /* the tenant's owner; the interposer checks it is its own */
  int32_t owner_pid; /* the tenant's `gpuslice run`, as in its ledger */
  uint64_t owner_start_time;
  uint64_t ledger_created_unix_ns; /* which instance of the name these limits are for */
  uint64_t registered_unix_ns;
  char ledger_dir[1024];             /* the state dir that holds the tenant's ledger */
  char labels[GS_LEDGER_LABELS_MAX]; /* "k=v" lines, as the ledger's */
  _Atomic uint64_t generation;       /* bumped after every change */
  _Atomic uint64_t limit_bytes[GS_LEDGER_MAX_GPUS]; /* GS_LIMIT_NONE when unlimited */
  _Atomic uint32_t
    limit_ppm[GS_LEDGER_MAX_GPUS];  /* what was asked when it was a percentage; 0 otherwise */
  struct gs_ledger_compute compute; /* limit_ppm (0: none), policy, priority, slice_ms */
  /* The memory limit an admin set, per GPU: the tenant's owner may lower its limit but not
   * raise it past this (GS_LIMIT_NONE: no ceiling). Only the daemon reads it. */
  _Atomic uint64_t ceiling_bytes[GS_LEDGER_MAX_GPUS];
  /* Version 3: the compute limits an admin set (GS_CEILING_NONE each, when none): the owner
   * may lower its share, but not raise it past ceiling_compute_ppm nor lift it, not switch
   * ceiling_policy's cap to share, nor raise its priority past ceiling_priority (low <
   * normal < high). Only the daemon reads them. */
  _Atomic uint32_t ceiling_compute_ppm;
  _Atomic uint32_t ceiling_policy;   /* enum gs_compute_policy */
  _Atomic uint32_t ceiling_priority; /* enum gs_priority */
  /* GS_LIMITS_* flags; 0 in files written before there were any (the field was padding). */
  uint32_t flags;
  /* Version 4: suspension (docs/suspend.md). run_state is what the tenant's processes look at
   * before a launch or an allocation (enum gs_run_state; 0, running, in an upgraded file); the
   * daemon wakes them (a futex) whenever it changes it. */
  _Atomic uint32_t run_state;
  uint32_t resume_wait_ms;          /* how long a process waits to run again before failing */
  _Atomic uint64_t resume_failures; /* bumped when a resume failed: waiting processes give up */
  uint64_t suspended_unix_ns;       /* when the tenant was suspended last; 0 if never */
  _Atomic uint64_t suspended_bytes[GS_LEDGER_MAX_GPUS]; /* what that moved off each GPU */
};

/* What a tenant is doing, as its limits file says (struct gs_limits.run_state). */
enum gs_run_state {
  GS_RUN_RUNNING = 0,
  GS_RUN_SUSPENDING = 1, /* the daemon is locking and checkpointing its processes */
  GS_RUN_SUSPENDED = 2,  /* its device memory is in host memory */
  GS_RUN_RESUMING = 3,   /* asked to run again: waiting for room, or being restored */
};

/* A held tenant (docs/daemon.md#held-tenants): registered by an admin for processes that are not
 * its registrant's children, such as a Kubernetes pod's, with a ledger the daemon made. No
 * owner process ends it: it lives until a DELETE, across the registrant's and the daemon's
 * restarts. */
#define GS_LIMITS_HELD 1u

/* The limits file's layout, pinned: the daemon writes it and every tenant's interposer maps
 * it, possibly built from another version. A change here forces a bump of GS_LIMITS_VERSION.
 * (gs_ledger_compute is pinned in gs-ledger.h.) */
_Static_assert(sizeof(struct gs_limits) == 2672, "gs_limits changed: bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, version) == 8, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, size) == 12, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, name) == 16, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, uid) == 80, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, owner_pid) == 84, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, owner_start_time) == 88, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, ledger_created_unix_ns) == 96, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, registered_unix_ns) == 104, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, ledger_dir) == 112, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, labels) == 1136, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, generation) == 2160, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, limit_bytes) == 2168, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, limit_ppm) == 2296, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, compute) == 2360, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, ceiling_bytes) == 2376, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, ceiling_compute_ppm) == GS_LIMITS_V2_SIZE,
               "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, ceiling_policy) == 2508, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, ceiling_priority) == 2512, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, flags) == 2516, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, run_state) == GS_LIMITS_V3_SIZE,
               "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, resume_wait_ms) == 2524, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, resume_failures) == 2528, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, suspended_unix_ns) == 2536, "bump GS_LIMITS_VERSION");
_Static_assert(offsetof(struct gs_limits, suspended_bytes) == 2544, "bump GS_LIMITS_VERSION");

/* <dir>/limits/<name>. Returns 0, or -1 with err for a bad name or a path too long. */
int gs_limits_path(char *buf, size_t len, const char *dir, const char *name, gs_error_t *err);

/* Writes a new limits file from *init (magic, version and size are filled in) under
 * dir/limits (made mode 0751, group gid), atomically: a reader sees the old file or the
 * whole new one. The file is mode 0640, group gid (when the caller may give it; else its
 * own), with read for the tenant's owner (init->uid) by POSIX ACL; 0644 on a file system
 * without ACLs. Maps it read-write into *out for later changes. */
int gs_limits_create(const char *dir, const struct gs_limits *init, gid_t gid,
                     struct gs_limits **out, gs_error_t *err);

/* Maps an existing limits file, read-only unless writable. Checks magic, version, size,
 * and that neither group nor others may write it. */
int gs_limits_open(const char *dir, const char *name, bool writable, struct gs_limits **out,
                   gs_error_t *err);
void gs_limits_close(struct gs_limits *lim);
/* Extends the version-2 or version-3 limits file dir/limits/name, in place, to this version:
 * the tenant running, never suspended, and, from version 2, with the compute limits it holds
 * as the compute ceiling: version 2 kept no compute ceiling, and the daemon cannot tell
 * whether an admin set them, so it keeps them as an admin's would be (an admin may lift them).
 * In place, so that the tenant's processes that mapped it keep seeing the daemon's changes.
 * Returns 1 when it did, 0 when the file is not such a limits file that the daemon's uid owns
 * and no one else may write, -1 with err on a failed write. */
int gs_limits_upgrade(const char *dir, const char *name, gs_error_t *err);
int gs_limits_remove(const char *dir, const char *name, gs_error_t *err);

/* ---- the daemon's writes ---- */

/* The limit in bytes that a limit of ppm millionths (when not 0) of a device of total bytes
 * comes to: bytes itself when ppm is 0; GS_LIMIT_NONE when the device's size is unknown (0). */
uint64_t gs_limit_resolve(uint64_t bytes, uint32_t ppm, uint64_t total);

/* Starts the contents of a limits file, in memory, for the tenant whose ledger was read into
 * l from ledger_dir: its identity, its labels (labels, or the ledger's when NULL), registered
 * now, with no memory limit, no ceiling and the ledger's compute limits. Change what differs with the
 * calls below, then write it with gs_limits_create. */
void gs_limits_init(struct gs_limits *lim, const struct gs_ledger_copy *l, const char *ledger_dir,
                    const char *labels);
/* Sets gpu's memory limit: bytes, or ppm (when not 0) of the GPU's total bytes (0: unknown). */
void gs_limits_set_vram(struct gs_limits *lim, int gpu, uint64_t bytes, uint32_t ppm,
                        uint64_t total);
/* Makes gpu's memory limit, as it is now, the ceiling its owner may not raise it past. */
void gs_limits_set_ceiling(struct gs_limits *lim, int gpu);
/* Makes the compute limits (share, policy, priority), as they are now, the ceiling their
 * owner may not raise them past. */
void gs_limits_set_compute_ceiling(struct gs_limits *lim);
/* Which compute limit a change to want would raise past ceiling (a gs_limits' ceiling_*
 * fields, GS_CEILING_NONE where none), looking only at the fields given has (bits of enum
 * gs_compute_field): a share above the ceiling's or none (lifting it is the highest raise),
 * share where the ceiling is cap, a priority above the ceiling's. Returns that field's bit,
 * or 0 when the change stays within the ceiling. */
enum gs_compute_field {
  GS_COMPUTE_FIELD_PPM = 1 << 0,
  GS_COMPUTE_FIELD_POLICY = 1 << 1,
  GS_COMPUTE_FIELD_PRIORITY = 1 << 2,
};
unsigned gs_compute_above_ceiling(const struct gs_compute_limits *ceiling,
                                  const struct gs_compute_limits *want, unsigned has);
/* Sets the compute limits that are not NULL. */
void gs_limits_set_compute(struct gs_limits *lim, const uint32_t *ppm, const uint32_t *policy,
                           const uint32_t *priority, const uint32_t *slice_ms);
/* Ends a change made with the calls above in a mapped file: bumps generation. */
void gs_limits_changed(struct gs_limits *lim);
/* Sets the tenant's run state (enum gs_run_state), bumps generation and wakes the tenant's
 * processes waiting on it (gs_limits_wait_run_state). */
void gs_limits_set_run_state(struct gs_limits *lim, uint32_t state);
/* For the interposer: waits until run_state differs from seen, at most timeout_ns (a futex on
 * the read-only mapping, woken by gs_limits_set_run_state). */
void gs_limits_wait_run_state(const struct gs_limits *lim, uint32_t seen, uint64_t timeout_ns);
/* "running", "suspending", "suspended", "resuming". */
const char *gs_run_state_name(uint32_t state);
/* Copies what the interposer reads (memory and compute limits, the run state) from src into
 * dst, then gs_limits_changed(dst): keeps a second file of the same tenant in step. */
void gs_limits_mirror(struct gs_limits *dst, const struct gs_limits *src);

/* True when lim is about the tenant of ledger l (same name and instance) and owned by uid. */
bool gs_limits_match(const struct gs_limits *lim, const struct gs_ledger *l, uid_t uid);

/* For the interposer, once at attach: maps read-only the limits file of the tenant of l in
 * daemon_dir/limits (gs_daemon_dir()), and only when fstat on the opened files shows the
 * limits directory and the file owned by the same uid and writable by no one else. Returns 1
 * and sets *out when it matches (gs_limits_match with geteuid()), 0 otherwise; never fails. */
int gs_limits_find(const char *daemon_dir, const struct gs_ledger *l, struct gs_limits **out);

/* The names the API, the CLI and the usage ledger give the compute enums of gs-ledger.h. */
const char *gs_compute_policy_name(uint32_t policy); /* "share", "cap" */
const char *gs_priority_name(uint32_t priority);     /* "normal", "low", "high" */
/* A priority's place in the order low < normal < high: 0, 1, 2. */
int gs_priority_rank(uint32_t priority);

/* The parsers for what users type, shared by `gpuslice run` and the Slurm plugin. Each
 * returns 0, or -1 with an error (status 0) quoting the bad value, for the caller to prefix
 * with its option's name. */
/* A compute share: a percentage in (0, 100], at least GS_PCT_MIN, as millionths. */
int gs_parse_compute_pct(const char *s, uint32_t *ppm, gs_error_t *err);
/* "share" or "cap": enum gs_compute_policy. */
int gs_compute_policy_from_name(const char *s, uint32_t *policy, gs_error_t *err);
/* "high", "normal" or "low": enum gs_priority. */
int gs_priority_from_name(const char *s, uint32_t *priority, gs_error_t *err);

/* True when the len bytes at key are a label's key: A-Z a-z 0-9 _, not starting with a digit. */
bool gs_label_key_valid(const char *key, size_t len);

/* Calls fn(key, value, data) for each "k=v" line of labels (the labels of a ledger or a
 * limits file); lines without '=' are skipped. */
void gs_labels_foreach(const char *labels,
                       void (*fn)(const char *key, const char *value, void *data), void *data);
/* Fails, naming the first label (its bad bytes shown as '?'), when a key or value of labels
 * is not valid UTF-8: the API's JSON could not carry it. */
int gs_labels_check_utf8(const char *labels, gs_error_t *err);

#endif
