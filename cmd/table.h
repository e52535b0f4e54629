/*
 * table.h - the box tables of Kyverno's CLI (`kyverno apply --table`,
 * `kyverno test`), for `gavel apply` and `gavel test`.
 */
#ifndef GV_CMD_TABLE_H
#define GV_CMD_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "common/gv.h"

/*
 * Prints cells (nrows x ncols, row-major, row 0 the header; UTF-8 strings
 * without line breaks, borrowed) to f as Kyverno does: box borders drawn
 * with U+2502 and U+2500, one space of padding, a border above and below
 * the header and below the last row. Columns are as wide as their widest
 * cell, counted in code points.
 */
void table_print(FILE *f, char *const *cells, size_t nrows, size_t ncols);

/*
 * The pieces of table_print(), for a table printed row by row: a border
 * line, and one row of ncols cells padded to the widths w (code points,
 * each at least its cell's).
 */
void table_border(FILE *f, const size_t *w, size_t ncols);
void table_row(FILE *f, char *const *cells, const size_t *w, size_t ncols);

/*
 * table_row() appended to b instead of written (a table of a million rows
 * printed through one buffer, with no allocation per row).
 */
void table_row_add(struct gv_buf *b, char *const *cells, const size_t *w, size_t ncols);

/* A copy of s with line breaks and tabs turned into spaces (owned). */
char *table_one_line(const char *s);

#endif
