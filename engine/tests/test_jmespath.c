/*
 * Unit tests for engine/jmespath.c and engine/jp_functions.c: the Kyverno
 * dialect (unknown keys, where they propagate and where they are absorbed),
 * plain JMESPath, every Kyverno function (normal, edge and error cases),
 * the step budget and depth limits (values sharing parts, shared budgets,
 * regular-expression and wildcard work), syntax error positions, numbers,
 * jp_dump/jp_dump_max/jp_equal, the function listing and concurrent
 * evaluation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/jmespath.h"

#include "common/banned.h"

/* A case: expression, input JSON, and either the expected JSON or an error kind. */
struct jcase {
	const char *expr;
	const char *input;
	const char *want;	  /* expected result JSON, or NULL */
	enum jp_error_kind error; /* expected error kind when want is NULL */
	const char *msg;	  /* expected error message prefix (optional) */
};

static json_t *load(const char *s)
{
	json_error_t jerr;
	json_t *v = json_loads(s, JSON_DECODE_ANY, &jerr);

	if (!v)
		fail_msg("bad JSON in test: %s: %s", s, jerr.text);
	return v;
}

/* Runs the cases; prints every mismatch and fails at the end if any. */
static void run_cases(const struct jcase *cases, size_t n, bool kyverno)
{
	struct jp_options opt = {.kyverno = kyverno};
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		const struct jcase *c = &cases[i];
		struct gv_buf got = {0};
		struct jp_error e;
		json_t *data = load(c->input), *want = c->want ? load(c->want) : NULL, *res;
		bool ok;

		res = jp_search(c->expr, data, &opt, &e);
		if (res) {
			jp_dump(res, &got, 0);
			ok = want && jp_equal(res, want);
		} else {
			gv_buf_addf(&got, "error %s: %s", jp_error_kind_name(e.kind), e.msg);
			ok = !want && e.kind == c->error &&
			     (!c->msg || strncmp(e.msg, c->msg, strlen(c->msg)) == 0);
		}
		if (!ok) {
			printf("case %zu: %s\n  want: %s%s%s\n  got:  %s\n", i, c->expr,
			       c->want ? c->want : jp_error_kind_name(c->error), c->msg ? " " : "",
			       c->msg ? c->msg : "", gv_buf_str(&got));
			bad++;
		}
		gv_buf_release(&got);
		json_decref(res);
		json_decref(want);
		json_decref(data);
	}
	assert_int_equal(bad, 0);
}

#define OK(e, in, out)                                                                             \
	{                                                                                          \
		e, in, out, JP_ERR_NONE, NULL                                                      \
	}
#define ERR(e, in, kind)                                                                           \
	{                                                                                          \
		e, in, NULL, kind, NULL                                                            \
	}
#define ERRM(e, in, kind, prefix)                                                                  \
	{                                                                                          \
		e, in, NULL, kind, prefix                                                          \
	}
#define RUN(cases, ky) run_cases(cases, sizeof(cases) / sizeof(cases[0]), ky)

/* ------------------------------------------------------------------ */
/* Dialect                                                              */

#define DOC "{\"a\":{\"b\":1,\"n\":null,\"s\":\"str\",\"l\":[{\"x\":1},{\"y\":2}]},\"t\":true}"

static void test_unknown_key_propagates(void **state)
{
	static const struct jcase cases[] = {
	    ERRM("missing", DOC, JP_ERR_UNKNOWN_KEY, "Unknown key \"missing\" in path"),
	    ERRM("a.missing", DOC, JP_ERR_UNKNOWN_KEY, "Unknown key \"missing\" in path"),
	    ERRM("a.missing.deeper", DOC, JP_ERR_UNKNOWN_KEY, "Unknown key \"missing\""),
	    ERRM("a.missing[0]", DOC, JP_ERR_UNKNOWN_KEY, "Unknown key \"missing\""),
	    ERRM("a.l[0].y", DOC, JP_ERR_UNKNOWN_KEY, "Unknown key \"y\""),
	    ERR("a.\"missing\"", DOC, JP_ERR_UNKNOWN_KEY),
	    ERR("(a.missing)", DOC, JP_ERR_UNKNOWN_KEY),
	    /* expressions evaluated by functions (exprefs) propagate out */
	    ERR("sort_by(a.l, &x)", DOC, JP_ERR_UNKNOWN_KEY),
	    ERR("map(&y, a.l)", DOC, JP_ERR_UNKNOWN_KEY),
	};
	(void)state;
	RUN(cases, true);
}

static void test_unknown_key_absorbed(void **state)
{
	static const struct jcase cases[] = {
	    /*
	     * The left side of a projection, filter or flatten, and the right
	     * side of ||: Kyverno's own tests rely on these being null
	     * (kyverno-policies openshift/disallow-security-context-constraint-anyuid
	     * `element.resourceNames[]`, nginx-ingress/restrict-annotations
	     * `annotations.values(@)[]`, kyverno-cli deny-modify-platform-label-2
	     * `... || ""`; semantics doc E19).
	     */
	    OK("missing[*].x", DOC, "null"),
	    OK("missing[].x", DOC, "null"),
	    OK("missing[?x]", DOC, "null"),
	    OK("missing.*", DOC, "null"),
	    OK("missing[1:]", DOC, "null"),
	    OK("a.missing || b.missing", DOC, "null"),
	    /* || left side */
	    OK("a.missing || 'dflt'", DOC, "\"dflt\""),
	    OK("missing || a.b", DOC, "1"),
	    /* comparators, both operands */
	    OK("a.missing == null", DOC, "true"),
	    OK("null == a.missing", DOC, "true"),
	    OK("a.missing != 'x'", DOC, "true"),
	    OK("a.missing < `1`", DOC, "null"),
	    /* function arguments */
	    OK("not_null(a.missing, 'z')", DOC, "\"z\""),
	    OK("length(a.missing || `[]`)", DOC, "0"),
	    OK("type(a.missing)", DOC, "\"null\""),
	    ERRM("length(a.missing)", DOC, JP_ERR_INVALID_TYPE, "invalid type for argument 1"),
	    /* filter conditions and projection bodies */
	    OK("a.l[?y == `2`]", DOC, "[{\"y\":2}]"),
	    OK("a.l[?x].x", DOC, "[1]"),
	    OK("a.l[].y", DOC, "[2]"),
	    OK("a.l[*].y", DOC, "[2]"),
	    OK("a.*.missing", DOC, "[]"),
	    OK("a.l[0:2].y", DOC, "[2]"),
	    /* pipes, both sides */
	    OK("missing | @", DOC, "null"),
	    OK("a | missing", DOC, "null"),
	    /* multiselect list and hash */
	    OK("[a.missing, a.b]", DOC, "[null,1]"),
	    OK("{m: a.missing, b: a.b}", DOC, "{\"m\":null,\"b\":1}"),
	    /* ! and && operands */
	    OK("!(a.missing)", DOC, "true"),
	    OK("a.missing && t", DOC, "null"),
	    OK("t && a.missing", DOC, "null"),
	    OK("t && !(a.missing)", DOC, "true"),
	};
	(void)state;
	RUN(cases, true);
}

static void test_field_on_non_map(void **state)
{
	static const struct jcase cases[] = {
	    OK("a.n.x", DOC, "null"),	  /* null value */
	    OK("a.n.x.y.z", DOC, "null"), /* stays null */
	    OK("a.s.x", DOC, "null"),	  /* string */
	    OK("a.b.x", DOC, "null"),	  /* number */
	    OK("a.l.x", DOC, "null"),	  /* array */
	    OK("t.x", DOC, "null"),	  /* boolean */
	    OK("x", "null", "null"),	  /* null document */
	    OK("x", "[1,2]", "null"),	  /* array document */
	    OK("a.s[0]", DOC, "null"),	  /* index on a string */
	    OK("a.b[*]", DOC, "null"),	  /* projection on a number */
	    OK("a.n.*", DOC, "null"),	  /* value projection on null */
	    OK("[x, y]", "null", "null"), /* multiselect on null */
	    OK("a.l[5]", DOC, "null"),	  /* index out of range */
	    OK("a.l[-1].y", DOC, "2"),
	};
	(void)state;
	RUN(cases, true);
}

static void test_plain_mode(void **state)
{
	static const struct jcase cases[] = {
	    OK("a.missing", DOC, "null"),
	    OK("missing.deeper", DOC, "null"),
	    OK("a.l[0].y", DOC, "null"),
	    OK("missing[*].x", DOC, "null"),
	    OK("sort_by(a.l, &x)", "{\"a\":{\"l\":[{\"x\":2},{\"x\":1}]}}",
	       "[{\"x\":1},{\"x\":2}]"),
	    OK("sum(`[]`)", "null", "0"), /* the standard sum, not Kyverno's */
	    OK("to_string(`{\"b\":\"<\",\"a\":1}`)", "null",
	       "\"{\\\"b\\\":\\\"<\\\",\\\"a\\\":1}\""),
	    ERRM("to_upper('a')", "null", JP_ERR_UNKNOWN_FUNCTION, "unknown function: to_upper()"),
	    ERR("regex_match('a', 'a')", "null", JP_ERR_UNKNOWN_FUNCTION),
	};
	(void)state;
	RUN(cases, false);
}

static void test_standard_semantics(void **state)
{
	static const struct jcase cases[] = {
	    OK("`1` == `1.0`", "null", "true"),
	    OK("`[1]` == `[1.0]`", "null", "true"),
	    OK("`{\"a\":1}` == `{\"a\":1.0}`", "null", "true"),
	    OK("`1` == `true`", "null", "false"),
	    OK("`\"1\"` == `1`", "null", "false"),
	    OK("`2` > `1.5`", "null", "true"),
	    OK("'a' < 'b'", "null", "null"),
	    OK("length('\u2713ab')", "null", "3"),
	    OK("reverse('ab\u2713')", "null", "\"\u2713ba\""),
	    OK("avg(`[1, 2]`)", "null", "1.5"),
	    OK("ceil(`1.2`)", "null", "2"),
	    OK("floor(`-1.2`)", "null", "-2"),
	    OK("to_number('1e3')", "null", "1000"),
	    OK("to_number('x')", "null", "null"),
	    OK("max_by(`[{\"a\":1},{\"a\":3}]`, &a).a", "null", "3"),
	    OK("min_by(`[]`, &a)", "null", "null"),
	    OK("merge(`{\"a\":1}`, `{\"a\":2,\"b\":3}`)", "null", "{\"a\":2,\"b\":3}"),
	    OK("sort(`[\"b\",\"a\"]`)", "null", "[\"a\",\"b\"]"),
	    OK("join('-', `[\"a\",\"b\"]`)", "null", "\"a-b\""),
	    OK("`[[1,2],[3]]`[]", "null", "[1,2,3]"),
	    OK("`[0,1,2,3,4]`[::-2]", "null", "[4,2,0]"),
	    OK("to_string(`{\"b\":\"<\",\"a\":1}`)", "null",
	       "\"{\\\"a\\\":1,\\\"b\\\":\\\"\\\\u003c\\\"}\""),
	    ERR("`[0]`[::0]", "null", JP_ERR_INVALID_VALUE),
	    ERR("sort(`[1,\"a\"]`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("abs('x')", "null", JP_ERR_INVALID_TYPE),
	    ERR("abs(`1`, `2`)", "null", JP_ERR_INVALID_ARITY),
	    ERR("not_null()", "null", JP_ERR_INVALID_ARITY),
	    ERR("length(&a)", "null", JP_ERR_INVALID_TYPE),
	    ERR("map(a, `[]`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("&a", "null", JP_ERR_INVALID_TYPE),
	};
	(void)state;
	RUN(cases, true);
}

/* ------------------------------------------------------------------ */
/* Kyverno functions                                                    */

static void test_string_functions(void **state)
{
	static const struct jcase cases[] = {
	    OK("compare('a', 'b')", "null", "-1"),
	    OK("compare('b', 'a')", "null", "1"),
	    OK("compare('ab', 'ab')", "null", "0"),
	    OK("compare('', 'a')", "null", "-1"),
	    ERR("compare('a')", "null", JP_ERR_INVALID_ARITY),
	    ERR("compare('a', `1`)", "null", JP_ERR_INVALID_TYPE),
	    OK("equal_fold('Go', 'GO')", "null", "true"),
	    OK("equal_fold('\u00e9', '\u00c9')", "null", "true"),
	    OK("equal_fold('a', '')", "null", "false"),
	    ERR("equal_fold(`1`, 'a')", "null", JP_ERR_INVALID_TYPE),
	    OK("replace('aaaa', 'a', 'b', `2`)", "null", "\"bbaa\""),
	    OK("replace('aaaa', 'a', 'b', `-1`)", "null", "\"bbbb\""),
	    OK("replace('aaaa', 'a', 'b', `2.7`)", "null", "\"bbaa\""),
	    OK("replace('ab', '', '.', `-1`)", "null", "\".a.b.\""),
	    OK("replace('ab', 'x', '.', `-1`)", "null", "\"ab\""),
	    ERR("replace('a', 'b', 'c')", "null", JP_ERR_INVALID_ARITY),
	    ERR("replace('a', 'b', 'c', 'd')", "null", JP_ERR_INVALID_TYPE),
	    OK("replace_all('a.b.c', '.', '/')", "null", "\"a/b/c\""),
	    OK("replace_all('', '', 'x')", "null", "\"x\""),
	    ERR("replace_all('a', 'b', `null`)", "null", JP_ERR_INVALID_TYPE),
	    OK("to_upper('abc-\u00e9\u00ff')", "null", "\"ABC-\u00c9\u0178\""),
	    OK("to_lower('ABC-\u0394')", "null", "\"abc-\u03b4\""),
	    OK("to_upper('')", "null", "\"\""),
	    ERR("to_upper(`[]`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("to_lower()", "null", JP_ERR_INVALID_ARITY),
	    OK("trim('--a-b--', '-')", "null", "\"a-b\""),
	    OK("trim('\u00a1hi!', '!\u00a1')", "null", "\"hi\""),
	    OK("trim('', 'x')", "null", "\"\""),
	    OK("trim(' x ', '')", "null", "\" x \""),
	    ERR("trim('a', `1`)", "null", JP_ERR_INVALID_TYPE),
	    OK("trim_prefix('prefix-x', 'prefix-')", "null", "\"x\""),
	    OK("trim_prefix('x', '')", "null", "\"x\""),
	    OK("trim_prefix('x', 'xy')", "null", "\"x\""),
	    ERR("trim_prefix('x')", "null", JP_ERR_INVALID_ARITY),
	    OK("split('a/b', '/')", "null", "[\"a\",\"b\"]"),
	    OK("split('a', '/')", "null", "[\"a\"]"),
	    OK("split('/a/', '/')", "null", "[\"\",\"a\",\"\"]"),
	    OK("split('', '')", "null", "[]"),
	    OK("split('ab', '')", "null", "[\"a\",\"b\"]"),
	    ERR("split(`1`, '/')", "null", JP_ERR_INVALID_TYPE),
	    OK("truncate('abcdef', `2`)", "null", "\"ab\""),
	    OK("truncate('ab', `2`)", "null", "\"ab\""),
	    OK("truncate('ab', `0`)", "null", "\"\""),
	    OK("truncate('ab', `-5`)", "null", "\"\""),
	    OK("truncate('\u00e9', `1`)", "null", "\"\ufffd\""), /* bytes, as Go slices */
	    ERR("truncate('ab', '1')", "null", JP_ERR_INVALID_TYPE),
	    OK("path_canonicalize('/a/./b/../c//')", "null", "\"/a/c\""),
	    OK("path_canonicalize('.')", "null", "\".\""),
	    OK("path_canonicalize('a/..')", "null", "\".\""),
	    OK("path_canonicalize('../../x')", "null", "\"../../x\""),
	    OK("path_canonicalize('\\var\\run')", "null", "\"\\\\var\\\\run\""),
	    ERR("path_canonicalize(`1`)", "null", JP_ERR_INVALID_TYPE),
	    OK("to_boolean('True')", "null", "true"),
	    OK("to_boolean('false')", "null", "false"),
	    ERRM("to_boolean('1')", "null", JP_ERR_INVALID_VALUE,
		 "JMESPath function 'to_boolean': lowercase argument must be 'true' or 'false'"),
	    ERR("to_boolean(`false`)", "null", JP_ERR_INVALID_TYPE),
	};
	(void)state;
	RUN(cases, true);
}

static void test_regex_functions(void **state)
{
	static const struct jcase cases[] = {
	    OK("regex_match('^a.c$', 'abc')", "null", "true"),
	    OK("regex_match('b', 'abc')", "null", "true"), /* unanchored */
	    OK("regex_match('^b', 'abc')", "null", "false"),
	    OK("regex_match('^0.5$', `0.5`)", "null", "true"),
	    OK("regex_match('^100$', `100`)", "null", "true"),
	    OK("regex_match('^$', '')", "null", "true"),
	    OK("regex_match('^.$', '\u2713')", "null", "true"), /* code points */
	    /* the pattern comes from the document: compiled at evaluation */
	    OK("regex_match(p, s)", "{\"p\":\"^x+$\",\"s\":\"xxx\"}", "true"),
	    ERRM("regex_match(p, s)", "{\"p\":\"x(\",\"s\":\"x\"}", JP_ERR_RUNTIME,
		 "JMESPath function 'regex_match': error parsing regexp"),
	    ERR("regex_match('(', 'a')", "null", JP_ERR_RUNTIME),
	    ERR("regex_match('a', `null`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("regex_match(`1`, 'a')", "null", JP_ERR_INVALID_TYPE),
	    ERRM("regex_match('^(\\w+\\s?)*$', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!')",
		 "null", JP_ERR_LIMIT,
		 "JMESPath function 'regex_match': regular expression match limit"),
	    OK("regex_replace_all('([0-9]+)Mi', '512Mi', '${1}M')", "null", "\"512M\""),
	    OK("regex_replace_all('a', 'aaa', '$$')", "null", "\"$$$\""),
	    OK("regex_replace_all('(b)', 'abc', '$2')", "null", "\"ac\""),
	    OK("regex_replace_all('(b)', 'abc', '${1')", "null", "\"a${1c\""),
	    OK("regex_replace_all('', 'ab', '-')", "null", "\"-a-b-\""),
	    OK("regex_replace_all('\\d', `1.5`, 'N')", "null", "\"N.N\""),
	    OK("regex_replace_all('z', 'abc', 'y')", "null", "\"abc\""),
	    ERR("regex_replace_all('[', 'a', 'b')", "null", JP_ERR_RUNTIME),
	    ERR("regex_replace_all('a', 'b')", "null", JP_ERR_INVALID_ARITY),
	    OK("regex_replace_all_literal('(b)', 'abc', '$1')", "null", "\"a$1c\""),
	    OK("regex_replace_all_literal('x*', 'ab', '-')", "null", "\"-a-b-\""),
	    OK("regex_replace_all_literal('1', `10`, `2`)", "null", "\"20\""),
	    ERR("regex_replace_all_literal('a', `[]`, 'b')", "null", JP_ERR_INVALID_TYPE),
	    OK("pattern_match('*.example.com', 'www.example.com')", "null", "true"),
	    OK("pattern_match('?', '\u2713')", "null", "true"),
	    OK("pattern_match('a*', 'b')", "null", "false"),
	    OK("pattern_match('*', '')", "null", "true"),
	    OK("pattern_match('1?', `12`)", "null", "true"),
	    ERR("pattern_match('a')", "null", JP_ERR_INVALID_ARITY),
	    ERR("pattern_match('a', `{}`)", "null", JP_ERR_INVALID_TYPE),
	    OK("label_match(`{\"a\":\"1\"}`, `{\"a\":\"1\",\"b\":\"2\"}`)", "null", "true"),
	    OK("label_match(`{\"a\":\"1\",\"c\":\"3\"}`, `{\"a\":\"1\"}`)", "null", "false"),
	    OK("label_match(`{}`, `{\"a\":\"1\"}`)", "null", "true"),
	    ERR("label_match(`{}`, `[]`)", "null", JP_ERR_INVALID_TYPE),
	};
	(void)state;
	RUN(cases, true);
}

static void test_arithmetic_functions(void **state)
{
	static const struct jcase cases[] = {
	    OK("add(`1`, `2`)", "null", "3"),
	    OK("add(`0.1`, `0.2`)", "null", "0.30000000000000004"),
	    OK("add('1Gi', '1Gi')", "null", "\"2Gi\""),
	    OK("add('500m', '500m')", "null", "\"1\""),
	    OK("add('1k', '500')", "null", "\"1500\""),
	    OK("add('0', '1Mi')", "null", "\"1Mi\""), /* a zero takes the other format */
	    OK("add('1Ki', '1')", "null", "\"1025\""),
	    OK("add('10m', '5m')", "null", "\"15m\""), /* quantities, not minutes */
	    OK("add('1h', '1s')", "null", "\"1h0m1s\""),
	    OK("add('-1h', '30s')", "null", "\"-59m30s\""),
	    ERR("add('1h', '1m')", "null", JP_ERR_INVALID_TYPE),
	    ERR("add('x', '1')", "null", JP_ERR_INVALID_TYPE),
	    ERR("add(`null`, `1`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("add(`1`)", "null", JP_ERR_INVALID_ARITY),
	    OK("subtract(`1`, `0.5`)", "null", "0.5"),
	    OK("subtract('1Gi', '1Gi')", "null", "\"0\""),
	    OK("subtract('100m', '200m')", "null", "\"-100m\""),
	    OK("subtract('1m0s', '30s')", "null", "\"30s\""),
	    ERR("subtract('1s', `1`)", "null", JP_ERR_INVALID_TYPE),
	    OK("multiply(`2`, `3`)", "null", "6"),
	    OK("multiply('500Mi', `2`)", "null", "\"1000Mi\""),
	    OK("multiply(`2`, '512Mi')", "null", "\"1Gi\""),
	    OK("multiply('1', `0.5`)", "null", "\"500m\""),
	    OK("multiply('1m30s', `2`)", "null", "\"3m0s\""),
	    OK("multiply(`2`, '1s')", "null", "\"2s\""),
	    ERR("multiply('1s', '1s')", "null", JP_ERR_INVALID_TYPE),
	    ERR("multiply('1', '1')", "null", JP_ERR_INVALID_TYPE),
	    OK("divide(`9`, `3`)", "null", "3"),
	    OK("divide(`1`, `3`)", "null", "0.3333333333333333"),
	    OK("divide('1Gi', '512Mi')", "null", "2"),
	    OK("divide('1', '4')", "null", "0.25"),
	    OK("divide('1Gi', `2`)", "null", "\"512Mi\""),
	    OK("divide('1', `4`)", "null", "\"0\""), /* rounded down at the operands' scale */
	    OK("divide('1.0', `4`)", "null", "\"200m\""),
	    OK("divide('1m0s', '30s')", "null", "2"),
	    OK("divide('1m0s', `4`)", "null", "\"15s\""),
	    ERRM("divide('1s', '0s')", "null", JP_ERR_INVALID_VALUE,
		 "JMESPath function 'divide': Zero divisor passed"),
	    ERRM("divide('1s', `0`)", "null", JP_ERR_INVALID_VALUE,
		 "JMESPath function 'divide': Zero divisor passed"),
	    ERR("divide(`1`, '1s')", "null", JP_ERR_INVALID_TYPE),
	    ERR("divide('1Gi', '1s')", "null", JP_ERR_INVALID_TYPE),
	    OK("modulo(`7`, `-3`)", "null", "1"),
	    OK("modulo('7', '3')", "null", "\"1\""),
	    OK("modulo('5Gi', '2Gi')", "null", "\"1Gi\""),
	    ERR("modulo('1m', '3')", "null", JP_ERR_INVALID_VALUE), /* 0.001 is not an integer */
	    OK("modulo('90s', '1m0s')", "null", "\"30s\""),
	    ERRM("modulo('1500m', '1')", "null", JP_ERR_INVALID_VALUE,
		 "JMESPath function 'modulo': Non-integer argument(s) passed for modulo"),
	    ERRM("modulo('1s', '0s')", "null", JP_ERR_INVALID_VALUE,
		 "JMESPath function 'modulo': Zero divisor passed"),
	    ERR("modulo('1s', `1`)", "null", JP_ERR_INVALID_TYPE),
	    OK("sum(`[0.5, 0.25]`)", "null", "0.75"),
	    OK("sum(`[\"100m\", \"200m\", \"1\"]`)", "null", "\"1300m\""),
	    OK("sum(`[\"1h\", \"1h\"]`)", "null", "\"2h0m0s\""),
	    OK("sum(`[\"only\"]`)", "null",
	       "\"only\""), /* Kyverno returns a single element as is */
	    ERRM("sum(`[]`)", "null", JP_ERR_INVALID_VALUE,
		 "JMESPath function 'sum': at least one element in the array is required"),
	    ERRM("sum(`[1, \"1\"]`)", "null", JP_ERR_INVALID_TYPE,
		 "JMESPath function 'sum': types mismatch"),
	    ERR("sum(`{}`)", "null", JP_ERR_INVALID_TYPE),
	    OK("round(`1.005`, `2`)", "null", "1"),
	    OK("round(`1.25`, `1`)", "null", "1.3"),
	    OK("round(`-0.4`, `0`)", "null", "0"),
	    OK("round(`12`, `3`)", "null", "12"),
	    ERR("round(`1`, `-1`)", "null", JP_ERR_INVALID_VALUE),
	    ERR("round(`1`, `0.5`)", "null", JP_ERR_INVALID_VALUE),
	    ERR("round(`1`)", "null", JP_ERR_INVALID_ARITY),
	};
	(void)state;
	RUN(cases, true);
}

static void test_document_functions(void **state)
{
	static const struct jcase cases[] = {
	    OK("base64_encode('a')", "null", "\"YQ==\""),
	    OK("base64_encode('ab')", "null", "\"YWI=\""),
	    OK("base64_decode('YQ==')", "null", "\"a\""),
	    OK("base64_decode('')", "null", "\"\""),
	    OK("base64_decode(v)", "{\"v\":\"YW\\r\\nJj\"}", "\"abc\""), /* newlines ignored */
	    OK("base64_decode('/w==')", "null", "\"\ufffd\""),		 /* not UTF-8 */
	    ERR("base64_decode('YQ')", "null", JP_ERR_RUNTIME),		 /* padding required */
	    ERR("base64_decode('YQ=a')", "null", JP_ERR_RUNTIME),
	    ERR("base64_decode('Y===')", "null", JP_ERR_RUNTIME),
	    ERR("base64_decode(`1`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("base64_encode()", "null", JP_ERR_INVALID_ARITY),
	    OK("sha256('kyverno')", "null",
	       "\"6900ead2739f4d80767db3f097b8c7e352c395dac245945161cb7d5e3f8438b3\""),
	    OK("sha1('')", "null", "\"da39a3ee5e6b4b0d3255bfef95601890afd80709\""),
	    OK("md5('')", "null", "\"d41d8cd98f00b204e9800998ecf8427e\""),
	    ERR("md5(`{}`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("sha1('a', 'b')", "null", JP_ERR_INVALID_ARITY),
	    OK("parse_json('[1, {\"a\": null}]')", "null", "[1,{\"a\":null}]"),
	    OK("parse_json('12345678901234567890123')", "null", "1.2345678901234568e22"),
	    OK("parse_json('  true ')", "null", "true"),
	    ERR("parse_json('')", "null", JP_ERR_RUNTIME),
	    ERR("parse_json('[1,]')", "null", JP_ERR_RUNTIME),
	    ERR("parse_json(`{}`)", "null", JP_ERR_INVALID_TYPE),
	    OK("parse_yaml(v)", "{\"v\":\"- 1\\n- two\\n- null\\n\"}", "[1,\"two\",null]"),
	    OK("parse_yaml('key: value').key", "null", "\"value\""),
	    OK("parse_yaml(v)", "{\"v\":\"a: 1\\n---\\nb: 2\\n\"}", "{\"a\":1}"),
	    ERR("parse_yaml('{')", "null", JP_ERR_RUNTIME),
	    ERR("parse_yaml(`null`)", "null", JP_ERR_INVALID_TYPE),
	    OK("lookup(`{\"a.b\":1}`, 'a.b')", "null", "1"),
	    OK("lookup(`[1,2,3]`, `2.0`)", "null", "3"),
	    OK("lookup(`[]`, `0`)", "null", "null"),
	    ERR("lookup(`[1]`, `1.5`)", "null", JP_ERR_INVALID_VALUE),
	    ERR("lookup(`[1]`, 'a')", "null", JP_ERR_INVALID_TYPE),
	    ERR("lookup(`1`, 'a')", "null", JP_ERR_INVALID_TYPE),
	    OK("items(`{\"z\":1,\"a\":{\"b\":2}}`, 'k', 'v')", "null",
	       "[{\"k\":\"a\",\"v\":{\"b\":2}},{\"k\":\"z\",\"v\":1}]"),
	    OK("items(`[true]`, 'k', 'v')", "null", "[{\"k\":0,\"v\":true}]"),
	    OK("items(`{\"a\":1}`, 'x', 'x')", "null", "[{\"x\":1}]"),
	    OK("items(`[]`, 'k', 'v')", "null", "[]"),
	    ERR("items(`{}`, `1`, 'v')", "null", JP_ERR_INVALID_TYPE),
	    ERR("items(`null`, 'k', 'v')", "null", JP_ERR_INVALID_TYPE),
	    OK("object_from_lists(`[\"a\"]`, `[1, 2]`)", "null", "{\"a\":1}"),
	    OK("object_from_lists(`[\"a\", \"a\"]`, `[1, 2]`)", "null", "{\"a\":2}"),
	    OK("object_from_lists(`[2]`, `[\"x\"]`)", "null", "{\"2\":\"x\"}"),
	    ERR("object_from_lists(`[null]`, `[1]`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("object_from_lists(`{}`, `[]`)", "null", JP_ERR_INVALID_TYPE),
	};
	(void)state;
	RUN(cases, true);
}

static void test_misc_functions(void **state)
{
	static const struct jcase cases[] = {
	    OK("semver_compare('1.2.3', '1.2.3')", "null", "true"),
	    OK("semver_compare('1.2.3', '=1.2.3')", "null", "true"),
	    OK("semver_compare('1.2.3', '!=1.2.3')", "null", "false"),
	    OK("semver_compare('1.2.3', '>1.2.2 <=1.2.3')", "null", "true"),
	    OK("semver_compare('1.2.3-beta.1', '>1.2.3-alpha')", "null", "true"),
	    OK("semver_compare('1.2.3+build', '1.2.3')", "null", "true"),
	    OK("semver_compare('2.5.0', '1.x || 2.x')", "null", "true"),
	    OK("semver_compare('3.0.0', '1.x || 2.x')", "null", "false"),
	    OK("semver_compare('1.2.9', '<=1.2.x')", "null", "true"),
	    OK("semver_compare('1.3.0', '<=1.2.x')", "null", "false"),
	    OK("semver_compare('1.3.0', '>1.2.x')", "null", "true"),
	    OK("semver_compare('v1.2.3', '>=0.0.1')", "null", "false"), /* not semver: 0.0.0 */
	    ERR("semver_compare('1.2.3', '>=1.2')", "null", JP_ERR_RUNTIME),
	    ERR("semver_compare('1.2.3', '>=1.2.0 ||')", "null", JP_ERR_RUNTIME),
	    ERR("semver_compare('1.2.3', '=>1.2.0')", "null", JP_ERR_RUNTIME),
	    ERR("semver_compare(`1`, '1.0.0')", "null", JP_ERR_INVALID_TYPE),
	    OK("length(random('[0-9a-f]{16}'))", "null", "16"),
	    OK("regex_match('^[^a-z]{3}$', random('[^a-z]{3}'))", "null", "true"),
	    OK("regex_match('^(ab|cd)?e\\.$', random('(ab|cd)?e\\.'))", "null", "true"),
	    OK("regex_match('^\\w\\s\\d$', random('\\w\\s\\d'))", "null", "true"),
	    OK("random('^lit$')", "null", "\"lit\""),
	    ERR("random('a{2,1}')", "null", JP_ERR_RUNTIME),
	    ERR("random('(a')", "null", JP_ERR_RUNTIME),
	    ERR("random('*')", "null", JP_ERR_RUNTIME),
	    ERR("random('(?=x)')", "null", JP_ERR_RUNTIME),
	    ERR("random(`1`)", "null", JP_ERR_INVALID_TYPE),
	    ERR("random('.{1000}.{1000}.{1000}.{1000}.{1000}')", "null", JP_ERR_LIMIT),
	    ERR("random('((){1000}){1000}')", "null", JP_ERR_LIMIT),
	    OK("image_normalize('busybox@sha256:"
	       "1111111111111111111111111111111111111111111111111111111111111111')",
	       "null",
	       "\"docker.io/busybox@sha256:"
	       "1111111111111111111111111111111111111111111111111111111111111111\""),
	    OK("image_normalize('quay.io/a/b/c:v1.0_x-y')", "null", "\"quay.io/a/b/c:v1.0_x-y\""),
	    OK("image_normalize('my_reg/app')", "null", "\"docker.io/my_reg/app:latest\""),
	    OK("image_normalize('[::1]:5000/app')", "null", "\"[::1]:5000/app:latest\""),
	    ERR("image_normalize('')", "null", JP_ERR_RUNTIME),
	    ERR("image_normalize('app:')", "null", JP_ERR_RUNTIME),
	    ERR("image_normalize('app//x')", "null", JP_ERR_RUNTIME),
	    ERR("image_normalize('app@sha256:ABC')", "null", JP_ERR_RUNTIME),
	    ERR("image_normalize(`null`)", "null", JP_ERR_INVALID_TYPE),
	    OK("is_external_url('https://user@example.com:8443/x?y#z')", "null", "true"),
	    OK("is_external_url('http://172.16.0.1')", "null", "false"),
	    OK("is_external_url('http://172.32.0.1')", "null", "true"),
	    OK("is_external_url('http://169.254.169.254/latest')", "null", "false"),
	    OK("is_external_url('http://127.0.0.1')", "null", "false"),
	    OK("is_external_url('http://[2001:db8::1]/')", "null", "true"),
	    OK("is_external_url('http://[fd00::1]/')", "null", "false"),
	    OK("is_external_url('http://printer.local')", "null", "false"),
	    OK("is_external_url('http://kubernetes')", "null", "false"),
	    OK("is_external_url('/relative/path')", "null", "false"),
	    OK("is_external_url('')", "null", "false"),
	    ERR("is_external_url()", "null", JP_ERR_INVALID_ARITY),
	};
	(void)state;
	RUN(cases, true);
}

static void test_time_functions(void **state)
{
	static const struct jcase cases[] = {
	    OK("length(time_now_utc())", "null", "20"),
	    OK("time_after(time_now(), '2024-01-01T00:00:00Z')", "null", "true"),
	    ERR("time_now_utc(`1`)", "null", JP_ERR_INVALID_ARITY),
	    OK("time_add('2024-02-28T23:00:00Z', '2h')", "null", "\"2024-02-29T01:00:00Z\""),
	    OK("time_add('2024-01-01T00:00:00.9Z', '100ms')", "null", "\"2024-01-01T00:00:01Z\""),
	    OK("time_add('2024-01-01T00:00:00-07:30', '0s')", "null",
	       "\"2024-01-01T00:00:00-07:30\""),
	    ERR("time_add('2024-01-01T00:00:00Z', '')", "null", JP_ERR_RUNTIME),
	    ERR("time_add('2024-13-01T00:00:00Z', '1h')", "null", JP_ERR_RUNTIME),
	    ERR("time_add('2024-01-01T24:00:00Z', '1h')", "null", JP_ERR_RUNTIME),
	    ERR("time_add(`1`, '1h')", "null", JP_ERR_INVALID_TYPE),
	    OK("time_parse('2006-01-02T15:04:05Z07:00', '2024-06-01T10:00:00+02:00')", "null",
	       "\"2024-06-01T10:00:00+02:00\""),
	    OK("time_parse('January 2, 2006', 'March 4, 2023')", "null",
	       "\"2023-03-04T00:00:00Z\""),
	    OK("time_parse('Monday, 02-Jan-06 15:04:05 MST', 'Saturday, 04-Mar-23 20:00:01 GMT+2')",
	       "null", "\"2023-03-04T20:00:01+02:00\""),
	    OK("time_parse('2006-002', '2024-060')", "null", "\"2024-02-29T00:00:00Z\""),
	    OK("time_parse('15:04:05.000', '01:02:03.456')", "null", "\"0000-01-01T01:02:03Z\""),
	    OK("time_parse('2006-01-02 15:04:05.999999999 -0700', '2024-01-01 00:00:00.5 +0000')",
	       "null", "\"2024-01-01T00:00:00Z\""),
	    OK("time_parse('1136239445', '-1')", "null", "\"1969-12-31T23:59:59Z\""),
	    ERR("time_parse('1136239445', '1.5')", "null", JP_ERR_RUNTIME),
	    ERR("time_parse('2006-01-02', '2023-1-2')", "null", JP_ERR_RUNTIME),
	    ERR("time_parse('Jan 2', 'Foo 2')", "null", JP_ERR_RUNTIME),
	    OK("time_parse('15:04 MST', '10:00 CEST')", "null", "\"0000-01-01T10:00:00Z\""),
	    OK("time_parse('15:04 MST', '10:00 WITA')", "null", "\"0000-01-01T10:00:00Z\""),
	    ERR("time_parse('15:04 MST', '10:00 ABCD')", "null", JP_ERR_RUNTIME),
	    ERR("time_parse('15:04 MST', '10:00 Z')", "null", JP_ERR_RUNTIME),
	    ERR("time_parse('2006', '')", "null", JP_ERR_RUNTIME),
	    OK("time_utc('2024-01-01T01:00:00+01:00')", "null", "\"2024-01-01T00:00:00Z\""),
	    OK("time_utc('2024-01-01T00:00:00Z')", "null", "\"2024-01-01T00:00:00Z\""),
	    ERR("time_utc('2024-01-01 00:00:00Z')", "null", JP_ERR_RUNTIME),
	    OK("time_diff('2024-01-01T00:00:00Z', '2024-01-01T00:00:00.000001Z')", "null",
	       "\"1\u00b5s\""),
	    OK("time_diff('2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z')", "null", "\"0s\""),
	    OK("time_diff('1000-01-01T00:00:00Z', '3000-01-01T00:00:00Z')", "null",
	       "\"2562047h47m16.854775807s\""), /* saturates like Go */
	    ERR("time_diff('2024-01-01T00:00:00Z')", "null", JP_ERR_INVALID_ARITY),
	    OK("time_since('', '2024-01-01T00:00:00Z', '2024-01-01T00:00:01Z')", "null", "\"1s\""),
	    OK("time_since('Jan 2 2006', 'Jan 1 2024', 'Jan 2 2024')", "null", "\"24h0m0s\""),
	    ERR("time_since('Jan 2 2006', 'Jan 1 2024', 'bad')", "null", JP_ERR_RUNTIME),
	    OK("time_before('2024-01-01T00:00:00Z', '2024-01-01T00:00:00.1Z')", "null", "true"),
	    OK("time_before('2024-01-01T02:00:00+02:00', '2024-01-01T00:00:00Z')", "null", "false"),
	    OK("time_after('2024-01-01T02:00:01+02:00', '2024-01-01T00:00:00Z')", "null", "true"),
	    ERR("time_before('x', 'y')", "null", JP_ERR_RUNTIME),
	    OK("time_between('2024-01-01T00:00:00.5Z', '2024-01-01T00:00:00Z', "
	       "'2024-01-01T00:00:01Z')",
	       "null", "true"),
	    OK("time_between('2024-01-01T00:00:01Z', '2024-01-01T00:00:00Z', "
	       "'2024-01-01T00:00:01Z')",
	       "null", "false"),
	    ERR("time_between('2024-01-01T00:00:00Z', 'x', '2024-01-01T00:00:00Z')", "null",
		JP_ERR_RUNTIME),
	    OK("time_truncate('2024-01-01T10:17:59Z', '15m')", "null", "\"2024-01-01T10:15:00Z\""),
	    OK("time_truncate('2024-01-01T10:17:59Z', '-1h')", "null", "\"2024-01-01T10:17:59Z\""),
	    OK("time_truncate('2024-01-01T10:17:59+01:00', '24h')", "null",
	       "\"2024-01-01T01:00:00+01:00\""),
	    ERR("time_truncate('2024-01-01T10:17:59Z', '1d')", "null", JP_ERR_RUNTIME),
	    OK("time_to_cron('2024-12-31T23:59:00Z')", "null", "\"59 23 31 12 2\""),
	    OK("time_to_cron('2024-01-01T00:00:00-01:00')", "null", "\"0 1 1 1 1\""),
	    ERR("time_to_cron('')", "null", JP_ERR_RUNTIME),
	    ERR("time_to_cron(`0`)", "null", JP_ERR_INVALID_TYPE),
	};
	(void)state;
	RUN(cases, true);
}

static const char *test_cert = "-----BEGIN CERTIFICATE-----\n"
			       "MIIBqDCCAU2gAwIBAgIBBzAKBggqhkjOPQQDAjATMREwDwYDVQQDDAhnYXZlbC1j\n"
			       "YTAiGA8yMDI0MDEwMTAwMDAwMFoYDzIwMzQwMTAxMDAwMDAwWjAlMRMwEQYDVQQD\n"
			       "DApnYXZlbC10ZXN0MQ4wDAYDVQQKDAVnYXZlbDBZMBMGByqGSM49AgEGCCqGSM49\n"
			       "AwEHA0IABEshBxe6TwBwEae9JdPfVsqP6SlmJX3zmne+4uL8eZ8t0ROq8odk3Wnj\n"
			       "Tqrri3uqwvNkhHAy7r3HkeJce48/f0ijfDB6MB0GA1UdDgQWBBRVQn5vZMUL8kDO\n"
			       "WCl6b9ZCPP+wjzAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIFoDAmBgNVHREE\n"
			       "HzAdgglnYXZlbC5kZXaCCmdhdmVsLnRlc3SHBH8AAAEwEwYDVR0lBAwwCgYIKwYB\n"
			       "BQUHAwEwCgYIKoZIzj0EAwIDSQAwRgIhAMmy0YkLJJxuDdcsyzW5r/GsCVbEq3rZ\n"
			       "7UhJV0eOLFFqAiEA7F+TA6gf7k17NMJ+E1gnpDT/PZwWJr/R2LbziJl+8zA=\n"
			       "-----END CERTIFICATE-----\n";

static void test_x509_decode(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e;
	json_t *data = json_pack("{s:s}", "c", test_cert), *res;

	(void)state;
	res = jp_search("x509_decode(c)", data, &opt, &e);
	assert_non_null(res);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(res, "Subject"), "CommonName")),
	    "gavel-test");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(res, "Issuer"), "CommonName")),
	    "gavel-ca");
	assert_string_equal(json_string_value(json_object_get(res, "NotAfter")),
			    "2034-01-01T00:00:00Z");
	assert_int_equal(json_integer_value(json_object_get(res, "SerialNumber")), 7);
	assert_int_equal(json_integer_value(json_object_get(res, "PublicKeyAlgorithm")), 3);
	assert_true(json_is_false(json_object_get(res, "IsCA")));
	assert_int_equal(json_array_size(json_object_get(res, "Extensions")), 5);
	assert_true(json_is_string(json_object_get(res, "Raw")));
	assert_true(json_is_null(json_object_get(res, "EmailAddresses")));
	json_decref(res);

	/* the certificate may follow other text, as pem.Decode allows */
	json_object_set_new(data, "c", json_sprintf("junk\n%s", test_cert));
	res = jp_search("x509_decode(c).Subject.Organization[0]", data, &opt, &e);
	assert_non_null(res);
	assert_string_equal(json_string_value(res), "gavel");
	json_decref(res);

	res =
	    jp_search("x509_decode('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')",
		      data, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_RUNTIME);
	res = jp_search("x509_decode(`1`)", data, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_INVALID_TYPE);
	json_decref(data);
}

/* ------------------------------------------------------------------ */
/* Limits and errors                                                    */

static void test_step_budget(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e;
	struct gv_buf src = {0};
	json_t *data = json_array(), *res;
	int i;

	(void)state;
	for (i = 0; i < 100; i++)
		json_array_append_new(data, json_integer(i));
	/* each stage multiplies the list by ten: 10^9 elements, far beyond the default budget */
	res = jp_search("[@,@,@,@,@,@,@,@,@,@][] | [@,@,@,@,@,@,@,@,@,@][] | "
			"[@,@,@,@,@,@,@,@,@,@][] | [@,@,@,@,@,@,@,@,@,@][] | "
			"[@,@,@,@,@,@,@,@,@,@][] | [@,@,@,@,@,@,@,@,@,@][] | "
			"[@,@,@,@,@,@,@,@,@,@][] | length(@)",
			data, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	assert_non_null(strstr(e.msg, "step budget"));
	/* an explicit small budget trips on an ordinary expression */
	opt.max_steps = 50;
	res = jp_search("[*].to_string(@)", data, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	/* and lets small ones through */
	res = jp_search("length(@)", data, &opt, &e);
	assert_non_null(res);
	assert_int_equal(json_integer_value(res), 100);
	json_decref(res);
	/* sorting is charged too */
	opt.max_steps = 200;
	res = jp_search("sort(@)", data, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	/* string growth is charged: a string doubled by each stage of a pipe */
	opt.max_steps = 0;
	gv_buf_adds(&src, "'xxxxxxxxxxxxxxxx'");
	for (i = 0; i < 40; i++)
		gv_buf_adds(&src, " | join('', [@, @])");
	res = jp_search(gv_buf_str(&src), data, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	json_decref(data);
	gv_buf_release(&src);
	/* flattening is charged per element, inner ones included */
	data = json_array();
	for (i = 0; i < 1000; i++)
		json_array_append_new(data, json_pack("[iii]", i, i, i));
	opt.max_steps = 2500;
	res = jp_search("@[][]", data, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	json_decref(data);
}

/* "`1`|[@,@]|..." with n doublings: 2^n leaves, 2^(n+1)-1 values, built in n steps. */
static char *doubling(int n)
{
	struct gv_buf b = {0};

	gv_buf_adds(&b, "`1`");
	for (int i = 0; i < n; i++)
		gv_buf_adds(&b, "|[@,@]");
	return gv_buf_detach(&b);
}

/*
 * Evaluates src (kyverno dialect, default budget) on data ({} when NULL)
 * and expects a JP_ERR_LIMIT naming want.
 */
static void expect_limit(const char *src, const json_t *data, const char *want)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e;
	json_t *empty = json_object();
	json_t *res = jp_search(src, data ? data : empty, &opt, &e);

	json_decref(empty);
	if (res) {
		json_decref(res);
		fail_msg("%.80s...: a result, want an error naming '%s'", src, want);
	}
	if (e.kind != JP_ERR_LIMIT || !strstr(e.msg, want))
		fail_msg("%.80s...: error %s: %s, want a limit naming '%s'", src,
			 jp_error_kind_name(e.kind), e.msg, want);
}

/*
 * Values share their parts: whatever walks one (to_string, ==, contains,
 * label_match, the result itself) is bounded by the budget, or by the cap
 * on the values of a result, not by the 2^64 logical elements.
 */
static void test_shared_values_bounded(void **state)
{
	char *l64 = doubling(64), *l21 = doubling(21), *l22 = doubling(22), *src;
	struct jp_options opt = {.kyverno = true};
	struct jp_error e;
	struct gv_buf b = {0};
	json_t *res, *v;

	(void)state;
	src = gv_xasprintf("%s | to_string(@) | length(@)", l64);
	expect_limit(src, NULL, "evaluation step budget (1000000) exceeded");
	free(src);
	src = gv_xasprintf("[(%s), (%s)] | [0] == [1]", l64, l64);
	expect_limit(src, NULL, "evaluation step budget (1000000) exceeded");
	free(src);
	src = gv_xasprintf("contains([(%s)], (%s))", l64, l64);
	expect_limit(src, NULL, "evaluation step budget (1000000) exceeded");
	free(src);
	/* a result is refused past 4,194,304 values: 2^22 - 1 pass, 2^23 - 1 do not */
	expect_limit(l64, NULL, "result holds more than 4194304 values");
	expect_limit(l22, NULL, "result holds more than 4194304 values");
	res = jp_search(l21, NULL, &opt, &e);
	assert_non_null(res);
	json_decref(res);
	/* equal values that share nothing still compare equal, and unequal ones not */
	v = load(
	    "{\"a\":[1,{\"b\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}],"
	    "\"c\":[1,{\"b\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}],\"d\":[1,{\"b\":\"y\"}]}");
	res = jp_search("[a == c, a != c, a == d, contains([d, c], a)]", v, &opt, &e);
	assert_non_null(res);
	jp_dump(res, &b, 0);
	assert_string_equal(gv_buf_str(&b), "[true,false,false,true]");
	json_decref(res);
	json_decref(v);
	gv_buf_release(&b);
	/* to_string charges a step per value written: 101 values do not fit in 100 steps */
	v = json_array();
	for (int i = 0; i < 100; i++)
		json_array_append_new(v, json_integer(i));
	opt.max_steps = 100;
	res = jp_search("to_string(@)", v, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	opt.max_steps = 200;
	res = jp_search("to_string(@)", v, &opt, &e);
	assert_non_null(res);
	assert_int_equal(json_string_length(res), 291);
	json_decref(res);
	json_decref(v);
	free(l64);
	free(l21);
	free(l22);
}

static void test_jp_dump_max(void **state)
{
	struct gv_buf b = {0};
	json_t *v = load("{\"b\":[1,2.5,\"<x>\"],\"a\":null}"), *big;

	(void)state;
	gv_buf_adds(&b, "prefix:");
	assert_true(jp_dump_max(v, &b, JP_DUMP_SORT_KEYS, 100));
	assert_string_equal(gv_buf_str(&b), "prefix:{\"a\":null,\"b\":[1,2.5,\"<x>\"]}");
	/* exactly the length fits, one byte less does not and leaves out as it was */
	gv_buf_reset(&b);
	gv_buf_adds(&b, "prefix:");
	assert_true(jp_dump_max(v, &b, JP_DUMP_SORT_KEYS, 28));
	gv_buf_reset(&b);
	gv_buf_adds(&b, "prefix:");
	assert_false(jp_dump_max(v, &b, JP_DUMP_SORT_KEYS, 27));
	assert_string_equal(gv_buf_str(&b), "prefix:");
	/* a long string is refused before it is copied */
	json_decref(v);
	v = json_string("a very long string indeed");
	assert_false(jp_dump_max(v, &b, 0, 10));
	assert_string_equal(gv_buf_str(&b), "prefix:");
	/* 2^64 logical elements: refused after about max bytes */
	big = json_array();
	json_array_append_new(big, json_integer(1));
	for (int i = 0; i < 64; i++) {
		json_t *n = json_array();
		json_array_append(n, big);
		json_array_append_new(n, big);
		big = n;
	}
	assert_false(jp_dump_max(big, &b, 0, 1 << 20));
	assert_string_equal(gv_buf_str(&b), "prefix:");
	json_decref(big);
	json_decref(v);
	gv_buf_release(&b);
}

/* Evaluations sharing a jp_budget: each may use what the earlier ones left. */
static void test_shared_budget(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_budget budget = {.max = 150};
	struct jp_error e;
	struct jp_expr *x = jp_compile("[*].a", &opt, &e);
	json_t *data = json_array(), *res;

	(void)state;
	assert_non_null(x);
	for (int i = 0; i < 50; i++)
		json_array_append_new(data, json_pack("{s:i}", "a", i));
	/* 52 steps each: the first two fit, the third does not */
	for (int i = 0; i < 2; i++) {
		res = jp_eval_budget(x, data, &budget, &e);
		assert_non_null(res);
		json_decref(res);
	}
	assert_int_equal(budget.used, 104);
	res = jp_eval_budget(x, data, &budget, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	assert_string_equal(e.msg, "shared evaluation step budget (150) exceeded");
	assert_int_equal(budget.used, 150);
	/* a fresh budget smaller than the expression's: its own size in the message */
	budget.max = 20;
	budget.used = 0;
	res = jp_eval_budget(x, data, &budget, &e);
	assert_null(res);
	assert_string_equal(e.msg, "evaluation step budget (20) exceeded");
	/* without a shared budget, each evaluation has its own */
	for (int i = 0; i < 5; i++) {
		res = jp_eval(x, data, &e);
		assert_non_null(res);
		json_decref(res);
	}
	jp_free(x);
	json_decref(data);
}

/*
 * Regular-expression backtracking is charged to the budget (a step per 8
 * backtracking steps, paid for in advance), pattern_match's comparisons
 * too, and substring search is linear.
 */
static void test_match_work_charged(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e;
	json_t *data = json_object(), *items = json_array(), *res;
	char *a25 = gv_xasprintf("%0*d!", 25, 0), *hay, *needle, *pat;

	(void)state;
	for (char *p = a25; *p == '0'; p++)
		*p = 'a';
	for (int i = 0; i < 2000; i++)
		json_array_append_new(items, json_string(a25));
	json_object_set_new(data, "items", items);
	/* about 950,000 backtracking steps: one call fits, a filter over 2,000 does not */
	res = jp_search("regex_match('^(a|aa)+$', items[0])", data, &opt, &e);
	assert_true(json_is_false(res));
	json_decref(res);
	expect_limit("length(items[?regex_match('^(a|aa)+$', @)])", data,
		     "evaluation step budget (1000000) exceeded");
	expect_limit("length(items[?regex_replace_all('^(a|aa)+$', @, 'x') != @])", data,
		     "evaluation step budget (1000000) exceeded");
	/* a small budget: an ordinary match fits, a backtracking one does not */
	opt.max_steps = 100;
	res = jp_search("regex_match('^a+$', 'aaaa')", NULL, &opt, &e);
	assert_true(json_is_true(res));
	json_decref(res);
	res = jp_search("regex_match('^(a|aa)+$', 'aaaaaaaaaaaaaaaa!')", NULL, &opt, &e);
	assert_null(res);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	opt.max_steps = 0;
	json_decref(data);

	/* pattern x text comparisons: 2,000 x 100,000 */
	hay = gv_xmalloc(100001);
	memset(hay, 'a', 100000);
	hay[100000] = '\0';
	pat = gv_xmalloc(2003);
	pat[0] = '*';
	memset(pat + 1, 'a', 2000);
	pat[2001] = 'b';
	pat[2002] = '\0';
	data = json_pack("{s:s, s:s}", "p", pat, "t", hay);
	expect_limit("pattern_match(p, t)", data, "evaluation step budget (1000000) exceeded");
	res = jp_search("pattern_match('*a', t)", data, &opt, &e);
	assert_true(json_is_true(res));
	json_decref(res);
	json_decref(data);
	/* contains/replace/split on a needle that almost matches everywhere: linear */
	needle = gv_xmalloc(50002);
	memset(needle, 'a', 50000);
	needle[50000] = 'b';
	needle[50001] = '\0';
	data = json_pack("{s:s, s:s}", "h", hay, "n", needle);
	res = jp_search("[contains(h, n), length(split(h, n)), replace_all(h, n, 'x') == h]", data,
			&opt, &e);
	assert_non_null(res);
	{
		struct gv_buf b = {0};
		jp_dump(res, &b, 0);
		assert_string_equal(gv_buf_str(&b), "[false,1,true]");
		gv_buf_release(&b);
	}
	json_decref(res);
	json_decref(data);
	free(hay);
	free(needle);
	free(pat);
	free(a25);
}

static void test_depth_limit(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct gv_buf src = {0};
	struct jp_error e;
	struct jp_expr *x;
	int i;

	(void)state;
	/* nested parentheses: parser recursion */
	for (i = 0; i < 5000; i++)
		gv_buf_addc(&src, '(');
	gv_buf_addc(&src, '@');
	for (i = 0; i < 5000; i++)
		gv_buf_addc(&src, ')');
	x = jp_compile(gv_buf_str(&src), &opt, &e);
	assert_null(x);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	assert_true(e.pos >= 0);
	gv_buf_reset(&src);
	/* a long chain of pipes grows the tree without parser recursion */
	gv_buf_addc(&src, '@');
	for (i = 0; i < 5000; i++)
		gv_buf_adds(&src, " | @");
	x = jp_compile(gv_buf_str(&src), &opt, &e);
	assert_null(x);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	gv_buf_reset(&src);
	/* so does a chain of ! */
	for (i = 0; i < 5000; i++)
		gv_buf_addc(&src, '!');
	gv_buf_addc(&src, '@');
	x = jp_compile(gv_buf_str(&src), &opt, &e);
	assert_null(x);
	assert_int_equal(e.kind, JP_ERR_LIMIT);
	gv_buf_reset(&src);
	/* moderate nesting is fine */
	for (i = 0; i < 50; i++)
		gv_buf_addc(&src, '(');
	gv_buf_addc(&src, '@');
	for (i = 0; i < 50; i++)
		gv_buf_addc(&src, ')');
	x = jp_compile(gv_buf_str(&src), &opt, &e);
	assert_non_null(x);
	jp_free(x);
	/* a long flat path is not nesting */
	gv_buf_reset(&src);
	gv_buf_adds(&src, "a");
	for (i = 0; i < 5000; i++)
		gv_buf_adds(&src, ".a");
	x = jp_compile(gv_buf_str(&src), &opt, &e);
	assert_non_null(x);
	jp_free(x);
	gv_buf_release(&src);
}

static void test_syntax_positions(void **state)
{
	static const struct {
		const char *src;
		enum jp_error_kind kind;
		int pos;
	} cases[] = {
	    {"foo[", JP_ERR_SYNTAX, 4},
	    {"foo.", JP_ERR_SYNTAX, 4},
	    {"foo bar", JP_ERR_SYNTAX, 4},
	    {"a = b", JP_ERR_SYNTAX, 2},
	    {"a.b ~ c", JP_ERR_SYNTAX, 4},
	    {"'unterminated", JP_ERR_SYNTAX, 0},
	    {"x || `{bad`", JP_ERR_SYNTAX, 5},
	    {"\"quoted\"(@)", JP_ERR_SYNTAX, 0},
	    {"a[1:2:3:4]", JP_ERR_SYNTAX, 7},
	    {"{a: b, }", JP_ERR_SYNTAX, 7},
	    {"f(a,)", JP_ERR_SYNTAX, 4},
	    {"length(a, b)", JP_ERR_INVALID_ARITY, 0},
	    {"a | nope(@)", JP_ERR_UNKNOWN_FUNCTION, 4},
	    {"a[1:2:0]", JP_ERR_INVALID_VALUE, 2},
	    {"", JP_ERR_SYNTAX, 0},
	};
	struct jp_options opt = {.kyverno = true};
	struct jp_error e;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jp_expr *x = jp_compile(cases[i].src, &opt, &e);

		if (x || e.kind != cases[i].kind || e.pos != cases[i].pos)
			fail_msg("%s: got kind %s pos %d (%s)", cases[i].src,
				 jp_error_kind_name(e.kind), e.pos, e.msg);
		/* the message names the position too */
		assert_non_null(strstr(e.msg, "at position"));
	}
	/* evaluation errors have no position */
	assert_null(jp_search("abs('x')", NULL, &opt, &e));
	assert_int_equal(e.pos, -1);
}

/* ------------------------------------------------------------------ */
/* API details                                                          */

static void test_numbers_and_dump(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e;
	struct gv_buf b = {0};
	json_t *v, *data = load("{\"i\":3,\"r\":2.5,\"big\":12345678901234}");

	(void)state;
	/* integers taken from the input stay integers */
	v = jp_search("i", data, &opt, &e);
	assert_true(json_is_integer(v));
	json_decref(v);
	v = jp_search("big", data, &opt, &e);
	assert_int_equal(json_integer_value(v), 12345678901234LL);
	json_decref(v);
	/* integral arithmetic prints as Go prints float64 3: as an integer */
	v = jp_search("add(r, `0.5`)", data, &opt, &e);
	assert_true(json_is_integer(v));
	assert_int_equal(json_integer_value(v), 3);
	json_decref(v);
	v = jp_search("divide(i, `2`)", data, &opt, &e);
	assert_true(json_is_real(v));
	json_decref(v);
	json_decref(data);

	v = load(
	    "[1.2,100,1e21,1e-7,0.000001,-0.5,\"a\\\"<\\u2028\",{\"b\":1,\"a\":[]},null,true]");
	jp_dump(v, &b, 0);
	assert_string_equal(
	    gv_buf_str(&b),
	    "[1.2,100,1e+21,1e-7,0.000001,-0.5,\"a\\\"<\\u2028\",{\"b\":1,\"a\":[]},null,true]");
	gv_buf_reset(&b);
	jp_dump(v, &b, JP_DUMP_SORT_KEYS | JP_DUMP_HTML_ESCAPE);
	assert_string_equal(gv_buf_str(&b),
			    "[1.2,100,1e+21,1e-7,0.000001,-0.5,\"a\\\"\\u003c\\u2028\",{\"a\":[],"
			    "\"b\":1},null,true]");
	json_decref(v);
	gv_buf_release(&b);

	v = json_integer(1);
	data = json_real(1.0);
	assert_true(jp_equal(v, data));
	json_decref(v);
	json_decref(data);
	v = load("[1, {\"a\": 2.0, \"b\": [null]}]");
	data = load("[1.0, {\"b\": [null], \"a\": 2}]");
	assert_true(jp_equal(v, data));
	json_array_append_new(data, json_true());
	assert_false(jp_equal(v, data));
	assert_false(jp_equal(v, NULL));
	json_decref(v);
	json_decref(data);
}

static void count_fn(const char *name, const char *signature, void *ud)
{
	struct gv_buf *b = ud;

	assert_non_null(strstr(signature, name));
	if (b->len)
		assert_true(strcmp(strrchr(gv_buf_str(b), '\n') + 1, name) < 0);
	gv_buf_addc(b, '\n');
	gv_buf_adds(b, name);
}

static void test_function_list(void **state)
{
	struct gv_buf plain = {0}, ky = {0};
	static const char *kyverno_names[] = {"compare",
					      "equal_fold",
					      "replace",
					      "replace_all",
					      "to_upper",
					      "to_lower",
					      "trim",
					      "trim_prefix",
					      "split",
					      "regex_replace_all",
					      "regex_replace_all_literal",
					      "regex_match",
					      "pattern_match",
					      "label_match",
					      "to_boolean",
					      "add",
					      "subtract",
					      "multiply",
					      "divide",
					      "modulo",
					      "sum",
					      "round",
					      "base64_decode",
					      "base64_encode",
					      "parse_json",
					      "parse_yaml",
					      "lookup",
					      "items",
					      "object_from_lists",
					      "truncate",
					      "semver_compare",
					      "path_canonicalize",
					      "random",
					      "x509_decode",
					      "image_normalize",
					      "is_external_url",
					      "sha256",
					      "sha1",
					      "md5",
					      "time_now",
					      "time_now_utc",
					      "time_since",
					      "time_add",
					      "time_parse",
					      "time_utc",
					      "time_diff",
					      "time_before",
					      "time_after",
					      "time_between",
					      "time_truncate",
					      "time_to_cron"};
	char needle[64];
	size_t i;

	(void)state;
	jp_list_functions(false, count_fn, &plain);
	jp_list_functions(true, count_fn, &ky);
	gv_buf_addc(&plain, '\n');
	gv_buf_addc(&ky, '\n');
	assert_non_null(strstr(gv_buf_str(&plain), "\nsort_by\n"));
	assert_null(strstr(gv_buf_str(&plain), "\nto_upper\n"));
	for (i = 0; i < sizeof(kyverno_names) / sizeof(kyverno_names[0]); i++) {
		snprintf(needle, sizeof(needle), "\n%s\n", kyverno_names[i]);
		if (!strstr(gv_buf_str(&ky), needle))
			fail_msg("function %s is not listed", kyverno_names[i]);
	}
	/* sum is listed once (Kyverno's overrides the standard one) */
	assert_null(strstr(strstr(gv_buf_str(&ky), "\nsum\n") + 1, "\nsum\n"));
	gv_buf_release(&plain);
	gv_buf_release(&ky);
}

struct thread_arg {
	const struct jp_expr *x;
	const json_t *data;
	int ok;
};

static void *eval_thread(void *p)
{
	struct thread_arg *a = p;
	struct jp_error e;
	int i;

	for (i = 0; i < 2000; i++) {
		json_t *v = jp_eval(a->x, a->data, &e);

		if (v && json_array_size(v) == 2)
			a->ok++;
		json_decref(v);
	}
	return NULL;
}

static void test_compile_once_eval_many(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct thread_arg args[4];
	pthread_t th[4];
	struct jp_error e;
	struct jp_expr *x;
	json_t *data = load("{\"c\":[{\"i\":\"nginx:1\"},{\"i\":\"x\"},{\"j\":1}]}");
	int i;

	(void)state;
	x = jp_compile("c[?regex_match('^[a-z]+', i || '')].i", &opt, &e);
	assert_non_null(x);
	assert_string_equal(jp_source(x), "c[?regex_match('^[a-z]+', i || '')].i");
	for (i = 0; i < 4; i++) {
		args[i].x = x;
		args[i].data = data;
		args[i].ok = 0;
		assert_int_equal(pthread_create(&th[i], NULL, eval_thread, &args[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].ok, 2000);
	}
	/* the document was not modified and is still only ours */
	assert_int_equal(data->refcount, 1);
	jp_free(x);
	json_decref(data);
	jp_free(NULL);
}

/* A clock fixed at 2024-01-02T03:04:05.5Z and a random source that counts. */
static void fixed_now(void *ud, struct timespec *ts)
{
	(void)ud;
	ts->tv_sec = 1704164645;
	ts->tv_nsec = 500000000;
}

static uint32_t counting_random(void *ud)
{
	uint32_t *n = ud;

	return (*n)++;
}

static json_t *eval_env(const char *src, const struct jp_env *env)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e = {0};
	struct jp_expr *x = jp_compile(src, &opt, &e);
	json_t *v;

	assert_non_null(x);
	v = jp_eval_env(x, NULL, NULL, env, &e);
	if (!v)
		fail_msg("%s: %s", src, e.msg);
	jp_free(x);
	return v;
}

static void test_clock_and_random_passed_in(void **state)
{
	uint32_t n = 0;
	struct jp_env env = {&n, fixed_now, counting_random};
	json_t *v;

	(void)state;
	v = eval_env("time_now()", &env);
	assert_string_equal(json_string_value(v), "2024-01-02T03:04:05Z");
	json_decref(v);
	v = eval_env("time_now_utc()", &env);
	assert_string_equal(json_string_value(v), "2024-01-02T03:04:05Z");
	json_decref(v);
	v = eval_env("time_since('', '2024-01-02T03:00:00Z', '')", &env);
	assert_string_equal(json_string_value(v), "4m5.5s");
	json_decref(v);
	/* 0, 1, 2, 3 below 26: the first four letters */
	v = eval_env("random('[a-z]{4}')", &env);
	assert_string_equal(json_string_value(v), "abcd");
	json_decref(v);
	assert_int_equal(n, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unknown_key_propagates),
	    cmocka_unit_test(test_unknown_key_absorbed),
	    cmocka_unit_test(test_field_on_non_map),
	    cmocka_unit_test(test_plain_mode),
	    cmocka_unit_test(test_standard_semantics),
	    cmocka_unit_test(test_string_functions),
	    cmocka_unit_test(test_regex_functions),
	    cmocka_unit_test(test_arithmetic_functions),
	    cmocka_unit_test(test_document_functions),
	    cmocka_unit_test(test_misc_functions),
	    cmocka_unit_test(test_time_functions),
	    cmocka_unit_test(test_x509_decode),
	    cmocka_unit_test(test_step_budget),
	    cmocka_unit_test(test_shared_values_bounded),
	    cmocka_unit_test(test_jp_dump_max),
	    cmocka_unit_test(test_shared_budget),
	    cmocka_unit_test(test_match_work_charged),
	    cmocka_unit_test(test_depth_limit),
	    cmocka_unit_test(test_syntax_positions),
	    cmocka_unit_test(test_numbers_and_dump),
	    cmocka_unit_test(test_function_list),
	    cmocka_unit_test(test_compile_once_eval_many),
	    cmocka_unit_test(test_clock_and_random_passed_in),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
