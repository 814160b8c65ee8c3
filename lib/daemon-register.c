/* Registering a tenant with the node daemon (include/gpuslice/daemon-register.h): the JSON body,
 * and one HTTP request over the daemon's Unix socket, with libc alone. What the daemon does with
 * it is daemon/api-tenants.c's; the CLI's general client (libcurl, jansson) is cli/'s. */
#include <gpuslice/daemon-register.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <gpuslice/daemon-paths.h>
#include <gpuslice/limits.h>
#include <gpuslice/tenant-ledger.h>

/* The daemon's replies to these two requests are a tenant's JSON or an error: far below this. */
#define REPLY_MAX (256u << 10)

/* s as a JSON string: control characters as \u00XX, the rest of UTF-8 as is. */
static void json_str(FILE *f, const char *s)
{
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

struct label_out {
  FILE *f;
  bool first;
};

static void label(const char *key, const char *value, void *data)
{
  struct label_out *o = data;
  fputs(o->first ? "" : ", ", o->f);
  o->first = false;
  json_str(o->f, key);
  fputs(": ", o->f);
  json_str(o->f, value);
}

static void pct_or_null(FILE *f, const char *key, uint32_t ppm)
{
  if (ppm)
    fprintf(f, ", \"%s\": %.4f", key, ppm / 10000.0);
  else
    fprintf(f, ", \"%s\": null", key);
}

char *gs_daemon_reg_body(const struct gs_daemon_reg *reg)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  fputs("{\"name\": ", f);
  json_str(f, reg->name);
  fprintf(f, reg->pid > 0 ? ", \"pid\": %ld" : ", \"pid\": null", reg->pid);
  fputs(", \"state_dir\": ", f);
  if (reg->state_dir)
    json_str(f, reg->state_dir);
  else
    fputs("null", f);
  fputs(", \"labels\": ", f);
  if (reg->labels) {
    struct label_out o = { f, true };
    fputc('{', f);
    gs_labels_foreach(reg->labels, label, &o);
    fputc('}', f);
  } else {
    fputs("null", f);
  }
  fprintf(f, reg->gpu >= 0 ? ", \"gpu\": %d" : ", \"gpu\": null", reg->gpu);
  if (reg->vram_bytes != GS_LIMIT_NONE)
    fprintf(f, ", \"vram_bytes\": %" PRIu64, reg->vram_bytes);
  else
    fputs(", \"vram_bytes\": null", f);
  pct_or_null(f, "vram_pct", reg->vram_ppm);
  pct_or_null(f, "compute_pct", reg->compute_ppm);
  fprintf(f, ", \"compute_policy\": \"%s\", \"priority\": \"%s\"}",
          gs_compute_policy_name(reg->compute_policy), gs_priority_name(reg->priority));
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static long now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits until fd is ready for events or the deadline passes: 0, or -1 with errno. */
static int wait_fd(int fd, short events, long deadline)
{
  for (;;) {
    long left = deadline - now_ms();
    struct pollfd p = { .fd = fd, .events = events };
    if (left <= 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    int r = poll(&p, 1, (int) left);
    if (r > 0)
      return 0;
    if (r == 0)
      errno = ETIMEDOUT;
    if (r == 0 || errno != EINTR)
      return -1;
  }
}

static int connect_to(const char *socket_path, gs_error_t *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen(socket_path) >= sizeof(sa.sun_path))
    return gs_make_error(err, ENAMETOOLONG, "no daemon at %s", socket_path);
  memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return gs_make_error(err, errno, "socket");
  if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 && errno != EINPROGRESS &&
      errno != EAGAIN) {
    int e = errno;
    close(fd);
    return gs_make_error(err, e, "no daemon at %s", socket_path);
  }
  return fd;
}

static int send_all(int fd, const char *buf, size_t len, long deadline)
{
  while (len) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(fd, POLLOUT, deadline) < 0)
        return -1;
      continue;
    }
    if (n < 0)
      return -1;
    buf += n;
    len -= (size_t) n;
  }
  return 0;
}

/* Reads the whole reply (the daemon closes the connection after it) into a malloc'd string. */
static char *recv_all(int fd, long deadline)
{
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  while (buf) {
    if (len + 1 == cap) {
      char *b = cap >= REPLY_MAX ? NULL : realloc(buf, cap * 2);
      if (!b)
        break;
      buf = b;
      cap *= 2;
    }
    ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
    if (n > 0) {
      len += (size_t) n;
      continue;
    }
    if (n == 0) {
      buf[len] = '\0';
      return buf;
    }
    if ((errno != EAGAIN && errno != EINTR) || wait_fd(fd, POLLIN, deadline) < 0)
      break;
  }
  free(buf);
  return NULL;
}

/* The reply's {"error": "..."} text, its escapes undone, into out; "HTTP <status>" if none. */
static void reply_error(const char *reply, int status, char *out, size_t n)
{
  const char *body = strstr(reply, "\r\n\r\n"), *p = body ? strstr(body, "\"error\"") : NULL;
  size_t k = 0;
  p = p ? strchr(p + 7, '"') : NULL;
  if (!p) {
    snprintf(out, n, "HTTP %d", status);
    return;
  }
  for (p++; *p && *p != '"' && k + 1 < n; p++) {
    if (*p == '\\' && p[1])
      p++;
    out[k++] = *p;
  }
  out[k] = '\0';
}

/* One request; returns the HTTP status, with the whole reply in *reply (free it), or -1 with
 * err when no daemon answered it. */
static int request(const char *socket_path, const char *method, const char *path, const char *body,
                   long timeout_ms, char **reply, gs_error_t *err)
{
  long deadline = now_ms() + timeout_ms;
  char *req = NULL;
  int status = 0, fd;
  *reply = NULL;
  if (gs_daemon_socket_dir_check(socket_path, false, err) < 0)
    return -1;
  if ((fd = connect_to(socket_path, err)) < 0)
    return -1;
  size_t blen = body ? strlen(body) : 0;
  int rlen = asprintf(&req,
                      "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                      method, path, blen, body ? body : "");
  if (rlen < 0) {
    close(fd);
    return gs_make_error(err, ENOMEM, "request");
  }
  /* A non-blocking connect to a Unix socket completes at once or fails: wait for it anyway. */
  if (wait_fd(fd, POLLOUT, deadline) < 0 || send_all(fd, req, (size_t) rlen, deadline) < 0 ||
      !(*reply = recv_all(fd, deadline))) {
    int e = errno;
    free(req);
    close(fd);
    return gs_make_error(err, e, "no daemon at %s", socket_path);
  }
  free(req);
  close(fd);
  if (sscanf(*reply, "HTTP/1.%*d %d", &status) != 1 || status < 100) {
    free(*reply);
    *reply = NULL;
    return gs_make_error(err, 0, "no daemon at %s: the reply is not HTTP", socket_path);
  }
  return status;
}

int gs_daemon_register(const char *socket, const struct gs_daemon_reg *reg, long timeout_ms,
                       gs_error_t *err)
{
  char *body = gs_daemon_reg_body(reg), *reply = NULL, why[512];
  if (!body)
    return gs_make_error(err, ENOMEM, "register with the daemon");
  int status = request(socket, "POST", "/v1/tenants", body, timeout_ms, &reply, err);
  free(body);
  if (status < 0)
    return GS_DAEMON_ABSENT;
  if (status / 100 == 2) {
    free(reply);
    return 0;
  }
  reply_error(reply, status, why, sizeof(why));
  free(reply);
  return gs_make_error(err, 0, "register with the daemon: %s", gs_scrub_ctl(why, '?'));
}

int gs_daemon_unregister(const char *socket, const char *name, int exit_status, long timeout_ms,
                         gs_error_t *err)
{
  char path[GS_LEDGER_NAME_MAX + 32], *reply = NULL, why[512];
  /* A tenant's name needs no escaping in a path: A-Z a-z 0-9 . _ - only. */
  if (!gs_ledger_name_valid(name))
    return gs_make_error(err, 0, "'%s' is not a tenant name", name);
  snprintf(path, sizeof(path), "/v1/tenants/%s?exit=%d", name, exit_status & 0xff);
  int status = request(socket, "DELETE", path, NULL, timeout_ms, &reply, err);
  if (status < 0)
    return -1;
  if (status / 100 == 2) {
    free(reply);
    return 0;
  }
  reply_error(reply, status, why, sizeof(why));
  free(reply);
  return gs_make_error(err, 0, "%s", gs_scrub_ctl(why, '?'));
}
