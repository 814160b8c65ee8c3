/* Reading and writing a tenant's ledger from outside the tenant, without mapping it: see
 * the second half of gs-ledger.h for why. The tenant's own processes map it (ledger.c). */
#include <gpuslice/tenant-ledger.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <gpuslice/fs.h>
#include <gpuslice/limits.h>
#include "ledger-internal.h"

/* All a reader reads: the header and the per-GPU part, everything before the process slots. */
#define HEAD_BYTES offsetof(struct gs_ledger, proc)

/* Room for the head. It is not a struct gs_ledger (it is far shorter), so its fields are
 * taken out by offset, each checked to be of the size of what it goes into. */
union ledger_head {
  struct gs__shm_header header;
  unsigned char bytes[HEAD_BYTES];
};

#define HEAD_GET(h, field, out)                                                                \
  do {                                                                                         \
    _Static_assert(sizeof(out) == sizeof(((struct gs_ledger *) 0)->field), "size of " #field); \
    memcpy(&(out), (h)->bytes + offsetof(struct gs_ledger, field), sizeof(out));               \
  } while (0)

int gs_ledger_read_open(const char *dir, const char *name, gs_error_t *err)
{
  char path[4096];
  if (gs__ledger_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  /* Without the access time, where allowed (the file's owner, or root, as the daemon is):
   * the tenants write the file through their mappings, so each sample's read would
   * otherwise update the inode. */
  int fd = gs_open_nofollow_but_proc_fd(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOATIME);
  if (fd < 0 && errno == EPERM)
    fd = gs_open_nofollow_but_proc_fd(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return gs_make_error(err, errno, "open tenant ledger '%s'", path);
  return fd;
}

/* A version-2 ledger: the same head and slots, without struct gs_ledger_resume at the end. */
static const struct gs__shm_layout ledger_v2 = {
  "tenant ledger",
  GS_LEDGER_MAGIC,
  2,
  GS_LEDGER_V2_SIZE,
};

/* A version-3 ledger: the same bytes as this version's, without thread slots. */
static const struct gs__shm_layout ledger_v3 = {
  "tenant ledger",
  GS_LEDGER_MAGIC,
  GS_LEDGER_V3,
  sizeof(struct gs_ledger),
};

static bool is_v2(const struct gs__shm_header *h)
{
  return h->version == ledger_v2.version && h->size == ledger_v2.size;
}

/* The layout of the ledger whose header is h, of those a reader outside the tenant reads. */
static const struct gs__shm_layout *layout_of(const struct gs__shm_header *h)
{
  if (is_v2(h))
    return &ledger_v2;
  return h->version == GS_LEDGER_V3 ? &ledger_v3 : &gs__ledger_shm;
}

/* Whether fd is a regular file owned by uid (any owner for (uid_t) -1); its owner in *owner. */
static int check_file(int fd, const char *what, uid_t uid, uid_t *owner, gs_error_t *err)
{
  struct stat st;
  if (fstat(fd, &st) < 0)
    return gs_make_error(err, errno, "stat '%s'", what);
  if (!S_ISREG(st.st_mode))
    return gs_make_error(err, 0, "'%s' is not a regular file", what);
  if (uid != (uid_t) -1 && st.st_uid != uid)
    return gs_make_error(err, EPERM, "'%s' belongs to uid %u", what, (unsigned) st.st_uid);
  *owner = st.st_uid;
  return 0;
}

static int read_head(int fd, const char *what, union ledger_head *h, gs_error_t *err)
{
  ssize_t n = pread(fd, h->bytes, HEAD_BYTES, 0);
  if (n < 0)
    return gs_make_error(err, errno, "read '%s'", what);
  if ((size_t) n != HEAD_BYTES)
    return gs_make_error(err, 0, "'%s' is too short for a tenant ledger", what);
  return gs__shm_check(&h->header, layout_of(&h->header), what, err);
}

static void copy_gpu(struct gs_ledger_copy_gpu *c, const union ledger_head *h, int g)
{
  HEAD_GET(h, gpu[g].limit_bytes, c->limit_bytes);
  HEAD_GET(h, gpu[g].limit_ppm, c->limit_ppm);
  HEAD_GET(h, gpu[g].used_bytes, c->used_bytes);
  HEAD_GET(h, gpu[g].peak_bytes, c->peak_bytes);
  HEAD_GET(h, gpu[g].gpu_ns, c->gpu_ns);
  HEAD_GET(h, gpu[g].throttled_ns, c->throttled_ns);
  HEAD_GET(h, gpu[g].share_ppm, c->share_ppm);
}

/* How many slots from the first may be in use, from the ledger's slots_used word (the tenant's
 * word, as the slots are): all of them in a ledger that keeps no count. */
static uint32_t slots_count(uint32_t used)
{
  if (!(used & GS_SLOTS_KNOWN))
    return GS_LEDGER_MAX_PROCS;
  used &= ~GS_SLOTS_KNOWN;
  return used < GS_LEDGER_MAX_PROCS ? used : GS_LEDGER_MAX_PROCS;
}

/* The head's fields into plain ones; the strings end within their fields whatever the file held. */
static void copy_head(struct gs_ledger_copy *c, const union ledger_head *h)
{
  uint32_t used;
  HEAD_GET(h, slots_used, used);
  c->slots_used = slots_count(used);
  HEAD_GET(h, name, c->name);
  HEAD_GET(h, labels, c->labels);
  c->name[sizeof(c->name) - 1] = '\0';
  c->labels[sizeof(c->labels) - 1] = '\0';
  HEAD_GET(h, owner_pid, c->owner_pid);
  HEAD_GET(h, owner_start_time, c->owner_start_time);
  HEAD_GET(h, created_unix_ns, c->created_unix_ns);
  HEAD_GET(h, context_reserve_bytes, c->context_reserve_bytes);
  HEAD_GET(h, compute.limit_ppm, c->compute.limit_ppm);
  HEAD_GET(h, compute.policy, c->compute.policy);
  HEAD_GET(h, compute.priority, c->compute.priority);
  HEAD_GET(h, compute.slice_ms, c->compute.slice_ms);
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    copy_gpu(&c->gpu[g], h, g);
}

/* The head h, read, into *out, then with `resume` the resume block, read with one pread
 * (else out->resume is zero). */
static int take_head(int fd, const char *what, const union ledger_head *h, bool resume,
                     struct gs_ledger_copy *out, gs_error_t *err)
{
  copy_head(out, h);
  out->version = h->header.version;
  memset(&out->resume, 0, sizeof(out->resume));
  if (resume && !is_v2(&h->header) && gs_ledger_read_resume(fd, &out->resume) < 0)
    return gs_make_error(err, 0, "'%s' is too short for a tenant ledger", what);
  return 0;
}

/* The head, then the resume block: two preads. */
static int read_both(int fd, const char *what, struct gs_ledger_copy *out, gs_error_t *err)
{
  union ledger_head h;
  if (read_head(fd, what, &h, err) < 0)
    return -1;
  return take_head(fd, what, &h, true, out, err);
}

int gs_ledger_read_fd(int fd, const char *what, uid_t uid, struct gs_ledger_copy *out,
                      gs_error_t *err)
{
  uid_t owner;
  if (check_file(fd, what, uid, &owner, err) < 0 || read_both(fd, what, out, err) < 0)
    return -1;
  out->owner_uid = owner;
  return 0;
}

int gs_ledger_read_resume(int fd, struct gs_ledger_resume_copy *out)
{
  uint64_t w[4];
  _Static_assert(sizeof(w) == sizeof(struct gs_ledger_resume), "four counters");
  if (pread(fd, w, sizeof(w), (off_t) offsetof(struct gs_ledger, resume)) != (ssize_t) sizeof(w))
    return -1;
  out->requests = w[0];
  out->waits = w[1];
  out->wait_ns_total = w[2];
  out->last_wait_ns = w[3];
  return 0;
}

int gs_ledger_read_copy(const char *dir, const char *name, uid_t uid, struct gs_ledger_copy *out,
                        gs_error_t *err)
{
  char path[4096];
  if (gs__ledger_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  int fd = gs_ledger_read_open(dir, name, err);
  if (fd < 0)
    return -1;
  int rc = gs_ledger_read_fd(fd, path, uid, out, err);
  close(fd);
  return rc;
}

/* A slot's identity from its bytes, taken by offset as the head's fields are. */
static void slot_identity(const unsigned char *slot, uint32_t *state, struct gs_ledger_pid *id)
{
  int32_t pid;
  memcpy(state, slot + offsetof(struct gs_ledger_proc, state), sizeof(*state));
  memcpy(&pid, slot + offsetof(struct gs_ledger_proc, pid), sizeof(pid));
  memcpy(&id->start_time, slot + offsetof(struct gs_ledger_proc, start_time),
         sizeof(id->start_time));
  id->pid = pid;
}

/* How many slots from the first may be in use, as the ledger on fd keeps count. */
static uint32_t slots_in_use(int fd)
{
  uint32_t used = 0;
  if (pread(fd, &used, sizeof(used), (off_t) offsetof(struct gs_ledger, slots_used)) !=
      (ssize_t) sizeof(used))
    return GS_LEDGER_MAX_PROCS;
  return slots_count(used);
}

int gs_ledger_read_procs(int fd, struct gs_ledger_pid *out, int max, gs_error_t *err)
{
  return gs_ledger_read_procs_in(fd, slots_in_use(fd), out, max, err);
}

/* The live slots' processes among the `len` bytes of slots at `slots`, into out (up to max);
 * how many. */
static int parse_procs(const unsigned char *slots, size_t len, struct gs_ledger_pid *out, int max)
{
  int n = 0;
  for (size_t i = 0; i + sizeof(struct gs_ledger_proc) <= len && n < max;
       i += sizeof(struct gs_ledger_proc)) {
    uint32_t state;
    slot_identity(slots + i, &state, &out[n]);
    n += state == GS_SLOT_LIVE && out[n].pid > 0;
  }
  return n;
}

static size_t slots_bytes(uint32_t count)
{
  return sizeof(struct gs_ledger_proc) *
    (count < GS_LEDGER_MAX_PROCS ? count : GS_LEDGER_MAX_PROCS);
}

/* The processes of the live slots from slot `first` to slot `count`, with one pread. */
static int read_procs_from(int fd, uint32_t first, uint32_t count, struct gs_ledger_pid *out,
                           int max, gs_error_t *err)
{
  const size_t skip = slots_bytes(first), len = slots_bytes(count) - skip;
  if (skip >= slots_bytes(count) || max <= 0)
    return 0;
  unsigned char *slots = malloc(len);
  if (!slots)
    return gs_make_error(err, ENOMEM, "read process slots");
  ssize_t got = pread(fd, slots, len, (off_t) (offsetof(struct gs_ledger, proc) + skip));
  int e = errno;
  int n = got < 0 ? 0 : parse_procs(slots, (size_t) got, out, max);
  free(slots);
  return got < 0 ? gs_make_error(err, e, "read process slots") : n;
}

int gs_ledger_read_procs_in(int fd, uint32_t count, struct gs_ledger_pid *out, int max,
                            gs_error_t *err)
{
  return read_procs_from(fd, 0, count, out, max, err);
}

/* The head and the first `want` slots in one preadv (the slots follow the head in the file);
 * how many slots came in *got. */
static int read_head_and_slots(int fd, const char *what, union ledger_head *h, unsigned char *slots,
                               uint32_t want, uint32_t *got, gs_error_t *err)
{
  struct iovec iov[2] = { { h->bytes, HEAD_BYTES }, { slots, slots_bytes(want) } };
  ssize_t n = preadv(fd, iov, want ? 2 : 1, 0);
  if (n < 0)
    return gs_make_error(err, errno, "read '%s'", what);
  if ((size_t) n < HEAD_BYTES)
    return gs_make_error(err, 0, "'%s' is too short for a tenant ledger", what);
  *got = (uint32_t) (((size_t) n - HEAD_BYTES) / sizeof(struct gs_ledger_proc));
  return gs__shm_check(&h->header, layout_of(&h->header), what, err);
}

int gs_ledger_read_kept_procs(int fd, const char *what, uint32_t want, bool resume,
                              struct gs_ledger_copy *out, struct gs_ledger_pid *procs, int max,
                              gs_error_t *err)
{
  union ledger_head h;
  uint32_t got = 0;
  unsigned char *slots = want ? malloc(slots_bytes(want)) : NULL;
  if (want && !slots)
    return gs_make_error(err, ENOMEM, "read process slots");
  if (read_head_and_slots(fd, what, &h, slots, want, &got, err) < 0 ||
      take_head(fd, what, &h, resume, out, err) < 0) {
    free(slots);
    return -1;
  }
  out->owner_uid = (uid_t) -1;
  uint32_t known = got < out->slots_used ? got : out->slots_used;
  int n = parse_procs(slots, slots_bytes(known), procs, max);
  free(slots);
  int rest = read_procs_from(fd, known, out->slots_used, procs + n, max - n, NULL);
  return rest > 0 ? n + rest : n;
}

static int put(int fd, size_t off, const void *v, size_t len, const char *path, gs_error_t *err)
{
  if (pwrite(fd, v, len, (off_t) off) != (ssize_t) len)
    return gs_make_error(err, errno, "write limits into '%s'", path);
  return 0;
}

static int put32(int fd, size_t off, uint32_t v, const char *path, gs_error_t *err)
{
  return put(fd, off, &v, sizeof(v), path, err);
}

static int put64(int fd, size_t off, uint64_t v, const char *path, gs_error_t *err)
{
  return put(fd, off, &v, sizeof(v), path, err);
}

/* Each field is one aligned pwrite, which the tenant's processes see as one store. */
static int put_limits(int fd, const struct gs_limits *lim, const char *path, gs_error_t *err)
{
  int rc = 0;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS && rc == 0; g++) {
    /* The percentage goes first, so that no reader resolves it over the new byte figure. */
    rc = put32(fd, offsetof(struct gs_ledger, gpu[g].limit_ppm), 0, path, err);
    if (rc == 0)
      rc = put64(fd, offsetof(struct gs_ledger, gpu[g].limit_bytes),
                 atomic_load(&lim->limit_bytes[g]), path, err);
  }
  if (rc == 0)
    rc = put32(fd, offsetof(struct gs_ledger, compute.limit_ppm),
               atomic_load(&lim->compute.limit_ppm), path, err);
  if (rc == 0)
    rc = put32(fd, offsetof(struct gs_ledger, compute.policy), atomic_load(&lim->compute.policy),
               path, err);
  if (rc == 0)
    rc = put32(fd, offsetof(struct gs_ledger, compute.priority),
               atomic_load(&lim->compute.priority), path, err);
  return rc;
}

int gs_ledger_write_limits(const char *dir, const char *name, uid_t uid, uint64_t created_unix_ns,
                           const struct gs_limits *lim, gs_error_t *err)
{
  char path[4096];
  union ledger_head h;
  uid_t owner;
  if (gs__ledger_path(path, sizeof(path), dir, name, err) < 0)
    return -1;
  int fd = gs_open_nofollow_but_proc_fd(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return gs_make_error(err, errno, "open tenant ledger '%s'", path);
  uint64_t created = 0;
  int rc = check_file(fd, path, uid, &owner, err);
  if (rc == 0)
    rc = read_head(fd, path, &h, err);
  if (rc == 0)
    HEAD_GET(&h, created_unix_ns, created);
  if (rc == 0 && created != created_unix_ns)
    rc = gs_make_error(err, 0, "'%s' is another instance of tenant '%s'", path, name);
  if (rc == 0)
    rc = put_limits(fd, lim, path, err);
  close(fd);
  return rc;
}

int gs_ledger_hold(const char *dir, const struct gs_ledger *l)
{
  struct gs_ledger_copy c;
  int fd = gs_ledger_read_open(dir, l->name, NULL);
  if (fd >= 0 &&
      (gs_ledger_read_fd(fd, l->name, geteuid(), &c, NULL) < 0 ||
       c.created_unix_ns != l->created_unix_ns)) {
    close(fd);
    fd = -1;
  }
  return fd;
}
