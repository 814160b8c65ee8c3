/* The tenant's JSON: the contract between the tenants' makers and the daemon. The
 * registration (POST /v1/tenants, docs/daemon.md) is built here for the clients that send it
 * (`gpuslice run`, the Slurm plugin: gpuslice/daemon-register.h) and read here by the daemon
 * (api-tenants.c). Its labels and its five limit keys have the same shape in the tenant the
 * daemon sends back ("labels" and "limits" of T), which the daemon builds with the same
 * functions.
 *
 * Part of gpuslice_client (client/): jansson and lib/ only, nothing of the daemon's state. */
#ifndef GS_DAEMON_TENANT_JSON_H
#define GS_DAEMON_TENANT_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuslice.h>

/* A tenant's limits as the API carries them: vram_bytes, vram_pct, compute_pct,
 * compute_policy and priority. */
struct tenant_json_limits {
  uint64_t vram_bytes;  /* GS_LIMIT_NONE: null */
  uint32_t vram_ppm;    /* millionths of the GPU's memory ("vram_pct" / 10^4); 0: null */
  uint32_t compute_ppm; /* millionths of the GPU's time; 0: null */
  uint32_t policy;      /* enum gs_compute_policy */
  uint32_t priority;    /* enum gs_priority */
};

/* A registration: what `gpuslice run` asks the daemon to hold. */
struct tenant_json_reg {
  const char *name;
  long pid;              /* the tenant's owner; 0: null (the caller) */
  const char *state_dir; /* where its ledger lives; NULL: null (the daemon's state dir) */
  const char *labels;    /* "k=v" lines; NULL: null (the ledger's labels) */
  int gpu;               /* the GPU the vram limit is for; -1: null (every GPU) */
  bool held; /* "held": true: the daemon makes the ledger and no owner process ends it */
  struct tenant_json_limits lim;
  /* Set by tenant_json_read_reg: which keys the body had, null or not. */
  bool vram_given;       /* vram_bytes or vram_pct */
  bool compute_given[3]; /* compute_pct, compute_policy, priority */
};

/* {"key": "value", ...} from "k=v" lines. */
json_t *tenant_json_labels(const char *labels);
/* The five limit keys as one object. */
json_t *tenant_json_limits(const struct tenant_json_limits *lim);
/* The registration's body. */
json_t *tenant_json_reg(const struct tenant_json_reg *reg);

/* Reads a registration body into reg (its strings point into body) and its labels into
 * labels (len bytes) as "k=v" lines. Returns 0, or -1 with err naming the bad field. */
int tenant_json_read_reg(const json_t *body, struct tenant_json_reg *reg, char *labels, size_t len,
                         gs_error_t *err);
/* The keys a limits change (PATCH) shares with a registration: "gpu" (-1 when absent or
 * null), and compute_pct, compute_policy and priority into lim, given[] saying which were
 * there. Each returns 0, or -1 with err naming the bad field. */
int tenant_json_read_gpu(const json_t *body, int *gpu, gs_error_t *err);
/* The "labels" key, an object of one-line strings, into out (len bytes) as "k=v" lines; *given
 * says whether the body had it (not null). Returns 0, or -1 with err naming the bad label. */
int tenant_json_read_labels(const json_t *body, char *out, size_t len, bool *given,
                            gs_error_t *err);
int tenant_json_read_compute(const json_t *body, struct tenant_json_limits *lim, bool given[3],
                             gs_error_t *err);

#endif
