/* Prometheus text exposition (format 0.0.4) of a node snapshot: dcgm-exporter's GPU series,
 * gpuslice's per-tenant series and the daemon's health (gs-metrics.h; docs/metrics.md lists
 * them). The GPU series copy dcgm-exporter 4.x exactly: its names, HELP texts, TYPEs, units
 * (MiB, %, W, C, MHz) and its labels in its order (gpu, UUID, pci_bus_id, device, modelName,
 * Hostname, DCGM_FI_DRIVER_VERSION), so that dashboards built for it work unchanged.
 *
 * Speed matters (the daemon renders at every scrape, up to 8 GPUs x 256 tenants), so this
 * writes into one growing buffer with its own integer and fixed-point formatting instead of
 * snprintf, and renders each row's label set once for all the series that share it.
 * libc only: it is part of the core library. */
#include <gpuslice/error.h>
#include <gpuslice/limits.h>
#include <gpuslice/metrics.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mbuf {
  char *p;
  size_t len, cap;
  bool oom;
};

/* --- the output buffer --------------------------------------------------------------- */

static bool mbuf_reserve(struct mbuf *b, size_t n)
{
  if (b->oom)
    return false;
  if (b->len + n + 1 <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + n + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = true;
    return false;
  }
  b->p = p;
  b->cap = cap;
  return true;
}

static void mbuf_put(struct mbuf *b, const char *s, size_t n)
{
  if (!mbuf_reserve(b, n))
    return;
  memcpy(b->p + b->len, s, n);
  b->len += n; /* the NUL is written once, at the end (mbuf_reserve keeps room for it) */
}

static void mbuf_puts(struct mbuf *b, const char *s)
{
  mbuf_put(b, s, strlen(s));
}

static void mbuf_u64(struct mbuf *b, uint64_t v)
{
  char tmp[24];
  size_t i = sizeof(tmp);
  do {
    tmp[--i] = (char) ('0' + v % 10);
    v /= 10;
  } while (v);
  mbuf_put(b, tmp + i, sizeof(tmp) - i);
}

/* Writes whole.frac where frac has `digits` digits, without trailing zeros (and without
 * the point when frac is 0): exact decimal text, no floating-point printing. */
static void mbuf_decimal(struct mbuf *b, uint64_t whole, uint64_t frac, int digits)
{
  mbuf_u64(b, whole);
  if (frac == 0)
    return;
  char tmp[20];
  for (int i = digits - 1; i >= 0; i--) {
    tmp[i] = (char) ('0' + frac % 10);
    frac /= 10;
  }
  while (digits > 0 && tmp[digits - 1] == '0')
    digits--;
  mbuf_put(b, ".", 1);
  mbuf_put(b, tmp, (size_t) digits);
}

/* A double as Prometheus reads it. Finite values in [0, 1e12) take the fast path, rounded
 * to six decimals (finer than any series here needs); others go through snprintf. */
static void mbuf_double(struct mbuf *b, double v)
{
  if (isfinite(v) && v >= 0 && v < 1e12) {
    uint64_t micro = (uint64_t) (v * 1e6 + 0.5); /* v >= 0: rounds half up */
    mbuf_decimal(b, micro / 1000000u, micro % 1000000u, 6);
    return;
  }
  if (isnan(v)) {
    mbuf_puts(b, "NaN");
  } else if (isinf(v)) {
    mbuf_puts(b, v > 0 ? "+Inf" : "-Inf");
  } else {
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%.17g", v);
    mbuf_put(b, tmp, (size_t) n);
  }
}

/* Nanoseconds as seconds, exactly. */
static void mbuf_ns_as_s(struct mbuf *b, uint64_t ns)
{
  mbuf_decimal(b, ns / 1000000000u, ns % 1000000000u, 9);
}

/* --- label values and names ---------------------------------------------------------- */

/* A label value, escaped as the exposition format requires (backslash, double quote and
 * line feed), reading at most max bytes of s. Bytes that are not UTF-8 become U+FFFD, so a
 * tenant's odd label cannot make the whole scrape unparseable. */
static void mbuf_label_value(struct mbuf *b, const char *s, size_t max)
{
  const unsigned char *p = (const unsigned char *) s;
  size_t n = strnlen(s, max);
  size_t run = 0; /* bytes at p that are copied as they are */
  while (run < n) {
    unsigned char c = p[run];
    if (c < 0x80 && c != '\\' && c != '"' && c != '\n') {
      run++;
      continue;
    }
    size_t seq = c >= 0x80 ? gs_utf8_seq_len(p + run, n - run) : 0;
    if (seq) {
      run += seq;
      continue;
    }
    mbuf_put(b, (const char *) p, run);
    mbuf_puts(b, c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : "\xef\xbf\xbd");
    p += run + 1;
    n -= run + 1;
    run = 0;
  }
  mbuf_put(b, (const char *) p, run);
}

static void mbuf_label(struct mbuf *b, bool first, const char *name, const char *value, size_t max)
{
  mbuf_put(b, first ? "" : ",", first ? 0 : 1);
  mbuf_puts(b, name);
  mbuf_put(b, "=\"", 2);
  mbuf_label_value(b, value, max);
  mbuf_put(b, "\"", 1);
}

#define LABEL_NAME_MAX 96

/* "label_" + key with every character outside [A-Za-z0-9_] replaced by '_'. The prefix keeps
 * the name clear of gpuslice's own labels and of the reserved "__" names. */
static void sanitize_label_key(const char *key, char out[LABEL_NAME_MAX])
{
  static const char prefix[] = "label_";
  size_t n = strnlen(key, sizeof(((struct gs_snap_label *) 0)->key));
  size_t o = sizeof(prefix) - 1;
  memcpy(out, prefix, o);
  for (size_t i = 0; i < n && o < LABEL_NAME_MAX - 16; i++) {
    char c = key[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out[o++] = ok ? c : '_';
  }
  out[o] = '\0';
}

/* Writes k in decimal at out, with its NUL; out has room for 11 bytes. */
static void decimal(char *out, unsigned k)
{
  char tmp[10];
  size_t n = 0;
  do {
    tmp[n++] = (char) ('0' + k % 10);
    k /= 10;
  } while (k);
  while (n)
    *out++ = tmp[--n];
  *out = '\0';
}

/* FNV-1a of a label name: names are compared by hash first, by bytes only when it matches. */
static uint32_t name_hash(const char *s)
{
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 16777619u;
  return h;
}

static bool name_taken(char names[][LABEL_NAME_MAX], const uint32_t *hashes, int n,
                       const char *name, uint32_t hash)
{
  for (int i = 0; i < n; i++)
    if (hashes[i] == hash && strcmp(names[i], name) == 0)
      return true;
  return false;
}

/* Names for a tenant's labels, in order, all distinct: a key that sanitizes to a name an
 * earlier key already took gets "_2", "_3", ... (e.g. "team-a" and "team.a"), so that no
 * sample ever carries the same label twice. Written in place, with no formatted print but for
 * a taken name: a node of 1,024 tenants with 16 labels each renders 16,384 of them a scrape. */
static void tenant_label_names(const struct gs_snap_tenant *t, char names[][LABEL_NAME_MAX])
{
  uint32_t hashes[GS_SNAP_LABELS_MAX];
  int n = t->nlabels < 0 ? 0 : t->nlabels > GS_SNAP_LABELS_MAX ? GS_SNAP_LABELS_MAX : t->nlabels;
  for (int i = 0; i < n; i++) {
    sanitize_label_key(t->labels[i].key, names[i]);
    hashes[i] = name_hash(names[i]);
    if (!name_taken(names, hashes, i, names[i], hashes[i]))
      continue;
    size_t len = strlen(names[i]); /* at most LABEL_NAME_MAX - 16: room for "_" and a count */
    for (unsigned k = 2; name_taken(names, hashes, i, names[i], hashes[i]); k++) {
      names[i][len] = '_';
      decimal(names[i] + len + 1, k);
      hashes[i] = name_hash(names[i]);
    }
  }
}

/* --- label sets, rendered once per row ------------------------------------------------- */

struct labelset {
  size_t off, len; /* in the scratch buffer */
};

/* Released dcgm-exporter 4.x spells it Hostname; its main branch, after 4.5.3-4.8.2, hostname. */
static const char *hostname_label(const struct gs_metrics_fields *fields)
{
  return fields->hostname_lower ? "hostname" : "Hostname";
}

static void gpu_labels(struct mbuf *sc, const struct gs_snapshot *s, const struct gs_snap_gpu *g,
                       const struct gs_metrics_fields *fields)
{
  char idx[16];
  snprintf(idx, sizeof(idx), "%d", g->index);
  mbuf_label(sc, true, "gpu", idx, sizeof(idx));
  mbuf_label(sc, false, "UUID", g->uuid, sizeof(g->uuid));
  mbuf_label(sc, false, "pci_bus_id", g->pci_bus_id, sizeof(g->pci_bus_id));
  mbuf_label(sc, false, "device", g->device, sizeof(g->device));
  mbuf_label(sc, false, "modelName", g->model, sizeof(g->model));
  /* dcgm-exporter leaves Hostname out when it has none; so do we. */
  if (s->hostname[0])
    mbuf_label(sc, false, hostname_label(fields), s->hostname, sizeof(s->hostname));
  /* The counters file's one label field; a file without it leaves it out, as dcgm-exporter does. */
  if (fields->driver_label)
    mbuf_label(sc, false, "DCGM_FI_DRIVER_VERSION", s->driver_version, sizeof(s->driver_version));
}

static const struct gs_snap_gpu *gpu_at(const struct gs_snapshot *s, int index)
{
  for (int i = 0; i < s->ngpus; i++)
    if (s->gpus[i].index == index)
      return &s->gpus[i];
  return NULL;
}

/* The value of the tenant's label `key`, or NULL. */
static const char *tenant_label(const struct gs_snap_tenant *t, const char *key)
{
  for (int i = 0; i < t->nlabels && i < GS_SNAP_LABELS_MAX; i++)
    if (t->labels[i].key[0] == key[0] && strcmp(t->labels[i].key, key) == 0)
      return t->labels[i].value;
  return NULL;
}

/* A tenant from Kubernetes carries these labels (the agent registers them), and its series
 * carry them under dcgm-exporter's pod-mapping names, so that one query joins both. A tenant
 * without them leaves them out, as dcgm-exporter does for a GPU no pod uses. */
static const char *const k8s_keys[] = { "namespace", "pod", "container" };

static void tenant_labels(struct mbuf *sc, const struct gs_snapshot *s,
                          const struct gs_metrics_fields *fields, const struct gs_snap_tenant *t)
{
  char idx[16];
  char names[GS_SNAP_LABELS_MAX][LABEL_NAME_MAX];
  const struct gs_snap_gpu *g = gpu_at(s, t->gpu);
  if (t->gpu < 0)
    snprintf(idx, sizeof(idx), "%d", t->gpu);
  else
    decimal(idx, (unsigned) t->gpu);
  mbuf_label(sc, true, "tenant", t->name, sizeof(t->name));
  mbuf_label(sc, false, "gpu", idx, sizeof(idx));
  mbuf_label(sc, false, "UUID", g ? g->uuid : "", GS_SNAP_STR);
  /* The GPU series' Hostname and modelName, so that a join on (Hostname, gpu) or UUID keeps
   * the labels a dashboard filters on. */
  mbuf_label(sc, false, "modelName", g ? g->model : "", GS_SNAP_STR);
  if (s->hostname[0])
    mbuf_label(sc, false, hostname_label(fields), s->hostname, sizeof(s->hostname));
  for (size_t k = 0; k < sizeof(k8s_keys) / sizeof(k8s_keys[0]); k++) {
    const char *v = tenant_label(t, k8s_keys[k]);
    if (v && v[0])
      mbuf_label(sc, false, k8s_keys[k], v, GS_SNAP_STR);
  }
  tenant_label_names(t, names);
  for (int i = 0; i < t->nlabels && i < GS_SNAP_LABELS_MAX; i++)
    mbuf_label(sc, false, names[i], t->labels[i].value, sizeof(t->labels[i].value));
}

/* --- series ---------------------------------------------------------------------------- */

static void series_header(struct mbuf *b, const char *name, const char *type, const char *help)
{
  mbuf_puts(b, "# HELP ");
  mbuf_puts(b, name);
  mbuf_put(b, " ", 1);
  mbuf_puts(b, help);
  mbuf_puts(b, "\n# TYPE ");
  mbuf_puts(b, name);
  mbuf_put(b, " ", 1);
  mbuf_puts(b, type);
  mbuf_put(b, "\n", 1);
}

/* Starts one sample line, up to the space before the value. */
static void sample_start(struct mbuf *b, const char *name, const struct mbuf *sc,
                         const struct labelset *ls)
{
  mbuf_puts(b, name);
  mbuf_put(b, "{", 1);
  mbuf_put(b, sc->p + ls->off, ls->len);
  mbuf_put(b, "} ", 2);
}

#include "metrics-internal.h"

#define MIB_SHIFT 20 /* DCGM reports framebuffer sizes in whole MiB, rounded down */

static void gpu_value(struct mbuf *b, const struct gs_snap_gpu *g, enum gs__gpu_field f)
{
  switch (f) {
  case GF_SM_CLOCK: mbuf_u64(b, g->sm_clock_mhz); break;
  case GF_MEM_CLOCK: mbuf_u64(b, g->mem_clock_mhz); break;
  case GF_MEM_TEMP: mbuf_u64(b, g->mem_temp_c); break;
  case GF_TEMP: mbuf_u64(b, g->temp_c); break;
  case GF_POWER: mbuf_decimal(b, g->power_mw / 1000u, g->power_mw % 1000u, 3); break;
  case GF_ENERGY: mbuf_u64(b, g->energy_mj); break;
  case GF_PCIE_REPLAY: mbuf_u64(b, g->pcie_replays); break;
  case GF_UTIL: mbuf_u64(b, g->util_pct); break;
  case GF_MEM_COPY_UTIL: mbuf_u64(b, g->mem_util_pct); break;
  case GF_ENC_UTIL: mbuf_u64(b, g->enc_util_pct); break;
  case GF_DEC_UTIL: mbuf_u64(b, g->dec_util_pct); break;
  case GF_XID: mbuf_u64(b, g->xid_last); break;
  case GF_FB_FREE: mbuf_u64(b, g->fb_free_bytes >> MIB_SHIFT); break;
  case GF_FB_USED: mbuf_u64(b, g->fb_used_bytes >> MIB_SHIFT); break;
  case GF_FB_RESERVED: mbuf_u64(b, g->fb_reserved_bytes >> MIB_SHIFT); break;
  case GF_NVLINK: mbuf_u64(b, g->nvlink_kib); break;
  case GF_VGPU_LICENSE: mbuf_u64(b, g->vgpu_license); break;
  case GF_REMAP_UNC: mbuf_u64(b, g->remapped_unc); break;
  case GF_REMAP_CORR: mbuf_u64(b, g->remapped_corr); break;
  case GF_REMAP_FAILURE: mbuf_u64(b, g->remap_failure); break;
  case GF_PROF_GR: mbuf_double(b, g->prof_gr_active); break;
  case GF_PROF_TENSOR: mbuf_double(b, g->prof_tensor_active); break;
  case GF_PROF_DRAM: mbuf_double(b, g->prof_dram_active); break;
  case GF_PROF_PCIE_TX: mbuf_double(b, g->prof_pcie_tx_bps); break;
  case GF_PROF_PCIE_RX: mbuf_double(b, g->prof_pcie_rx_bps); break;
  }
}

/* dcgm-exporter adds err_code and err_msg to DCGM_FI_DEV_XID_ERRORS, after the other labels. */
static void xid_labels(struct mbuf *b, uint64_t xid)
{
  char code[24];
  snprintf(code, sizeof(code), "%llu", (unsigned long long) xid);
  mbuf_label(b, false, "err_code", code, sizeof(code));
  mbuf_label(b, false, "err_msg", gs_xid_text(xid), GS_SNAP_STR);
}

static bool gpu_has(const struct gs_snap_gpu *g, const struct gs__dcgm_field *f)
{
  return (g->have & f->have) == f->have;
}

/* --- MIG instances --------------------------------------------------------------------- */

/* The framebuffer fields are also served per MIG GPU instance: NVML gives a MIG device's own
 * memory; its other readings are the GPU's, served once on the GPU's row. */
static bool per_instance(enum gs__gpu_field f)
{
  return f == GF_FB_FREE || f == GF_FB_USED;
}

/* An instance row's labels, in dcgm-exporter's order: the GPU's, GPU_I_PROFILE and GPU_I_ID
 * after modelName, then the host and the driver version. */
static void mig_labels(struct mbuf *b, const struct gs_snapshot *s, const struct gs_snap_gpu *g,
                       const struct gs_snap_mig *m, const struct gs_metrics_fields *fields)
{
  char idx[16], id[16];
  snprintf(idx, sizeof(idx), "%d", g->index);
  snprintf(id, sizeof(id), "%u", m->gi_id);
  mbuf_label(b, true, "gpu", idx, sizeof(idx));
  mbuf_label(b, false, "UUID", g->uuid, sizeof(g->uuid));
  mbuf_label(b, false, "pci_bus_id", g->pci_bus_id, sizeof(g->pci_bus_id));
  mbuf_label(b, false, "device", g->device, sizeof(g->device));
  mbuf_label(b, false, "modelName", g->model, sizeof(g->model));
  mbuf_label(b, false, "GPU_I_PROFILE", m->profile, sizeof(m->profile));
  mbuf_label(b, false, "GPU_I_ID", id, sizeof(id));
  if (s->hostname[0])
    mbuf_label(b, false, hostname_label(fields), s->hostname, sizeof(s->hostname));
  if (fields->driver_label)
    mbuf_label(b, false, "DCGM_FI_DRIVER_VERSION", s->driver_version, sizeof(s->driver_version));
}

static void render_mig_rows(struct mbuf *b, const struct gs_snapshot *s,
                            const struct gs_metrics_fields *fields, const struct gs__dcgm_field *f)
{
  for (int i = 0; i < s->ngpus; i++) {
    const struct gs_snap_gpu *g = &s->gpus[i];
    for (int k = 0; k < g->nmig && k < GS_SNAP_MIG_MAX; k++) {
      const struct gs_snap_mig *m = &g->mig[k];
      mbuf_puts(b, f->name);
      mbuf_put(b, "{", 1);
      mig_labels(b, s, g, m, fields);
      mbuf_put(b, "} ", 2);
      mbuf_u64(b, (f->field == GF_FB_USED ? m->fb_used_bytes : m->fb_free_bytes) >> 20);
      mbuf_put(b, "\n", 1);
    }
  }
}

/* gpuslice_gpu_sharing_info: 1, with the GPU's sharing mode as a label; it joins the GPU
 * series on (Hostname, gpu) or UUID, and carries no camelCase label for promtool to remark on. */
static void render_sharing(struct mbuf *b, const struct gs_snapshot *s,
                           const struct gs_metrics_fields *fields)
{
  bool any = false;
  for (int i = 0; i < s->ngpus; i++)
    any |= s->gpus[i].sharing[0] != '\0';
  if (!any)
    return;
  series_header(b, "gpuslice_gpu_sharing_info", "gauge",
                "How the GPU is shared (the daemon's sharing setting): timeslice, mps or "
                "mig:<layout>; always 1.");
  for (int i = 0; i < s->ngpus; i++) {
    const struct gs_snap_gpu *g = &s->gpus[i];
    char idx[16];
    if (!g->sharing[0])
      continue;
    snprintf(idx, sizeof(idx), "%d", g->index);
    mbuf_puts(b, "gpuslice_gpu_sharing_info{");
    mbuf_label(b, true, "gpu", idx, sizeof(idx));
    mbuf_label(b, false, "UUID", g->uuid, sizeof(g->uuid));
    if (s->hostname[0])
      mbuf_label(b, false, hostname_label(fields), s->hostname, sizeof(s->hostname));
    mbuf_label(b, false, "sharing", g->sharing, sizeof(g->sharing));
    mbuf_puts(b, "} 1\n");
  }
}

static void render_gpus(struct mbuf *b, const struct gs_snapshot *s,
                        const struct gs_metrics_fields *fields, const struct mbuf *sc,
                        const struct labelset *ls)
{
  for (int k = 0; k < fields->n; k++) {
    const struct gs_metrics_field *sel = &fields->field[k];
    const struct gs__dcgm_field *f = &gs__dcgm_fields[sel->id];
    int with = 0;
    for (int i = 0; i < s->ngpus; i++)
      with += gpu_has(&s->gpus[i], f);
    /* A reading no GPU gives has no family at all, as in dcgm-exporter. */
    if (f->have && with == 0)
      continue;
    series_header(b, f->name, sel->counter ? "counter" : "gauge", sel->help);
    for (int i = 0; i < s->ngpus; i++) {
      if (!gpu_has(&s->gpus[i], f))
        continue;
      mbuf_puts(b, f->name);
      mbuf_put(b, "{", 1);
      mbuf_put(b, sc->p + ls[i].off, ls[i].len);
      if (f->field == GF_XID)
        xid_labels(b, s->gpus[i].xid_last);
      mbuf_put(b, "} ", 2);
      gpu_value(b, &s->gpus[i], f->field);
      mbuf_put(b, "\n", 1);
    }
    if (per_instance(f->field))
      render_mig_rows(b, s, fields, f);
  }
  render_sharing(b, s, fields);
}

enum tenant_field {
  TF_VRAM_USED,
  TF_VRAM_LIMIT,
  TF_SHARE,
  TF_LIMIT,
  TF_GPU_S,
  TF_THROTTLED_S,
  TF_VIOL_BYTES,
  TF_VIOL_COMPUTE,
  TF_VIOL_VRAM_N,
  TF_VIOL_COMPUTE_N,
  TF_IDLE_S,
  TF_SUSPENDED,
  TF_SUSPENDED_BYTES,
  TF_SUSPENDED_S,
  TF_RESUMES,
  TF_RESUME_S,
  TF_RESUME_WAITS,
  TF_RESUME_WAIT_S,
};

static const struct {
  enum tenant_field field;
  const char *name, *type, *help;
} tenant_series[] = {
  { TF_VRAM_USED, "gpuslice_tenant_vram_used_bytes", "gauge",
    "Device memory the tenant holds on this GPU, in bytes." },
  { TF_VRAM_LIMIT, "gpuslice_tenant_vram_limit_bytes", "gauge",
    "The tenant's device memory limit on this GPU, in bytes (absent when unlimited)." },
  { TF_SHARE, "gpuslice_tenant_compute_used_ratio", "gauge",
    "Share of this GPU's time the tenant used over the last sampling window (0 to 1)." },
  { TF_LIMIT, "gpuslice_tenant_compute_limit_ratio", "gauge",
    "The tenant's compute limit on this GPU as a share of its time (0 to 1; absent when "
    "unlimited)." },
  { TF_GPU_S, "gpuslice_tenant_gpu_seconds_total", "counter",
    "Device time the tenant's work ran on this GPU, in seconds." },
  { TF_THROTTLED_S, "gpuslice_tenant_throttled_seconds_total", "counter",
    "Time the tenant waited at its compute limit on this GPU, in seconds." },
  { TF_VIOL_BYTES, "gpuslice_tenant_violation_bytes", "gauge",
    "Device memory NVML counts for the tenant's processes over its limit on this GPU, in bytes "
    "(0 when within it)." },
  { TF_VIOL_COMPUTE, "gpuslice_tenant_violation_compute_ratio", "gauge",
    "Share of this GPU's time NVML counts for the tenant over its compute limit (0 when within "
    "it)." },
  { TF_VIOL_VRAM_N, "gpuslice_tenant_vram_violations_total", "counter",
    "Device memory violations the daemon found on this GPU, one per start of an excess." },
  { TF_VIOL_COMPUTE_N, "gpuslice_tenant_compute_violations_total", "counter",
    "Compute violations the daemon found on this GPU, one per start of an excess." },
  { TF_IDLE_S, "gpuslice_tenant_idle_seconds", "gauge",
    "Time since the tenant's last GPU activity while it holds memory, in seconds (0 while "
    "active; the tenant's, on each of its GPUs)." },
  /* Suspension (docs/suspend.md): only for tenants suspended at least once. */
  { TF_SUSPENDED, "gpuslice_tenant_suspended", "gauge",
    "1 while the tenant is suspended (its device memory in host memory, or coming back), else 0." },
  { TF_SUSPENDED_BYTES, "gpuslice_tenant_suspended_bytes", "gauge",
    "Device memory the tenant's suspension moved off this GPU, in bytes (0 while it runs)." },
  { TF_SUSPENDED_S, "gpuslice_tenant_suspended_seconds_total", "counter",
    "Time the tenant has spent suspended, in seconds." },
  { TF_RESUMES, "gpuslice_tenant_resumes_total", "counter", "Times the tenant was resumed." },
  { TF_RESUME_S, "gpuslice_tenant_resume_seconds", "gauge",
    "The tenant's last resume, from asked for to running again, in seconds." },
  { TF_RESUME_WAITS, "gpuslice_tenant_resume_waits_total", "counter",
    "Calls of the tenant's processes that waited for it to be resumed." },
  { TF_RESUME_WAIT_S, "gpuslice_tenant_resume_wait_seconds_total", "counter",
    "Time those calls waited, summed, in seconds." },
};

/* The suspension series: left out for a tenant never suspended, and the last resume's
 * latency until there is one. */
static bool suspension_value(struct mbuf *b, const struct gs_snap_tenant *t, enum tenant_field f)
{
  if (!t->suspensions || (f == TF_RESUME_S && !t->resumes))
    return false;
  switch (f) {
  case TF_SUSPENDED:
    mbuf_u64(b, t->run_state == GS_RUN_SUSPENDED || t->run_state == GS_RUN_RESUMING);
    break;
  case TF_SUSPENDED_BYTES: mbuf_u64(b, t->suspended_bytes); break;
  case TF_SUSPENDED_S: mbuf_double(b, t->suspended_seconds); break;
  case TF_RESUMES: mbuf_u64(b, t->resumes); break;
  case TF_RESUME_S: mbuf_double(b, t->resume_seconds); break;
  case TF_RESUME_WAITS: mbuf_u64(b, t->resume_waits); break;
  case TF_RESUME_WAIT_S: mbuf_double(b, t->resume_wait_seconds); break;
  default: return false;
  }
  return true;
}

/* Writes the value of field f for t, or returns false when the row is left out. */
static bool tenant_value(struct mbuf *b, const struct gs_snap_tenant *t, enum tenant_field f)
{
  switch (f) {
  case TF_VRAM_USED: mbuf_u64(b, t->vram_used_bytes); break;
  case TF_VRAM_LIMIT:
    if (t->vram_limit_bytes == UINT64_MAX)
      return false;
    mbuf_u64(b, t->vram_limit_bytes);
    break;
  case TF_SHARE: mbuf_double(b, t->compute_share); break;
  case TF_LIMIT:
    if (!(t->compute_limit > 0))
      return false;
    mbuf_double(b, t->compute_limit);
    break;
  case TF_GPU_S: mbuf_ns_as_s(b, t->gpu_ns); break;
  case TF_THROTTLED_S: mbuf_ns_as_s(b, t->throttled_ns); break;
  case TF_VIOL_BYTES: mbuf_u64(b, t->vram_over_bytes); break;
  case TF_VIOL_COMPUTE: mbuf_double(b, t->compute_over); break;
  case TF_VIOL_VRAM_N: mbuf_u64(b, t->vram_violations); break;
  case TF_VIOL_COMPUTE_N: mbuf_u64(b, t->compute_violations); break;
  case TF_IDLE_S: mbuf_double(b, t->idle_seconds); break;
  default: return suspension_value(b, t, f);
  }
  return true;
}

/* The names of gpuslice 0.1 for the 0-1 series, served beside the _ratio names for one
 * release (docs/metrics.md marks them deprecated), with the same values. */
static const struct {
  enum tenant_field field;
  const char *name, *help;
} deprecated_series[] = {
  { TF_SHARE, "gpuslice_tenant_compute_share",
    "Deprecated, use gpuslice_tenant_compute_used_ratio (the same value); removed after gpuslice "
    "0.2." },
  { TF_LIMIT, "gpuslice_tenant_compute_limit",
    "Deprecated, use gpuslice_tenant_compute_limit_ratio (the same value); removed after gpuslice "
    "0.2." },
  { TF_VIOL_COMPUTE, "gpuslice_tenant_violation_compute_share",
    "Deprecated, use gpuslice_tenant_violation_compute_ratio (the same value); removed after "
    "gpuslice 0.2." },
};

static void render_tenant_series(struct mbuf *b, const struct gs_snapshot *s, const struct mbuf *sc,
                                 const struct labelset *ls, enum tenant_field f, const char *name,
                                 const char *type, const char *help)
{
  series_header(b, name, type, help);
  for (int i = 0; i < s->ntenants; i++) {
    size_t mark = b->len;
    sample_start(b, name, sc, &ls[i]);
    if (tenant_value(b, &s->tenants[i], f))
      mbuf_put(b, "\n", 1);
    else if (!b->oom)
      b->len = mark; /* take the line back */
  }
}

/* The suspension series are left out whole, family included, while no tenant was ever
 * suspended: most nodes never suspend one, and their scrape stays as it was. */
static bool any_suspended(const struct gs_snapshot *s)
{
  for (int i = 0; i < s->ntenants; i++)
    if (s->tenants[i].suspensions)
      return true;
  return false;
}

/* How many series a tenant row can have: the reservation's multiplier. */
static size_t tenant_series_count(void)
{
  return sizeof(tenant_series) / sizeof(tenant_series[0]) +
    sizeof(deprecated_series) / sizeof(deprecated_series[0]);
}

static void render_tenants(struct mbuf *b, const struct gs_snapshot *s, const struct mbuf *sc,
                           const struct labelset *ls)
{
  bool suspensions = any_suspended(s);
  for (size_t k = 0; k < sizeof(tenant_series) / sizeof(tenant_series[0]); k++)
    if (tenant_series[k].field < TF_SUSPENDED || suspensions)
      render_tenant_series(b, s, sc, ls, tenant_series[k].field, tenant_series[k].name,
                           tenant_series[k].type, tenant_series[k].help);
  for (size_t k = 0; k < sizeof(deprecated_series) / sizeof(deprecated_series[0]); k++)
    render_tenant_series(b, s, sc, ls, deprecated_series[k].field, deprecated_series[k].name,
                         "gauge", deprecated_series[k].help);
}

static void health_line(struct mbuf *b, const char *name, const char *type, const char *help,
                        double v)
{
  series_header(b, name, type, help);
  mbuf_puts(b, name);
  mbuf_put(b, " ", 1);
  mbuf_double(b, v);
  mbuf_put(b, "\n", 1);
}

static void render_health(struct mbuf *b, const struct gs_metrics_health *h)
{
  health_line(b, "gpuslice_daemon_up", "gauge", "1 while the gpuslice daemon serves metrics.", 1);
  health_line(b, "gpuslice_daemon_uptime_seconds", "gauge",
              "Seconds since the gpuslice daemon started.", h->uptime_s);
  health_line(b, "gpuslice_daemon_samples_total", "counter",
              "Samples of GPUs and tenants the daemon has taken.", (double) h->samples_total);
  health_line(b, "gpuslice_daemon_sample_errors_total", "counter",
              "Samples that failed in part or in whole.", (double) h->sample_errors_total);
  health_line(b, "gpuslice_daemon_last_sample_duration_seconds", "gauge",
              "How long the last sample took, in seconds.", h->last_sample_duration_s);
  health_line(b, "gpuslice_daemon_tenants", "gauge", "Tenants the daemon knows of.",
              (double) h->tenants);
  health_line(b, "gpuslice_daemon_gpus", "gauge", "GPUs the daemon watches.", (double) h->gpus);
}

/* --- entry point ----------------------------------------------------------------------- */

static int check_snapshot(const struct gs_snapshot *s, gs_error_t *err)
{
  if (!s || s->ngpus < 0 || s->ntenants < 0 || (s->ngpus > 0 && !s->gpus) ||
      (s->ntenants > 0 && !s->tenants))
    return gs_make_error(err, EINVAL, "render metrics: malformed snapshot");
  return 0;
}

/* Renders every row's label set into sc; ls gets ngpus GPU sets, then ntenants tenant sets. */
static void render_labelsets(struct mbuf *sc, const struct gs_snapshot *s,
                             const struct gs_metrics_fields *fields, struct labelset *ls)
{
  for (int i = 0; i < s->ngpus + s->ntenants; i++) {
    ls[i].off = sc->len;
    if (i < s->ngpus)
      gpu_labels(sc, s, &s->gpus[i], fields);
    else
      tenant_labels(sc, s, fields, &s->tenants[i - s->ngpus]);
    ls[i].len = sc->len - ls[i].off;
  }
}

int gs_metrics_render(const struct gs_snapshot *s, const struct gs_metrics_health *h, char **out,
                      size_t *len, gs_error_t *err)
{
  return gs_metrics_render_fields(s, gs_metrics_fields_default(), h, out, len, err);
}

int gs_metrics_render_fields(const struct gs_snapshot *s, const struct gs_metrics_fields *fields,
                             const struct gs_metrics_health *h, char **out, size_t *len,
                             gs_error_t *err)
{
  if (check_snapshot(s, err) < 0)
    return -1;
  size_t rows = (size_t) s->ngpus + (size_t) s->ntenants;
  struct labelset *ls = calloc(rows ? rows : 1, sizeof(*ls));
  struct mbuf sc = { 0 }, b = { 0 };
  if (ls) {
    /* Sized from the rows' label sets, so that most renders never grow the buffers: each
     * tenant series repeats a tenant's set, with a name and a value of at most 96 bytes. */
    mbuf_reserve(&sc, rows * 192);
    render_labelsets(&sc, s, fields, ls);
    size_t tenant_sets = sc.len - (s->ngpus ? ls[s->ngpus - 1].off + ls[s->ngpus - 1].len : 0);
    mbuf_reserve(&b,
                 8192 + (size_t) s->ngpus * 25 * 320 +
                   (tenant_sets + (size_t) s->ntenants * 96) * tenant_series_count());
    render_gpus(&b, s, fields, &sc, ls);
    render_tenants(&b, s, &sc, ls + s->ngpus);
    if (h)
      render_health(&b, h);
  }
  bool failed = !ls || sc.oom || b.oom;
  free(ls);
  free(sc.p);
  if (failed) {
    free(b.p);
    return gs_make_error(err, ENOMEM, "render metrics");
  }
  b.p[b.len] = '\0';
  *out = b.p;
  *len = b.len;
  return 0;
}
