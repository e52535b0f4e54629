/*
 * Unit tests for the compile-time side of engine/cel: the type check
 * (check.c: what Kubernetes refuses at compile time, what it must accept,
 * deduced types, error positions), the cost estimate (cost.c: bounds, the
 * refusal of expressions no evaluation can finish), and hostile expressions
 * that must end in a bounded error: deep nesting at the parser's limit,
 * exponential string and list growth, values sharing their parts, huge and
 * nested comprehensions, regular expression blow-up.
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
#include <jansson.h>

#include "common/gv.h"
#include "engine/cel/cel.h"

#include "common/banned.h"

/* Expressions Kubernetes refuses at compile time: the message and the column. */
static void test_check_refused(void **state)
{
	static const struct {
		const char *expr, *msg;
		int col;
	} cases[] = {
	    {"1 + 'a'", "found no matching overload for '_+_' applied to '(int, string)'", 3},
	    {"size(1)", "found no matching overload for 'size' applied to '(int)'", 1},
	    {"'a'.startsWith(1)",
	     "found no matching overload for 'startsWith' applied to "
	     "'string.(int)'",
	     5},
	    {"1 == 1.0", "'_==_' applied to '(int, double)'", 3},
	    {"'a' != 1", "'_!=_' applied to '(string, int)'", 5},
	    {"1 < 'a'", "'_<_' applied to '(int, string)'", 3},
	    {"'a' >= 1", "'_>=_' applied to '(string, int)'", 5},
	    {"1 && true", "'_&&_' applied to '(int, bool)'", 3},
	    {"object.x || 'a'", "'_||_' applied to '(dyn, string)'", 10},
	    {"!1", "'!_' applied to '(int)'", 1},
	    {"-'a'", "'-_' applied to '(string)'", 1},
	    {"1 ? 2 : 3", "'_?_:_' applied to '(int, int, int)'", 3},
	    {"true ? 1 : 'a'", "'_?_:_' applied to '(bool, int, string)'", 6},
	    {"[1, 'a']", "expected type 'int' but found 'string'", 5},
	    {"{'a': 1, 2: 3}", "expected type 'string' but found 'int'", 10},
	    {"{'a': 1, 'b': 'c'}", "expected type 'int' but found 'string'", 15},
	    {"'abc'.x", "type 'string' does not support field selection", 7},
	    {"has(1.x)", "type 'int' does not support field selection", 1},
	    {"[1][0].x", "type 'int' does not support field selection", 8},
	    {"1.all(x, true)", "cannot be range of a comprehension", 1},
	    {"[1, 2].all(x, x)", "found no matching overload for 'all'", 15},
	    {"[1, 2].map(x, x + 'a')", "'_+_' applied to '(int, string)'", 17},
	    {"{'a': 1}.all(k, k > 1)", "'_>_' applied to '(string, int)'", 19},
	    {"'a'[0]", "'_[_]' applied to '(string, int)'", 4},
	    {"{'a': 1}[1]", "'_[_]' applied to '(map(string, int), int)'", 9},
	    {"[1] + ['a']", "'_+_' applied to '(list(int), list(string))'", 5},
	    {"cel.bind(x, 'a', x + 1)", "'_+_' applied to '(string, int)'", 20},
	    {"timestamp('2024-01-01T00:00:00Z') + 1",
	     "'_+_' applied to "
	     "'(google.protobuf.Timestamp, int)'",
	     35},
	    {"duration('1s').getFullYear()",
	     "'getFullYear' applied to "
	     "'google.protobuf.Duration.()'",
	     16},
	    {"'a'.split(1)", "'split' applied to 'string.(int)'", 5},
	    {"['a'].join(1)", "'join' applied to 'list(string).(int)'", 7},
	    {"[1].join()", "'join' applied to 'list(int).()'", 5},
	    {"optional.of(1).value() + 'a'", "'_+_' applied to '(int, string)'", 24},
	    {"optional.none().hasValue() + 1", "'_+_' applied to '(bool, int)'", 28},
	    {"math.abs('a')", "'math.abs' applied to '(string)'", 6},
	    {"lists.range('a')", "'lists.range' applied to '(string)'", 7},
	    {"'a'.matches(1)", "'matches' applied to 'string.(int)'", 5},
	    {"size('a') + 'b'", "'_+_' applied to '(int, string)'", 11},
	    {"type(1) == 1", "'_==_' applied to '(type(int), int)'", 9},
	    {"a &&\n  1", "'_&&_' applied to '(dyn, int)'", 3},
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct cel_parse_error e;
		struct cel_program *p = cel_compile(cases[i].expr, strlen(cases[i].expr), 0, &e);

		if (p)
			fail_msg("%s: accepted (type %s)", cases[i].expr, cel_program_type(p));
		if (!strstr(e.msg, cases[i].msg))
			fail_msg("%s: %s, expected %s", cases[i].expr, e.msg, cases[i].msg);
		if (cases[i].col && e.col != cases[i].col)
			fail_msg("%s: column %d, expected %d", cases[i].expr, e.col, cases[i].col);
		assert_non_null(strchr(e.caret, '^'));
		/* without the check, the program compiles and fails at evaluation */
		p = cel_compile(cases[i].expr, strlen(cases[i].expr), CEL_COMPILE_NO_TYPES, &e);
		if (!p)
			fail_msg("%s: refused without the type check: %s", cases[i].expr, e.msg);
		cel_program_free(p);
	}
}

/* Expressions Kubernetes accepts (dyn variables, cross-type comparisons, optionals...). */
static void test_check_accepted(void **state)
{
	static const char *const exprs[] = {
	    "object.spec.containers.all(c, !has(c.securityContext) || "
	    "!has(c.securityContext.privileged) || c.securityContext.privileged == false)",
	    "object.spec.replicas + 1 > 2",
	    "object.metadata.name.startsWith(params.prefix)",
	    "object.spec.containers.map(c, c.image).exists(i, i.matches('^nginx'))",
	    "variables.x == 1 || variables.y == 'a'",
	    "1 < 2.0 && 1u < 2 && 2.0 > 1u && 1 <= 1u && 2.5 >= 2",
	    "1 == dyn(1.0)",
	    "dyn(1) + 1",
	    "[1, dyn('a')]",
	    "[dyn(1), 'a']",
	    "{'a': 1, 'b': dyn('c')}",
	    "null == object.x",
	    "object.x == null",
	    "[1, 2][1u]",
	    "[1, 2][dyn(1)]",
	    "{1: 'a'}[dyn(1.0)]",
	    "[[], [1]]",
	    "[[1], []]",
	    "[optional.none(), optional.of(1)]",
	    "[optional.of(1), null][0]",
	    "true ? optional.of(1) : optional.none()",
	    "true ? 1 : dyn('a')",
	    "object.?spec.?replicas.orValue(1) > 0",
	    "optional.of({'c': {}}).c.missing.or(optional.of(['x'])[0]).orValue('d')",
	    "{'c': 1}.?c.hasValue()",
	    "[?optional.of(1), 2]",
	    "{?'a': optional.of(1), 'b': 2}",
	    "type(1) == int",
	    "type(object) == map",
	    "int('1') + 1",
	    "string(1) + 'a'",
	    "duration('1s') + timestamp('2024-01-01T00:00:00Z') > timestamp(0)",
	    "timestamp('2024-01-01T00:00:00Z') - timestamp('2023-01-01T00:00:00Z') > "
	    "duration('1h')",
	    "[1, 2].map(x, x * 2).filter(y, y > 2).size() == 1",
	    "{'a': 1}.map(k, k + 'x')",
	    "[1, 2].transformList(i, v, v + i)",
	    "{'a': 1}.transformMap(k, v, v + 1)",
	    "[1, 2].exists(i, v, i == 0 && v == 1)",
	    "cel.bind(x, 'a', x + 'b').size()",
	    "cel.bind(l, [1, 2], l + [3])",
	    "'a,b'.split(',').join('-')",
	    "'%s=%d'.format(['a', 1])",
	    "lists.range(3).sum() == 3",
	    "[1, 2].indexOf(2) == 1 && 'ab'.indexOf('b') == 1",
	    "math.greatest(1, 2.0, 3u) > 0",
	    "quantity('1Gi').isLessThan(quantity('2Gi'))",
	    "url('https://a/b').getHost() == 'a'",
	    "ip('1.2.3.4').family() == 4 && cidr('10.0.0.0/8').containsIP('10.1.2.3')",
	    "isQuantity(object.x) ? quantity(object.x).asInteger() > 1 : false",
	    "object.x.y[0].z['w'] + object.v",
	    "has(object.spec) && has(object.spec.x)",
	    "optional.none() == optional.of(1)",
	    "sets.contains([1, 2], [1])",
	    "[1, 2] == [1, 2] && {'a': 1} != {'a': 2}",
	    "1 in [1, 2] && 'a' in {'a': 1} && 1 in object.list",
	    "google.protobuf.Struct{fields: {'a': 1.0}}.a == 1.0",
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(exprs); i++) {
		struct cel_parse_error e;
		struct cel_program *p = cel_compile(exprs[i], strlen(exprs[i]), 0, &e);

		if (!p)
			fail_msg("%s: refused: %d:%d: %s", exprs[i], e.line, e.col, e.msg);
		cel_program_free(p);
	}
}

/* Deduced types, as cel-go names them. */
static void test_check_types(void **state)
{
	static const struct {
		const char *expr, *type;
		unsigned flags;
	} cases[] = {
	    {"true", "bool", 0},
	    {"1", "int", 0},
	    {"1u", "uint", 0},
	    {"1.5", "double", 0},
	    {"b'a'", "bytes", 0},
	    {"null", "null_type", 0},
	    {"object", "dyn", 0},
	    {"object.x == 1", "bool", 0},
	    {"[1]", "list(int)", 0},
	    {"[]", "list(dyn)", 0},
	    {"{'a': [1]}", "map(string, list(int))", 0},
	    {"['a'][0]", "string", 0},
	    {"[[], [[]], [[[]]]]", "list(list(list(list(dyn))))", 0},
	    {"[optional.none(), optional.of(1)]", "list(optional_type(int))", 0},
	    {"[optional.of(1), optional.of(dyn(1))]", "list(optional_type(dyn))", 0},
	    {"[optional.of(1), null][0]", "optional_type(int)", 0},
	    {"[1, 'a']", "list(dyn)", CEL_COMPILE_DYN_LITERALS},
	    {"[1, 2].map(x, x > 1)", "list(bool)", 0},
	    {"[1, 2].filter(x, x > 1)", "list(int)", 0},
	    {"{'a': 1}.transformMap(k, v, double(v) + 1.0)", "map(string, double)", 0},
	    {"cel.bind(x, 'a', x + 'b')", "string", 0},
	    {"timestamp('2024-01-01T00:00:00Z') - duration('1s')", "google.protobuf.Timestamp", 0},
	    {"duration('1s') + duration('1s')", "google.protobuf.Duration", 0},
	    {"size(object)", "int", 0},
	    {"object + 1", "int", 0}, /* the only overload taking an int */
	    {"object + object", "dyn", 0},
	    /* a dyn list may hold anything: the concatenation is no list(int) (its
	     * element 1 is 2.5 here) */
	    {"[1] + dyn([2.5])", "list(dyn)", 0},
	    {"([1] + dyn([2.5]))[1]", "dyn", 0},
	    {"(object.items + [1])[0]", "dyn", 0},
	    {"[1] + [2]", "list(int)", 0},
	    {"'a'.split(',')", "list(string)", 0},
	    {"object.?a", "optional_type(dyn)", 0},
	    {"quantity('1')", "kubernetes.Quantity", 0},
	    {"type(1)", "type(int)", 0},
	    {"1 + 'a'", "dyn", CEL_COMPILE_NO_CHECK},
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct cel_parse_error e;
		struct cel_program *p =
		    cel_compile(cases[i].expr, strlen(cases[i].expr), cases[i].flags, &e);

		if (!p)
			fail_msg("%s: refused: %s", cases[i].expr, e.msg);
		if (strcmp(cel_program_type(p), cases[i].type) != 0)
			fail_msg("%s: type %s, expected %s", cases[i].expr, cel_program_type(p),
				 cases[i].type);
		cel_program_free(p);
	}
}

static struct cel_program *compile_ok(const char *src, unsigned flags)
{
	struct cel_parse_error e;
	struct cel_program *p = cel_compile(src, strlen(src), flags, &e);

	if (!p)
		fail_msg("%s: %s", src, e.msg);
	return p;
}

/* The estimate brackets the cost an evaluation is charged. */
static void test_cost_estimate(void **state)
{
	static const struct {
		const char *expr;
		const char *object;
	} cases[] = {
	    {"1 + 2", "{}"},
	    {"lists.range(1000).map(x, x * 2).size()", "{}"},
	    {"lists.range(100).map(x, lists.range(100).map(y, [x, y])).size()", "{}"},
	    {"object.a.all(x, x > 0)", "{\"a\": [1, 2, 3, 4, 5, 6, 7, 8]}"},
	    {"object.a.map(x, x + 1).size() > 2 && true", "{\"a\": [1, 2, 3]}"},
	    {"cel.bind(s, 'abcdefgh', cel.bind(s, s + s + s + s, cel.bind(s, s + s + s + s, "
	     "s.size())))",
	     "{}"},
	    {"true ? lists.range(10).size() : lists.range(1000).size()", "{}"},
	    {"false && lists.range(10000).size() > 0", "{}"},
	    {"object.s.startsWith('a') || object.s.endsWith('b')", "{\"s\": \"abc\"}"},
	    /* fuzz_cel crash-b2d2c28d: the transform of a filtered form need not run */
	    {"[3].transformList(i, v, i == 0 && 6 == 3, v * v + i)", "{}"},
	    {"[1, 2].map(x, x > 5, x * x * x)", "{}"},
	    {"{'a': 1}.transformMap(k, v, false, v + v + v)", "{}"},
	    /*
	     * fuzz_cel crash-67e08a66: an operator returns at an error on its left
	     * before evaluating its right, and or() leaves its unused argument so
	     */
	    {"optional.ofNonZeroValue(42).or(option42 % u % 5u).value() == 42", "{}"},
	    {"optional.of(1).orValue(nope + 1 + 2 + 3) == 1", "{}"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct cel_program *p = compile_ok(cases[i].expr, 0);
		struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
		json_t *doc = json_loads(cases[i].object, 0, NULL);
		struct cel_value v;
		uint64_t lo, hi, cost;

		cel_program_cost(p, &lo, &hi);
		cel_bind_json(ev, "object", doc);
		cost = cel_eval_run(ev, p, &v);
		if (v.kind == CEL_ERROR)
			fail_msg("%s: %s", cases[i].expr, v.v.err->msg);
		if (lo > cost || cost > hi)
			fail_msg("%s: cost %llu outside the estimate [%llu, %llu]", cases[i].expr,
				 (unsigned long long)cost, (unsigned long long)lo,
				 (unsigned long long)hi);
		cel_eval_free(ev);
		cel_program_free(p);
		json_decref(doc);
	}
}

/* Expressions no evaluation can finish are refused; the rest are left to the budget. */
static void test_cost_refused(void **state)
{
	static const char *const refused[] = {
	    "lists.range(2000000).size() > 0",
	    "lists.range(2000).map(i, lists.range(2000)).size()",
	    "[1, 2].map(a, [1, 2].map(b, [1, 2].map(c, lists.range(1000).map(d, "
	    "lists.range(1000).map(e, e))))).size()",
	    "cel.bind(s, lists.range(1100).map(i, lists.range(1000)), s.size())",
	};
	static const char *const accepted[] = {
	    /* unknown sizes: only the runtime budget can tell */
	    "object.items.all(x, object.items.all(y, x != y))",
	    /* all/exists may stop at the first element */
	    "lists.range(1000).all(x, lists.range(1000).all(y, true))",
	    /* the cheap branch may be taken */
	    "object.x ? lists.range(2000000).size() > 0 : true",
	    "object.x && lists.range(2000000).size() > 0",
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(refused); i++) {
		struct cel_parse_error e;
		struct cel_program *p = cel_compile(refused[i], strlen(refused[i]), 0, &e);

		if (p)
			fail_msg("%s: accepted", refused[i]);
		assert_non_null(strstr(e.msg, "estimated cost exceeds budget"));
		/* and indeed, evaluated, it runs out of budget */
		p = compile_ok(refused[i], CEL_COMPILE_NO_COST);
		{
			struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
			struct cel_value v;

			cel_eval_run(ev, p, &v);
			assert_int_equal(v.kind, CEL_ERROR);
			cel_eval_free(ev);
		}
		cel_program_free(p);
	}
	for (i = 0; i < GV_ARRAY_LEN(accepted); i++)
		cel_program_free(compile_ok(accepted[i], 0));
}

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* n nested cel.bind(v, init, ...) around body. */
static char *binds(int n, const char *var, const char *first, const char *step, const char *body)
{
	struct gv_buf b = {0};
	int i;

	gv_buf_addf(&b, "cel.bind(%s, %s, ", var, first);
	for (i = 0; i < n; i++)
		gv_buf_addf(&b, "cel.bind(%s, %s, ", var, step);
	gv_buf_adds(&b, body);
	for (i = 0; i <= n; i++)
		gv_buf_addc(&b, ')');
	return gv_buf_detach(&b);
}

static char *repeat(const char *open, const char *mid, const char *close, int n)
{
	struct gv_buf b = {0};
	int i;

	for (i = 0; i < n; i++)
		gv_buf_adds(&b, open);
	gv_buf_adds(&b, mid);
	for (i = 0; i < n; i++)
		gv_buf_adds(&b, close);
	return gv_buf_detach(&b);
}

/*
 * Hostile expressions: each compiles (or is refused at compile time with
 * the flag off) and ends in an error, in bounded time (printed; the bound
 * asserted is loose on purpose, sanitizers are slow).
 */
static void test_hostile_bounded(void **state)
{
	char *exprs[] = {
	    /* string doubling through cel.bind */
	    binds(40, "s", "'ab'", "s + s", "s.size()"),
	    /* list doubling: [x, x] for every element, flattened */
	    binds(40, "l", "[1, 2]", "l.map(x, [x, x]).flatten()", "l.size()"),
	    /* values sharing their parts: 2^40 leaves, compared and formatted */
	    binds(40, "a", "[1, 1]", "[a, a]", "a == a"),
	    binds(40, "a", "[1, 1]", "[a, a]", "[a] == [a] || a in [a]"),
	    binds(40, "a", "[1, 1]", "[a, a]", "'%s'.format([a]).size()"),
	    binds(40, "a", "[1, 1]", "[a, a]", "[a, a].distinct().size()"),
	    binds(40, "a", "[1, 1]", "[a, a]", "a.flatten(64).size()"),
	    binds(40, "m", "{'k': 1}", "{'k': m, 'j': m}", "m == m"),
	    /* join and replace growth */
	    binds(30, "s", "'ab'", "[s, s, s].join(s)", "s.size()"),
	    binds(30, "s", "'abc'", "s.replace('b', s)", "s.size()"),
	    binds(30, "s", "'abc'", "'%s%s'.format([s, s])", "s.size()"),
	    /* huge comprehensions and nested quantifiers over big ranges */
	    gv_xstrdup("lists.range(100000).exists(x, lists.range(100000).exists(y, x == y + "
		       "100000))"),
	    gv_xstrdup("lists.range(1000).all(x, lists.range(1000).all(y, lists.range(1000)"
		       ".all(z, x + y + z >= 0)))"),
	    gv_xstrdup("lists.range(3000).map(i, lists.range(3000)).size()"),
	    gv_xstrdup("lists.range(1000).transformMap(i, v, lists.range(1000)).size()"),
	    /* regular expressions that backtrack, many times over */
	    gv_xstrdup("lists.range(1000).all(i, (lists.range(300).map(j, 'a').join('') + "
		       "'!').matches('^(a|aa)*$'))"),
	    gv_xstrdup("lists.range(1000).all(i, (lists.range(300).map(j, 'a').join('') + "
		       "'!').matches('^(a+)+$'))"),
	    gv_xstrdup("lists.range(1000).exists(i, (lists.range(300).map(j, 'a').join('') + "
		       "'!').matches('(a|a)*(a|a)*b'))"),
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(exprs); i++) {
		struct cel_parse_error e;
		struct cel_program *p;
		struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
		struct cel_value v;
		double t0 = cpu_now(), t1;

		p = cel_compile(exprs[i], strlen(exprs[i]), 0, &e);
		if (!p) {
			print_message("hostile %zu: refused at compile time: %s\n", i, e.msg);
			assert_non_null(strstr(e.msg, "estimated cost exceeds budget"));
			p = compile_ok(exprs[i], CEL_COMPILE_NO_COST);
		}
		cel_eval_run(ev, p, &v);
		t1 = cpu_now();
		if (v.kind != CEL_ERROR)
			fail_msg("hostile %zu did not fail: %.200s", i, exprs[i]);
		print_message("hostile %zu: %s (%.3f CPU s)\n", i, v.v.err->msg, t1 - t0);
		assert_true(t1 - t0 < 20.0);
		cel_eval_free(ev);
		cel_program_free(p);
		free(exprs[i]);
	}
}

/* Nesting at the parser's limit compiles, checks and evaluates; one more level is refused. */
static void test_deep_nesting(void **state)
{
	static const struct {
		const char *open, *mid, *close;
	} shapes[] = {
	    {"(", "1", ")"},
	    {"[", "1", "]"},
	    {"{'a': ", "1", "}"},
	    {"-(", "1", ")"},
	    {"!(", "true", ")"},
	    {"size([", "1", "]) + 0 == 1 ? [1] : [2]"},
	    {"[1].map(x, ", "x", ")"},
	    {"cel.bind(x, 1, ", "x", ")"},
	    {"optional.of(", "1", ")"},
	    {"true ? (", "1", ") : 2"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(shapes); i++) {
		int lo = 1, hi = CEL_MAX_DEPTH + 2, ok = 0;
		double t0 = cpu_now();

		/* the deepest nesting that compiles */
		while (lo <= hi) {
			int mid = (lo + hi) / 2;
			char *s = repeat(shapes[i].open, shapes[i].mid, shapes[i].close, mid);
			struct cel_parse_error e;
			struct cel_program *p = cel_compile(s, strlen(s), 0, &e);

			if (p) {
				struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
				struct cel_value v;

				ok = mid;
				lo = mid + 1;
				cel_eval_run(ev, p, &v);
				cel_eval_free(ev);
				cel_program_free(p);
			} else {
				if (!strstr(e.msg, "recursion limit") && !strstr(e.msg, "depth") &&
				    !strstr(e.msg, "nest"))
					fail_msg("shape %zu at %d: %s", i, mid, e.msg);
				hi = mid - 1;
			}
			free(s);
		}
		print_message("nesting %s...%s: %d levels compile (%.3f CPU s)\n", shapes[i].open,
			      shapes[i].close, ok, cpu_now() - t0);
		assert_true(ok >= 10 && ok <= CEL_MAX_DEPTH);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_check_refused), cmocka_unit_test(test_check_accepted),
	    cmocka_unit_test(test_check_types),	  cmocka_unit_test(test_cost_estimate),
	    cmocka_unit_test(test_cost_refused),  cmocka_unit_test(test_hostile_bounded),
	    cmocka_unit_test(test_deep_nesting),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
