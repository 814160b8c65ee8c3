/* Level-gated logging, as redis's serverLog: GS_LOG tests the level before it evaluates
 * any argument, so a debug line costs one comparison when debug is off. Messages go to a
 * sink the edge chooses (the CLI and the interposer keep the default: one line on stderr;
 * the daemon will send them to its log). Library code never prints on its own. */
#ifndef GS_LOG_H
#define GS_LOG_H

enum gs_log_level { GS_LOG_ERROR = 0, GS_LOG_WARN, GS_LOG_INFO, GS_LOG_DEBUG };

/* The current level: messages above it are dropped unevaluated. Default GS_LOG_WARN. */
extern int gs_log_level;

/* A sink receives one formatted line, without a newline. At GS_LOG_DEBUG the line starts
 * with "file:line: ". */
typedef void (*gs_log_sink_fn)(int level, const char *line, void *data);

/* Replaces the sink; NULL restores the default (stderr, prefixed "gpuslice: "). */
void gs_log_set_sink(gs_log_sink_fn fn, void *data);

/* Parses "error", "warn", "info" or "debug" (or 0..3). Returns the level, or -1. */
int gs_log_level_parse(const char *s);

/* Sets gs_log_level from GPUSLICE_LOG when it holds a valid level; leaves it otherwise. */
void gs_log_init_from_env(void);

void gs__log(int level, const char *file, int line, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

#define GS_LOG(level, ...)                               \
  do {                                                   \
    if ((level) <= gs_log_level)                         \
      gs__log((level), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#endif
