/* The tenant of `gpuslice run`: its options, its ledger, and the environment for the command.
 * The setters are run's option-table callbacks (run.c): 0, or -1 with err naming the option. */
#ifndef GS_CLI_RUN_TENANT_H
#define GS_CLI_RUN_TENANT_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"

struct run_tenant {
  const char *name;
  char default_name[32];
  bool vram_set;
  uint64_t vram_bytes;
  uint64_t vram_ppm; /* non-zero when --vram was a percentage */
  int gpu;           /* -1: the limit applies to every GPU */
  uint64_t context_reserve;
  uint32_t compute_ppm;    /* 0: no compute limit */
  uint32_t compute_policy; /* enum gs_compute_policy */
  uint32_t priority;       /* enum gs_priority */
  uint32_t slice_ms;       /* 0: the GPU's default turn */
  char labels[GS_LEDGER_LABELS_MAX];
  const char *dir;
  struct gs_ledger *ledger;
  int ledger_fd; /* held open while the tenant runs: see run_tenant_create */
};

#define RUN_TENANT_INIT        \
  {                            \
    .gpu = -1, .ledger_fd = -1 \
  }

int run_tenant_set_vram(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_set_gpu(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_set_reserve(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_set_name(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_add_label(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_set_compute(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_set_compute_policy(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_set_priority(void *tenant, const char *arg, gs_error_t *err);
int run_tenant_set_slice(void *tenant, const char *arg, gs_error_t *err);

/* Creates the ledger and sets GPUSLICE_TENANT and GPUSLICE_STATE_DIR. */
int run_tenant_create(struct run_tenant *t, gs_error_t *err);
/* Removes the ledger once the command has ended. */
void run_tenant_end(struct run_tenant *t);

#endif
