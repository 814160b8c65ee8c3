/* Comma-separated lines: the one splitter behind every CSV gpuslice reads (the MIG and
 * price tables, csv-read.c; the planner's metrics, plan/input-csv.c and input-genai.c; the
 * openb traces, trace-openb.c), and the line reader for the ones read from a stream.
 *
 * The formats differ in their quoting and in how they say where an error is ("FILE:LINE"
 * or "NAME: line N"), so the quoting is a parameter and the errors here say only what is
 * wrong: the caller prepends the place with gs_error_prepend. A record is one line; a
 * quoted field cannot span lines. */
#ifndef GS_CSV_H
#define GS_CSV_H

#include <stddef.h>
#include <stdio.h>

#include <gpuslice/error.h>

enum gs_csv_quoting {
  GS_CSV_QUOTED, /* RFC 4180: a field may be quoted, with "" for a quote inside it; a quote
                    inside an unquoted field is an error */
  GS_CSV_PLAIN,  /* no quoting: a quote is a character like any other, and each field stays
                    where it was in the line, its comma replaced by a NUL */
};

/* Splits line in place at its commas into field[0..max-1]. Returns the number of fields
 * (at least 1: an empty line is one empty field), or -1 with err: "more than MAX fields",
 * or (GS_CSV_QUOTED) "unterminated quoted field N", "text after the closing quote in field
 * N", "quote inside unquoted field N". */
int gs_csv_split(char *line, enum gs_csv_quoting q, char **field, int max, gs_error_t *err);

/* Reads the next line of f into *line (a getline buffer of *cap bytes, grown as needed),
 * without its "\n" or "\r\n". Returns 1, 0 at the end of f, or -1 with err: a read error
 * (with its errno), or "NUL byte in line", which a text file does not hold and which would
 * hide the rest of the line from every string function. */
int gs_csv_getline(FILE *f, char **line, size_t *cap, gs_error_t *err);

#endif
