/* Reading Alibaba's openb traces (clusterdata, cluster-trace-gpu-v2023) into placement
 * specs: the node list `sn,cpu_milli,memory_mib,gpu,model` and the pod list
 * `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
 * deletion_time,scheduled_time`.
 *
 * Reading is strict: the header must match exactly, and the first bad row refuses the
 * whole file with an error "<file>: line N: <reason>". */
#ifndef GS_TRACE_OPENB_H
#define GS_TRACE_OPENB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gpuslice/error.h>
#include <gpuslice/place.h>

/* The strings the specs point to belong to the list: free it with the matching call. */
struct gs_openb_nodes {
  struct gs_place_node_spec *nodes;
  size_t n;
};

struct gs_openb_pods {
  struct gs_place_request *pods;
  size_t n;
  /* Per pod, deletion_time − creation_time in seconds, or -1 when the row does not say
   * (the 5-column form, an empty time, a deletion before the creation). Read by the
   * replay with departures (gs_place_replay_churn); NULL in a list made by hand. */
  int64_t *life_s;
};

/* name is the file's name in error messages. */
int gs_openb_read_nodes(FILE *f, const char *name, struct gs_openb_nodes *out, gs_error_t *err);
int gs_openb_read_pods(FILE *f, const char *name, struct gs_openb_pods *out, gs_error_t *err);
int gs_openb_load_nodes(const char *path, struct gs_openb_nodes *out, gs_error_t *err);
int gs_openb_load_pods(const char *path, struct gs_openb_pods *out, gs_error_t *err);
/* Writes l in the 11-column form (a lifetime as creation_time 0, deletion_time life_s). */
int gs_openb_write_pods(FILE *f, const struct gs_openb_pods *l, gs_error_t *err);
void gs_openb_nodes_release(struct gs_openb_nodes *l);
void gs_openb_pods_release(struct gs_openb_pods *l);

#endif
