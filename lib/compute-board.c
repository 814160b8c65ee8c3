/* The compute board's file: creating or mapping <dir>/gpus/<uuid>, and claiming a tenant's
 * row in it. The scheduling rules that read the rows are in compute-sched.c. */
#include "gs-compute.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gs-fs.h"

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

/* Another process may be between creating the file and writing its header: give it a
 * moment (at most a second) before calling the file bad. */
static int wait_header(struct gs_board *b, const char *path, gs_error_t *err)
{
  const struct timespec pause = { 0, 1000000 };
  for (int i = 0; i < 1000 && __atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) == 0; i++)
    nanosleep(&pause, NULL);
  if (__atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) != GS_BOARD_MAGIC)
    return gs_make_error(err, 0, "'%s' is not a gpuslice compute board", path);
  if (b->version != GS_BOARD_VERSION || b->size != sizeof(*b))
    return gs_make_error(err, 0, "'%s' has board version %u (size %u); this gpuslice reads version %d (size %zu)",
                         path, b->version, b->size, GS_BOARD_VERSION, sizeof(*b));
  return 0;
}

static int open_file(const char *path, bool *created, gs_error_t *err)
{
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  *created = fd >= 0;
  if (fd < 0 && errno == EEXIST)
    fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return gs_make_error(err, errno, "open compute board '%s'", path);
  if (*created && ftruncate(fd, sizeof(struct gs_board)) < 0) {
    int e = errno;
    close(fd);
    unlink(path);
    return gs_make_error(err, e, "size '%s'", path);
  }
  return fd;
}

/* A file just made by another process may not have its size yet. */
static int check_size(int fd, const char *path, gs_error_t *err)
{
  const struct timespec pause = { 0, 1000000 };
  struct stat st;
  for (int i = 0; i < 1000; i++) {
    if (fstat(fd, &st) < 0)
      return gs_make_error(err, errno, "stat '%s'", path);
    if ((size_t) st.st_size == sizeof(struct gs_board))
      return 0;
    if (st.st_size != 0)
      break;
    nanosleep(&pause, NULL);
  }
  return gs_make_error(err, 0, "'%s' has size %lld, not that of a version %d board (%zu)", path,
                       (long long) st.st_size, GS_BOARD_VERSION, sizeof(struct gs_board));
}

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
  int fd = open_file(path, &created, err);
  if (fd < 0)
    return -1;
  if (!created && check_size(fd, path, err) < 0) {
    close(fd);
    return -1;
  }
  struct gs_board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (b == MAP_FAILED)
    return gs_make_error(err, e, "map '%s'", path);
  if (created)
    board_init(b, uuid);
  else if (wait_header(b, path, err) < 0) {
    munmap(b, sizeof(*b));
    return -1;
  }
  *out = b;
  return 0;
}

void gs_board_close(struct gs_board *b)
{
  if (b)
    munmap(b, sizeof(*b));
}

static void row_set_limits(struct gs_board_row *r, uint32_t weight_ppm, uint32_t policy, uint32_t priority)
{
  atomic_store(&r->weight_ppm, weight_ppm);
  atomic_store(&r->policy, policy);
  atomic_store(&r->priority, priority);
}

static int row_find(struct gs_board *b, const char *tenant)
{
  for (int i = 0; i < GS_BOARD_ROWS; i++)
    if (atomic_load(&b->row[i].state) == GS_ROW_LIVE && strncmp(b->row[i].tenant, tenant, GS_LEDGER_NAME_MAX) == 0)
      return i;
  return -1;
}

/* A row no process has used for a long time, and that does not hold the turn, is free. */
static bool row_takeable(struct gs_board *b, int i, uint32_t state, uint64_t now)
{
  if (state == GS_ROW_FREE)
    return true;
  uint64_t turn = atomic_load(&b->turn);
  struct gs_board_row *r = &b->row[i];
  uint64_t last = atomic_load(&r->active_ns) > atomic_load(&r->waiting_ns) ? atomic_load(&r->active_ns)
                                                                            : atomic_load(&r->waiting_ns);
  return state == GS_ROW_LIVE && now > last + GS_ROW_STALE_NS && !(turn && GS_TURN_ROW(turn) == i);
}

static int row_new(struct gs_board *b, const char *tenant, uint64_t now)
{
  for (int i = 0; i < GS_BOARD_ROWS; i++) {
    struct gs_board_row *r = &b->row[i];
    uint32_t state = atomic_load(&r->state);
    if (!row_takeable(b, i, state, now) || !atomic_compare_exchange_strong(&r->state, &state, GS_ROW_CLAIMING))
      continue;
    snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
    atomic_store(&r->vtime, 0);
    atomic_store(&r->used_ns, 0);
    atomic_store(&r->credit_ns, 0);
    atomic_store(&r->credit_at_ns, now);
    atomic_store(&r->waiting_ns, 0);
    atomic_store(&r->active_ns, now);
    atomic_store(&r->state, GS_ROW_LIVE);
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
  if (i >= 0)
    row_set_limits(&b->row[i], weight_ppm, policy, priority);
  return i;
}

uint64_t gs_board_slice_ns(const struct gs_board *b)
{
  uint32_t ms = atomic_load(&b->slice_ms);
  return (uint64_t) (ms ? ms : GS_BOARD_DEFAULT_SLICE_MS) * 1000000ull;
}
