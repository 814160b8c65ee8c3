/* The compute board: one small shared-memory file per GPU (by UUID) through which the
 * tenants sharing that GPU take exclusive turns on it, with no central process.
 *
 * A turn is held by one process at a time. Whoever holds it launches freely until its
 * turn ends (its length, or a synchronize with others waiting); it then waits for its own
 * work to finish, charges the device time it measured to its tenant's row, and gives the
 * turn back. A waiting tenant of higher priority takes the turn at once. The next turn goes to the waiting tenant of
 * the highest priority, then to the one furthest behind its share: each row keeps a
 * virtual time, device ns x 10^6 / weight, and the smallest goes first (stride
 * scheduling). Because only one tenant's work is on the GPU at a time, the device time a
 * process measures with its own events is its own.
 *
 * Rows belong to tenants; every process of a tenant uses its tenant's row, so a share is
 * the tenant's across all its processes. Everything here is libc only and lock-free; the
 * waiting is done by the interposer (preload/compute-gate.c) with a futex on `seq`.
 *
 * Times are CLOCK_MONOTONIC nanoseconds, passed in so that the logic can be tested. */
#ifndef GS_COMPUTE_H
#define GS_COMPUTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpuslice/error.h>
#include <gpuslice/tenant-ledger.h>

#define GS_BOARD_MAGIC 0x314452414f425347ULL /* "GSBOARD1" */
#define GS_BOARD_VERSION 3
/* Tenants per GPU. The scheduler looks only at the rows marked busy (a two-level bitmap), so
 * idle tenants cost nothing per handover; the rare scans of every row (claiming one) stop at
 * the board's rows_used. */
#define GS_BOARD_ROWS 1024
#define GS_BOARD_BUSY_WORDS (GS_BOARD_ROWS / 64)
#define GS_BOARD_UUID_MAX 96
#define GS_BOARD_DEFAULT_SLICE_MS 20
#define GS_WEIGHT_FULL 1000000u
/* A tenant without --compute shares what the others leave, and never less than this. */
#define GS_WEIGHT_MIN 10000u
/* A row counts as waiting while one of its processes has looked in this recently. Waiters look
 * again at least every GS_WAIT_LOOK_NS (they are woken sooner when their turn comes). */
#define GS_WAIT_FRESH_NS 30000000ull
#define GS_WAIT_LOOK_NS 10000000ull
/* A row unused for this long may be given to another tenant. */
#define GS_ROW_STALE_NS 60000000000ull

enum { GS_ROW_FREE = 0, GS_ROW_CLAIMING, GS_ROW_LIVE };

struct gs_board_row {
  _Atomic uint32_t state;
  _Atomic uint32_t weight_ppm; /* the tenant's --compute in millionths, 0 for none */
  char tenant[GS_LEDGER_NAME_MAX];
  _Atomic uint32_t policy;       /* enum gs_compute_policy */
  _Atomic uint32_t priority;     /* enum gs_priority */
  _Atomic uint64_t vtime;        /* device ns x 10^6 / weight, since the row was claimed */
  _Atomic uint64_t used_ns;      /* device time charged on this GPU */
  _Atomic int64_t credit_ns;     /* cap policy: device time it may still use */
  _Atomic uint64_t credit_at_ns; /* when credit was last topped up */
  _Atomic uint64_t waiting_ns;   /* last look-in by a process waiting for a turn */
  _Atomic uint64_t active_ns;    /* last launch by any of its processes */
};

struct gs_board {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  char uuid[GS_BOARD_UUID_MAX];
  _Atomic uint32_t slice_ms; /* the turn's length on this GPU */
  _Atomic uint32_t seq;      /* futex word: bumped whenever the turn is given back or wanted */
  _Atomic uint64_t turn;     /* 0 when free, else GS_TURN(row, pid, gen) */
  _Atomic uint32_t gen;
  _Atomic uint32_t rows_used; /* one past the highest row ever claimed: where scans stop */
  _Atomic uint64_t turn_start_ns;
  _Atomic uint64_t holder_active_ns; /* UINT64_MAX while the holder is synchronizing */
  uint8_t pad0[40];
  /* Read by every launch of every tenant on the GPU, so on a cache line of its own that is
   * written only when the answer changes: GS_GATING(generation, needed). While no live row
   * has a compute limit or a priority, launches are not gated at all (gs_board_gating_update). */
  _Atomic uint32_t gating;
  uint8_t pad1[60];
  /* The rows that may compete for the GPU (waiting, holding, or launched within two turns):
   * bit i of busy[i / 64], and bit w of busy_summary while busy[w] may be non-zero. Set by the
   * row's processes, cleared by whoever finds the row no longer competing. */
  _Atomic uint64_t busy_summary;
  uint8_t pad2[56];
  _Atomic uint64_t busy[GS_BOARD_BUSY_WORDS];
  uint8_t pad3[64];
  struct gs_board_row row[GS_BOARD_ROWS];
  /* Futex words, one per row: a process waiting for the turn sleeps on its row's, and whoever
   * gives the turn back bumps and wakes the row that should have it next, alone. */
  _Atomic uint32_t wake[GS_BOARD_ROWS];
};

/* The board's layout, pinned: every process of every tenant on the GPU maps it, possibly
 * built from another version. A change here forces a bump of GS_BOARD_VERSION. */
_Static_assert(sizeof(struct gs_board_row) == 128, "gs_board_row changed: bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, weight_ppm) == 4, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, tenant) == 8, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, policy) == 72, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, priority) == 76, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, vtime) == 80, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, used_ns) == 88, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, credit_ns) == 96, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, credit_at_ns) == 104, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, waiting_ns) == 112, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board_row, active_ns) == 120, "bump GS_BOARD_VERSION");
_Static_assert(sizeof(struct gs_board) == 512 + 128 * 1024 + 4 * 1024,
               "gs_board changed: bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, version) == 8, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, size) == 12, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, uuid) == 16, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, slice_ms) == 112, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, seq) == 116, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, turn) == 120, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, gen) == 128, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, rows_used) == 132, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, turn_start_ns) == 136, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, holder_active_ns) == 144, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, gating) == 192, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, busy_summary) == 256, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, busy) == 320, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, row) == 512, "bump GS_BOARD_VERSION");
_Static_assert(offsetof(struct gs_board, wake) == 512 + 128 * 1024, "bump GS_BOARD_VERSION");

/* A turn word: the holder's pid in bits 0-31, its row in bits 32-41, a generation above. */
#define GS_TURN_GEN_MASK 0x3fffffu
#define GS_TURN(row, pid, gen) \
  (((uint64_t) (gen) << 42) | ((uint64_t) (row) << 32) | (uint32_t) (pid))
#define GS_TURN_ROW(t) ((int) (((t) >> 32) & 0x3ff))
#define GS_TURN_PID(t) ((pid_t) ((t) &0xffffffffu))
_Static_assert(GS_BOARD_ROWS <= 0x3ff + 1, "a row must fit the turn word's 10 bits");

/* The gating word: a generation, moved by every change, and whether launches need gating. */
#define GS_GATING(gen, needed) (((uint32_t) (gen) << 1) | ((needed) ? 1u : 0u))
#define GS_GATING_NEEDED(word) (((word) &1u) != 0)
#define GS_GATING_GEN(word) ((word) >> 1)

/* Maps (creating if needed) the board of the GPU named uuid under <dir>/gpus. */
int gs_board_open(const char *dir, const char *uuid, struct gs_board **out, gs_error_t *err);
void gs_board_close(struct gs_board *b);

/* The tenant's row, claimed if it has none; the row takes the tenant's current limits.
 * -1 when all rows are taken by live tenants. */
int gs_board_row_claim(struct gs_board *b, const char *tenant, uint32_t weight_ppm, uint32_t policy,
                       uint32_t priority, uint64_t now);
/* How many rows a scan must look at: rows_used, within the board. */
int gs_board_rows(struct gs_board *b);
/* Gives back the tenant's row, unless it still competes (holds the turn, waits, or launched
 * within two turns: a process of it outlived its `gpuslice run`): for when the tenant has
 * ended, so that its limits stop gating the GPU's other tenants at once rather than once the
 * row is stale. A process that exits says it no longer competes (preload/compute-gate-turn.c);
 * a turn the row holds whose holder has died (killed) is handed back first.
 * Returns 1 when a row was freed, 0 when the tenant had none or it still competes. */
int gs_board_row_release(struct gs_board *b, const char *tenant, uint64_t now);
/* Opens each board under <dir>/gpus and releases the tenant's row there; boards that cannot
 * be opened are skipped. For `gpuslice run` at its tenant's end. A row whose processes were
 * killed at work looks busy for two turns more: the release waits that out (about 80 ms at
 * the default turn) rather than leave the row gating its neighbours until it is stale. */
void gs_boards_release_tenant(const char *dir, const char *tenant, uint64_t now);

/* Whether row i, as it is now, needs the GPU's launches gated: it is live, not stale, and has
 * a compute limit or a priority other than normal. */
bool gs_board_row_gates(struct gs_board *b, int i, uint64_t now);
/* Looks at every row and stores whether any needs gating, with a new generation; returns the
 * word now on the board. Called with changed whenever a row's limits or liveness change
 * (claims, releases, a live limit change): it then always stores. Called without, now and
 * then by gated processes so that a stale row stops gating, it stores only when the answer
 * differs (a change made meanwhile is stored by its own maker's call). */
uint32_t gs_board_gating_update(struct gs_board *b, uint64_t now, bool changed);
/* Marks row as busy (see busy above): after its process stores active_ns or waiting_ns. */
void gs_board_busy_mark(struct gs_board *b, int row);
/* Fills rows (GS_BOARD_ROWS entries) with the rows that compete for the GPU now, pruning
 * from the busy bitmap those that no longer do; returns how many. */
int gs_board_busy_rows(struct gs_board *b, uint64_t now, int16_t *rows);

/* What a tenant does when every row of its GPU's board is taken (GPUSLICE_BOARD_FULL): wait
 * up to wait_s for a row, then have the launch refused; or be refused at once. Never run
 * ungated: a tenant off the board would not be held to its share. */
enum gs_board_full_mode { GS_BOARD_FULL_WAIT = 0, GS_BOARD_FULL_REFUSE = 1 };
#define GS_BOARD_FULL_WAIT_S 60u
#define GS_BOARD_FULL_WAIT_MAX_S 86400u
struct gs_board_full {
  uint32_t mode; /* enum gs_board_full_mode */
  uint32_t wait_s;
};
/* Reads "wait", "wait:SECONDS" (0..86400) or "refuse"; NULL or "" is the default, wait for
 * GS_BOARD_FULL_WAIT_S. -1 on anything else, with *out the default. */
int gs_board_full_parse(const char *s, struct gs_board_full *out);

/* The turn's length in ns. */
uint64_t gs_board_slice_ns(const struct gs_board *b);

/* The waiting row that should have the next turn: highest priority, then smallest virtual
 * time, among those the cap policy lets run now. -1 when none is waiting. */
int gs_board_pick(struct gs_board *b, uint64_t now);
/* Marks row as waiting now. A row coming back from idle starts level with the busiest
 * waiting or holding row, so that idle time is not saved up as credit. */
void gs_board_wait_mark(struct gs_board *b, int row, uint64_t now);
/* True when anyone but the holder `row` waits for the turn and may run now: another row, or
 * another process of the same tenant. */
bool gs_board_others_waiting(struct gs_board *b, int row, uint64_t now);

/* How many other rows compete for the GPU now; *higher tells whether one of them has a
 * higher priority than row. */
int gs_board_contenders(struct gs_board *b, int row, uint64_t now, bool *higher);
/* A row's priority as a rank: 0 low, 1 normal, 2 high. */
int gs_board_rank(struct gs_board *b, int row);

/* Charges ns of device time to row: virtual time, usage, and the cap's credit. */
void gs_board_charge(struct gs_board *b, int row, uint64_t ns, uint64_t now);
/* For a capped row: ns until it may run again (0 now). Always 0 for other rows. */
uint64_t gs_board_cap_wait(struct gs_board *b, int row, uint64_t now);
/* For a capped row: the device time it may use in the coming turn; UINT64_MAX otherwise. */
uint64_t gs_board_cap_budget(struct gs_board *b, int row, uint64_t now);
/* The weight a row schedules with: its own, or for a tenant without a limit its part of
 * what the limited tenants leave. */
uint32_t gs_board_weight(struct gs_board *b, int row, uint64_t now);

/* Takes the free turn for (row, pid): the turn word, or 0 if someone else has it. */
uint64_t gs_board_take(struct gs_board *b, int row, pid_t pid, uint64_t now);
/* Gives the turn back (only if `turn` still holds it) and wakes nobody: the caller does, with
 * gs_board_wake_next. */
bool gs_board_release(struct gs_board *b, uint64_t turn);
/* Whether the process that holds turn has died. */
bool gs_board_holder_gone(uint64_t turn);
/* After the turn was given back: bumps the wake word of the row that should have it next (if
 * any waits) and returns that word for the caller to wake; NULL when nobody waits. */
_Atomic uint32_t *gs_board_wake_next(struct gs_board *b, uint64_t now);

/* Takes the turn from a holder of lower priority than row, at once: the holder keeps at most
 * one kernel in flight while a higher priority is about (see preload/compute-gate-turn.c), so the
 * new holder's work waits behind no more than that. 0 when the holder is not lower. */
uint64_t gs_board_preempt(struct gs_board *b, int row, pid_t pid, uint64_t now);
/* Takes the turn from a holder that is dead or has been idle past `idle_ns`. */
uint64_t gs_board_steal(struct gs_board *b, int row, pid_t pid, uint64_t now, uint64_t idle_ns);

#endif
