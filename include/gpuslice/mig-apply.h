/* Applying a MIG layout to a GPU: its text form, what the GPU holds now, the steps from one
 * to the other (with what they take away from whom), running them in NVIDIA's order, and
 * going back to where it started when a step fails. The steps run through a backend: NVML's
 * (gs_mig_nvml_*, lib/mig-nvml.c, loaded at run time through the driver seam), or a test's.
 *
 * A layout is one GPU's instances as `gpuslice mig plan` prints them: "1g.10gb@0 1g.10gb@1
 * 3g.40gb@4" (PROFILE@START, memory slice START), each a GPU instance with one compute
 * instance over all of it. "off" is MIG mode off. Applying keeps the GPU instances the GPU
 * already has at the same placement with the same profile and one full compute instance,
 * so their tenants run on; it destroys the others (compute instances first, then GPU
 * instances), turns MIG mode on if it is off, then creates the missing GPU instances at
 * their placements and then their compute instances. Code: lib/mig-layout.c (text),
 * lib/mig-apply.c (steps, rollback). See docs/mig.md. */
#ifndef GS_MIG_APPLY_H
#define GS_MIG_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <gpuslice/error.h>
#include <gpuslice/mig.h>

#define GS_MIG_MAX_INSTANCES 7 /* GPU instances on one GPU */
#define GS_MIG_MAX_PIDS 64     /* processes remembered per instance */

/* ---- layouts as text (mig-layout.c) ---- */

/* A wanted layout: MIG mode, and the instances when it is on. */
struct gs_mig_target {
  bool off; /* "off": MIG mode off, no instances */
  int n;
  struct gs_mig_instance inst[GS_MIG_MAX_INSTANCES]; /* sorted by start; gpu 0, demand -1 */
};

/* Reads "PROFILE@START ..." (spaces or commas between) for a GPU of model (canonical), or
 * "off", and checks it against the table's rules for that model (gs_mig_gpu_validate). An
 * unknown profile, a malformed item or a layout that does not fit the GPU: -1 with err naming
 * it. The empty layout is MIG mode on with no instances. */
int gs_mig_layout_parse(const struct gs_mig_table *t, const char *model, const char *text,
                        struct gs_mig_target *out, gs_error_t *err);
/* "1g.10gb@0 3g.40gb@4"; "off" for MIG mode off; "" for on with none. */
void gs_mig_layout_format(const struct gs_mig_target *l, char *buf, size_t len);

/* ---- what a GPU holds ---- */

struct gs_mig_live {
  char profile[24]; /* "1g.10gb", as the driver names it */
  int start, size;  /* memory slices */
  unsigned id;      /* GPU instance id */
  int nci;          /* its compute instances */
  int ci_slices[GS_MIG_COMPUTE_SLICES];
  char uuid[96]; /* the MIG device of its first compute instance, "" when none */
  int npids;     /* processes on it (what NVML lists; at most GS_MIG_MAX_PIDS kept) */
  pid_t pids[GS_MIG_MAX_PIDS];
};

struct gs_mig_gpu {
  char name[96];  /* the driver's name, "NVIDIA H100 80GB HBM3" */
  char model[24]; /* canonical, "" when gpuslice does not know it */
  char uuid[96];
  bool capable;                                  /* the GPU has MIG */
  bool mode, pending;                            /* MIG mode now, and at the next activation */
  int n;                                         /* GPU instances */
  struct gs_mig_live inst[GS_MIG_MAX_INSTANCES]; /* sorted by start */
  int npids; /* processes on the GPU outside MIG mode (MIG on: none) */
  pid_t pids[GS_MIG_MAX_PIDS];
};

/* The GPU's layout as a target ("off", or its instances as profile@start; an instance the
 * table does not know, or one not of one full compute instance, keeps its profile name). */
void gs_mig_gpu_layout(const struct gs_mig_gpu *g, char *buf, size_t len);

/* ---- the steps (mig-apply.c) ---- */

enum gs_mig_step_kind {
  GS_MIG_DESTROY_CI, /* every compute instance of the GPU instance at start */
  GS_MIG_DESTROY_GI,
  GS_MIG_MODE_ON,
  GS_MIG_MODE_OFF,
  GS_MIG_CREATE_GI, /* profile at start */
  GS_MIG_CREATE_CI, /* compute instances of slices[] in the GPU instance at start */
};

struct gs_mig_step {
  enum gs_mig_step_kind kind;
  char profile[24];
  int start;
  int nci;
  int ci_slices[GS_MIG_COMPUTE_SLICES];
};

#define GS_MIG_MAX_STEPS (4 * GS_MIG_MAX_INSTANCES * 2 + 2)

struct gs_mig_plan {
  int n;
  struct gs_mig_step step[GS_MIG_MAX_STEPS];
  /* What the steps take away: the instances destroyed (their index in the gs_mig_gpu), or the
   * whole GPU when MIG mode changes. Their processes must be gone first. */
  bool whole_gpu;
  int ntaken;
  int taken[GS_MIG_MAX_INSTANCES];
};

/* The steps from g to target, in NVIDIA's order: compute instances destroyed, then GPU
 * instances; MIG mode; GPU instances created at their placements, then compute instances.
 * Instances already where the target wants them are kept. No step when g is the target. */
void gs_mig_plan_steps(const struct gs_mig_gpu *g, const struct gs_mig_target *target,
                       struct gs_mig_plan *plan);
/* The processes the plan would take their GPU from (g's pids on taken instances, or the
 * GPU's), into out (room for cap); returns how many (at most cap). */
int gs_mig_plan_pids(const struct gs_mig_gpu *g, const struct gs_mig_plan *plan, pid_t *out,
                     int cap);

/* One GPU, as a backend drives it. Each returns 0, or -1 with err saying what failed. */
struct gs_mig_ops {
  void *ctx;
  int (*read)(void *ctx, struct gs_mig_gpu *g, gs_error_t *err);
  int (*step)(void *ctx, const struct gs_mig_step *s, gs_error_t *err);
};

/* Runs the plan's steps. When one fails it undoes those done, newest first (a destroyed
 * instance is made again at its placement with its compute instances; a created one is
 * destroyed; the mode set back), so that the GPU has the layout it started with, and returns
 * -1 with err saying which step failed and whether the rollback did all it should. */
int gs_mig_apply(const struct gs_mig_ops *ops, const struct gs_mig_gpu *start,
                 const struct gs_mig_plan *plan, gs_error_t *err);

/* "create 1g.10gb@0", "destroy compute instances of 3g.40gb@4", "MIG mode on": for messages. */
void gs_mig_step_text(const struct gs_mig_step *s, char *buf, size_t len);

/* ---- repartitioning from demand (mig-pending.c) ---- */

#define GS_MIG_MAX_REQUESTS 1024

/* The layout change pending requests want (each request one instance of a profile). */
struct gs_mig_pending {
  struct gs_mig_target target; /* the proposed layout */
  int nrequests;
  int placed_now; /* requests the GPU's layout now serves: an idle instance of their profile */
  int placed;     /* requests the proposed layout serves */
  bool served[GS_MIG_MAX_REQUESTS]; /* which, in the proposed layout */
  int nkept; /* instances of the layout now that the proposal keeps where they are */
};

/* Proposes, for GPU g (MIG on or off; model its canonical model), the layout that serves the
 * most of the requests req[0..n) without destroying an instance in use (one with processes):
 * every busy instance stays where it is; an idle instance of a requested profile serves a
 * request where it is; the other instances are kept when they still fit. Among layouts that
 * serve as many, the one that keeps the most instances. It serves at least as many as the
 * layout now. -1 with err when an instance in use has a profile the table does not know. */
int gs_mig_plan_pending(const struct gs_mig_table *t, const char *model, const struct gs_mig_gpu *g,
                        const struct gs_mig_profile *const *req, int n, struct gs_mig_pending *out,
                        gs_error_t *err);

/* ---- NVML's backend (mig-nvml.c) ---- */

struct gs_mig_nvml;
/* Loads NVML from where the driver seam says (the simulator's with GPUSLICE_SIM) and
 * initializes it. Returns 0, or -1 with err (no driver: say so). */
int gs_mig_nvml_open(struct gs_mig_nvml **out, gs_error_t *err);
void gs_mig_nvml_close(struct gs_mig_nvml *n);
int gs_mig_nvml_count(const struct gs_mig_nvml *n);
/* Reads GPU index. A GPU without MIG reads as !capable. */
int gs_mig_nvml_read(struct gs_mig_nvml *n, int index, struct gs_mig_gpu *g, gs_error_t *err);
/* The backend for GPU index; the returned ops point into n's storage for that GPU. */
void gs_mig_nvml_ops(struct gs_mig_nvml *n, int index, struct gs_mig_ops *ops);

#endif
