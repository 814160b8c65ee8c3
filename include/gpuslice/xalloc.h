/* Allocation wrappers for the CLI and the daemon, where running out of memory is fatal,
 * and cleanup attributes (as crun and systemd) to free resources on every return path.
 *
 * The interposer must not use the x* wrappers: it lives in someone else's process and
 * returns an error instead of exiting. The cleanup macros are fine anywhere. */
#ifndef GS_XALLOC_H
#define GS_XALLOC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
int xasprintf(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int xvasprintf(char **out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* xvasprintf's text made one line for an error its reader prints as is: every control
 * character (DEL included) becomes repl (gs_scrub_ctl). */
char *xvasprintf_line(char repl, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

void gs__cleanup_free(void *p);
void gs__cleanup_close(int *fd);
void gs__cleanup_fclose(FILE **f);

/* Frees the variable when it goes out of scope; hand ownership away with `x = NULL`. */
#define _cleanup_free_ __attribute__((cleanup(gs__cleanup_free)))
/* Closes the descriptor when it goes out of scope, unless it is < 0. */
#define _cleanup_close_ __attribute__((cleanup(gs__cleanup_close)))
/* fcloses the stream when it goes out of scope, unless it is NULL. */
#define _cleanup_fclose_ __attribute__((cleanup(gs__cleanup_fclose)))

#endif
