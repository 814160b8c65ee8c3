/* The `mig` verb's pieces: the options every subcommand shares (one table, cli/mig.c), and
 * the subcommands that act on a node's GPUs: show (mig-show.c), apply (mig-apply.c, with the
 * drain of mig-drain.c), plan --pending (mig-pending.c). */
#ifndef GS_CLI_MIG_H
#define GS_CLI_MIG_H

#include <stdbool.h>
#include <sys/types.h>

#include <gpuslice/mig-apply.h>
#include <gpuslice/mig.h>

struct mig_opts {
  const char *sub, *model, *demand, *table, *gpu_text, *pending, *node, *socket;
  double grace;
  bool json, drain;
  int gpu;            /* --gpu, -1 when not given */
  const char *layout; /* apply's operand */
};

/* Any error about what was typed or a table given: prints it, releases err, returns 2. */
int mig_input_error(gs_error_t *err);

/* Reads a comma list of [COUNTx]SIZE or [COUNTx]PROFILE items (the --demand syntax) into one
 * profile per item (the smallest that holds a SIZE), at most cap; src ("--pending") names
 * where they come from in messages. 0, or -1 with err. */
int mig_read_demands(const struct gs_mig_table *t, const char *model, const char *src,
                     const char *list, const struct gs_mig_profile **p, int cap, int *n,
                     gs_error_t *err);

int mig_show(const struct mig_opts *o);
int mig_apply(const struct mig_opts *o, const struct gs_mig_table *t);
int mig_plan_pending(const struct mig_opts *o, const struct gs_mig_table *t);

/* Opens NVML and reads GPU o->gpu (which must exist): 0, or the exit status after saying why
 * (a GPU index past the last is a usage error). */
int mig_open_gpu(const struct mig_opts *o, struct gs_mig_nvml **n, struct gs_mig_gpu *g);

/* ---- drain (mig-drain.c) ---- */

/* What the drain did, for its exit step. */
struct mig_drain {
  bool slurm_drained, k8s_cordoned;
  char node[256];
};

/* The users of what the plan takes: tenants the daemon knows (their owners' pids, names) and
 * other processes. */
#define MIG_MAX_USERS 64
struct mig_users {
  int ntenants;
  char tenant[MIG_MAX_USERS][128];
  pid_t tenant_pid[MIG_MAX_USERS];
  int nothers;
  pid_t other[MIG_MAX_USERS];
};

/* Finds who uses what the plan takes from GPU g: NVML's processes there, each given to the
 * daemon's tenant it descends from (when a daemon answers), and on a whole GPU the tenants
 * the daemon lists on it. */
void mig_find_users(const struct mig_opts *o, const struct gs_mig_gpu *g,
                    const struct gs_mig_plan *plan, struct mig_users *u);
/* "tenant 'a' (pid 12), process 345": for messages. */
void mig_users_text(const struct mig_users *u, char *buf, size_t len);
/* Whether prog is an executable on PATH; runs argv (found on PATH), its standard output in
 * out (NULL: thrown away): its exit status, or -1. */
bool mig_on_path(const char *prog);
int mig_run_tool(const char *const argv[], char *out, size_t len);
/* Cordons the node where Slurm or Kubernetes runs it (each skipped, and said, when absent). */
void mig_cordon(const struct mig_opts *o, struct mig_drain *d);
/* The exit step: gives back what mig_cordon took. Runs whatever happened in between. */
void mig_uncordon(struct mig_drain *d);
/* Stops the users: suspended where that can be done (the suspend hook), else SIGTERM, then
 * SIGKILL after o->grace seconds, waiting until NVML shows none of them on what the plan
 * takes. 0, or -1 with err naming those left. */
int mig_stop_users(const struct mig_opts *o, const struct gs_mig_ops *ops,
                   const struct gs_mig_plan *plan, const struct mig_users *u, gs_error_t *err);

#endif
