/*
 * Regression tests for what the libFuzzer targets found in common/
 * (common/fuzz/fuzz_yaml.c, and the YAML loader under the kubeconfig and
 * message targets). Each test names the input that showed the bug; run
 * with `make SANITIZE=address,undefined test` for the leak checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "common/gv.h"
#include "common/yaml.h"

#include "common/banned.h"

/* Loads text; returns the code and, on success, the only document (new reference). */
static enum gv_code load1(const char *text, size_t len, json_t **out, struct gv_err *err)
{
	struct gv_docs docs = {0};
	enum gv_code rc = gv_yaml_load(text, len, "t.yaml", &docs, err);

	*out = NULL;
	if (!rc && docs.n == 1)
		*out = json_incref(docs.v[0].value);
	gv_docs_release(&docs);
	return rc;
}

static json_t *load_ok(const char *text)
{
	struct gv_err err = {0};
	json_t *v = NULL;

	if (load1(text, strlen(text), &v, &err) != GV_OK || !v)
		fail_msg("%s: %s", text, err.msg);
	return v;
}

/* v dumped with gv_yaml_dump must load back as an equal value. */
static void check_round_trip(json_t *v)
{
	struct gv_buf out = {0};
	struct gv_err err = {0};
	json_t *back = NULL;

	gv_yaml_dump(v, &out);
	if (load1(out.data, out.len, &back, &err) != GV_OK || !back || !json_equal(v, back))
		fail_msg("dump does not load back:\n%s\nerror: %s", gv_buf_str(&out), err.msg);
	json_decref(back);
	gv_buf_release(&out);
}

/*
 * fuzz_yaml leak-48d94ee1: a multi-line string was written through
 * json_dumps(json_string(s)) and the json_string was never released.
 */
static void test_dump_multiline_no_leak(void **state)
{
	json_t *v = json_pack("{s:s,s:[s]}", "k", "line 1\nline 2\n", "l", "a\nb");

	(void)state;
	check_round_trip(v);
	json_decref(v);
}

/*
 * gv_yaml_dump wrote strings libyaml refuses or reads differently: control
 * characters and DEL in single quotes, NEL/LS/PS (line breaks to YAML), a
 * BOM, C1 controls, document markers at the start of a line, and keys past
 * libyaml's 1024-character simple-key bound.
 */
static void test_dump_strings_load_back(void **state)
{
	static const char *const strs[] = {
	    "a\001b",
	    "a\rb",
	    "\x7f",
	    "\t",
	    "x\xc2\x85y",
	    "x\xe2\x80\xa8y",
	    "x\xe2\x80\xa9y",
	    "\xef\xbb\xbfx",
	    "x\xc2\x80y",
	    "\xef\xbf\xbe",
	    "...",
	    "--- x",
	    "... x",
	    "'quoted' \"double\" \\",
	    "tab\there",
	    "a: b",
	    "a #b",
	    "_",
	    "_1",
	};
	char *long_key = gv_xmalloc(2001);

	(void)state;
	memset(long_key, 'k', 2000);
	long_key[2000] = '\0';
	for (size_t i = 0; i < GV_ARRAY_LEN(strs); i++) {
		json_t *v = json_pack("{s:s}", "k", strs[i]);
		json_t *k = json_object();
		json_t *top = json_string(strs[i]);

		json_object_set_new(k, strs[i], json_integer(1));
		check_round_trip(v);
		check_round_trip(k);
		check_round_trip(top);
		json_decref(v);
		json_decref(k);
		json_decref(top);
	}
	{
		json_t *v =
		    json_pack("{s:{s:s},s:[{s:i}]}", long_key, "in", "x", "list", long_key, 1);

		check_round_trip(v);
		json_decref(v);
	}
	{
		/*
		 * fuzz_yaml crash-68fd0dc1 (a chainsaw test with a NUL byte in a
		 * script): a string holding "\0" was dumped up to the NUL only.
		 */
		json_t *v = json_pack("{s:s#}", "content", "exit n \0fi\n", (size_t)11);
		json_t *top = json_stringn("a\0b", 3);

		check_round_trip(v);
		check_round_trip(top);
		json_decref(v);
		json_decref(top);
	}
	free(long_key);
}

/*
 * fuzz_yaml crash-7f989563 (".inf: 1"): a key resolving to a float JSON cannot
 * hold gave json_dumps(NULL) = NULL as the key text, then a NULL dereference.
 * As a value, .inf/.nan were json_real(inf) = NULL: dropped from maps and
 * lists, or a NULL document. Kubernetes refuses such values and turns such
 * keys into "+Inf"/"-Inf"/"NaN"; "1e999" stays a string (Go's ParseFloat
 * fails on overflow).
 */
static void test_nonfinite_floats(void **state)
{
	static const char *const bad[] = {".inf\n", "- .nan\n", "k: -.Inf\n", "k: !!float .inf\n"};
	struct gv_err err = {0};
	json_t *v;

	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(bad); i++) {
		gv_err_clear(&err);
		assert_int_equal(load1(bad[i], strlen(bad[i]), &v, &err), GV_EINVAL);
		assert_non_null(strstr(err.msg, "not a JSON number"));
		assert_int_equal(err.line, 1);
	}
	v = load_ok(".inf: 1\n-.inf: 2\n.nan: 3\n");
	assert_int_equal(json_integer_value(json_object_get(v, "+Inf")), 1);
	assert_int_equal(json_integer_value(json_object_get(v, "-Inf")), 2);
	assert_int_equal(json_integer_value(json_object_get(v, "NaN")), 3);
	json_decref(v);
	v = load_ok("k: 1e999\n");
	assert_string_equal(json_string_value(json_object_get(v, "k")), "1e999");
	json_decref(v);
}

/*
 * fuzz_kubeconfig timeout-68eba372: mapping keys that are mappings were
 * turned into JSON text, so a key of a key of a key ... was escaped again at
 * each level: 28 nested "{" took minutes. Such keys are refused now, as
 * sigs.k8s.io/yaml refuses them ("invalid map key").
 */
static void test_complex_key_refused_fast(void **state)
{
	struct gv_buf b = {0};
	struct gv_err err = {0};
	json_t *v;
	time_t t0 = time(NULL);

	(void)state;
	gv_buf_adds(&b, "k: ");
	for (int i = 0; i < 28; i++)
		gv_buf_addc(&b, '{');
	for (int i = 0; i < 28; i++)
		gv_buf_addc(&b, '}');
	gv_buf_addc(&b, '\n');
	assert_int_equal(load1(b.data, b.len, &v, &err), GV_EINVAL);
	assert_non_null(strstr(err.msg, "invalid map key"));
	assert_true(time(NULL) - t0 < 5);
	gv_err_clear(&err);
	assert_int_equal(load1("? [a, b]\n: 1\n", 13, &v, &err), GV_EINVAL);
	gv_buf_release(&b);

	/* an alias of a scalar is still a fine key */
	v = load_ok("a: &k foo\n*k : 2\n");
	assert_int_equal(json_integer_value(json_object_get(v, "foo")), 2);
	json_decref(v);
}

/*
 * Aliases were expanded with json_deep_copy and no bound: 9 levels of 10
 * aliases ("billion laughs", 400 bytes) ran out of memory and time. Aliases
 * may now add at most 100000 nodes to a document, and the 512-level depth
 * bound counts through aliases.
 */
static void test_alias_expansion_bounded(void **state)
{
	struct gv_buf b = {0};
	struct gv_err err = {0};
	json_t *v;

	(void)state;
	gv_buf_adds(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
	for (int i = 1; i < 9; i++) {
		gv_buf_addf(&b, "a%d: &a%d [", i, i);
		for (int k = 0; k < 10; k++)
			gv_buf_addf(&b, "%s*a%d", k ? ", " : "", i - 1);
		gv_buf_adds(&b, "]\n");
	}
	assert_int_equal(load1(b.data, b.len, &v, &err), GV_ELIMIT);
	assert_non_null(strstr(err.msg, "aliases expand to more than"));
	gv_buf_reset(&b);

	/* each anchor nests the previous one 400 levels deeper */
	gv_err_clear(&err);
	for (int i = 0; i < 3; i++) {
		gv_buf_addf(&b, "b%d: &b%d ", i, i);
		for (int k = 0; k < 400; k++)
			gv_buf_addc(&b, '[');
		if (i)
			gv_buf_addf(&b, "*b%d", i - 1);
		for (int k = 0; k < 400; k++)
			gv_buf_addc(&b, ']');
		gv_buf_addc(&b, '\n');
	}
	assert_int_equal(load1(b.data, b.len, &v, &err), GV_ELIMIT);
	assert_non_null(strstr(err.msg, "nesting deeper than 512"));
	gv_buf_release(&b);

	/* ordinary reuse still works */
	v = load_ok("base: &b {cpu: 1, mem: 2}\nx: *b\ny: [*b, *b]\n");
	assert_true(json_equal(json_object_get(v, "x"), json_object_get(v, "base")));
	json_decref(v);
}

/*
 * fuzz_message crash-77327fbf (key "_") and crash-bc37b45d (key ".199_"): a
 * plain scalar made of underscores, or starting with one, resolved to a
 * number ("_" = 0, "_1" = 1), and so did ".199_" (0.199). go-yaml v2 only
 * reads numbers that start with a digit, a sign or a dot, and reads one
 * starting with a dot with strconv.ParseFloat, which takes an underscore
 * only between digits. Longer than 127 characters, a float was also cut to
 * its first 127.
 */
static void test_underscore_scalars(void **state)
{
	struct gv_buf b = {0};
	json_t *v = load_ok("a: _\nb: _1\nc: 1_000\nd: .199_\ne: ._5\nf: .1_5\ng: 1_0.5_0\n"
			    "h: 1e1_0\n");

	(void)state;
	assert_string_equal(json_string_value(json_object_get(v, "a")), "_");
	assert_string_equal(json_string_value(json_object_get(v, "b")), "_1");
	assert_int_equal(json_integer_value(json_object_get(v, "c")), 1000);
	assert_string_equal(json_string_value(json_object_get(v, "d")), ".199_");
	assert_string_equal(json_string_value(json_object_get(v, "e")), "._5");
	assert_true(json_real_value(json_object_get(v, "f")) == 0.15);
	assert_true(json_real_value(json_object_get(v, "g")) == 10.5);
	assert_int_equal(json_integer_value(json_object_get(v, "h")), 10000000000);
	json_decref(v);
	gv_buf_adds(&b, "k: 1");
	for (int i = 0; i < 199; i++)
		gv_buf_addc(&b, '0');
	gv_buf_adds(&b, ".5\n");
	v = load_ok(b.data);
	assert_true(json_real_value(json_object_get(v, "k")) == 1e199);
	json_decref(v);
	gv_buf_release(&b);
	v = load_ok("_: 1\n");
	assert_non_null(json_object_get(v, "_"));
	json_decref(v);
}

/*
 * The source map kept one full pointer string per node (memory = nodes x
 * depth x key length); entries now hold their parent and their own
 * segment. Positions must come out as before, escaping included.
 */
static void test_srcmap_positions(void **state)
{
	static const char text[] = "a:\n"
				   "  b/c:\n"
				   "  - x\n"
				   "  - ~y: 1\n"
				   "    z: [1, 2]\n"
				   "d: 2\n";
	struct gv_docs docs = {0};
	int line = 0, col = 0;

	(void)state;
	assert_int_equal(gv_yaml_load(text, sizeof(text) - 1, "t.yaml", &docs, NULL), GV_OK);
	assert_true(gv_srcmap_find(docs.v[0].map, "/a/b~1c/1/~0y", &line, &col));
	assert_int_equal(line, 4);
	assert_int_equal(col, 9);
	assert_true(gv_srcmap_find(docs.v[0].map, "/a/b~1c/1/z/1", &line, &col));
	assert_int_equal(line, 5);
	assert_int_equal(col, 12);
	/* nearest enclosing node */
	assert_true(gv_srcmap_find(docs.v[0].map, "/a/b~1c/0/nothing", &line, &col));
	assert_int_equal(line, 3);
	assert_int_equal(col, 5);
	assert_true(gv_srcmap_find(docs.v[0].map, "/d", &line, &col));
	assert_int_equal(line, 6);
	/* a segment that only starts like a key does not match it */
	assert_true(gv_srcmap_find(docs.v[0].map, "/dd", &line, &col));
	assert_int_equal(line, 1);
	assert_int_equal(col, 1);
	gv_docs_release(&docs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dump_multiline_no_leak),
	    cmocka_unit_test(test_dump_strings_load_back),
	    cmocka_unit_test(test_nonfinite_floats),
	    cmocka_unit_test(test_complex_key_refused_fast),
	    cmocka_unit_test(test_alias_expansion_bounded),
	    cmocka_unit_test(test_underscore_scalars),
	    cmocka_unit_test(test_srcmap_positions),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
