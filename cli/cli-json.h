/* One JSON document on standard output, the way the planning verbs (mig, savings, prices)
 * print it: compact, one line, numbers with up to 10 significant digits. */
#ifndef GS_CLI_JSON_PRINT_H
#define GS_CLI_JSON_PRINT_H

#include <jansson.h>

/* Prints j and a newline, and releases j (NULL prints nothing). */
void json_print_compact(json_t *j);

#endif
