/*
 * gv_json_parse_arena() (common/json.h): the same values as
 * gv_json_parse(), references into the tree harmless until the release,
 * values made meanwhile on the heap, one arena a thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/gv.h"
#include "common/json.h"

#include "common/banned.h"

/* Large enough for more than one chunk: a long array of objects with escapes. */
static char *big_text(size_t n)
{
	struct gv_buf b = {0};

	gv_buf_adds(&b, "{\"kind\":\"PodList\",\"items\":[");
	for (size_t i = 0; i < n; i++)
		gv_buf_addf(&b,
			    "%s{\"name\":\"pod-%zu\",\"n\":%zu,\"x\":1.5,\"ok\":true,"
			    "\"s\":\"a\\u00e9\\n\",\"l\":[null,false,{}]}",
			    i ? "," : "", i, i);
	gv_buf_adds(&b, "]}");
	return gv_buf_detach(&b);
}

static void test_same_values(void **state)
{
	char *text = big_text(2000);
	json_t *heap = gv_json_parse(text, strlen(text), NULL);
	json_t *arena = gv_json_parse_arena(text, strlen(text), NULL);

	assert_non_null(heap);
	assert_non_null(arena);
	assert_true(json_equal(heap, arena));
	json_decref(heap);
	gv_json_arena_release(arena);
	free(text);
}

/* Empty arrays take many times their text: the arena grows by more chunks. */
static void test_chunks(void **state)
{
	struct gv_buf b = {0};
	json_t *heap, *arena;

	gv_buf_addc(&b, '[');
	for (int i = 0; i < 3000; i++)
		gv_buf_adds(&b, i ? ",[]" : "[]");
	gv_buf_addc(&b, ']');
	heap = gv_json_parse(b.data, b.len, NULL);
	arena = gv_json_parse_arena(b.data, b.len, NULL);
	assert_true(json_equal(heap, arena));
	assert_int_equal(json_array_size(arena), 3000);
	json_decref(heap);
	gv_json_arena_release(arena);
	gv_buf_release(&b);
}

static void test_references_and_heap_values(void **state)
{
	const char text[] = "{\"a\":{\"b\":[1,2,3]},\"c\":\"text\"}";
	json_t *root = gv_json_parse_arena(text, sizeof(text) - 1, NULL);
	json_t *made = json_object(), *copy;

	assert_non_null(root);
	/* a heap value holding a value of the tree, dropped before the release */
	json_object_set(made, "b", json_object_get(json_object_get(root, "a"), "b"));
	json_object_set_new(made, "d", json_string("heap"));
	json_decref(made);
	/* a deep copy outlives the release */
	copy = json_deep_copy(json_object_get(root, "a"));
	gv_json_arena_release(root);
	assert_int_equal(json_array_size(json_object_get(copy, "b")), 3);
	json_decref(copy);
}

static void test_one_arena_a_thread(void **state)
{
	const char text[] = "[1,{\"k\":\"v\"}]";
	json_t *outer = gv_json_parse_arena(text, sizeof(text) - 1, NULL);
	json_t *inner = gv_json_parse_arena(text, sizeof(text) - 1, NULL);

	assert_non_null(outer);
	assert_non_null(inner);
	assert_true(json_equal(outer, inner));
	/* the inner tree is a heap tree: released first, the outer one stays */
	gv_json_arena_release(inner);
	assert_string_equal(json_string_value(json_object_get(json_array_get(outer, 1), "k")), "v");
	gv_json_arena_release(outer);
	/* the arena is free again */
	outer = gv_json_parse_arena(text, sizeof(text) - 1, NULL);
	assert_non_null(outer);
	gv_json_arena_release(outer);
	gv_json_arena_release(NULL);
}

static void test_errors(void **state)
{
	struct gv_err err = {0};
	const char bad[] = "{\"a\":[1,2,{\"b\":}]}";
	json_t *v = gv_json_parse_arena(bad, sizeof(bad) - 1, &err);

	assert_null(v);
	assert_non_null(strstr(err.msg, "line 1 column"));
	/* the failed parse left no arena behind */
	v = gv_json_parse_arena("[]", 2, NULL);
	assert_non_null(v);
	gv_json_arena_release(v);
}

/*
 * The string scan takes eight bytes a step: a byte that ends the plain run
 * ('"', an escape, a control, UTF-8, an invalid byte; 0x7F is plain) at
 * every position of strings of 0 to 40 bytes, each parse compared with
 * jansson's (both refuse, or the same values).
 */
static void test_string_scan(void **state)
{
	static const char *const specials[] = {"\"",	   "\\n",	   "\\u00e9", "\x01",
					       "\xc3\xa9", "\xe2\x82\xac", "\x7f",    "\xff",
					       "\xc3",	   "\\",	   "\x1f"};
	int compared = 0, refused = 0;

	(void)state;
	for (size_t len = 0; len <= 40; len++) {
		for (size_t at = 0; at <= len; at++) {
			for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
				struct gv_buf b = {0};
				json_t *mine, *theirs;

				gv_buf_adds(&b, "[\"");
				for (size_t i = 0; i < len; i++) {
					if (i == at)
						gv_buf_adds(&b, specials[k]);
					gv_buf_addc(&b, (char)('a' + i % 26));
				}
				if (at == len)
					gv_buf_adds(&b, specials[k]);
				gv_buf_adds(&b, "\",\"x\"]");
				mine = gv_json_parse(b.data, b.len, NULL);
				theirs = json_loadb(b.data, b.len, JSON_ALLOW_NUL, NULL);
				assert_true(!mine == !theirs);
				if (mine)
					assert_true(json_equal(mine, theirs));
				compared += mine != NULL;
				refused += mine == NULL;
				json_decref(mine);
				json_decref(theirs);
				gv_buf_release(&b);
			}
		}
	}
	/* both kinds met: the texts above are not all refused or all read */
	assert_true(compared > 1000);
	assert_true(refused > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_values),
	    cmocka_unit_test(test_chunks),
	    cmocka_unit_test(test_references_and_heap_values),
	    cmocka_unit_test(test_one_arena_a_thread),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_string_scan),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
