/* MIG on the simulated GPU: the rules of MIG mode and of GPU and compute instances, over the
 * shared state (sim-mig-state.h). See sim-mig.h for what each call refuses, and
 * sim/README.md for how faithful it is.
 *
 * A GPU instance's id is the node of the binary tree over the 8 memory slices that its
 * placement covers (0 the whole GPU, 1-2 the halves, 3-6 the quarters, 7-14 the eighths), so
 * ids are unique among instances that do not overlap and repeat for the same placement, as
 * the real driver's do. Compute instance ids are the lowest free, from 0. */
#include "sim-mig.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct gpusim_shared *S(void)
{
  return gpusim_state(NULL);
}

static struct gpusim_mig *mig(int d)
{
  return &S()->mig[d];
}

/* ---- who uses what ---- */

/* Whether process slot i has a context or memory on device d. */
static bool slot_uses(const struct gpusim_shared *s, int i, int d)
{
  const struct gpusim_proc *p = &s->proc[i];
  if (atomic_load(&p->state) != GPUSIM_SLOT_LIVE || p->pid == getpid())
    return false;
  if (!gpusim_proc_alive(p->pid, p->start_time))
    return false;
  return atomic_load(&p->contexts[d]) > 0 || p->used[d] > 0;
}

/* Under the device's mem_lock. The calling process never counts: an administrator's tool
 * that asks is not a user of the GPU. */
static bool in_use_locked(int d, int gi, int ci)
{
  const struct gpusim_shared *s = S();
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++) {
    if (!slot_uses(s, i, d))
      continue;
    uint8_t b = s->proc_mig[i][d];
    if (gi < 0 ||
        (b && (int) GPUSIM_MIG_BIND_GI(b) == gi && (ci < 0 || (int) GPUSIM_MIG_BIND_CI(b) == ci)))
      return true;
  }
  return false;
}

bool gpusim_dev_in_use(int d, int gi, int ci)
{
  gpusim_mem_lock(d);
  bool r = in_use_locked(d, gi, ci);
  gpusim_mem_unlock(d);
  return r;
}

/* Processes bound to an instance that is going away lose their binding (they hold nothing
 * there, or it would not be going away). */
static void unbind_locked(int d, int gi, int ci)
{
  struct gpusim_shared *s = S();
  for (int i = 0; i < GPUSIM_MAX_PROCS; i++) {
    uint8_t b = s->proc_mig[i][d];
    if (b &&
        (gi < 0 ||
         ((int) GPUSIM_MIG_BIND_GI(b) == gi && (ci < 0 || (int) GPUSIM_MIG_BIND_CI(b) == ci))))
      s->proc_mig[i][d] = 0;
  }
}

/* ---- MIG mode ---- */

static int live_gis(const struct gpusim_mig *m)
{
  int n = 0;
  for (int g = 0; g < GPUSIM_MIG_GI; g++)
    n += m->gi[g].live != 0;
  return n;
}

nvmlReturn_t gpusim_mig_set_mode(int d, unsigned mode, nvmlReturn_t *activation)
{
  nvmlReturn_t r = NVML_SUCCESS;
  gpusim_mem_lock(d);
  struct gpusim_mig *m = mig(d);
  if (mode == NVML_DEVICE_MIG_DISABLE && live_gis(m) > 0) {
    r = NVML_ERROR_IN_USE;
  } else {
    m->pending = mode;
    /* The call resets the GPU to activate the mode, which a GPU in use refuses. */
    if (m->mode != mode && in_use_locked(d, -1, -1)) {
      *activation = NVML_ERROR_IN_USE;
    } else {
      m->mode = mode;
      *activation = NVML_SUCCESS;
    }
  }
  gpusim_mem_unlock(d);
  return r;
}

int gpusim_gpu_reset_dev(int d, char *err, size_t errlen)
{
  int r = 0;
  gpusim_mem_lock(d);
  struct gpusim_mig *m = mig(d);
  if (in_use_locked(d, -1, -1)) {
    snprintf(err, errlen, "GPU %d is in use by another client: it cannot be reset", d);
    r = -1;
  } else {
    /* Instances do not survive a reset; the mode set last does. */
    for (int g = 0; g < GPUSIM_MIG_GI; g++)
      memset(&m->gi[g], 0, sizeof(m->gi[g]));
    unbind_locked(d, -1, -1);
    m->mode = m->pending;
  }
  gpusim_mem_unlock(d);
  return r;
}

void gpusim_mig_fail_in(int d, unsigned n)
{
  gpusim_mem_lock(d);
  mig(d)->fail_in = n;
  gpusim_mem_unlock(d);
}

/* Whether the test's injected failure is due now; counts one creation. */
static bool injected_failure(struct gpusim_mig *m)
{
  if (!m->fail_in)
    return false;
  return --m->fail_in == 0;
}

/* ---- GPU instances ---- */

static uint8_t slices_mask(unsigned start, unsigned size)
{
  return (uint8_t) (((1u << size) - 1) << start);
}

static uint8_t used_slices(const struct gpusim_mig *m)
{
  uint8_t used = 0;
  for (int g = 0; g < GPUSIM_MIG_GI; g++)
    if (m->gi[g].live)
      used |= slices_mask(m->gi[g].start, m->gi[g].size);
  return used;
}

static unsigned tree_id(unsigned start, unsigned size)
{
  return GPUSIM_MIG_SLICES / size - 1 + start / size;
}

/* Whether the GPU has room for one more of p, whatever its placement: its count, the compute
 * slices. */
static bool room_for(int model, const struct gpusim_mig *m, const struct gpusim_gi_profile *p)
{
  unsigned same = 0, compute = p->compute;
  for (int g = 0; g < GPUSIM_MIG_GI; g++) {
    if (!m->gi[g].live)
      continue;
    const struct gpusim_gi_profile *q = gpusim_mig_profile_by_enum(model, m->gi[g].profile);
    same += q == p;
    compute += q ? q->compute : 0;
  }
  return same < p->max && compute <= GPUSIM_MIG_COMPUTE;
}

/* The first allowed start of p that is free, or -1. */
static int first_free_start(const struct gpusim_mig *m, const struct gpusim_gi_profile *p)
{
  uint8_t used = used_slices(m);
  for (unsigned s = 0; s + p->mem <= GPUSIM_MIG_SLICES; s++)
    if ((p->starts & (1u << s)) && !(used & slices_mask(s, p->mem)))
      return (int) s;
  return -1;
}

static nvmlReturn_t gi_place(int d, struct gpusim_mig *m, const struct gpusim_gi_profile *p,
                             int start, int *slot)
{
  int model = S()->dev[d].model;
  if (start >= 0 && (start + p->mem > GPUSIM_MIG_SLICES || !(p->starts & (1u << start))))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (start < 0 && (start = first_free_start(m, p)) < 0)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if ((used_slices(m) & slices_mask((unsigned) start, p->mem)) || !room_for(model, m, p))
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  int g = 0;
  while (g < GPUSIM_MIG_GI && m->gi[g].live)
    g++;
  if (g == GPUSIM_MIG_GI)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (injected_failure(m))
    return NVML_ERROR_UNKNOWN;
  struct gpusim_mig_gi *gi = &m->gi[g];
  memset(gi, 0, sizeof(*gi));
  gi->id = tree_id((unsigned) start, p->mem);
  gi->profile = p->nvml;
  gi->start = (unsigned) start;
  gi->size = p->mem;
  gi->gen = ++m->generation;
  gi->total_bytes = (uint64_t) p->mem_mib << 20;
  gi->live = 1;
  *slot = g;
  return NVML_SUCCESS;
}

nvmlReturn_t gpusim_mig_gi_create(int d, const struct gpusim_gi_profile *p, int start, int *slot)
{
  gpusim_mem_lock(d);
  struct gpusim_mig *m = mig(d);
  nvmlReturn_t r =
    m->mode == NVML_DEVICE_MIG_ENABLE ? gi_place(d, m, p, start, slot) : NVML_ERROR_NOT_SUPPORTED;
  gpusim_mem_unlock(d);
  return r;
}

static bool live_locked(int d, int gi, uint32_t gen, int ci)
{
  if (gi < 0 || gi >= GPUSIM_MIG_GI)
    return false;
  const struct gpusim_mig_gi *g = &mig(d)->gi[gi];
  if (!g->live || g->gen != gen)
    return false;
  return ci < 0 || (ci < GPUSIM_MIG_CI && g->ci[ci].live);
}

bool gpusim_mig_live(int d, int gi, uint32_t gen, int ci)
{
  gpusim_mem_lock(d);
  bool r = live_locked(d, gi, gen, ci);
  gpusim_mem_unlock(d);
  return r;
}

static int live_cis(const struct gpusim_mig_gi *g)
{
  int n = 0;
  for (int c = 0; c < GPUSIM_MIG_CI; c++)
    n += g->ci[c].live != 0;
  return n;
}

nvmlReturn_t gpusim_mig_gi_destroy(int d, int slot, uint32_t gen)
{
  nvmlReturn_t r = NVML_SUCCESS;
  gpusim_mem_lock(d);
  struct gpusim_mig_gi *g = &mig(d)->gi[slot];
  if (!live_locked(d, slot, gen, -1))
    r = NVML_ERROR_INVALID_ARGUMENT;
  else if (live_cis(g) > 0 || in_use_locked(d, slot, -1))
    r = NVML_ERROR_IN_USE;
  else {
    unbind_locked(d, slot, -1);
    memset(g, 0, sizeof(*g));
  }
  gpusim_mem_unlock(d);
  return r;
}

/* ---- compute instances ---- */

static uint8_t used_compute(const struct gpusim_mig_gi *g)
{
  uint8_t used = 0;
  for (int c = 0; c < GPUSIM_MIG_CI; c++)
    if (g->ci[c].live)
      used |= slices_mask(g->ci[c].start, g->ci[c].size);
  return used;
}

static unsigned lowest_free_ci_id(const struct gpusim_mig_gi *g)
{
  for (unsigned id = 0;; id++) {
    bool taken = false;
    for (int c = 0; c < GPUSIM_MIG_CI; c++)
      taken |= g->ci[c].live && g->ci[c].id == id;
    if (!taken)
      return id;
  }
}

static nvmlReturn_t ci_place(struct gpusim_mig *m, struct gpusim_mig_gi *g, unsigned ci_profile,
                             int *ci)
{
  const struct gpusim_gi_profile *p =
    gpusim_mig_profile_by_enum(S()->dev[(int) (m - S()->mig)].model, g->profile);
  unsigned size = gpusim_ci_slices(ci_profile);
  if (!p || !gpusim_ci_offered(p->compute, ci_profile))
    return NVML_ERROR_NOT_SUPPORTED;
  uint8_t used = used_compute(g);
  int start = -1, c = 0;
  for (unsigned s = 0; start < 0 && s + size <= p->compute; s++)
    if (!(used & slices_mask(s, size)))
      start = (int) s;
  while (c < GPUSIM_MIG_CI && g->ci[c].live)
    c++;
  if (start < 0 || c == GPUSIM_MIG_CI)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (injected_failure(m))
    return NVML_ERROR_UNKNOWN;
  g->ci[c] = (struct gpusim_mig_ci){ .live = 1,
                                     .id = lowest_free_ci_id(g),
                                     .profile = ci_profile,
                                     .start = (unsigned) start,
                                     .size = size };
  *ci = c;
  return NVML_SUCCESS;
}

nvmlReturn_t gpusim_mig_ci_create(int d, int gi, uint32_t gen, unsigned ci_profile, int *ci)
{
  gpusim_mem_lock(d);
  struct gpusim_mig *m = mig(d);
  nvmlReturn_t r = live_locked(d, gi, gen, -1) ? ci_place(m, &m->gi[gi], ci_profile, ci)
                                               : NVML_ERROR_INVALID_ARGUMENT;
  gpusim_mem_unlock(d);
  return r;
}

nvmlReturn_t gpusim_mig_ci_destroy(int d, int gi, uint32_t gen, int ci)
{
  nvmlReturn_t r = NVML_SUCCESS;
  gpusim_mem_lock(d);
  if (!live_locked(d, gi, gen, ci))
    r = NVML_ERROR_INVALID_ARGUMENT;
  else if (in_use_locked(d, gi, ci))
    r = NVML_ERROR_IN_USE;
  else {
    unbind_locked(d, gi, ci);
    memset(&mig(d)->gi[gi].ci[ci], 0, sizeof(struct gpusim_mig_ci));
  }
  gpusim_mem_unlock(d);
  return r;
}

/* ---- MIG devices ---- */

int gpusim_mig_devices(int d, struct gpusim_mig_dev out[GPUSIM_MIG_GI * GPUSIM_MIG_CI])
{
  int n = 0;
  gpusim_mem_lock(d);
  const struct gpusim_mig *m = mig(d);
  /* Ordered by GPU instance id, then compute instance id: ids are below 16 and 8. */
  for (unsigned gid = 0; gid < 2 * GPUSIM_MIG_SLICES; gid++)
    for (int g = 0; g < GPUSIM_MIG_GI; g++) {
      if (!m->gi[g].live || m->gi[g].id != gid)
        continue;
      for (unsigned cid = 0; cid < GPUSIM_MIG_CI; cid++)
        for (int c = 0; c < GPUSIM_MIG_CI; c++)
          if (m->gi[g].ci[c].live && m->gi[g].ci[c].id == cid)
            out[n++] = (struct gpusim_mig_dev){ g, c };
    }
  gpusim_mem_unlock(d);
  return n;
}

const struct gpusim_gi_profile *gpusim_mig_gi_profile(int d, int gi)
{
  return gpusim_mig_profile_by_enum(S()->dev[d].model, mig(d)->gi[gi].profile);
}

static uint64_t mix(uint64_t h, const char *s)
{
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 0x100000001b3ULL;
  return h;
}

void gpusim_mig_uuid(int d, int gi, int ci, char *buf, size_t len)
{
  char parent[96], seed[160];
  const struct gpusim_mig_gi *g = &mig(d)->gi[gi];
  gpusim_uuid(S()->dev[d].model, d, parent, sizeof(parent));
  snprintf(seed, sizeof(seed), "%s/%u/%u/%u", parent, g->id, g->ci[ci].id, g->gen);
  uint64_t a = mix(0xcbf29ce484222325ULL, seed);
  uint64_t b = mix(a ^ 0x9e3779b97f4a7c15ULL, seed);
  snprintf(buf, len, "MIG-%08x-%04x-%04x-%04x-%012llx", (unsigned) (a >> 32),
           (unsigned) (a >> 16) & 0xffff, (unsigned) a & 0xffff, (unsigned) (b >> 48),
           (unsigned long long) (b & 0xffffffffffffULL));
}

void gpusim_mig_name(int d, int gi, int ci, char *buf, size_t len)
{
  const struct gpusim_mig_gi *g = &mig(d)->gi[gi];
  const struct gpusim_gi_profile *p = gpusim_mig_gi_profile(d, gi);
  const char *gpu = gpusim_models[S()->dev[d].model].name;
  if (p && g->ci[ci].size < p->compute)
    snprintf(buf, len, "%s MIG %uc.%s", gpu, g->ci[ci].size, p->name);
  else
    snprintf(buf, len, "%s MIG %s", gpu, p ? p->name : "?");
}

/* ---- binding a process ---- */

int gpusim_mig_bind(int d, int gi, int ci)
{
  struct gpusim_proc *self = gpusim_self();
  if (!self)
    return -1;
  int slot = (int) (self - S()->proc), r = -1;
  if (gi < 0 || gi >= GPUSIM_MIG_GI || ci < 0 || ci >= GPUSIM_MIG_CI)
    return -1;
  gpusim_mem_lock(d);
  const struct gpusim_mig_gi *g = &mig(d)->gi[gi];
  if (g->live && g->ci[ci].live && self->used[d] == 0) {
    S()->proc_mig[slot][d] = GPUSIM_MIG_BIND(gi, ci);
    r = 0;
  }
  gpusim_mem_unlock(d);
  return r;
}

uint8_t gpusim_mig_binding(int d)
{
  struct gpusim_proc *self = gpusim_self();
  return self ? S()->proc_mig[self - S()->proc][d] : 0;
}
