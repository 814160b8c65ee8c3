/* The CLI's client for the node daemon's HTTP API (cli-daemon-client.h): libcurl over the Unix
 * socket, JSON bodies through jansson, failures carried as gs_error_t. It tells "no daemon"
 * (nothing to talk to) from "the daemon said no" (a 4xx/5xx with a JSON error), because run
 * carries on alone in the first case and the verbs report the daemon's reason in the second.
 * No verb logic lives here. */
#include <gpuslice/daemon-client.h>

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/daemon-paths.h>

#define CLIENT_DEFAULT_TIMEOUT_MS 10000L
#define CLIENT_CONNECT_TIMEOUT_MS 2000L
/* A reply larger than this is not one the daemon sends; stop reading rather than grow. */
#define CLIENT_REPLY_MAX (64u << 20)

struct daemon_client {
  char *socket_path;
  CURL *curl;
  long timeout_ms;
};

struct reply_buf {
  char *data;
  size_t len, cap;
  bool too_big;
};

void daemon_client__cleanup_json(json_t **j)
{
  if (*j)
    json_decref(*j);
}

const char *daemon_client_socket(const char *opt)
{
  if (opt && *opt)
    return opt;
  /* gs_daemon_socket_path reads GPUSLICE_SOCKET itself, so both sides agree on the order. */
  return gs_daemon_socket_path();
}

struct daemon_client *daemon_client_new(const char *socket_path, gs_error_t *err)
{
  static bool curl_ready;
  if (!curl_ready) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      gs_make_error(err, 0, "initialise libcurl");
      return NULL;
    }
    curl_ready = true;
  }
  /* A socket in a directory another user could have planted answers for that user. */
  if (gs_daemon_socket_dir_check(daemon_client_socket(socket_path), false, err) < 0)
    return NULL;
  CURL *curl = curl_easy_init();
  if (!curl) {
    gs_make_error(err, 0, "initialise libcurl: curl_easy_init failed");
    return NULL;
  }
  struct daemon_client *c = xcalloc(1, sizeof(*c));
  c->socket_path = xstrdup(daemon_client_socket(socket_path));
  c->curl = curl;
  c->timeout_ms = CLIENT_DEFAULT_TIMEOUT_MS;
  return c;
}

void daemon_client_free(struct daemon_client *c)
{
  if (!c)
    return;
  curl_easy_cleanup(c->curl);
  free(c->socket_path);
  free(c);
}

const char *daemon_client_path(const struct daemon_client *c)
{
  return c->socket_path;
}

void daemon_client_set_timeout(struct daemon_client *c, long timeout_ms)
{
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : CLIENT_DEFAULT_TIMEOUT_MS;
}

static size_t on_reply_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
  struct reply_buf *b = userdata;
  size_t n = size * nmemb;
  if (n > CLIENT_REPLY_MAX - b->len) {
    b->too_big = true;
    return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
  }
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1)
      cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
  }
  memcpy(b->data + b->len, ptr, n);
  b->len += n;
  b->data[b->len] = '\0';
  return n;
}

/* Sets the handle up for one request. curl_easy_reset keeps the connection cache, so a
 * client that sends many requests (top) reuses one connection. */
static void setup_request(struct daemon_client *c, const char *method, const char *url,
                          const char *body, struct curl_slist *headers, struct reply_buf *b)
{
  CURL *h = c->curl;
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   c->timeout_ms < CLIENT_CONNECT_TIMEOUT_MS ? c->timeout_ms
                                                             : CLIENT_CONNECT_TIMEOUT_MS);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_reply_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
  if (body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long) strlen(body));
  }
  if (strcmp(method, "GET") == 0 && !body)
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  else if (strcmp(method, "POST") != 0)
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  if (!body && strcmp(method, "POST") == 0)
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
}

/* Was there nobody to talk to (as opposed to a daemon that failed mid-answer)? */
static bool is_no_answer(CURLcode rc)
{
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_GOT_NOTHING ||
    rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR;
}

static int transfer_error(struct daemon_client *c, CURLcode rc, const struct reply_buf *b,
                          gs_error_t *err)
{
  if (b->too_big)
    return gs_make_error(err, 0, "daemon at %s: reply larger than %u MiB", c->socket_path,
                         CLIENT_REPLY_MAX >> 20);
  if (is_no_answer(rc)) {
    long os_errno = 0;
    curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &os_errno);
    /* The OS's reason (no such file, refused, permission denied) is what a user can act
     * on; curl's own text names "localhost port 80", which means nothing here. */
    if (rc == CURLE_COULDNT_CONNECT && os_errno != 0) {
      gs_make_error(err, (int) os_errno, "no daemon at %s", c->socket_path);
      return DAEMON_NO_ANSWER;
    }
    gs_make_error(err, 0, "no daemon at %s: %s", c->socket_path, curl_easy_strerror(rc));
    return DAEMON_NO_ANSWER;
  }
  return gs_make_error(err, 0, "daemon at %s: %s", c->socket_path, curl_easy_strerror(rc));
}

/* The daemon's {"error": "..."} text for a 4xx/5xx, else "HTTP <status>". */
static int refused_error(long status, const struct reply_buf *b, gs_error_t *err)
{
  _cleanup_json_ json_t *j = b->len ? json_loadb(b->data, b->len, 0, NULL) : NULL;
  const char *why = json_is_object(j) ? json_string_value(json_object_get(j, "error")) : NULL;
  if (why && *why)
    gs_make_error(err, 0, "%s", why);
  else
    gs_make_error(err, 0, "daemon answered HTTP %ld", status);
  return DAEMON_REFUSED;
}

static int parse_reply(const struct reply_buf *b, json_t **reply, gs_error_t *err)
{
  if (!reply)
    return 0;
  *reply = NULL;
  if (b->len == 0)
    return 0;
  json_error_t jerr;
  json_t *j = json_loadb(b->data, b->len, 0, &jerr);
  if (!j)
    return gs_make_error(err, 0, "daemon reply is not JSON: %s (line %d)", jerr.text, jerr.line);
  *reply = j;
  return 0;
}

int daemon_client_request(struct daemon_client *c, const char *method, const char *path,
                          const json_t *body, json_t **reply, long *http_status, gs_error_t *err)
{
  _cleanup_free_ char *url = NULL;
  _cleanup_free_ char *text = NULL;
  struct reply_buf b = { 0 };
  long status = 0;
  int ret;

  if (reply)
    *reply = NULL;
  if (http_status)
    *http_status = 0;
  if (body) {
    text = json_dumps(body, JSON_COMPACT);
    if (!text)
      return gs_make_error(err, ENOMEM, "encode request for %s %s", method, path);
  }
  xasprintf(&url, "http://localhost%s", path);
  struct curl_slist *headers = curl_slist_append(NULL, "Accept: application/json");
  if (headers && text)
    headers = curl_slist_append(headers, "Content-Type: application/json");
  if (headers)
    headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
  setup_request(c, method, url, text, headers, &b);
  CURLcode rc = curl_easy_perform(c->curl);
  curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  if (http_status)
    *http_status = status;
  if (rc != CURLE_OK)
    ret = transfer_error(c, rc, &b, err);
  else if (status < 200 || status > 299)
    ret = refused_error(status, &b, err);
  else
    ret = parse_reply(&b, reply, err);
  free(b.data);
  return ret;
}

int daemon_client_get(struct daemon_client *c, const char *path, json_t **reply, gs_error_t *err)
{
  return daemon_client_request(c, "GET", path, NULL, reply, NULL, err);
}

char *daemon_client_escape(const char *s)
{
  static const char hex[] = "0123456789ABCDEF";
  char *out = xmalloc(strlen(s) * 3 + 1);
  char *o = out;
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
      strchr("-._~", *p);
    if (plain) {
      *o++ = (char) *p;
    } else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 0xf];
    }
  }
  *o = '\0';
  return out;
}
