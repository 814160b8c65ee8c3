/* The tenant ledger: one small shared-memory file per tenant that every process of the
 * tenant maps. It holds the tenant's per-GPU memory limits and usage, and a slot per process
 * so that the memory of a process that dies without freeing goes back to the tenant.
 *
 * It is the only state the interposer needs, so quotas hold with no daemon running.
 * Reservations are taken with compare-and-swap against the limit *before* the driver is
 * called, and rolled back if the driver fails: concurrent processes of one tenant can never
 * exceed the limit together. Nothing here locks, allocates or makes a syscall on the
 * reserve/release path.
 *
 * Files live in <state dir>/tenants/<name>, mode 0600, and start with a magic, a version and
 * a size. Depends on libc alone: it is linked into the interposer. */
#ifndef GS_LEDGER_H
#define GS_LEDGER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpuslice/error.h>

#define GS_LEDGER_MAGIC 0x4753544e414e5431ULL /* "GSTNANT1" */
/* Version 4: a process's threads may hold slots of their own (GS_SLOT_THREAD), which only a
 * reaper that knows them gives back; the layout is version 3's. */
#define GS_LEDGER_VERSION 4
/* Version 3, read by readers outside the tenant: the same bytes, with no thread slots. */
#define GS_LEDGER_V3 3
/* The size of a version-2 ledger: version 3 only added struct gs_ledger_resume at its end, so
 * a reader outside the tenant still reads one (a tenant started by an older gpuslice). */
#define GS_LEDGER_V2_SIZE 149504
#define GS_LEDGER_MAX_GPUS 16
#define GS_LEDGER_MAX_PROCS 1024
/* Thread slots are only ever the first half of the slots: a tenant always has room for 512
 * processes, however many threads of theirs hold slots. */
#define GS_LEDGER_THREAD_SLOTS (GS_LEDGER_MAX_PROCS / 2)
#define GS_LEDGER_NAME_MAX 64
#define GS_LEDGER_LABELS_MAX 1024
#define GS_LIMIT_NONE UINT64_MAX
#define GS_SLOTS_KNOWN 0x80000000u /* in slots_used: the count below it is kept */

struct gs_ledger_gpu {
  _Atomic uint64_t
    limit_bytes; /* GS_LIMIT_NONE when unlimited; resolved from limit_ppm on first use */
  _Atomic uint32_t
    limit_ppm; /* limit as millionths of the device's memory, 0 when given in bytes */
  uint32_t pad;
  _Atomic uint64_t used_bytes;
  _Atomic uint64_t peak_bytes;
  /* Compute, written by the tenant's processes as they take and give back turns on the GPU
   * (see gs-compute.h): device time used, time spent waiting at the gate, and the share
   * of the device's busy time the tenant had over the last accounting window. */
  _Atomic uint64_t gpu_ns;
  _Atomic uint64_t throttled_ns;
  _Atomic uint32_t share_ppm;
  uint32_t pad2;
};

/* How a tenant's compute share behaves when the GPU has spare time. */
enum gs_compute_policy { GS_COMPUTE_SHARE = 0, GS_COMPUTE_CAP = 1 };
/* NORMAL is 0 so that a zeroed spec means normal priority. */
enum gs_priority { GS_PRIO_NORMAL = 0, GS_PRIO_LOW = 1, GS_PRIO_HIGH = 2 };

/* The smallest percentage a limit held in millionths can be: one millionth of the GPU. A
 * smaller one would round to 0, which means no limit, so every reader refuses it instead. */
#define GS_PCT_MIN 0.0001

/* The tenant's compute limit, the same on every GPU it uses. limit_ppm 0 means none. */
struct gs_ledger_compute {
  _Atomic uint32_t limit_ppm; /* share of the GPU in millionths (1..1000000), or 0 */
  _Atomic uint32_t policy;    /* enum gs_compute_policy */
  _Atomic uint32_t priority;  /* enum gs_priority */
  _Atomic uint32_t
    slice_ms; /* asks the tenant's GPUs for exclusive turns of this length; 0: default */
};

/* A slot's state. A live slot is a process's; a thread slot belongs to one thread of a process
 * with a live slot (the same pid and start time), so that the thread charges it with plain
 * stores rather than locked instructions (the other threads share the process's slot). Memory
 * allocated on one thread and freed on another leaves one slot above and the other below what
 * the process holds: only their sum is meaningful, and a reaper gives back a dead process's
 * slots together, as one sum.
 * An exited slot is the slot of a process that is ending normally: what its slots held was
 * given back at its exit, but its other threads may still run for a moment and write them, so
 * they stay its own until it is dead; a reaper then gives back what they moved since and frees
 * them. */
enum {
  GS_SLOT_FREE = 0,
  GS_SLOT_CLAIMING,
  GS_SLOT_LIVE,
  GS_SLOT_REAPING,
  GS_SLOT_THREAD,
  GS_SLOT_EXITED
};

struct gs_ledger_proc {
  _Atomic uint32_t state;
  int32_t pid;
  uint64_t start_time; /* (pid, start_time) names a process; pids are reused */
  _Atomic uint64_t used[GS_LEDGER_MAX_GPUS]; /* written by the owner, read by reapers */
};

/* Version 3: how a suspended tenant asks to run again (docs/suspend.md). A process of the
 * tenant that finds its limits file saying the tenant is suspended bumps `requests`, which the
 * daemon watches, and once the tenant runs again adds how long it waited. The tenant writes
 * these, so the daemon only ever reads them by copy, as the rest of the ledger. */
struct gs_ledger_resume {
  _Atomic uint64_t requests;      /* asked to run again, counted */
  _Atomic uint64_t waits;         /* waits that ended with the tenant running again */
  _Atomic uint64_t wait_ns_total; /* their time, summed */
  _Atomic uint64_t last_wait_ns;  /* the last one's */
};

struct gs_ledger {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  char name[GS_LEDGER_NAME_MAX];
  char labels[GS_LEDGER_LABELS_MAX]; /* "k=v" lines */
  int32_t owner_pid;                 /* the `gpuslice run` that started the tenant */
  /* GS_SLOTS_KNOWN | how many slots from proc[0] were ever claimed, so that a reader reads only
   * those (gs_ledger_read_procs); raised before a claimed slot goes live. 0 in a ledger made
   * before there was this field: all slots may be in use. */
  _Atomic uint32_t slots_used;
  uint64_t owner_start_time;
  uint64_t created_unix_ns;
  uint64_t context_reserve_bytes; /* charged per CUDA context */
  struct gs_ledger_compute compute;
  struct gs_ledger_gpu gpu[GS_LEDGER_MAX_GPUS];
  struct gs_ledger_proc proc[GS_LEDGER_MAX_PROCS];
  struct gs_ledger_resume resume;
};

/* The ledger's layout, pinned: every process of a running tenant, the daemon's reader
 * (ledger-read.c) and tests/integration/compute_util.py read these offsets. A change here
 * forces a bump of GS_LEDGER_VERSION (and of docs/tenant-ledger.md). gs_ledger_compute is
 * also part of the limits file (gs-limits.h): a change to it bumps GS_LIMITS_VERSION too. */
_Static_assert(sizeof(struct gs_ledger_gpu) == 56, "gs_ledger_gpu changed: bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_gpu, limit_ppm) == 8, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_gpu, used_bytes) == 16, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_gpu, peak_bytes) == 24, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_gpu, gpu_ns) == 32, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_gpu, throttled_ns) == 40, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_gpu, share_ppm) == 48, "bump GS_LEDGER_VERSION");
_Static_assert(sizeof(struct gs_ledger_compute) == 16,
               "gs_ledger_compute changed: bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_compute, policy) == 4, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_compute, priority) == 8, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_compute, slice_ms) == 12, "bump GS_LEDGER_VERSION");
_Static_assert(sizeof(struct gs_ledger_proc) == 144,
               "gs_ledger_proc changed: bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_proc, pid) == 4, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_proc, start_time) == 8, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger_proc, used) == 16, "bump GS_LEDGER_VERSION");
_Static_assert(sizeof(struct gs_ledger_resume) == 32,
               "gs_ledger_resume changed: bump GS_LEDGER_VERSION");
_Static_assert(sizeof(struct gs_ledger) == GS_LEDGER_V2_SIZE + 32,
               "gs_ledger changed: bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, resume) == GS_LEDGER_V2_SIZE, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, version) == 8, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, size) == 12, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, name) == 16, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, labels) == 80, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, owner_pid) == 1104, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, slots_used) == 1108, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, owner_start_time) == 1112, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, created_unix_ns) == 1120, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, context_reserve_bytes) == 1128, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, compute) == 1136, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, gpu) == 1152, "bump GS_LEDGER_VERSION");
_Static_assert(offsetof(struct gs_ledger, proc) == 2048, "bump GS_LEDGER_VERSION");

/* What a new tenant starts with. */
struct gs_ledger_spec {
  const char *name;
  const char *labels;                       /* "k=v" lines, or NULL */
  uint64_t limit_bytes[GS_LEDGER_MAX_GPUS]; /* GS_LIMIT_NONE for none */
  uint32_t limit_ppm[GS_LEDGER_MAX_GPUS];   /* overrides limit_bytes when non-zero */
  uint64_t context_reserve_bytes;
  uint32_t compute_ppm;    /* millionths of the GPU; 0 for no compute limit */
  uint32_t compute_policy; /* enum gs_compute_policy */
  uint32_t priority;       /* enum gs_priority */
  uint32_t slice_ms;       /* 0: the GPU's default turn */
};

/* The state directory: GPUSLICE_STATE_DIR, else /run/gpuslice for root, else
 * $XDG_RUNTIME_DIR/gpuslice, else /tmp/gpuslice-<uid>. Returns a static string. */
const char *gs_ledger_state_dir(void);
/* True when dir is the per-user default (no $GPUSLICE_STATE_DIR, not root): that one must
 * be private (0700), since a shared place like /tmp lets anyone create it first. */
bool gs_ledger_state_dir_is_per_user(const char *dir);
/* gs_dir_check_safe on dir, private_only for the per-user default. Done once, at start
 * or attach, by every edge before it trusts what the state dir holds. */
int gs_ledger_state_dir_check(const char *dir, gs_error_t *err);
/* Creates dir when missing (the per-user default 0700, as /tmp lets anyone create it first;
 * any other 0755), then gs_ledger_state_dir_check on it. */
int gs_ledger_state_dir_make(const char *dir, gs_error_t *err);

/* True when name is 1..63 characters of [A-Za-z0-9._-], not starting with '.'. */
bool gs_ledger_name_valid(const char *name);

/* Creates the tenant's ledger under dir (making dir/tenants 0700 if needed). Fails with
 * EEXIST if a live tenant of that name exists; a ledger left by a dead owner is replaced. */
int gs_ledger_create(const char *dir, const struct gs_ledger_spec *spec, struct gs_ledger **out,
                     gs_error_t *err);
/* Maps an existing ledger; checks magic, version and size. */
int gs_ledger_attach(const char *dir, const char *name, struct gs_ledger **out, gs_error_t *err);
void gs_ledger_detach(struct gs_ledger *l);
/* Removes the ledger file of a tenant that has ended. */
int gs_ledger_remove(const char *dir, const char *name, gs_error_t *err);

/* The process's slot: claims a free one for (pid, start_time). NULL when all are taken. */
struct gs_ledger_proc *gs_ledger_claim(struct gs_ledger *l, pid_t pid, uint64_t start_time);
/* A slot for one thread of the process whose live slot is owner, among the first
 * GS_LEDGER_THREAD_SLOTS; NULL when all of those are taken. It is given back with owner's, by
 * gs_ledger_unclaim or a reaper; only its thread writes it. */
struct gs_ledger_proc *gs_ledger_claim_thread(struct gs_ledger *l,
                                              const struct gs_ledger_proc *owner);
/* At the process's exit: gives what the slot and the thread slots of its process hold back to
 * the tenant at once, and leaves them to the process (GS_SLOT_EXITED) until a reaper finds it
 * dead, so that none is claimed by another process while a last thread may still write it. */
void gs_ledger_unclaim(struct gs_ledger *l, struct gs_ledger_proc *p);

/* Takes bytes on gpu against the limit: 0, or -1 when it would exceed the limit. */
int gs_ledger_reserve(struct gs_ledger *l, struct gs_ledger_proc *p, int gpu, uint64_t bytes);
/* gs_ledger_reserve against the lower of the limit and cap: for a process that holds the
 * tenant's usage to less than the tenant's limit (gpuslice/peer-limits.h). cap never raises
 * the limit; GS_LIMIT_NONE leaves it as it is. */
int gs_ledger_reserve_within(struct gs_ledger *l, struct gs_ledger_proc *p, int gpu, uint64_t bytes,
                             uint64_t cap);
void gs_ledger_release(struct gs_ledger *l, struct gs_ledger_proc *p, int gpu, uint64_t bytes);

/* The limit on gpu in bytes, resolving a percentage against the device's total memory. */
uint64_t gs_ledger_limit(struct gs_ledger *l, int gpu, uint64_t device_total);

/* While the node daemon runs it is the authority for limits: it writes them into a limits
 * file the tenant cannot write (gs-limits.h), which the interposer maps read-only and hands
 * to this. From then on gs_ledger_limit, gs_ledger_reserve and the compute getters below
 * read that file instead of l's own limit fields. One ledger per process (the interposer's);
 * lim NULL drops the authority. */
struct gs_limits;
void gs_ledger_set_authority(const struct gs_ledger *l, const struct gs_limits *lim);

/* The limits file set by gs_ledger_set_authority for l, or NULL. */
const struct gs_limits *gs_ledger_authority(const struct gs_ledger *l);

/* A process of the tenant found it suspended and asks to run again (struct gs_ledger_resume). */
void gs_ledger_resume_ask(struct gs_ledger *l);
/* The tenant runs again after this process waited ns for it. */
void gs_ledger_resume_waited(struct gs_ledger *l, uint64_t ns);

/* The tenant's compute limit (millionths of a GPU, 0 for none), policy (enum
 * gs_compute_policy) and priority (enum gs_priority), from the daemon's limits file when
 * there is one, else from l->compute. The compute gate reads these, never l->compute. */
uint32_t gs_ledger_compute_limit_ppm(const struct gs_ledger *l);
uint32_t gs_ledger_compute_policy(const struct gs_ledger *l);
uint32_t gs_ledger_priority(const struct gs_ledger *l);

/* Gives back the memory of the tenant's processes that have died, and frees their slots (those
 * that exited too, with what their last threads moved after the exit). Returns how many. */
int gs_ledger_reap(struct gs_ledger *l);

/* ---- reading and writing a ledger from outside the tenant (ledger-read.c) ----
 *
 * The ledger belongs to the tenant, who may truncate or rewrite it at any time: a reader
 * outside the tenant (the node daemon) therefore never maps it (a mapping of a truncated
 * file would kill the reader with SIGBUS). These calls read it with pread into a copy in
 * plain fields, checking the header, and write only the limit fields the daemon mirrors. */

/* Compute limits in plain fields; the meanings are those of struct gs_ledger_compute. */
struct gs_compute_limits {
  uint32_t limit_ppm, policy, priority, slice_ms;
};

/* One GPU of a ledger copy; the meanings are those of struct gs_ledger_gpu. */
struct gs_ledger_copy_gpu {
  uint64_t limit_bytes;
  uint32_t limit_ppm;
  uint64_t used_bytes, peak_bytes, gpu_ns, throttled_ns;
  uint32_t share_ppm;
};

/* struct gs_ledger_resume in plain fields. */
struct gs_ledger_resume_copy {
  uint64_t requests, waits, wait_ns_total, last_wait_ns;
};

/* What a ledger said when it was read: everything but the process slots. */
struct gs_ledger_copy {
  char name[GS_LEDGER_NAME_MAX];
  char labels[GS_LEDGER_LABELS_MAX];
  uid_t owner_uid; /* the file's owner */
  pid_t owner_pid;
  uint64_t owner_start_time;
  uint64_t created_unix_ns; /* names this instance of the tenant */
  uint64_t context_reserve_bytes;
  struct gs_compute_limits compute;
  struct gs_ledger_copy_gpu gpu[GS_LEDGER_MAX_GPUS];
  uint32_t version;    /* 2: a ledger of an older gpuslice, without `resume` */
  uint32_t slots_used; /* slots from the first that may be in use (the tenant's word) */
  struct gs_ledger_resume_copy resume; /* zero in a version-2 ledger */
};

/* Opens dir/tenants/name for gs_ledger_read_fd: read-only, following no link, never
 * blocking. Returns the descriptor (close it), or -1 with err. */
int gs_ledger_read_open(const char *dir, const char *name, gs_error_t *err);
/* Reads the ledger open on fd into *out with two preads (the head, the resume block). Checks that it is a regular file,
 * owned by uid unless uid is (uid_t) -1, and its magic, version and size; a version-2 ledger
 * (GS_LEDGER_V2_SIZE) is read too. `what` names it in messages. Returns 0, or -1 with err. */
int gs_ledger_read_fd(int fd, const char *what, uid_t uid, struct gs_ledger_copy *out,
                      gs_error_t *err);
/* Reads only struct gs_ledger_resume of the ledger open on fd (as gs_ledger_read_fd checked
 * it), with one pread: what the daemon polls while a tenant is suspended. Returns 0, or -1 when
 * the file is too short for it (a version-2 ledger, or one the tenant truncated). */
int gs_ledger_read_resume(int fd, struct gs_ledger_resume_copy *out);
/* gs_ledger_read_open, gs_ledger_read_fd and close, for one reading. */
int gs_ledger_read_copy(const char *dir, const char *name, uid_t uid, struct gs_ledger_copy *out,
                        gs_error_t *err);
/* A descriptor on the tenant's own ledger l in dir, for its owner (`gpuslice run`, the Slurm
 * plugin's slurmstepd) to keep until the tenant ends: should someone remove the state dir while
 * the tenant runs, the daemon gives the ledger its path back as a link to it
 * (/proc/<pid>/fd/<n>), so that the tenant's new processes charge the same ledger. O_CLOEXEC,
 * so the owner's children do not inherit it. Returns the descriptor, or -1 when the file at
 * the path is not l (removed, or another ledger by now). */
int gs_ledger_hold(const char *dir, const struct gs_ledger *l);

/* A process that holds a live slot in a ledger. */
struct gs_ledger_pid {
  pid_t pid;
  uint64_t start_time;
};
/* Reads the processes of the live slots of the ledger open on fd (as gs_ledger_read_fd
 * checked it) into out, up to max of them, with two preads (the count, the slots). What the
 * slots say is the
 * tenant's word: a reader checks each process itself (gs_proc_alive). Returns how many, or
 * -1 with err. */
int gs_ledger_read_procs(int fd, struct gs_ledger_pid *out, int max, gs_error_t *err);
/* gs_ledger_read_procs over the first `count` slots, as a reading of the head just said
 * (struct gs_ledger_copy's slots_used): one pread less. */
int gs_ledger_read_procs_in(int fd, uint32_t count, struct gs_ledger_pid *out, int max,
                            gs_error_t *err);
/* gs_ledger_read_fd and gs_ledger_read_procs_in again, together, on a descriptor
 * gs_ledger_read_fd has checked, without looking at the file's type and owner again (a
 * descriptor names one file for its life, and only root gives a file to another user), for the
 * daemon's sampler; owner_uid is (uid_t) -1. The head and the first `want` slots (the count the last reading said) in one preadv, the resume
 * block in a second pread unless `resume` is false (out->resume is then zero), and the slots
 * from want to the head's count in a third only when the tenant has claimed more since
 * (unreadable, they name none). The live slots' processes go into procs (up to max). Returns
 * how many, or -1 with err when the head or the resume block cannot be read. */
int gs_ledger_read_kept_procs(int fd, const char *what, uint32_t want, bool resume,
                              struct gs_ledger_copy *out, struct gs_ledger_pid *procs, int max,
                              gs_error_t *err);

struct gs_limits;
/* Writes the limits of lim (memory in bytes, compute limit, policy and priority) into the
 * ledger dir/tenants/name, for the tenant's processes that started before the daemon wrote
 * lim; only when the ledger is the instance created at created_unix_ns and owned by uid.
 * Returns 0, or -1 with err (also for another instance or owner). */
int gs_ledger_write_limits(const char *dir, const char *name, uid_t uid, uint64_t created_unix_ns,
                           const struct gs_limits *lim, gs_error_t *err);

#endif
