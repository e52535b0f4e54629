/*
 * Golden tests for the CEL libraries (engine/cel/): runs every block of
 * engine/cel/testdata/lib.test (jq's block style, see the file header).
 * Run from the repository root.
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
#include "engine/cel/cel.h"

#include "common/banned.h"

#define GOLDEN_FILE "engine/cel/testdata/lib.test"

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
	struct cel_parse_error perr;
	struct cel_program *p;
	struct cel_eval *ev = NULL;
	struct cel_value res, az = cel_authorizer_value();
	struct gv_buf got = {0};
	json_error_t jerr;
	json_t *data;
	bool ok = false;

	data = json_loads(input, JSON_DECODE_ANY, &jerr);
	if (!data) {
		printf("%s:%zu: bad input JSON: %s\n", GOLDEN_FILE, line, jerr.text);
		return false;
	}
	p = cel_compile(expr, strlen(expr), 0, &perr);
	if (!p) {
		gv_buf_addf(&got, "error: parse: %s", perr.msg);
	} else {
		ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
		cel_bind_json(ev, "object", data);
		cel_bind_value(ev, "authorizer", &az);
		cel_eval_run(ev, p, &res);
		if (res.kind == CEL_ERROR)
			gv_buf_addf(&got, "error: evaluation: %s", res.v.err->msg);
		else
			cel_value_format(&res, &got);
	}
	if (fail)
		ok = strncmp(gv_buf_str(&got), "error: ", 7) == 0 &&
		     strncmp(gv_buf_str(&got), want, strlen(want)) == 0;
	else
		ok = strcmp(gv_buf_str(&got), want) == 0;
	if (!ok)
		printf("%s:%zu: %s\n  expected: %s\n  got:      %s\n", GOLDEN_FILE, line, expr,
		       want, gv_buf_str(&got));
	gv_buf_release(&got);
	cel_eval_free(ev);
	cel_program_free(p);
	json_decref(data);
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
