/*
 * table.c - Kyverno's CLI tables.
 */
#include "cmd/table.h"

#include <stdlib.h>
#include <string.h>

#include "common/gv.h"
#include "common/banned.h"

static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

void table_border(FILE *f, const size_t *w, size_t ncols)
{
	fputs("\u2502", f);
	for (size_t c = 0; c < ncols; c++) {
		for (size_t k = 0; k < w[c] + 2; k++)
			fputs("\u2500", f);
		fputs("\u2502", f);
	}
	fputc('\n', f);
}

void table_row_add(struct gv_buf *b, char *const *cells, const size_t *w, size_t ncols)
{
	static const char spaces[] = "                                ";

	gv_buf_add(b, "\u2502", 3);
	for (size_t c = 0; c < ncols; c++) {
		const char *s = cells[c];
		size_t len = 0, cols = 0, pad;

		for (; s[len]; len++)
			if (((unsigned char)s[len] & 0xC0) != 0x80)
				cols++;
		pad = w[c] > cols ? w[c] - cols : 0;
		gv_buf_add(b, " ", 1);
		gv_buf_add(b, s, len);
		while (pad) {
			size_t n = pad < sizeof(spaces) - 1 ? pad : sizeof(spaces) - 1;
			gv_buf_add(b, spaces, n);
			pad -= n;
		}
		gv_buf_add(b, " \u2502", 4);
	}
	gv_buf_add(b, "\n", 1);
}

void table_row(FILE *f, char *const *cells, const size_t *w, size_t ncols)
{
	struct gv_buf b = {0};

	/* the line built first, then written at once */
	table_row_add(&b, cells, w, ncols);
	fwrite(b.data, 1, b.len, f);
	gv_buf_release(&b);
}

void table_print(FILE *f, char *const *cells, size_t nrows, size_t ncols)
{
	size_t *w = gv_xcalloc(ncols ? ncols : 1, sizeof(size_t));

	for (size_t r = 0; r < nrows; r++)
		for (size_t c = 0; c < ncols; c++) {
			size_t l = width(cells[r * ncols + c]);
			if (l > w[c])
				w[c] = l;
		}
	for (size_t r = 0; r < nrows; r++) {
		if (r <= 1)
			table_border(f, w, ncols);
		table_row(f, cells + r * ncols, w, ncols);
	}
	table_border(f, w, ncols);
	free(w);
}

char *table_one_line(const char *s)
{
	char *o = gv_xstrdup(s);

	for (char *p = o; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	return o;
}
