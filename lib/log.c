/* The log sink and level. Formatting uses a stack buffer, never the heap, so that the
 * interposer can log from any thread of any host program. */
#include <gpuslice/log.h>
#include <gpuslice/env.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int gs_log_level = GS_LOG_WARN;

static gs_log_sink_fn log_sink;
static void *log_sink_data;

static void stderr_sink(int level, const char *line, void *data)
{
  char buf[1100];
  (void) level;
  (void) data;
  /* One write(2), so that lines from concurrent processes sharing a terminal do not interleave. */
  int n = snprintf(buf, sizeof(buf), "gpuslice: %s\n", line);
  if (n < 0)
    return;
  if ((size_t) n >= sizeof(buf)) {
    n = (int) sizeof(buf) - 1;
    buf[n - 1] = '\n';
  }
  ssize_t w = write(STDERR_FILENO, buf, (size_t) n);
  (void) w;
}

void gs_log_set_sink(gs_log_sink_fn fn, void *data)
{
  log_sink = fn;
  log_sink_data = data;
}

int gs_log_level_parse(const char *s)
{
  static const char *const names[] = { "error", "warn", "info", "debug" };
  if (!s)
    return -1;
  for (int i = 0; i < (int) (sizeof(names) / sizeof(names[0])); i++)
    if (strcasecmp(s, names[i]) == 0 || (s[0] == '0' + i && s[1] == '\0'))
      return i;
  return -1;
}

void gs_log_init_from_env(void)
{
  int level = gs_log_level_parse(gs_getenv("GPUSLICE_LOG"));
  if (level >= 0)
    gs_log_level = level;
}

void gs__log(int level, const char *file, int line, const char *fmt, ...)
{
  char msg[1024];
  int off = 0;
  va_list ap;

  if (gs_log_level >= GS_LOG_DEBUG) {
    const char *base = strrchr(file, '/');
    off = snprintf(msg, sizeof(msg), "%s:%d: ", base ? base + 1 : file, line);
    if (off < 0 || (size_t) off >= sizeof(msg))
      off = 0;
  }
  va_start(ap, fmt);
  vsnprintf(msg + off, sizeof(msg) - (size_t) off, fmt, ap);
  va_end(ap);
  if (log_sink)
    log_sink(level, msg, log_sink_data);
  else
    stderr_sink(level, msg, NULL);
}
