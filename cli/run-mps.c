/* `gpuslice run` as an MPS client: after the tenant registered, its JSON says whether it is
 * one (its GPU is in mps mode; see daemon/mps.c), and with what settings, which go to its
 * command's environment before the command starts: CUDA_MPS_PIPE_DIRECTORY and
 * CUDA_MPS_LOG_DIRECTORY (the GPU's control daemon), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (the tenant's own share, below its server's). */
#include "run-register.h"

#include <stdio.h>
#include <stdlib.h>

#include <gpuslice/daemon-client.h>

#define MPS_TIMEOUT_MS 5000L

static void set_from(const json_t *mps, const char *key, const char *var)
{
  const json_t *v = json_object_get(mps, key);
  char num[32];
  if (json_is_string(v)) {
    setenv(var, json_string_value(v), 1);
  } else if (json_is_integer(v)) {
    snprintf(num, sizeof(num), "%lld", (long long) json_integer_value(v));
    setenv(var, num, 1);
  }
}

void run_mps_env(const char *name)
{
  gs_error_t err = NULL;
  json_t *t = NULL;
  char *path = NULL, *esc = daemon_client_escape(name);
  struct daemon_client *c = daemon_client_new(daemon_client_socket(NULL), &err);
  if (c && esc && asprintf(&path, "/v1/tenants/%s", esc) > 0) {
    daemon_client_set_timeout(c, MPS_TIMEOUT_MS);
    if (daemon_client_get(c, path, &t, &err) < 0)
      GS_LOG(GS_LOG_WARN, "run: read tenant '%s' back: %s", name, err->msg);
  }
  const json_t *mps = json_object_get(t, "mps");
  if (json_is_object(mps)) {
    set_from(mps, "pipe_directory", "CUDA_MPS_PIPE_DIRECTORY");
    set_from(mps, "log_directory", "CUDA_MPS_LOG_DIRECTORY");
    set_from(mps, "active_thread_percentage", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    set_from(mps, "pinned_device_mem_limit", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  }
  json_decref(t);
  free(path);
  free(esc);
  daemon_client_free(c);
  gs_error_release(&err);
}
