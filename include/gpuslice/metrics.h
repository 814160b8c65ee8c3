/* Prometheus text exposition of a node snapshot (include/gpuslice/snapshot.h): the GPU series under
 * dcgm-exporter's names, labels and units, so that dashboards built for it (Grafana 12239)
 * work unchanged; gpuslice's own per-tenant series; and the daemon's health series.
 * docs/metrics.md lists every series. Needs libc only; the daemon serves the text. */
#ifndef GS_METRICS_H
#define GS_METRICS_H

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

/* NVIDIA's name for XID error `xid`, as dcgm-exporter's err_msg label gives it; "No Error"
 * for 0 and "Unknown Error" for a code the table does not name. Static text. */
const char *gs_xid_text(uint64_t xid);

/* The Content-Type to serve the text with. */
#define GS_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
