/*
 * Golden tests for engine/jmespath.c: runs every block of
 * engine/testdata/jmespath.test (jq's block style, see the file header) in
 * the Kyverno dialect. Run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/jmespath.h"

#include "common/banned.h"

#define GOLDEN_FILE "engine/testdata/jmespath.test"

struct lines {
	char **v;
	size_t n;
};

static void lines_split(char *text, struct lines *l)
{
	char *p = text, *nl;

	l->v = NULL;
	l->n = 0;
	while (*p) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		l->v = gv_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
		l->v[l->n++] = p;
		if (!nl)
			break;
		p = nl + 1;
	}
}

/* Runs one block; returns true when it passes, printing why when not. */
static bool run_block(size_t line, bool fail, const char *expr, const char *input, const char *want)
{
	struct jp_options opt = {.kyverno = true};
	struct gv_buf got = {0};
	struct jp_error e;
	json_error_t jerr;
	json_t *data, *expected = NULL, *res = NULL;
	struct jp_expr *x;
	bool ok = false;

	data = json_loads(input, JSON_DECODE_ANY, &jerr);
	if (!data) {
		printf("%s:%zu: bad input JSON: %s\n", GOLDEN_FILE, line, jerr.text);
		return false;
	}
	if (!fail) {
		expected = json_loads(want, JSON_DECODE_ANY, &jerr);
		if (!expected) {
			printf("%s:%zu: bad expected JSON: %s\n", GOLDEN_FILE, line, jerr.text);
			json_decref(data);
			return false;
		}
	}
	x = jp_compile(expr, &opt, &e);
	if (x)
		res = jp_eval(x, data, &e);
	if (res) {
		jp_dump(res, &got, 0);
		ok = !fail && jp_equal(res, expected);
	} else {
		gv_buf_addf(&got, "error: %s: %s", jp_error_kind_name(e.kind), e.msg);
		ok = fail && strncmp(gv_buf_str(&got), want, strlen(want)) == 0;
	}
	if (!ok)
		printf("%s:%zu: %s\n  expected: %s\n  got:      %s\n", GOLDEN_FILE, line, expr,
		       want, gv_buf_str(&got));
	gv_buf_release(&got);
	json_decref(res);
	json_decref(expected);
	json_decref(data);
	jp_free(x);
	return ok;
}

static void test_golden_file(void **state)
{
	struct gv_err err = {0};
	struct lines l;
	char *text = NULL;
	size_t i = 0, blocks = 0, failed = 0, len;

	(void)state;
	if (gv_read_file(GOLDEN_FILE, &text, &len, &err)) {
		print_error("cannot read %s (run from the repository root): %s\n", GOLDEN_FILE,
			    err.msg);
		fail();
	}
	lines_split(text, &l);
	while (i < l.n) {
		bool is_fail = false;
		size_t start;

		if (l.v[i][0] == '\0' || l.v[i][0] == '#') {
			i++;
			continue;
		}
		start = i + 1;
		if (strcmp(l.v[i], "%%FAIL") == 0) {
			is_fail = true;
			i++;
		}
		if (i + 2 >= l.n) {
			printf("%s:%zu: truncated block\n", GOLDEN_FILE, start);
			failed++;
			break;
		}
		blocks++;
		if (!run_block(start, is_fail, l.v[i], l.v[i + 1], l.v[i + 2]))
			failed++;
		i += 3;
		if (i < l.n && l.v[i][0] != '\0') {
			printf("%s:%zu: a block has exactly three lines (blank line expected)\n",
			       GOLDEN_FILE, i + 1);
			failed++;
			while (i < l.n && l.v[i][0] != '\0')
				i++;
		}
	}
	printf("%s: %zu blocks, %zu failed\n", GOLDEN_FILE, blocks, failed);
	free(l.v);
	free(text);
	assert_true(blocks > 0);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden_file),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
