/*
 * YAML scalars, keys and numbers as the loader resolves them (common/yaml.h):
 * the spellings plain_is_text() lets through without the full resolution,
 * the keys whose text is taken from the parser's event, and
 * gv_yaml_load_reals() / gv_json_parse_reals() against the values of
 * gv_yaml_load() / gv_json_parse() with their integers made real.
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
#include "common/yaml.h"

#include "common/banned.h"

/* The only document of text (new reference); fails the test on an error. */
static json_t *load_with(const char *text, bool reals)
{
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	enum gv_code rc = reals ? gv_yaml_load_reals(text, strlen(text), "t.yaml", -1, &docs, &err)
				: gv_yaml_load(text, strlen(text), "t.yaml", &docs, &err);
	json_t *v;

	if (rc || docs.n != 1)
		fail_msg("%s: %s (%zu documents)", text, err.msg, docs.n);
	assert_true(docs.reals == reals);
	v = json_incref(docs.v[0].value);
	gv_docs_release(&docs);
	return v;
}

/* Compact JSON text of v (caller frees). */
static char *text_of(const json_t *v)
{
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
}

/* A copy of v with every integer a real, as load_resource_prepare() makes it. */
static json_t *to_reals(const json_t *v)
{
	if (json_is_integer(v))
		return json_real((double)json_integer_value(v));
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *c;
		json_object_foreach((json_t *)v, k, c)
		{
			json_object_set_new(o, k, to_reals(c));
		}
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c)
		{
			json_array_append_new(a, to_reals(c));
		}
		return a;
	}
	return json_incref((json_t *)v);
}

struct scalar_case {
	const char *yaml; /* the scalar as written */
	const char *json; /* the value it loads as, compact JSON */
};

/*
 * Values and keys: the YAML 1.1 spellings, their near misses (longer, other
 * case, a first character that starts a spelling), numbers, quoted forms.
 */
static const struct scalar_case cases[] = {
    {"~", "null"},
    {"null", "null"},
    {"Null", "null"},
    {"NULL", "null"},
    {"nULL", "\"nULL\""},
    {"nullx", "\"nullx\""},
    {"true", "true"},
    {"True", "true"},
    {"TRUE", "true"},
    {"tRUE", "\"tRUE\""},
    {"truer", "\"truer\""},
    {"yes", "true"},
    {"Yes", "true"},
    {"YES", "true"},
    {"yess", "\"yess\""},
    {"y", "true"},
    {"Y", "true"},
    {"on", "true"},
    {"On", "true"},
    {"ON", "true"},
    {"oN", "\"oN\""},
    {"false", "false"},
    {"False", "false"},
    {"FALSE", "false"},
    {"falsey", "\"falsey\""},
    {"no", "false"},
    {"No", "false"},
    {"NO", "false"},
    {"n", "false"},
    {"N", "false"},
    {"off", "false"},
    {"Off", "false"},
    {"OFF", "false"},
    {"offset", "\"offset\""},
    {"namespace", "\"namespace\""},
    {"nginx", "\"nginx\""},
    {"tcp", "\"tcp\""},
    {"Always", "\"Always\""},
    {"apps/v1", "\"apps/v1\""},
    {"ghcr.io/acme/worker@sha256:0f3c2b", "\"ghcr.io/acme/worker@sha256:0f3c2b\""},
    {"_1", "\"_1\""},
    {"0", "0"},
    {"17", "17"},
    {"-17", "-17"},
    {"+17", "17"},
    {"017", "15"},
    {"0o17", "15"},
    {"0x1F", "31"},
    {"0b101", "5"},
    {"1_000", "1000"},
    {"1.5", "1.5"},
    {"2.0", "2"},
    {"1e3", "1000"},
    {".5", "0.5"},
    {"-0.0", "0"},
    {"1.2.3", "\"1.2.3\""},
    {"100m", "\"100m\""},
    {"512Mi", "\"512Mi\""},
    {"9223372036854775807", "9223372036854775807"},
    {"'yes'", "\"yes\""},
    {"\"123\"", "\"123\""},
    {"!!str true", "\"true\""},
    {"!!int 12", "12"},
    {"''", "\"\""},
};

static void test_scalar_values(void **state)
{
	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		char *doc = gv_xasprintf("v: %s\n", cases[i].yaml);
		json_t *v = load_with(doc, false);
		char *got = text_of(json_object_get(v, "v"));

		if (strcmp(got, cases[i].json))
			fail_msg("%s: got %s, want %s", cases[i].yaml, got, cases[i].json);
		free(got);
		json_decref(v);
		free(doc);
	}
}

/* A key's text: the value's text, a string as it is. */
static void test_scalar_keys(void **state)
{
	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		char *doc = gv_xasprintf("%s: v\n", cases[i].yaml);
		json_t *v = load_with(doc, false),
		       *want = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		const char *key;
		json_t *val;
		char *text = json_is_string(want)
				 ? gv_xstrdup(json_string_value(want))
				 : json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT);

		assert_int_equal(json_object_size(v), 1);
		json_object_foreach(v, key, val)
		{
			if (strcmp(key, text))
				fail_msg("key %s: got \"%s\", want \"%s\"", cases[i].yaml, key,
					 text);
		}
		free(text);
		json_decref(want);
		json_decref(v);
		free(doc);
	}
}

/* Keys taken from the event keep what the value path gave: anchors, NUL bytes, duplicates. */
static void test_key_forms(void **state)
{
	json_t *v;
	char *got;

	(void)state;
	v = load_with("&k name: a\nother: *k\nnamespace: x\nnamespace: z\n\"a\\0b\": c\n", false);
	got = text_of(v);
	assert_string_equal(got,
			    "{\"a\":\"c\",\"name\":\"a\",\"namespace\":\"z\",\"other\":\"name\"}");
	free(got);
	json_decref(v);
	v = load_with("? |\n  block\n: 1\n'single': 2\n", false);
	got = text_of(v);
	assert_string_equal(got, "{\"block\\n\":1,\"single\":2}");
	free(got);
	json_decref(v);
}

/* gv_yaml_load_reals() = gv_yaml_load() with the integers made real; keys keep their text. */
static void test_load_reals(void **state)
{
	static const char *const docs[] = {
	    "a: 1\nb: [1, 2.5, -3, 0x10, '4']\nc: {d: 9223372036854775807, e: -0.0, f: 1e3}\n",
	    "a: &n 7\nb: *n\n*n : x\n1: y\n2.0: z\n",
	    "a: &m {p: 1, q: [2]}\nb: *m\n",
	    "- 1\n- two\n- 3.25\n",
	};

	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(docs); i++) {
		json_t *plain = load_with(docs[i], false), *reals = load_with(docs[i], true);
		json_t *want = to_reals(plain);
		char *w = text_of(want), *g = text_of(reals);

		if (strcmp(w, g))
			fail_msg("%s: got %s, want %s", docs[i], g, w);
		free(w);
		free(g);
		json_decref(want);
		json_decref(plain);
		json_decref(reals);
	}
	{
		json_t *v = load_with("a: &n 7\n*n : x\n", true);
		assert_true(json_is_real(json_object_get(v, "a")));
		assert_string_equal(json_string_value(json_object_get(v, "7")), "x");
		json_decref(v);
	}
}

static void test_json_parse_reals(void **state)
{
	static const char text[] =
	    "{\"a\":1,\"b\":[-2,3.5,1e2,{\"c\":9007199254740993}],\"d\":\"1\",\"e\":null}";
	json_t *plain, *reals, *want;
	char *w, *g;

	(void)state;
	plain = gv_json_parse(text, sizeof(text) - 1, NULL);
	reals = gv_json_parse_reals(text, sizeof(text) - 1, NULL);
	assert_non_null(plain);
	assert_non_null(reals);
	want = to_reals(plain);
	w = text_of(want);
	g = text_of(reals);
	assert_string_equal(g, w);
	free(w);
	free(g);
	json_decref(want);
	json_decref(plain);
	json_decref(reals);
	/* out of range stays an error */
	assert_null(gv_json_parse_reals("[99999999999999999999]", 22, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scalar_values),    cmocka_unit_test(test_scalar_keys),
	    cmocka_unit_test(test_key_forms),	     cmocka_unit_test(test_load_reals),
	    cmocka_unit_test(test_json_parse_reals),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
