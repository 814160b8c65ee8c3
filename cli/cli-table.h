/* Aligned text tables for the verbs that print what the daemon knows (ps, gpus, top, usage),
 * and the cell formats they share: sizes, durations, percentages. Nothing here talks to the
 * daemon. */
#ifndef GS_CLI_TABLE_H
#define GS_CLI_TABLE_H

#include <stdint.h>
#include <stdio.h>

struct table;

/* A table of ncols columns. align holds one character per column: 'l' (left) or 'r' (right,
 * for numbers). headers has ncols entries; they are copied. */
struct table *table_new(int ncols, const char *align, const char *const *headers);
void table_free(struct table *t);
/* Adds a row of ncols cells (copied; NULL prints as "-"). */
void table_add(struct table *t, const char *const *cells);
int table_rows(const struct table *t);
/* Prints the header and the rows, columns two spaces apart, without trailing blanks. */
void table_print(const struct table *t, FILE *f);

/* Cell formats; each writes into buf (at least TABLE_CELL bytes) and returns it. */
#define TABLE_CELL 48
/* Bytes in binary units: "0 B", "512 B", "1.5 KiB", "8.0 GiB". */
const char *fmt_bytes(char *buf, double bytes);
/* Seconds as "12.3s", "4m05s", "2h03m", "3d04h". */
const char *fmt_seconds(char *buf, double s);
/* A share in 0..1 as a percentage: "12.5%". */
const char *fmt_share(char *buf, double share);
/* A number with up to `decimals` decimals, trailing zeros dropped: "40", "12.5". */
const char *fmt_number(char *buf, double v, int decimals);

#endif
