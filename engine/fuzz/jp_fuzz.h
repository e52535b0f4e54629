/*
 * jp_fuzz.h - what the JMESPath targets do with one expression: compile it
 * in Kyverno mode and in plain mode, evaluate it on a document, and dump
 * the result as gavel prints it (jp_dump), checking that the dump is JSON
 * jansson reads back.
 */
#ifndef GV_ENGINE_JP_FUZZ_H
#define GV_ENGINE_JP_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>

#include "common/fuzz/fuzz.h"
#include "engine/jmespath.h"

/* Well under the default 1,000,000, so that one input stays fast. */
#define JP_FUZZ_STEPS 100000

static void jp_fuzz_dump_check(const json_t *v)
{
	struct gv_buf b = {0};
	json_t *back;

	jp_dump(v, &b, JP_DUMP_SORT_KEYS | JP_DUMP_HTML_ESCAPE);
	back = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	/* Go prints reals below 1e21 without exponent: "999999999999999900000" */
	if (!back)
		back = json_loadb(b.data, b.len,
				  JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
	if (!back || !jp_equal(v, back)) {
		fprintf(stderr, "jp_dump output does not read back as the same value: %s\n",
			gv_buf_str(&b));
		abort();
	}
	json_decref(back);
	gv_buf_release(&b);
}

static void jp_fuzz_expr(const char *src, const json_t *doc)
{
	for (int kyverno = 1; kyverno >= 0; kyverno--) {
		struct jp_options opt = {.kyverno = kyverno, .max_steps = JP_FUZZ_STEPS};
		struct jp_error e = {0};
		struct jp_expr *x = jp_compile(src, &opt, &e);
		json_t *v;

		if (!x) {
			jp_error_kind_name(e.kind);
			continue;
		}
		jp_source(x);
		v = jp_eval(x, doc, &e);
		if (v) {
			jp_fuzz_dump_check(v);
			json_decref(v);
		}
		jp_free(x);
	}
}

#endif
