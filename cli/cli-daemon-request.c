/* Shared plumbing of the daemon verbs (cli-daemon-request.h): one request with the CLI's error
 * reporting, JSON printing, and lenient reads of reply fields. */
#include "cli-daemon-request.h"

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

int verb_request(const char *verb, const char *socket, const char *method, const char *path,
                 const json_t *body, json_t **reply)
{
  gs_error_t err = NULL;
  struct daemon_client *c = daemon_client_new(socket, &err);
  if (!c)
    return cli_fail(verb, &err);
  int r = daemon_client_request(c, method, path, body, reply, NULL, &err);
  daemon_client_free(c);
  if (r < 0)
    return cli_fail(verb, &err);
  return CLI_OK;
}

int verb_request_waiting(const char *verb, const char *socket, const char *method, const char *path,
                         const json_t *body, long timeout_ms, json_t **reply, long *http_status)
{
  gs_error_t err = NULL;
  struct daemon_client *c = daemon_client_new(socket, &err);
  if (!c)
    return cli_fail(verb, &err);
  daemon_client_set_timeout(c, timeout_ms);
  int r = daemon_client_request(c, method, path, body, reply, http_status, &err);
  daemon_client_free(c);
  if (r < 0)
    return cli_fail(verb, &err);
  return CLI_OK;
}

int verb_print_json(const json_t *j)
{
  if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 ||
      fputc('\n', stdout) == EOF || fflush(stdout) == EOF)
    return CLI_FAILURE;
  return CLI_OK;
}

double jnum(const json_t *o, const char *key, double dflt)
{
  const json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

const char *jstr(const json_t *o, const char *key)
{
  return json_string_value(json_object_get(o, key));
}

bool jhas_num(const json_t *o, const char *key)
{
  return json_is_number(json_object_get(o, key));
}

const struct gs_opt verb_list_entries[VERB_LIST_NOPTS] = {
  { .name = "json",
    .kind = GS_OPT_FLAG,
    .offset = offsetof(struct verb_list_opts, json),
    .help = "Print JSON (keys documented in docs/cli.md)" },
  VERB_SOCKET_ENTRY(struct verb_list_opts),
  GS_OPT_HELP_ENTRY,
};

int verb_list(const struct gs_opt_table *opts, int argc, char **argv, const char *path,
              const char *key, struct table *(*build)(const json_t *) )
{
  const char *verb = opts->verb;
  struct verb_list_opts o = { 0 };
  int r = cli_parse_options(opts, &o, argc, argv);
  if (r >= 0)
    return r;
  const char *socket = o.socket;
  bool json = o.json;
  _cleanup_json_ json_t *reply = NULL;
  if ((r = verb_request(verb, socket, "GET", path, NULL, &reply)) != CLI_OK)
    return r;
  const json_t *items = json_object_get(reply, key);
  if (!json_is_array(items)) {
    fprintf(stderr, "gpuslice: %s: daemon reply has no \"%s\" array\n", verb, key);
    return CLI_FAILURE;
  }
  if (json)
    return verb_print_json(reply);
  struct table *t = build(items);
  table_print(t, stdout);
  table_free(t);
  return fflush(stdout) == 0 ? CLI_OK : CLI_FAILURE;
}
