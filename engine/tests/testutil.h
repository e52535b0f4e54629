/*
 * testutil.h - helpers shared by the engine's cmocka tests (conditions,
 * match, variables, policy, evaluate).
 *
 * Documents are written in two ways:
 *   J("{'a': [1, 'x']}")  JSON with ' standing for " (no JMESPath inside);
 *   Y("a: [1, x]\n")      YAML (Kubernetes resolution, see common/yaml.h),
 *                         used for policies and for anything holding
 *                         JMESPath raw strings ('') or backticks.
 *
 * Soft checks: CHECK*() record a mismatch (printed with file:line) and let
 * the test go on, so one run lists every disagreement of a table; every
 * test ends with CHECK_DONE(), which fails the test if any check failed.
 */
#ifndef GV_ENGINE_TESTUTIL_H
#define GV_ENGINE_TESTUTIL_H

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
#include "common/yaml.h"

static int tu_failed;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			print_error("%s:%d: check failed: ", __FILE__, __LINE__);                  \
			print_error(__VA_ARGS__);                                                  \
			print_error("\n");                                                         \
			tu_failed++;                                                               \
		}                                                                                  \
	} while (0)

/* String equality; NULL never equals anything. */
#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *tu_g = (got), *tu_w = (want);                                          \
		CHECK(tu_g &&tu_w && !strcmp(tu_g, tu_w),                                          \
		      "%s\n      got:  '%s'\n      want: '%s'", #got, tu_g ? tu_g : "(null)",      \
		      tu_w ? tu_w : "(null)");                                                     \
	} while (0)

/* got starts with prefix. */
#define CHECK_PREFIX(got, prefix)                                                                  \
	do {                                                                                       \
		const char *tu_g = (got), *tu_p = (prefix);                                        \
		CHECK(tu_g && !strncmp(tu_g, tu_p, strlen(tu_p)),                                  \
		      "%s\n      got:    '%s'\n      prefix: '%s'", #got, tu_g ? tu_g : "(null)",  \
		      tu_p);                                                                       \
	} while (0)

#define CHECK_INT(got, want)                                                                       \
	do {                                                                                       \
		long long tu_g = (long long)(got), tu_w = (long long)(want);                       \
		CHECK(tu_g == tu_w, "%s: got %lld, want %lld", #got, tu_g, tu_w);                  \
	} while (0)

/* JSON equality (numbers compared by value, 3 == 3.0). */
#define CHECK_JSON(got, want_text) tu_check_json((got), (want_text), #got, __FILE__, __LINE__)

#define CHECK_DONE()                                                                               \
	do {                                                                                       \
		int tu_n = tu_failed;                                                              \
		tu_failed = 0;                                                                     \
		if (tu_n)                                                                          \
			fail_msg("%d check(s) failed", tu_n);                                      \
	} while (0)

static inline json_t *tu_json(const char *s, size_t flags)
{
	char *t = gv_xstrdup(s);
	json_error_t jerr;
	json_t *j;

	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	j = json_loads(t, JSON_DECODE_ANY | flags, &jerr);
	if (!j)
		fail_msg("bad test JSON %s: %s", s, jerr.text);
	free(t);
	return j;
}

/* JSON with ' for ", new reference. */
static inline json_t *J(const char *s)
{
	return tu_json(s, 0);
}

/* Same, every number a float64 (a prepared condition operand, section 0). */
static inline json_t *JF(const char *s)
{
	return tu_json(s, JSON_DECODE_INT_AS_REAL);
}

/* One YAML document, new reference. */
static inline json_t *Y(const char *s)
{
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	json_t *v;

	if (gv_yaml_load(s, strlen(s), "test", &docs, &err) || docs.n != 1)
		fail_msg("bad test YAML (%s):\n%s", err.msg, s);
	v = json_incref(docs.v[0].value);
	gv_docs_release(&docs);
	return v;
}

/* Compact JSON text of v (sorted keys); caller frees. */
static inline char *tu_dump(const json_t *v)
{
	char *s;

	if (!v)
		return gv_xstrdup("(NULL)");
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
	return s ? s : gv_xstrdup("(unprintable)");
}

/* Deep equality where integers and reals compare by value. */
static inline int tu_json_eq(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (!a || !b || json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!tu_json_eq(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *v;

		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, k,
				    v) if (!tu_json_eq(v, json_object_get(b, k))) return 0;
		return 1;
	}
	return json_equal((json_t *)a, (json_t *)b);
}

static inline void tu_check_json(const json_t *got, const char *want_text, const char *what,
				 const char *file, int line)
{
	json_t *want = J(want_text);

	if (!tu_json_eq(got, want)) {
		char *g = tu_dump(got), *w = tu_dump(want);
		print_error("%s:%d: check failed: %s\n      got:  %s\n      want: %s\n", file, line,
			    what, g, w);
		tu_failed++;
		free(g);
		free(w);
	}
	json_decref(want);
}

#endif
