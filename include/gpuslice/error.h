/* Errors that carry their cause: an errno and an allocated message, as crun's
 * libcrun_error_t. A fallible function takes `gs_error_t *err`, returns < 0 (or NULL) and
 * fills *err; callers may prepend context as the error travels up, and only an edge
 * decides to print it. */
#ifndef GS_ERROR_H
#define GS_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct gs_error_s {
  int status; /* the errno at the failure site, or 0 when the cause is not a system error */
  char *msg;  /* one line, without a trailing newline (control characters become '?');
                ends with strerror(status) if status */
};
typedef struct gs_error_s *gs_error_t;

/* Fills *err with a message made from fmt and, when status is not 0, ": strerror(status)".
 * Replaces (and frees) any error already in *err. Always returns -1, so that a failure
 * site can read `return gs_make_error(err, errno, "open '%s'", path);`.
 * Never aborts: without memory it stores a static "out of memory" error instead. */
int gs_make_error(gs_error_t *err, int status, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* gs_make_error for a caller that has its own arguments as a va_list (a helper that puts
 * context around the message, with gs_error_prepend). */
int gs_make_errorv(gs_error_t *err, int status, const char *fmt, va_list ap)
  __attribute__((format(printf, 3, 0)));

/* Prepends "<context>: " to the message in *err. Returns -1. With no error in *err it
 * makes one with status 0 from the context alone. */
int gs_error_prepend(gs_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Frees *err and sets it to NULL; safe on NULL and on an empty error. */
void gs_error_release(gs_error_t *err);

/* Replaces every control character in s (below 0x20, and DEL) with repl, in place, so that a
 * message quoting what users typed or files held stays one line on any terminal. The edges
 * use it for the messages they make themselves. Returns s; NULL is left alone. libc only. */
char *gs_scrub_ctl(char *s, char repl);

/* Length of the valid UTF-8 sequence at s (at most n bytes; s[0] >= 0x80), or 0 when it is
 * not one: overlong forms, surrogates and code points past U+10FFFF are not. libc only. */
size_t gs_utf8_seq_len(const unsigned char *s, size_t n);
/* Whether the string s is valid UTF-8. */
bool gs_utf8_valid(const char *s);
/* Replaces each byte of s that is not part of valid UTF-8 with repl, in place; returns how
 * many it replaced. */
size_t gs_scrub_utf8(char *s, char repl);

#endif
