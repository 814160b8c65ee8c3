/* The tenant registry: the tenants the daemon knows, each with the limits file that makes
 * the daemon the authority for its limits (include/gpuslice/limits.h).
 *
 * A tenant comes in three ways: `gpuslice run` registers it (POST /v1/tenants); a restarted
 * daemon finds the limits files it left and adopts their tenants, limits unchanged; or the
 * daemon finds a live ledger in its state dir that nobody registered (started while it was
 * down) and adopts it with the ledger's own limits. It goes when its owner ends (DELETE) or
 * is found dead. Usage accounting for it lives in sampler.c and usage-db.c. */
#include "daemon.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The limits files' group: admins read them; a daemon without such a group keeps its own. */
static gid_t limits_gid(const char *admin_group)
{
  struct group gr, *g = NULL;
  char buf[4096];
  if (admin_group && *admin_group && getgrnam_r(admin_group, &gr, buf, sizeof(buf), &g) == 0 && g)
    return g->gr_gid;
  return getegid();
}

void registry_init(struct registry *r, const char *state_dir, const char *admin_group)
{
  memset(r, 0, sizeof(*r));
  r->state_dir = state_dir;
  r->limits_gid = limits_gid(admin_group);
}

static void tenant_free(struct tenant *t)
{
  gs_limits_close(t->limits);
  if (t->limits_prev)
    gs_limits_close(t->limits_prev);
  if (t->ledger_fd >= 0)
    close(t->ledger_fd);
  tenant_forget_procs(t);
  free(t);
}

void registry_release(struct registry *r)
{
  for (int i = 0; i < r->n; i++)
    tenant_free(r->v[i]);
  free(r->v);
  memset(r, 0, sizeof(*r));
}

struct tenant *registry_find(struct registry *r, const char *name)
{
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->v[i]->name, name) == 0)
      return r->v[i];
  return NULL;
}

static void append(struct registry *r, struct tenant *t)
{
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 16;
    r->v = xrealloc(r->v, (size_t) r->cap * sizeof(*r->v));
  }
  r->v[r->n++] = t;
  r->changed = true;
}

static void user_name(uid_t uid, char *buf, size_t len)
{
  struct passwd pw, *res = NULL;
  char tmp[1024];
  if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
    snprintf(buf, len, "%s", pw.pw_name);
  else
    snprintf(buf, len, "%u", (unsigned) uid);
}

/* A new tenant from its ledger: identity and labels. */
static struct tenant *tenant_new(const struct gs_ledger_copy *l, const char *dir)
{
  struct tenant *t = xcalloc(1, sizeof(*t));
  snprintf(t->name, sizeof(t->name), "%s", l->name);
  t->uid = l->owner_uid;
  user_name(t->uid, t->user, sizeof(t->user));
  t->owner_pid = l->owner_pid;
  t->owner_start_time = l->owner_start_time;
  t->created_unix_ns = l->created_unix_ns;
  snprintf(t->ledger_dir, sizeof(t->ledger_dir), "%s", dir);
  snprintf(t->labels, sizeof(t->labels), "%s", l->labels);
  t->exit_status = -1;
  t->ledger_fd = -1;
  t->owner.pidfd = -1;
  return t;
}

static uint64_t gpu_total(int g, const uint64_t *totals, int ngpus)
{
  return g < ngpus ? totals[g] : 0;
}

/* The limits file's first contents: the identity of t, with the limits req asks for, or the
 * ledger's own when req is NULL. */
static void limits_fill(struct gs_limits *lim, const struct tenant *t,
                        const struct gs_ledger_copy *l, const struct tenant_request *req,
                        const uint64_t *totals, int ngpus)
{
  gs_limits_init(lim, l, t->ledger_dir, t->labels);
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    uint64_t bytes = req ? req->limit_bytes[g] : l->gpu[g].limit_bytes;
    uint32_t ppm = req ? req->limit_ppm[g] : l->gpu[g].limit_ppm;
    gs_limits_set_vram(lim, g, bytes, ppm, gpu_total(g, totals, ngpus));
  }
  if (req) {
    struct gs_compute_limits c = { atomic_load(&req->compute.limit_ppm),
                                   atomic_load(&req->compute.policy),
                                   atomic_load(&req->compute.priority),
                                   atomic_load(&req->compute.slice_ms) };
    gs_limits_set_compute(lim, &c.limit_ppm, &c.policy, &c.priority, &c.slice_ms);
  }
}

static int tenant_write_limits(struct registry *r, struct tenant *t, const struct gs_limits *init,
                               gs_error_t *err)
{
  if (gs_limits_create(r->state_dir, init, r->limits_gid, &t->limits, err) < 0)
    return -1;
  tenant_mirror_limits(t);
  return 0;
}

/* A held tenant's ledger, made by the daemon in dir when it is not there yet, with the limits
 * and labels req asks for (the interposer reads them until it finds the limits file). */
static int held_ledger(const struct tenant_request *req, const char *dir, gs_error_t *err)
{
  struct gs_ledger_spec spec = { .name = req->name, .labels = req->labels };
  struct gs_ledger *l = NULL;
  if (gs_ledger_read_copy(dir, req->name, (uid_t) -1, &(struct gs_ledger_copy){ 0 }, NULL) == 0)
    return 0;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    spec.limit_bytes[g] = req->limit_bytes[g];
    spec.limit_ppm[g] = req->limit_ppm[g];
  }
  spec.compute_ppm = atomic_load(&req->compute.limit_ppm);
  spec.compute_policy = atomic_load(&req->compute.policy);
  spec.priority = atomic_load(&req->compute.priority);
  if (gs_ledger_state_dir_make(dir, err) < 0 || gs_ledger_create(dir, &spec, &l, err) < 0)
    return -1;
  gs_ledger_detach(l);
  return 0;
}

struct tenant *registry_add(struct registry *r, const struct tenant_request *req, uid_t caller,
                            bool admin, const uint64_t *gpu_totals, int ngpus, int *status,
                            gs_error_t *err)
{
  struct gs_ledger_copy l;
  struct gs_limits init;
  const char *dir = req->ledger_dir ? req->ledger_dir : r->state_dir;
  (void) admin;

  *status = 500;
  if (req->held && held_ledger(req, dir, err) < 0)
    return NULL;
  *status = 404;
  /* Only root may register a ledger that is not the caller's own. */
  if (gs_ledger_read_copy(dir, req->name, caller == 0 ? (uid_t) -1 : caller, &l, err) < 0)
    return NULL;
  *status = 409;
  if (!req->held && !gs_proc_alive(l.owner_pid, l.owner_start_time)) {
    gs_make_error(err, 0, "tenant '%s' has ended", req->name);
    return NULL;
  }
  struct tenant *t = tenant_new(&l, dir);
  if (req->labels)
    snprintf(t->labels, sizeof(t->labels), "%s", req->labels);
  *status = 400;
  if (gs_labels_check_utf8(t->labels, err) < 0) {
    tenant_free(t);
    return NULL;
  }
  limits_fill(&init, t, &l, req->limits_given ? req : NULL, gpu_totals, ngpus);
  t->held = req->held;
  init.flags = req->held ? GS_LIMITS_HELD : 0;
  *status = 500;
  if (tenant_write_limits(r, t, &init, err) < 0) {
    tenant_free(t);
    return NULL;
  }
  t->sus.known = true; /* registered now: no earlier daemon left it suspended */
  append(r, t);
  *status = 201;
  return t;
}

bool registry_same_tenant(struct registry *r, const struct tenant *t,
                          const struct tenant_request *req)
{
  struct gs_ledger_copy l;
  const char *dir = req->ledger_dir ? req->ledger_dir : r->state_dir;
  return strcmp(dir, t->ledger_dir) == 0 &&
    gs_ledger_read_copy(dir, req->name, t->uid, &l, NULL) == 0 &&
    l.created_unix_ns == t->created_unix_ns;
}

void registry_remove(struct registry *r, struct tenant *t)
{
  gs_error_t err = NULL;
  for (int i = 0; i < r->n; i++) {
    if (r->v[i] != t)
      continue;
    memmove(&r->v[i], &r->v[i + 1], (size_t) (r->n - i - 1) * sizeof(*r->v));
    r->n--;
    r->changed = true;
    break;
  }
  if (gs_limits_remove(r->state_dir, t->name, &err) < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  /* The daemon made a held tenant's ledger: it goes with the tenant. */
  if (t->held && gs_ledger_remove(t->ledger_dir, t->name, &err) < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': %s", t->name, err->msg);
    gs_error_release(&err);
  }
  tenant_free(t);
}

/* A limits file of version 2, left by a daemon before the compute ceiling, is extended in
 * place to this version (gs_limits_upgrade); a file of any other version is not adopted. */
static void upgrade_limits_file(struct registry *r, const char *name)
{
  gs_error_t err = NULL;
  int rc = gs_limits_upgrade(r->state_dir, name, &err);
  if (rc < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': %s", name, err->msg);
    gs_error_release(&err);
  } else if (rc > 0) {
    GS_LOG(GS_LOG_INFO,
           "tenant '%s': limits file upgraded in place to version %d (from version 2, its "
           "compute limits become a ceiling)",
           name, GS_LIMITS_VERSION);
  }
}

/* A limits file left by an earlier run of the daemon: its tenant comes back with the limits
 * the file holds, or the file goes when the tenant has ended. Returns 1 when adopted, 0 when
 * not, -1 when it could not tell (scan). */
static int adopt_limits_file(struct registry *r, const char *name)
{
  struct gs_limits *lim = NULL;
  struct gs_ledger_copy l;
  gs_error_t err = NULL;
  if (registry_find(r, name))
    return 0;
  upgrade_limits_file(r, name);
  if (gs_limits_open(r->state_dir, name, true, &lim, &err) < 0) {
    gs_error_release(&err);
    return -1;
  }
  bool held = lim->flags & GS_LIMITS_HELD;
  bool live = gs_ledger_read_copy(lim->ledger_dir, name, lim->uid, &l, &err) == 0 &&
    l.created_unix_ns == lim->ledger_created_unix_ns &&
    (held || gs_proc_alive(lim->owner_pid, lim->owner_start_time));
  gs_error_release(&err);
  if (!live) {
    gs_limits_close(lim);
    gs_limits_remove(r->state_dir, name, NULL);
    return 0;
  }
  struct tenant *t = tenant_new(&l, lim->ledger_dir);
  snprintf(t->labels, sizeof(t->labels), "%s", lim->labels);
  t->limits = lim;
  t->held = held;
  append(r, t);
  GS_LOG(GS_LOG_INFO, "tenant '%s': adopted again with its limits", name);
  return 1;
}

/* A live ledger in the state dir that the daemon does not know: 1 adopted, 0 not, -1 when it
 * could not tell. */
static int adopt_ledger(struct registry *r, const char *name, const uint64_t *totals, int ngpus)
{
  struct gs_ledger_copy l;
  struct gs_limits init;
  gs_error_t err = NULL;
  if (registry_find(r, name))
    return 0;
  if (gs_ledger_read_copy(r->state_dir, name, (uid_t) -1, &l, &err) < 0) {
    gs_error_release(&err);
    return -1; /* perhaps not written yet */
  }
  if (!gs_proc_alive(l.owner_pid, l.owner_start_time))
    return 0;
  struct tenant *t = tenant_new(&l, r->state_dir);
  /* Nobody to refuse: keep the label, visible and counted, with '?' for its bad bytes. */
  if (gs_scrub_utf8(t->labels, '?'))
    GS_LOG(GS_LOG_WARN, "tenant '%s': labels not valid UTF-8; adopted with '?' for the bad bytes",
           name);
  limits_fill(&init, t, &l, NULL, totals, ngpus);
  if (tenant_write_limits(r, t, &init, &err) < 0) {
    GS_LOG(GS_LOG_WARN, "tenant '%s': %s", name, err->msg);
    gs_error_release(&err);
    tenant_free(t);
    return -1;
  }
  append(r, t);
  GS_LOG(GS_LOG_INFO, "tenant '%s': adopted from its ledger", name);
  return 1;
}

/* True when the directory st is has not changed since m's scan, which left nothing undecided:
 * then reading it again finds nothing new. Every tenth time it is read again whatever. */
static bool scan_unchanged(struct registry_scan *m, const struct stat *st)
{
  return m->valid && m->dev == st->st_dev && m->ino == st->st_ino &&
    m->mtime.tv_sec == st->st_mtim.tv_sec && m->mtime.tv_nsec == st->st_mtim.tv_nsec &&
    ++m->skipped % 10 != 0;
}

/* After a scan that left nothing undecided: remembers the directory as it was before the
 * read, unless it changed in the last second (file times come from a coarse clock, so a change
 * just after the read could leave the same mtime). */
static void scan_mark(struct registry_scan *m, const struct stat *st, bool decided)
{
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  *m = (struct registry_scan){ .dev = st->st_dev, .ino = st->st_ino, .mtime = st->st_mtim };
  m->valid = decided && st->st_mtim.tv_sec + 1 < now.tv_sec;
}

static int scan(struct registry *r, struct registry_scan *m, const char *sub,
                int (*fn)(struct registry *, const char *, const uint64_t *, int),
                const uint64_t *totals, int ngpus)
{
  char path[4096];
  struct stat st;
  int n = 0;
  bool decided = true;
  snprintf(path, sizeof(path), "%s/%s", r->state_dir, sub);
  if (stat(path, &st) < 0) {
    m->valid = false;
    return 0;
  }
  if (scan_unchanged(m, &st))
    return 0;
  DIR *d = opendir(path);
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || !gs_ledger_name_valid(e->d_name))
      continue;
    int rc = fn(r, e->d_name, totals, ngpus);
    n += rc > 0;
    decided &= rc >= 0;
  }
  closedir(d);
  scan_mark(m, &st, decided);
  return n;
}

static int adopt_limits_file_fn(struct registry *r, const char *name, const uint64_t *totals,
                                int ngpus)
{
  (void) totals;
  (void) ngpus;
  return adopt_limits_file(r, name);
}

int registry_adopt(struct registry *r, const uint64_t *gpu_totals, int ngpus)
{
  if (r->changed) /* a tenant gone may leave a ledger to adopt again */
    r->scanned[0].valid = r->scanned[1].valid = false;
  r->changed = false;
  int n = scan(r, &r->scanned[0], "limits", adopt_limits_file_fn, gpu_totals, ngpus) +
    scan(r, &r->scanned[1], "tenants", adopt_ledger, gpu_totals, ngpus);
  r->changed = false; /* its own adoptions are known */
  return n;
}

static void limits_changed(struct tenant *t)
{
  gs_limits_changed(t->limits);
  if (t->limits_prev)
    gs_limits_mirror(t->limits_prev, t->limits);
  tenant_mirror_limits(t);
}

void registry_set_vram(struct tenant *t, int gpu, uint64_t bytes, uint32_t ppm,
                       const uint64_t *gpu_totals, int ngpus)
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    if (gpu >= 0 && g != gpu)
      continue;
    gs_limits_set_vram(t->limits, g, bytes, ppm, gpu_total(g, gpu_totals, ngpus));
  }
  limits_changed(t);
}

int registry_vram_above_ceiling(const struct tenant *t, int gpu, uint64_t bytes, uint32_t ppm,
                                const uint64_t *gpu_totals, int ngpus)
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    uint64_t ceiling = atomic_load(&t->limits->ceiling_bytes[g]);
    if ((gpu >= 0 && g != gpu) || ceiling == GS_LIMIT_NONE)
      continue;
    /* Lifting the limit (GS_LIMIT_NONE) is the highest raise of all. */
    if (gs_limit_resolve(bytes, ppm, gpu_total(g, gpu_totals, ngpus)) > ceiling)
      return g;
  }
  return -1;
}

void registry_set_ceiling(struct tenant *t, int gpu)
{
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++)
    if (gpu < 0 || g == gpu)
      gs_limits_set_ceiling(t->limits, g);
  gs_limits_changed(t->limits);
}

unsigned registry_compute_above_ceiling(const struct tenant *t, const uint32_t *ppm,
                                        const uint32_t *policy, const uint32_t *priority)
{
  const struct gs_limits *lim = t->limits;
  struct gs_compute_limits ceiling = { atomic_load(&lim->ceiling_compute_ppm),
                                       atomic_load(&lim->ceiling_policy),
                                       atomic_load(&lim->ceiling_priority), 0 };
  struct gs_compute_limits want = { ppm ? *ppm : 0, policy ? *policy : 0, priority ? *priority : 0,
                                    0 };
  unsigned has = (ppm ? GS_COMPUTE_FIELD_PPM : 0) | (policy ? GS_COMPUTE_FIELD_POLICY : 0) |
    (priority ? GS_COMPUTE_FIELD_PRIORITY : 0);
  return gs_compute_above_ceiling(&ceiling, &want, has);
}

void registry_set_compute_ceiling(struct tenant *t)
{
  gs_limits_set_compute_ceiling(t->limits);
  gs_limits_changed(t->limits);
}

void registry_set_compute(struct tenant *t, const uint32_t *ppm, const uint32_t *policy,
                          const uint32_t *priority)
{
  gs_limits_set_compute(t->limits, ppm, policy, priority, NULL);
  limits_changed(t);
}

void registry_set_labels(struct tenant *t, const char *labels)
{
  snprintf(t->labels, sizeof(t->labels), "%s", labels);
  /* Only the daemon reads the limits file's labels (to adopt the tenant again). */
  snprintf(t->limits->labels, sizeof(t->limits->labels), "%s", labels);
}

/* Reads the tenant's ledger into t->gpu; false when the tenant has ended: its owner has, and
 * so have the processes the daemon saw in its slots. */
static bool tenant_sample(struct tenant *t)
{
  struct gs_ledger_copy l;
  _cleanup_free_ struct gs_ledger_pid *v = xmalloc(GS_LEDGER_MAX_PROCS * sizeof(*v));
  struct ledger_procs procs = { v, 0 };
  bool owner = tenant_owner_alive(t);
  bool read = tenant_reread(t, &l, &procs) == 0 && l.created_unix_ns == t->created_unix_ns;
  if (read)
    tenant_track_procs(t, &procs);
  if (!(owner && read) && tenant_live_procs(t, 0) == 0)
    return false;
  if (!read)
    return true; /* an unreadable ledger keeps its last reading while its processes run */
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    struct tenant_gpu *tg = &t->gpu[g];
    tg->used_bytes = l.gpu[g].used_bytes;
    tg->peak_bytes = l.gpu[g].peak_bytes;
    tg->gate_ns = l.gpu[g].gpu_ns;
    tg->throttled_ns = l.gpu[g].throttled_ns;
    tg->share_ppm = l.gpu[g].share_ppm;
  }
  t->sampled = true;
  return true;
}

void registry_sample_one(struct tenant *t)
{
  proc_watch_collect();
  tenant_sample(t);
}

void registry_sample(struct registry *r)
{
  proc_watch_collect(); /* which owners ended, for all the tenants at once */
  for (int i = 0; i < r->n; i++)
    if (!r->v[i]->exited && !tenant_sample(r->v[i]))
      r->v[i]->exited = true;
}
