/* gs_error_t: creation, context prepending and release. Nothing here prints: an edge
 * reads err->msg and decides what to do with it. */
#include <gpuslice/error.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Returned when the message itself cannot be allocated, so that an error is never lost
 * and the interposer, which may not treat out-of-memory as fatal, can still report one. */
static char oom_msg[] = "out of memory";
static struct gs_error_s oom_error = { ENOMEM, oom_msg };

char *gs_scrub_ctl(char *s, char repl)
{
  for (char *p = s; p && *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = repl;
  return s;
}

size_t gs_utf8_seq_len(const unsigned char *s, size_t n)
{
  size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
  if (s[0] < 0xc2 || s[0] > 0xf4 || len > n)
    return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
      (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
    return 0;
  return len;
}

/* Walks s by UTF-8 sequences; each byte that starts none becomes repl in w (s itself, or
 * NULL to only count). Returns how many such bytes there were. */
static size_t utf8_walk(const char *s, char *w, char repl)
{
  const unsigned char *p = (const unsigned char *) s;
  size_t n = s ? strlen(s) : 0, bad = 0;
  for (size_t i = 0; i < n;) {
    size_t len = p[i] < 0x80 ? 1 : gs_utf8_seq_len(p + i, n - i);
    if (len) {
      i += len;
      continue;
    }
    bad++;
    if (w)
      w[i] = repl;
    i++;
  }
  return bad;
}

bool gs_utf8_valid(const char *s)
{
  return utf8_walk(s, NULL, 0) == 0;
}

size_t gs_scrub_utf8(char *s, char repl)
{
  return utf8_walk(s, s, repl);
}

static int store(gs_error_t *err, int status, char *msg)
{
  /* An error is one line, and messages quote what users typed and what files held: a control
   * character there (a newline above all) is shown as '?' so the promise holds for any input. */
  gs_scrub_ctl(msg, '?');
  gs_error_release(err);
  gs_error_t e = msg ? malloc(sizeof(*e)) : NULL;
  if (!e) {
    free(msg);
    *err = &oom_error;
    return -1;
  }
  e->status = status;
  e->msg = msg;
  *err = e;
  return -1;
}

int gs_make_errorv(gs_error_t *err, int status, const char *fmt, va_list ap)
{
  char *text = NULL, *msg = NULL;

  if (!err)
    return -1;
  if (vasprintf(&text, fmt, ap) < 0)
    return store(err, status, NULL);
  if (status == 0)
    return store(err, status, text);
  if (asprintf(&msg, "%s: %s", text, strerror(status)) < 0)
    msg = NULL;
  free(text);
  return store(err, status, msg);
}

int gs_make_error(gs_error_t *err, int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  gs_make_errorv(err, status, fmt, ap);
  va_end(ap);
  return -1;
}

int gs_error_prepend(gs_error_t *err, const char *fmt, ...)
{
  char *ctx = NULL, *msg = NULL;
  va_list ap;

  if (!err)
    return -1;
  va_start(ap, fmt);
  int n = vasprintf(&ctx, fmt, ap);
  va_end(ap);
  if (n < 0)
    return store(err, *err ? (*err)->status : 0, NULL);
  if (!*err)
    return store(err, 0, ctx);
  if (asprintf(&msg, "%s: %s", ctx, (*err)->msg) < 0)
    msg = NULL;
  free(ctx);
  return store(err, (*err)->status, msg);
}

void gs_error_release(gs_error_t *err)
{
  if (!err || !*err)
    return;
  if (*err != &oom_error) {
    free((*err)->msg);
    free(*err);
  }
  *err = NULL;
}
