/* x* allocation wrappers (fatal on out-of-memory) and the cleanup-attribute helpers.
 * Only the CLI and the daemon call the x* functions; see gs-xalloc.h. */
#include <gpuslice/xalloc.h>

#include <gpuslice/error.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void __attribute__((noreturn)) oom(void)
{
  static const char msg[] = "gpuslice: out of memory\n";
  ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
  (void) w;
  abort();
}

void *xmalloc(size_t size)
{
  void *p = malloc(size ? size : 1);
  if (!p)
    oom();
  return p;
}

void *xcalloc(size_t n, size_t size)
{
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    oom();
  return p;
}

void *xrealloc(void *p, size_t size)
{
  void *q = realloc(p, size ? size : 1);
  if (!q)
    oom();
  return q;
}

char *xstrdup(const char *s)
{
  char *p = strdup(s);
  if (!p)
    oom();
  return p;
}

int xvasprintf(char **out, const char *fmt, va_list ap)
{
  int n = vasprintf(out, fmt, ap);
  if (n < 0)
    oom();
  return n;
}

char *xvasprintf_line(char repl, const char *fmt, va_list ap)
{
  char *text = NULL;
  xvasprintf(&text, fmt, ap);
  return gs_scrub_ctl(text, repl);
}

int xasprintf(char **out, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = xvasprintf(out, fmt, ap);
  va_end(ap);
  return n;
}

void gs__cleanup_free(void *p)
{
  free(*(void **) p);
}

void gs__cleanup_close(int *fd)
{
  if (*fd >= 0) {
    int saved = errno; /* so that a cleanup on an error path keeps the errno being reported */
    close(*fd);
    errno = saved;
  }
}

void gs__cleanup_fclose(FILE **f)
{
  if (*f) {
    int saved = errno;
    fclose(*f);
    errno = saved;
  }
}
