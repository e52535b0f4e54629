/*
 * fuzz_json.c - the JSON parser of request bodies and API responses (common/jsonparse.c)
 * against jansson: gv_json_parse() promises the values
 * json_loadb(buf, len, JSON_ALLOW_NUL) gives for a top-level object or
 * array, so on every input both must fail, or both succeed with equal
 * values. Allowed differences: nesting past GV_JSON_MAX_DEPTH
 * (jansson allows more), and a raw NUL byte right after a number or a
 * literal (`[1\0]`), which jansson 2.14's lexer skips but JSON forbids.
 * Also checks the error text has its position, and that
 * gv_json_parse_list(data, "items") agrees with gv_json_parse(): it reads
 * an object exactly when gv_json_parse() does, gives the same object
 * without an "items" array, and each span parses to that array's element;
 * and that gv_json_parse_arena() gives gv_json_parse()'s values.
 *
 * Input: the body. Seeds: the admission seeds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "admission/admission_int.h"
#include "common/json.h"
#include "common/fuzz/fuzz.h"

#include "common/banned.h"

static void check_list(const char *data, size_t size, json_t *mine)
{
	struct gv_err err = {0};
	struct gv_json_span *spans = NULL;
	size_t n = 0;
	json_t *head = gv_json_parse_list(data, size, "items", &spans, &n, &err);
	json_t *items = json_object_get(mine, "items"), *rest;

	if (!head != !json_is_object(mine)) {
		fprintf(stderr, "gv_json_parse_list %s what gv_json_parse %s: %s\n",
			head ? "reads" : "refuses", head ? "refuses" : "reads", err.msg);
		abort();
	}
	if (!head)
		return;
	if (n != (json_is_array(items) ? json_array_size(items) : 0)) {
		fprintf(stderr, "gv_json_parse_list: %zu spans for %zu items\n", n,
			json_array_size(items));
		abort();
	}
	for (size_t i = 0; i < n; i++) {
		json_t *e = NULL;
		if (data[spans[i].off] == '{' || data[spans[i].off] == '[')
			e = gv_json_parse(data + spans[i].off, spans[i].len, &err);
		else
			e = json_loadb(data + spans[i].off, spans[i].len,
				       JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!e || !json_equal(e, json_array_get(items, i))) {
			fprintf(stderr, "gv_json_parse_list: span %zu is not item %zu\n", i, i);
			abort();
		}
		json_decref(e);
	}
	rest = json_copy(mine);
	if (json_is_array(items))
		json_object_del(rest, "items");
	if (!json_equal(rest, head)) {
		fprintf(stderr, "gv_json_parse_list: the object without items differs\n");
		abort();
	}
	json_decref(rest);
	json_decref(head);
	free(spans);
}

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
	check_list((const char *)data, size, mine);
	{
		/* the arena's tree: the same values, or the same refusal */
		json_t *arena = gv_json_parse_arena((const char *)data, size, NULL);
		if (!arena != !mine || (mine && !json_equal(arena, mine))) {
			fprintf(stderr, "gv_json_parse_arena differs from gv_json_parse\n");
			abort();
		}
		gv_json_arena_release(arena);
	}
	json_decref(mine);
	json_decref(ref);
	return 0;
}
