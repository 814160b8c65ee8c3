/* The compute board's file: creating or mapping <dir>/gpus/<uuid> (through the mapper in
 * shm.c), claiming a tenant's row in it, and what GPUSLICE_BOARD_FULL says to do when no row
 * is free. The scheduling rules that read the rows are in compute-sched.c. */
#include <gpuslice/compute.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuslice/fs.h>
#include "compute-internal.h"
#include "shm.h"

static bool uuid_valid(const char *uuid)
{
  size_t n = strlen(uuid);
  if (n == 0 || n >= GS_BOARD_UUID_MAX || uuid[0] == '.')
    return false;
  for (const char *p = uuid; *p; p++)
    if (*p == '/')
      return false;
  return true;
}

static void board_init(struct gs_board *b, const char *uuid)
{
  b->version = GS_BOARD_VERSION;
  b->size = sizeof(*b);
  snprintf(b->uuid, sizeof(b->uuid), "%s", uuid);
  atomic_store(&b->slice_ms, GS_BOARD_DEFAULT_SLICE_MS);
  __atomic_store_n(&b->magic, GS_BOARD_MAGIC, __ATOMIC_RELEASE);
}

static const struct gs__shm_layout board_shm = {
  "compute board",
  GS_BOARD_MAGIC,
  GS_BOARD_VERSION,
  sizeof(struct gs_board),
};

int gs_board_open(const char *dir, const char *uuid, struct gs_board **out, gs_error_t *err)
{
  char gdir[4096], path[4096 + GS_BOARD_UUID_MAX];
  bool created;
  if (!uuid_valid(uuid))
    return gs_make_error(err, 0, "bad GPU UUID '%s' for a compute board", uuid);
  snprintf(gdir, sizeof(gdir), "%s/gpus", dir);
  snprintf(path, sizeof(path), "%s/%s", gdir, uuid);
  if (gs_mkdir_p(gdir, 0700, err) < 0)
    return -1;
  /* Every tenant of the GPU opens the board; whoever comes first makes it, and the others
   * wait for its header. */
  int flags = GS__SHM_CREATE | GS__SHM_WRITE | GS__SHM_WAIT;
  if (gs__shm_open(path, &board_shm, flags, (void **) out, &created, err) < 0)
    return -1;
  if (created)
    board_init(*out, uuid);
  return 0;
}

void gs_board_close(struct gs_board *b)
{
  gs__shm_close(b, &board_shm);
}

static void row_set_limits(struct gs_board_row *r, uint32_t weight_ppm, uint32_t policy,
                           uint32_t priority)
{
  atomic_store(&r->weight_ppm, weight_ppm);
  atomic_store(&r->policy, policy);
  atomic_store(&r->priority, priority);
}

int gs_board_rows(struct gs_board *b)
{
  uint32_t n = atomic_load_explicit(&b->rows_used, memory_order_acquire);
  return n < GS_BOARD_ROWS ? (int) n : GS_BOARD_ROWS;
}

/* Raised before the row goes live, so that a scan that sees the row live also reaches it. */
static void rows_used_raise(struct gs_board *b, int i)
{
  uint32_t n = atomic_load(&b->rows_used);
  while (n < (uint32_t) i + 1 && !atomic_compare_exchange_weak(&b->rows_used, &n, (uint32_t) i + 1))
    ;
}

static int row_find(struct gs_board *b, const char *tenant)
{
  for (int i = 0, rows = gs_board_rows(b); i < rows; i++)
    if (atomic_load(&b->row[i].state) == GS_ROW_LIVE &&
        strncmp(b->row[i].tenant, tenant, GS_LEDGER_NAME_MAX) == 0)
      return i;
  return -1;
}

/* A row no process has used for a long time, and that does not hold the turn, is free.
 * A newcomer looks at every row, the first free one wins: rows_used stays low. */
static bool row_takeable(struct gs_board *b, int i, uint32_t state, uint64_t now)
{
  if (state == GS_ROW_FREE)
    return true;
  return state == GS_ROW_LIVE && now > gs__row_seen(b, i) + GS_ROW_STALE_NS &&
    !gs__row_holding(b, i);
}

static int row_new(struct gs_board *b, const char *tenant, uint64_t now)
{
  for (int i = 0; i < GS_BOARD_ROWS; i++) {
    struct gs_board_row *r = &b->row[i];
    uint32_t state = atomic_load(&r->state);
    if (!row_takeable(b, i, state, now) ||
        !atomic_compare_exchange_strong(&r->state, &state, GS_ROW_CLAIMING))
      continue;
    rows_used_raise(b, i);
    snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
    atomic_store(&r->vtime, 0);
    atomic_store(&r->used_ns, 0);
    atomic_store(&r->credit_ns, 0);
    atomic_store(&r->credit_at_ns, now);
    atomic_store(&r->waiting_ns, 0);
    atomic_store(&r->active_ns, now);
    atomic_store(&r->state, GS_ROW_LIVE);
    gs_board_busy_mark(b, i);
    return i;
  }
  return -1;
}

int gs_board_row_claim(struct gs_board *b, const char *tenant, uint32_t weight_ppm, uint32_t policy,
                       uint32_t priority, uint64_t now)
{
  int i = row_find(b, tenant);
  if (i < 0)
    i = row_new(b, tenant, now);
  /* Two processes of one new tenant may both have claimed a row: the lower one wins. */
  int j = row_find(b, tenant);
  if (i >= 0 && j >= 0 && j != i) {
    atomic_store(&b->row[i].state, GS_ROW_FREE);
    i = j;
  }
  if (i >= 0) {
    row_set_limits(&b->row[i], weight_ppm, policy, priority);
    gs_board_gating_update(b, now, true);
  }
  return i;
}

int gs_board_row_release(struct gs_board *b, const char *tenant, uint64_t now)
{
  int i = row_find(b, tenant);
  uint32_t live = GS_ROW_LIVE;
  uint64_t turn = atomic_load(&b->turn);
  if (i >= 0 && turn && GS_TURN_ROW(turn) == i && gs_board_holder_gone(turn))
    gs_board_release(b, turn); /* its holder died holding it: handed back as it would have */
  if (i < 0 || gs__row_contending(b, i, now) ||
      !atomic_compare_exchange_strong(&b->row[i].state, &live, GS_ROW_FREE))
    return 0;
  gs_board_gating_update(b, now, true);
  return 1;
}

static uint64_t mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* A process killed in the middle of its work leaves its row looking busy for a little while
 * (launched within two turns, or waiting within GS_WAIT_FRESH_NS): the release is tried again
 * until that has passed. A process of the tenant that outlived the run keeps it busy, and the
 * row then stays, to go once it is stale. */
static void release_when_still(struct gs_board *b, const char *tenant, uint64_t now)
{
  const uint64_t until = now + 2 * gs_board_slice_ns(b) + GS_WAIT_FRESH_NS + 10000000ull;
  const struct timespec pause = { 0, 10000000L };
  while (!gs_board_row_release(b, tenant, now) && row_find(b, tenant) >= 0 && now < until) {
    nanosleep(&pause, NULL);
    now = mono_ns();
  }
}

void gs_boards_release_tenant(const char *dir, const char *tenant, uint64_t now)
{
  char gdir[4096];
  snprintf(gdir, sizeof(gdir), "%s/gpus", dir);
  DIR *d = opendir(gdir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d));) {
    struct gs_board *b = NULL;
    gs_error_t err = NULL;
    if (e->d_name[0] == '.')
      continue;
    if (gs_board_open(dir, e->d_name, &b, &err) < 0) {
      gs_error_release(&err);
      continue;
    }
    release_when_still(b, tenant, now);
    gs_board_close(b);
  }
  closedir(d);
}

uint64_t gs_board_slice_ns(const struct gs_board *b)
{
  uint32_t ms = atomic_load(&b->slice_ms);
  return (uint64_t) (ms ? ms : GS_BOARD_DEFAULT_SLICE_MS) * 1000000ull;
}

int gs_board_full_parse(const char *s, struct gs_board_full *out)
{
  char *end = NULL;
  *out = (struct gs_board_full){ GS_BOARD_FULL_WAIT, GS_BOARD_FULL_WAIT_S };
  if (!s || !*s || strcmp(s, "wait") == 0)
    return 0;
  if (strcmp(s, "refuse") == 0) {
    out->mode = GS_BOARD_FULL_REFUSE;
    return 0;
  }
  if (strncmp(s, "wait:", 5) != 0 || s[5] < '0' || s[5] > '9')
    return -1;
  unsigned long n = strtoul(s + 5, &end, 10);
  if (*end || n > GS_BOARD_FULL_WAIT_MAX_S)
    return -1;
  out->wait_s = (uint32_t) n;
  return 0;
}
