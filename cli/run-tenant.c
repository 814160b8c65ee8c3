/* The tenant that `gpuslice run` creates for its command: the options that describe it
 * (--vram, --gpu, --name, --label, --context-reserve), the ledger made from them, and the
 * environment that tells the interposer which ledger to charge.
 *
 * Everything here is checked before anything starts: a bad value is a usage error, exit 2. */
#include "run-tenant.h"

#include <gpuslice/limits.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/compute.h>

/* --vram: bytes, or a percentage kept as millionths until a process knows the device size. */
int run_tenant_set_vram(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (gs_parse_vram_limit(arg, &t->vram_bytes, &t->vram_ppm, err) < 0)
    return gs_error_prepend(err, "--vram");
  t->vram_set = true;
  return 0;
}

int run_tenant_set_gpu(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  char *end = NULL;
  long g = strtol(arg, &end, 10);
  if (!*arg || *end || g < 0 || g >= GS_LEDGER_MAX_GPUS)
    return gs_make_error(err, 0, "--gpu: '%s' is not a GPU index (0..%d)", arg,
                         GS_LEDGER_MAX_GPUS - 1);
  t->gpu = (int) g;
  return 0;
}

int run_tenant_set_reserve(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (strcmp(arg, "0") == 0) {
    t->context_reserve = 0;
    return 0;
  }
  if (strchr(arg, '%'))
    return gs_make_error(err, 0, "--context-reserve: '%s': give a size, not a percentage", arg);
  if (gs_parse_size(arg, 0, &t->context_reserve, err) < 0)
    return gs_error_prepend(err, "--context-reserve");
  return 0;
}

int run_tenant_set_name(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  if (!gs_ledger_name_valid(arg))
    return gs_make_error(err, 0, "--name: '%s' is not a tenant name (1-63 of A-Z a-z 0-9 . _ -)",
                         arg);
  t->name = arg;
  return 0;
}

/* --label k=v: k a label name as Prometheus allows, v any UTF-8 text without a newline. */
int run_tenant_add_label(void *tenant, const char *arg, gs_error_t *err)
{
  struct run_tenant *t = tenant;
  const char *eq = strchr(arg, '=');
  if (!eq || !gs_label_key_valid(arg, (size_t) (eq - arg)) || strchr(arg, '\n'))
    return gs_make_error(err, 0, "--label: '%s' is not KEY=VALUE with KEY of A-Z a-z 0-9 _", arg);
  if (!gs_utf8_valid(eq + 1))
    return gs_make_error(err, 0, "--label: the value of '%.*s' is not valid UTF-8",
                         (int) (eq - arg), arg);
  size_t used = strlen(t->labels);
  if (used + strlen(arg) + 2 > sizeof(t->labels))
    return gs_make_error(err, 0, "--label: labels exceed %zu bytes", sizeof(t->labels) - 1);
  snprintf(t->labels + used, sizeof(t->labels) - used, "%s\n", arg);
  return 0;
}

static void fill_spec(const struct run_tenant *t, struct gs_ledger_spec *spec)
{
  memset(spec, 0, sizeof(*spec));
  spec->name = t->name;
  spec->labels = t->labels;
  spec->context_reserve_bytes = t->context_reserve;
  spec->compute_ppm = t->compute_ppm;
  spec->compute_policy = t->compute_policy;
  spec->priority = t->priority;
  spec->slice_ms = t->slice_ms;
  for (int g = 0; g < GS_LEDGER_MAX_GPUS; g++) {
    bool limited = t->vram_set && (t->gpu < 0 || t->gpu == g);
    spec->limit_bytes[g] = limited && !t->vram_ppm ? t->vram_bytes : GS_LIMIT_NONE;
    spec->limit_ppm[g] = limited ? (uint32_t) t->vram_ppm : 0;
  }
}

int run_tenant_create(struct run_tenant *t, gs_error_t *err)
{
  struct gs_ledger_spec spec;
  if (!t->name) {
    snprintf(t->default_name, sizeof(t->default_name), "run-%d", (int) getpid());
    t->name = t->default_name;
  }
  t->dir = gs_ledger_state_dir();
  fill_spec(t, &spec);
  /* Trust no state dir that another user could have planted or can change. */
  if (gs_ledger_state_dir_make(t->dir, err) < 0 ||
      gs_ledger_create(t->dir, &spec, &t->ledger, err) < 0)
    return -1;
  /* Kept until the tenant ends; see gs_ledger_hold. */
  t->ledger_fd = gs_ledger_hold(t->dir, t->ledger);
  setenv("GPUSLICE_TENANT", t->name, 1);
  setenv("GPUSLICE_STATE_DIR", t->dir, 1);
  return 0;
}

void run_tenant_end(struct run_tenant *t)
{
  gs_error_t err = NULL;
  if (!t->ledger)
    return;
  gs_ledger_detach(t->ledger);
  t->ledger = NULL;
  if (t->ledger_fd >= 0)
    close(t->ledger_fd);
  t->ledger_fd = -1;
  if (gs_ledger_remove(t->dir, t->name, &err) < 0) {
    fprintf(stderr, "gpuslice: run: %s\n", err->msg);
    gs_error_release(&err);
  }
  /* Its rows on the compute boards go too, so that its limits stop gating its neighbours now
   * rather than once the rows are a minute stale. */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  gs_boards_release_tenant(t->dir, t->name, (uint64_t) ts.tv_sec * 1000000000ull + ts.tv_nsec);
}
