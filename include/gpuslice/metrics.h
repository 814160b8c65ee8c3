/* Prometheus text exposition of a node snapshot (include/gpuslice/snapshot.h): the GPU series under
 * dcgm-exporter's names, labels and units, so that dashboards built for it (Grafana 12239)
 * work unchanged; gpuslice's own per-tenant series; and the daemon's health series.
 * docs/metrics.md lists every series. Needs libc only; the daemon serves the text. */
#ifndef GS_METRICS_H
#define GS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice/error.h>
#include <gpuslice/snapshot.h>

/* The daemon's own health, rendered as gpuslice_daemon_* series. */
struct gs_metrics_health {
  double uptime_s;
  uint64_t samples_total;
  uint64_t sample_errors_total;
  double last_sample_duration_s;
  int tenants;
  int gpus;
};

/* Renders s (and h, when not NULL) as Prometheus text format 0.0.4 into a malloc'ed,
 * NUL-terminated buffer: *out (free it) and *len (without the NUL). Returns 0, or -1 with
 * *err filled (out of memory, or a snapshot whose counts are negative). Never prints. */
int gs_metrics_render(const struct gs_snapshot *s, const struct gs_metrics_health *h, char **out,
                      size_t *len, gs_error_t *err);

/* The GPU fields to serve, chosen by a counters file in dcgm-exporter's format (its
 * --collectors CSV: `DCGM field, Prometheus type, HELP text` per line, `#` comments), each
 * served with the file's TYPE and HELP, in the file's order. The built-in choice is
 * dcgm-exporter's default set (data/dcgm-exporter/default-counters.csv). */
#define GS_METRICS_FIELDS_MAX 64
#define GS_METRICS_HELP_MAX 256

struct gs_metrics_field {
  int id;       /* which of gpuslice's fields */
  bool counter; /* TYPE counter, else gauge */
  char help[GS_METRICS_HELP_MAX];
};

struct gs_metrics_fields {
  int n;
  struct gs_metrics_field field[GS_METRICS_FIELDS_MAX];
  bool driver_label; /* DCGM_FI_DRIVER_VERSION, a label field, is on the GPU series */
  /* The host name label's spelling: Hostname (released dcgm-exporter 4.x, dashboard 12239),
   * or, when set, hostname (dcgm-exporter's main branch after 4.5.3-4.8.2). */
  bool hostname_lower;
};

/* dcgm-exporter's default set: every field gpuslice has, with dcgm-exporter's TYPEs and HELP. */
const struct gs_metrics_fields *gs_metrics_fields_default(void);
/* Reads a counters file's text into *f. A field gpuslice does not serve, a line that is not
 * three comma-separated fields, a TYPE other than gauge, counter or label (label for
 * DCGM_FI_DRIVER_VERSION only, and only it), a field listed twice: -1 with one line in err,
 * "line N: <what> (`<the line>`)". */
int gs_metrics_fields_parse(const char *text, struct gs_metrics_fields *f, gs_error_t *err);
/* gs_metrics_fields_parse of a file; errors start with "counters file PATH: ". */
int gs_metrics_fields_load(const char *path, struct gs_metrics_fields *f, gs_error_t *err);

/* The optional readings (GS_SNAP_HAVE_* bits, include/gpuslice/snapshot.h) that the fields of f
 * are made from, so that a sampler can skip the NVML calls of the fields nobody serves. */
uint32_t gs_metrics_fields_readings(const struct gs_metrics_fields *f);

/* gs_metrics_render with the GPU fields of `fields` instead of the default set. */
int gs_metrics_render_fields(const struct gs_snapshot *s, const struct gs_metrics_fields *fields,
                             const struct gs_metrics_health *h, char **out, size_t *len,
                             gs_error_t *err);

/* NVIDIA's name for XID error `xid`, as dcgm-exporter's err_msg label gives it; "No Error"
 * for 0 and "Unknown Error" for a code the table does not name. Static text. */
const char *gs_xid_text(uint64_t xid);

/* The Content-Type to serve the text with. */
#define GS_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
