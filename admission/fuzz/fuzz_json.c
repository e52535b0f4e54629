/*
 * fuzz_json.c - the JSON parser of request bodies and API responses (common/jsonparse.c)
 * against jansson: gv_json_parse() promises the values
 * json_loadb(buf, len, JSON_ALLOW_NUL) gives for a top-level object or
 * array, so on every input both must fail, or both succeed with equal
 * values. Allowed differences: nesting past GV_JSON_MAX_DEPTH
 * (jansson allows more), and a raw NUL byte right after a number or a
 * literal (`[1\0]`), which jansson 2.14's lexer skips but JSON forbids.
 * Also checks the error text has its position.
 *
 * Input: the body. Seeds: the admission seeds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "admission/admission_int.h"
#include "common/fuzz/fuzz.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gv_err err = {0};
	json_error_t jerr;
	json_t *mine, *ref;

	fuzz_init();
	mine = gv_json_parse((const char *)data, size, &err);
	ref = json_loadb((const char *)data, size, JSON_ALLOW_NUL, &jerr);
	if (!mine && !strstr(err.msg, " at line ")) {
		fprintf(stderr, "error without a position: %s\n", err.msg);
		abort();
	}
	if (!mine && ref && strncmp(err.msg, "nesting too deep", 16) && !memchr(data, 0, size)) {
		fprintf(stderr, "gv_json_parse refuses what jansson reads: %s\n", err.msg);
		abort();
	}
	if (mine && !ref) {
		fprintf(stderr, "gv_json_parse reads what jansson refuses: %s\n", jerr.text);
		abort();
	}
	if (mine && ref && !json_equal(mine, ref)) {
		char *a = json_dumps(mine, JSON_ENCODE_ANY), *b = json_dumps(ref, JSON_ENCODE_ANY);

		fprintf(stderr, "values differ:\n  gv_json_parse: %s\n  jansson: %s\n", a, b);
		abort();
	}
	json_decref(mine);
	json_decref(ref);
	return 0;
}
