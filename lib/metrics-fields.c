/* The GPU fields gpuslice serves, and the counters file that chooses among them: a CSV in
 * dcgm-exporter's own format (its --collectors file), so that an existing file works as it is.
 * The built-in choice is dcgm-exporter's default set, the catalogue below in full. */
#include <gpuslice/csv.h>
#include <gpuslice/error.h>
#include <gpuslice/metrics.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics-internal.h"

/* dcgm-exporter's default set (its etc/default-counters.csv, copied in data/dcgm-exporter/):
 * that file's order, names, types and HELP texts. `have` is the snapshot bit a GPU needs for
 * a sample, 0 for the readings every GPU has. */
const struct gs__dcgm_field gs__dcgm_fields[] = {
  { GF_SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 0 },
  { GF_MEM_CLOCK, "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 0 },
  { GF_MEM_TEMP, "DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).",
    GS_SNAP_HAVE_MEM_TEMP },
  { GF_TEMP, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 0 },
  { GF_POWER, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 0 },
  { GF_ENERGY, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
    "Total energy consumption since boot (in mJ).", GS_SNAP_HAVE_ENERGY },
  { GF_PCIE_REPLAY, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
    GS_SNAP_HAVE_PCIE_REPLAY },
  { GF_UTIL, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 0 },
  { GF_MEM_COPY_UTIL, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 0 },
  { GF_ENC_UTIL, "DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", GS_SNAP_HAVE_ENC },
  { GF_DEC_UTIL, "DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", GS_SNAP_HAVE_DEC },
  { GF_XID, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
    GS_SNAP_HAVE_XID },
  { GF_FB_FREE, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 0 },
  { GF_FB_USED, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 0 },
  { GF_FB_RESERVED, "DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).",
    GS_SNAP_HAVE_FB_RESERVED },
  { GF_NVLINK, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
    "Total number of NVLink bandwidth counters for all lanes.", GS_SNAP_HAVE_NVLINK },
  { GF_VGPU_LICENSE, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status",
    GS_SNAP_HAVE_VGPU_LICENSE },
  { GF_REMAP_UNC, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
    "Number of remapped rows for uncorrectable errors", GS_SNAP_HAVE_REMAP },
  { GF_REMAP_CORR, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
    "Number of remapped rows for correctable errors", GS_SNAP_HAVE_REMAP },
  { GF_REMAP_FAILURE, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge",
    "Whether remapping of rows has failed", GS_SNAP_HAVE_REMAP },
  { GF_PROF_GR, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
    "Ratio of time the graphics engine is active.", GS_SNAP_HAVE_PROF_GR },
  { GF_PROF_TENSOR, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
    "Ratio of cycles the tensor (HMMA) pipe is active.", GS_SNAP_HAVE_PROF_TENSOR },
  { GF_PROF_DRAM, "DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
    "Ratio of cycles the device memory interface is active sending or receiving data.",
    GS_SNAP_HAVE_PROF_DRAM },
  { GF_PROF_PCIE_TX, "DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
    "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
    "payloads - in bytes per second.",
    GS_SNAP_HAVE_PROF_PCIE_TX },
  { GF_PROF_PCIE_RX, "DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
    "The rate of data received over the PCIe bus - including both protocol headers and data "
    "payloads - in bytes per second.",
    GS_SNAP_HAVE_PROF_PCIE_RX },
};

const size_t gs__dcgm_nfields = sizeof(gs__dcgm_fields) / sizeof(gs__dcgm_fields[0]);

/* The one label field gpuslice has: the driver version, on every GPU series. */
#define DRIVER_LABEL "DCGM_FI_DRIVER_VERSION"

static struct gs_metrics_fields fields_default;

/* The catalogue in full, with dcgm-exporter's TYPEs and HELP texts. */
static void fields_default_build(void)
{
  struct gs_metrics_fields *f = &fields_default;
  for (size_t i = 0; i < gs__dcgm_nfields; i++) {
    f->field[i].id = (int) i;
    f->field[i].counter = strcmp(gs__dcgm_fields[i].type, "counter") == 0;
    snprintf(f->field[i].help, sizeof(f->field[i].help), "%s", gs__dcgm_fields[i].help);
  }
  f->n = (int) gs__dcgm_nfields;
  f->driver_label = true;
}

uint32_t gs_metrics_fields_readings(const struct gs_metrics_fields *f)
{
  uint32_t have = 0;
  for (int k = 0; k < f->n; k++)
    have |= gs__dcgm_fields[f->field[k].id].have;
  return have;
}

const struct gs_metrics_fields *gs_metrics_fields_default(void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fields_default_build); /* the daemon renders from more than one thread */
  return &fields_default;
}

static char *trim(char *s)
{
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    s[--n] = '\0';
  return s;
}

static int field_id(const char *name)
{
  for (size_t i = 0; i < gs__dcgm_nfields; i++)
    if (strcmp(gs__dcgm_fields[i].name, name) == 0)
      return (int) i;
  return -1;
}

/* One active line, split and trimmed: adds its field to f, or says in err what is wrong. */
static int parse_record(char **rec, int nrec, struct gs_metrics_fields *f, bool *label_seen,
                        gs_error_t *err)
{
  if (nrec != 3)
    return gs_make_error(err, 0, "%d field%s, want 3: DCGM field, Prometheus type, help", nrec,
                         nrec == 1 ? "" : "s");
  const char *name = rec[0], *type = rec[1], *help = rec[2];
  bool counter = strcmp(type, "counter") == 0, label = strcmp(type, "label") == 0;
  if (!counter && !label && strcmp(type, "gauge") != 0)
    return gs_make_error(err, 0, "type '%s' of %s, want gauge, counter or label", type, name);
  if (strcmp(name, DRIVER_LABEL) == 0) {
    if (!label)
      return gs_make_error(err, 0, "%s is a label field, not a %s", name, type);
    if (*label_seen)
      return gs_make_error(err, 0, "%s listed twice", name);
    *label_seen = f->driver_label = true;
    return 0;
  }
  int id = field_id(name);
  if (id < 0)
    return gs_make_error(err, 0, "unknown field '%s' (gpuslice serves dcgm-exporter's default set)",
                         name);
  if (label)
    return gs_make_error(err, 0, "%s is a metric, not a label", name);
  for (int k = 0; k < f->n; k++)
    if (f->field[k].id == id)
      return gs_make_error(err, 0, "%s listed twice", name);
  if (strlen(help) >= GS_METRICS_HELP_MAX)
    return gs_make_error(err, 0, "help text of %s longer than %d bytes", name,
                         GS_METRICS_HELP_MAX - 1);
  struct gs_metrics_field *out = &f->field[f->n++];
  out->id = id;
  out->counter = counter;
  snprintf(out->help, sizeof(out->help), "%s", help);
  return 0;
}

/* One line of the file (NUL-terminated, without its newline), line number no. */
static int parse_line(char *line, int no, struct gs_metrics_fields *f, bool *label_seen,
                      gs_error_t *err)
{
  char *text = trim(line);
  if (!*text || *text == '#')
    return 0;
  /* The line as the user wrote it, for the message, before the splitter cuts it up. */
  char shown[160];
  snprintf(shown, sizeof(shown), "%s%s", text, strlen(text) >= sizeof(shown) ? "..." : "");
  char *rec[4];
  int n = gs_csv_split(text, GS_CSV_QUOTED, rec, 4, err);
  if (n >= 0) {
    for (int i = 0; i < n; i++)
      rec[i] = trim(rec[i]);
    if (parse_record(rec, n, f, label_seen, err) == 0)
      return 0;
  }
  gs_scrub_ctl(shown, '?'); /* one line: no control characters from the file */
  char *why = (*err)->msg;
  (*err)->msg = NULL;
  gs_error_release(err);
  gs_make_error(err, 0, "line %d: %s (`%s`)", no, why, shown);
  free(why);
  return -1;
}

int gs_metrics_fields_parse(const char *text, struct gs_metrics_fields *f, gs_error_t *err)
{
  memset(f, 0, sizeof(*f));
  bool label_seen = false;
  int no = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t) (nl - p) : strlen(p);
    no++;
    char *line = strndup(p, n);
    if (!line)
      return gs_make_error(err, ENOMEM, "line %d", no);
    if (strlen(line) != n) {
      free(line);
      return gs_make_error(err, 0, "line %d: NUL byte in line", no);
    }
    if (f->n == GS_METRICS_FIELDS_MAX) {
      free(line);
      return gs_make_error(err, 0, "line %d: more than %d fields", no, GS_METRICS_FIELDS_MAX);
    }
    int r = parse_line(line, no, f, &label_seen, err);
    free(line);
    if (r < 0)
      return -1;
    p += n + (nl ? 1 : 0);
  }
  if (f->n == 0)
    return gs_make_error(err, 0, "no fields (every line is empty or a comment)");
  return 0;
}

int gs_metrics_fields_load(const char *path, struct gs_metrics_fields *f, gs_error_t *err)
{
  FILE *fp = fopen(path, "re");
  if (!fp)
    return gs_make_error(err, errno, "counters file %s", path);
  size_t cap = 0, len = 0;
  char *text = NULL;
  int r = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 8192;
      char *t = cap > (1u << 20) ? NULL : realloc(text, cap);
      if (!t) {
        r = gs_make_error(err, 0, "counters file %s: larger than 1 MiB", path);
        break;
      }
      text = t;
    }
    size_t got = fread(text + len, 1, cap - len - 1, fp);
    len += got;
    if (got == 0) {
      if (ferror(fp))
        r = gs_make_error(err, errno, "counters file %s: read error", path);
      break;
    }
  }
  fclose(fp);
  if (r == 0) {
    text[len] = '\0';
    if (strlen(text) != len)
      r = gs_make_error(err, 0, "counters file %s: NUL byte in file", path);
    else if (gs_metrics_fields_parse(text, f, err) < 0)
      r = gs_error_prepend(err, "counters file %s", path);
  }
  free(text);
  return r < 0 ? -1 : 0;
}
