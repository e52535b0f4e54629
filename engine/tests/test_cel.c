/*
 * Unit tests for engine/cel: the parser (literals, escapes, precedence,
 * optional syntax, reserved words, message literals refused, error
 * positions and caret lines, depth and size limits), evaluation with CEL's
 * error semantics (commutative && and ||, ?:, no-such-key, overflow,
 * division by zero, timestamp and duration ranges), macros, cel.bind, the
 * library, JSON documents as CEL values without copies, hostile
 * expressions that must end in a bounded error, and one program evaluated
 * by several threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/cel/cel.h"

#include "common/banned.h"

/*
 * A case: expression, document bound as `object` (JSON with ' for "), and
 * the expected value or error.
 */
struct ccase {
	const char *expr;
	const char *object; /* JSON, NULL = no `object` */
	const char *want;   /* CEL text of the expected value (strict types), or NULL */
	const char *error;  /* expected substring of the error message when want is NULL */
};

static json_t *load(const char *s)
{
	json_error_t jerr;
	char *t = gv_xstrdup(s), *q;
	json_t *v;

	for (q = t; *q; q++)
		if (*q == '\'')
			*q = '"';
	v = json_loads(t, JSON_DECODE_ANY, &jerr);
	free(t);
	if (!v)
		fail_msg("bad JSON in test: %s: %s", s, jerr.text);
	return v;
}

/* Evaluates src in ev; *out is the value (the program is appended to progs). */
static bool eval_in(struct cel_eval *ev, const char *src, struct cel_program **prog,
		    struct cel_value *out, struct cel_parse_error *perr)
{
	*prog = cel_compile(src, strlen(src), CEL_COMPILE_NO_TYPES, perr);
	if (!*prog)
		return false;
	cel_eval_run(ev, *prog, out);
	return true;
}

static void run_cases(const struct ccase *cases, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		const struct ccase *c = &cases[i];
		struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
		struct cel_program *p = NULL, *wp = NULL;
		struct cel_parse_error perr;
		struct cel_value got, want;
		struct gv_buf gb = {0}, wb = {0};
		json_t *doc = c->object ? load(c->object) : NULL;
		bool ok;

		if (doc)
			cel_bind_json(ev, "object", doc);
		if (!eval_in(ev, c->expr, &p, &got, &perr)) {
			ok = c->error && strstr(perr.msg, c->error);
			if (!ok)
				print_error("FAIL %s\n  parse error: %s\n", c->expr, perr.msg);
		} else if (got.kind == CEL_ERROR) {
			ok = c->error && strstr(got.v.err->msg, c->error);
			if (!ok)
				print_error("FAIL %s\n  error: %s\n  want: %s\n", c->expr,
					    got.v.err->msg, c->want ? c->want : c->error);
		} else if (!c->want) {
			cel_value_format(&got, &gb);
			print_error("FAIL %s\n  got: %s\n  want error: %s\n", c->expr,
				    gv_buf_str(&gb), c->error);
			ok = false;
		} else if (!eval_in(ev, c->want, &wp, &want, &perr) || want.kind == CEL_ERROR) {
			print_error("FAIL %s: expected value %s does not evaluate\n", c->expr,
				    c->want);
			ok = false;
		} else {
			ok = cel_value_identical(&got, &want);
			if (!ok) {
				cel_value_format(&got, &gb);
				cel_value_format(&want, &wb);
				print_error("FAIL %s\n  got:  %s\n  want: %s\n", c->expr,
					    gv_buf_str(&gb), gv_buf_str(&wb));
			}
		}
		bad += !ok;
		gv_buf_release(&gb);
		gv_buf_release(&wb);
		cel_program_free(p);
		cel_program_free(wp);
		cel_eval_free(ev);
		json_decref(doc);
	}
	if (bad)
		fail_msg("%zu of %zu cases failed", bad, n);
}

static void test_literals(void **state)
{
	static const struct ccase cases[] = {
	    {"0", NULL, "0", NULL},
	    {"-9223372036854775808", NULL, "-9223372036854775807 - 1", NULL},
	    {"9223372036854775808", NULL, NULL, "invalid int literal"},
	    {"18446744073709551615u", NULL, "18446744073709551615u", NULL},
	    {"18446744073709551616u", NULL, NULL, "invalid uint literal"},
	    {"0x1F", NULL, "31", NULL},
	    {"0xFFu", NULL, "255u", NULL},
	    {"1e3", NULL, "1000.0", NULL},
	    {".5", NULL, "0.5", NULL},
	    {"'a\\tb'", NULL, "\"a\\x09b\"", NULL},
	    {"\"\\u00e9\" == 'é'", NULL, "true", NULL},
	    {"'\\xe9' == 'é'", NULL, "true", NULL},
	    {"'\\303'", NULL, "'Ã'", NULL},
	    {"b'\\303' == b'\\xc3'", NULL, "true", NULL},
	    {"size(b'\\xff\\x00')", NULL, "2", NULL},
	    {"r'\\n'", NULL, "'\\\\n'", NULL},
	    {"R\"\\d\"", NULL, "'\\\\d'", NULL},
	    {"'''a\nb'''", NULL, "'a\\nb'", NULL},
	    {"\"\"\"x\"y\"\"\"", NULL, "'x\"y'", NULL},
	    {"rb'\\x00' == b'\\\\x00'", NULL, "true", NULL},
	    {"b'\\u00e9'", NULL, NULL, "escape in bytes"},
	    {"'\\q'", NULL, NULL, "invalid escape"},
	    {"'abc", NULL, NULL, "unterminated string"},
	    {"'a\nb'", NULL, NULL, "newline in string"},
	    {"'\\ud800'", NULL, NULL, "invalid code point"},
	    {"[1, 2, 3][1]", NULL, "2", NULL},
	    {"{'a': 1, 2: 'b', true: null}[2]", NULL, "'b'", NULL},
	    {"{'a': 1, 'a': 2}", NULL, NULL, "repeated key"},
	    {"{[1]: 2}", NULL, NULL, "unsupported key type"},
	    {"null == null", NULL, "true", NULL},
	    {"type(null)", NULL, "null_type", NULL},
	    {"1 + 2 * 3 - 4 / 2 % 3", NULL, "5", NULL},
	    {"--1", NULL, "1", NULL},
	    {"!!true", NULL, "true", NULL},
	    {"1 < 2 == true", NULL, "true", NULL},
	    {"true ? 1 : 2 == 2", NULL, "1", NULL},
	    {"false ? 1 : true ? 2 : 3", NULL, "2", NULL},
	    {"2 in [1, 2]", NULL, "true", NULL},
	    {"'k' in {'k': 1}", NULL, "true", NULL},
	    {"{'a': {'b': 1}}.a.b", NULL, "1", NULL},
	    {"{'a-b': 1}.`a-b`", NULL, "1", NULL},
	    {"{'namespace': 1}.namespace", NULL, "1", NULL},
	    {"namespace", NULL, NULL, "reserved identifier"},
	    {"{'a': 1}.in", NULL, NULL, "expecting IDENTIFIER"},
	    {"Foo{a: 1}", NULL, NULL, "message literals are not supported"},
	    {"a.b.Foo{}", NULL, NULL, "message literals are not supported"},
	    {"google.protobuf.Struct{fields: {'a': 1}}", NULL, "{'a': 1}", NULL},
	    {"google.protobuf.ListValue{values: [1]}.values", NULL, NULL, "field selection"},
	    {"google.protobuf.Value{}", NULL, "null", NULL},
	    {"google.protobuf.Value{number_value: 1}", NULL, NULL, "no field 'number_value'"},
	    {"unknownFn(1)", NULL, NULL, "undeclared reference to 'unknownFn'"},
	    {"'a'.size(1)", NULL, NULL, "no matching overload"},
	    {"has(a)", NULL, NULL, "invalid argument to has() macro"},
	    {"[1].all(1, true)", NULL, NULL, "simple identifier"},
	    {"1 = 2", NULL, NULL, "token recognition error"},
	    {"(1", NULL, NULL, "expecting ')'"},
	    {"1 2", NULL, NULL, "extraneous input '2'"},
	};

	(void)state;
	run_cases(cases, GV_ARRAY_LEN(cases));
}

static void test_errors(void **state)
{
	static const struct ccase cases[] = {
	    /* && and || absorb errors from either side */
	    {"object.missing.x == 1 || true", "{}", "true", NULL},
	    {"true || object.missing.x == 1", "{}", "true", NULL},
	    {"object.missing == 1 && false", "{}", "false", NULL},
	    {"false && object.missing == 1", "{}", "false", NULL},
	    {"object.missing == 1 && true", "{}", NULL, "no such key: missing"},
	    {"true && object.missing == 1", "{}", NULL, "no such key: missing"},
	    {"1/0 == 1 || 'a' == 1 + 1u", NULL, NULL, "division by zero"},
	    {"1 || true", NULL, "true", NULL},
	    {"1 || false", NULL, NULL, "no such overload"},
	    /* ?: evaluates only the branch taken */
	    {"true ? 1 : 1/0", NULL, "1", NULL},
	    {"false ? 1/0 : 2", NULL, "2", NULL},
	    {"(1/0 == 0) ? 1 : 2", NULL, NULL, "division by zero"},
	    {"1 ? 1 : 2", NULL, NULL, "no such overload"},
	    {"!1", NULL, NULL, "no such overload"},
	    /* selection */
	    {"object.spec.x", "{'spec': null}", NULL, "does not support field selection"},
	    {"object.a", "{'b': 1}", NULL, "no such key: a"},
	    {"object['a']", "{'b': 1}", NULL, "no such key: a"},
	    {"[1, 2][2]", NULL, NULL, "index out of range"},
	    {"[1, 2][-1]", NULL, NULL, "index out of range"},
	    {"[1, 2][1u]", NULL, "2", NULL},
	    {"[1, 2][1.0]", NULL, "2", NULL},
	    {"[1, 2][1.5]", NULL, NULL, "no such overload"},
	    {"{1: 'a'}[1u]", NULL, "'a'", NULL},
	    {"{1: 'a'}[1.0]", NULL, "'a'", NULL},
	    /* arithmetic */
	    {"9223372036854775807 + 1", NULL, NULL, "integer overflow"},
	    {"-9223372036854775807 - 2", NULL, NULL, "integer overflow"},
	    {"-(-9223372036854775807 - 1)", NULL, NULL, "integer overflow"},
	    {"(-9223372036854775807 - 1) / -1", NULL, NULL, "integer overflow"},
	    {"(-9223372036854775807 - 1) % -1", NULL, NULL, "integer overflow"},
	    {"4611686018427387904 * 2", NULL, NULL, "integer overflow"},
	    {"0u - 1u", NULL, NULL, "unsigned integer overflow"},
	    {"18446744073709551615u + 1u", NULL, NULL, "unsigned integer overflow"},
	    {"1 / 0", NULL, NULL, "division by zero"},
	    {"1 % 0", NULL, NULL, "modulus by zero"},
	    {"1u / 0u", NULL, NULL, "division by zero"},
	    {"-7 / 2", NULL, "-3", NULL},
	    {"-7 % 2", NULL, "-1", NULL},
	    {"1.0 / 0.0", NULL, "double('Infinity')", NULL},
	    {"1 + 1u", NULL, NULL, "no such overload"},
	    {"1 + 1.0", NULL, NULL, "no such overload"},
	    {"'a' + 'b'", NULL, "'ab'", NULL},
	    {"b'a' + b'b'", NULL, "b'ab'", NULL},
	    {"[1] + [2, 3]", NULL, "[1, 2, 3]", NULL},
	    /* comparisons across numeric types; other mixes unequal, not errors */
	    {"1 == 1.0", NULL, "true", NULL},
	    {"1u == 1", NULL, "true", NULL},
	    {"-1 < 1u", NULL, "true", NULL},
	    {"2.5 > 2", NULL, "true", NULL},
	    {"1 == '1'", NULL, "false", NULL},
	    {"[1, 'a'] == [1.0, 'a']", NULL, "true", NULL},
	    {"{'a': 1} == {'a': 1u}", NULL, "true", NULL},
	    {"1 < 'a'", NULL, NULL, "no such overload"},
	    {"'a' < 'b'", NULL, "true", NULL},
	    {"b'\\x01' < b'\\x02'", NULL, "true", NULL},
	    {"false < true", NULL, "true", NULL},
	    {"0.0/0.0 == 0.0/0.0", NULL, "false", NULL},
	    /* timestamps and durations */
	    {"timestamp('2009-02-13T23:31:30Z') + duration('1h') == "
	     "timestamp('2009-02-14T00:31:30Z')",
	     NULL, "true", NULL},
	    {"timestamp('9999-12-31T23:59:59Z') + duration('1s')", NULL, NULL,
	     "timestamp overflow"},
	    {"timestamp('0001-01-01T00:00:00Z') - duration('1ns')", NULL, NULL,
	     "timestamp overflow"},
	    {"timestamp('10000-01-01T00:00:00Z')", NULL, NULL, "invalid timestamp"},
	    {"timestamp(253402300800)", NULL, NULL, "out of range"},
	    {"duration('320000000000s')", NULL, NULL, "invalid duration"},
	    {"duration('9000000000s') + duration('9000000000s')", NULL, NULL, "duration overflow"},
	    {"timestamp('9999-12-31T23:59:59Z') - timestamp('0001-01-01T00:00:00Z')", NULL, NULL,
	     "duration overflow"},
	    {"string(duration('1h30m'))", NULL, "'5400s'", NULL},
	    {"string(duration('-1.5s'))", NULL, "'-1.5s'", NULL},
	    {"string(timestamp('2009-02-13T23:31:30.120Z'))", NULL, "'2009-02-13T23:31:30.12Z'",
	     NULL},
	    {"timestamp('2009-02-13T23:31:30+01:00') == timestamp('2009-02-13T22:31:30Z')", NULL,
	     "true", NULL},
	    {"timestamp('2009-02-13T23:31:30Z').getDayOfWeek()", NULL, "5", NULL},
	    {"timestamp('2009-02-13T23:31:30Z').getHours('+05:30')", NULL, "5", NULL},
	    {"timestamp('2009-02-13T23:31:30Z').getHours('Europe/Paris')", NULL, "0", NULL},
	    {"timestamp('2050-07-01T12:00:00Z').getHours('America/Chicago')", NULL, "7", NULL},
	    {"timestamp('2009-02-13T23:31:30Z').getHours('Nowhere/Town')", NULL, NULL,
	     "unknown time zone"},
	    {"duration('1h1m').getMinutes()", NULL, "61", NULL},
	};

	(void)state;
	run_cases(cases, GV_ARRAY_LEN(cases));
}

static void test_macros(void **state)
{
	static const char *const pod =
	    "{'spec': {'containers': [{'name': 'a', 'image': 'nginx:1.2', 'securityContext': "
	    "{'privileged': false}}, {'name': 'b', 'image': 'busybox'}]}, 'metadata': {'labels': "
	    "{'app': 'x', 'app.kubernetes.io/name': 'y'}}}";
	static const struct ccase cases[] = {
	    {"object.spec.containers.all(c, !has(c.securityContext) || "
	     "!has(c.securityContext.privileged) || c.securityContext.privileged == false)",
	     pod, "true", NULL},
	    {"object.spec.containers.exists(c, c.name == 'b')", pod, "true", NULL},
	    {"object.spec.containers.exists_one(c, c.image.startsWith('nginx'))", pod, "true",
	     NULL},
	    {"object.spec.containers.map(c, c.name)", pod, "['a', 'b']", NULL},
	    {"object.spec.containers.map(c, c.name == 'a', c.image)", pod, "['nginx:1.2']", NULL},
	    {"object.spec.containers.filter(c, has(c.securityContext)).size()", pod, "1", NULL},
	    {"object.metadata.labels.all(k, k.startsWith('app'))", pod, "true", NULL},
	    {"object.metadata.labels['app.kubernetes.io/name']", pod, "'y'", NULL},
	    {"object.metadata.labels.map(k, k)", pod, "['app', 'app.kubernetes.io/name']", NULL},
	    /* false wins over errors in all(), true in exists(); errors otherwise */
	    {"[1, 0].all(x, 1 / x > 5)", NULL, "false", NULL},
	    {"[0, 1].all(x, 1 / x > 0)", NULL, NULL, "division by zero"},
	    {"[0, 1].exists(x, 1 / x == 1)", NULL, "true", NULL},
	    {"[0, 2].exists(x, 1 / x == 1)", NULL, NULL, "division by zero"},
	    {"[0, 1].exists_one(x, 1 / x == 1)", NULL, NULL, "division by zero"},
	    {"[1, 2].map(x, x / 0)", NULL, NULL, "division by zero"},
	    {"[1, 2].all(x, x)", NULL, NULL, "no such overload"},
	    {"1.all(x, true)", NULL, NULL, "cannot be range"},
	    /* two-variable forms */
	    {"[10, 20].all(i, v, v == (i + 1) * 10)", NULL, "true", NULL},
	    {"{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)", NULL, "true", NULL},
	    {"[1, 2, 3].existsOne(i, v, v > 2)", NULL, "true", NULL},
	    {"[1, 2, 3].transformList(i, v, i > 0, v * 10)", NULL, "[20, 30]", NULL},
	    {"{'a': 1}.transformMap(k, v, v + 1)", NULL, "{'a': 2}", NULL},
	    {"[1, 2].transformMapEntry(i, v, {string(v): i})", NULL, "{'1': 0, '2': 1}", NULL},
	    {"[1, 1].transformMapEntry(i, v, {v: i})", NULL, NULL, "key already exists"},
	    {"[1].all(x, x, true)", NULL, NULL, "must differ"},
	    /* nested comprehensions and shadowing */
	    {"[[1, 2], [3]].map(l, l.map(x, x * 2))", NULL, "[[2, 4], [6]]", NULL},
	    {"[1, 2].map(x, [10].map(x, x)[0] + x)", NULL, "[11, 12]", NULL},
	    /* cel.bind */
	    {"cel.bind(x, 2, x * x)", NULL, "4", NULL},
	    {"cel.bind(a, [1, 2], a.map(x, x + a.size()))", NULL, "[3, 4]", NULL},
	    {"cel.bind(x, 1, cel.bind(x, x + 1, x))", NULL, "2", NULL},
	    {"cel.bind(x, {'a': 1/0}, x.a)", NULL, NULL, "division by zero"},
	    {"cel.bind(x, {'a': 1/0}, x.a.b)", NULL, NULL, "division by zero"},
	    {"cel.bind(y, 5, [1, 2].map(x, cel.bind(y, x * 10, y) + y))", NULL, "[15, 25]", NULL},
	    {"[1, 2].exists(x, cel.bind(x, 3, x) == 3 && x == 2)", NULL, "true", NULL},
	    {"{'a': 1}.transformMap(k, v, [k].map(k, k + '!')[0] + string(v))", NULL,
	     "{\"a\": \"a!1\"}", NULL},
	    /* has() */
	    {"has(object.spec)", pod, "true", NULL},
	    {"has(object.nope)", pod, "false", NULL},
	    {"has(object.nope.x)", pod, NULL, "no such key: nope"},
	    {"has({'a': 1}.a)", NULL, "true", NULL},
	    {"has(object.spec.containers[0].securityContext.privileged)", pod, "true", NULL},
	    /* sortBy, optMap */
	    {"[3, 1, 2].sortBy(x, -x)", NULL, "[3, 2, 1]", NULL},
	    {"optional.of(2).optMap(x, x * 3)", NULL, "optional.of(6)", NULL},
	    {"optional.none().optMap(x, x * 3)", NULL, "optional.none()", NULL},
	};

	(void)state;
	run_cases(cases, GV_ARRAY_LEN(cases));
}

static void test_library(void **state)
{
	static const struct ccase cases[] = {
	    {"size('héllo')", NULL, "5", NULL},
	    {"'héllo'.size()", NULL, "5", NULL},
	    {"size([1, 2])", NULL, "2", NULL},
	    {"size({'a': 1})", NULL, "1", NULL},
	    {"size(1)", NULL, NULL, "no such overload"},
	    {"'foobar'.contains('oba')", NULL, "true", NULL},
	    {"'foobar'.startsWith('foo') && 'foobar'.endsWith('bar')", NULL, "true", NULL},
	    /* matches: RE2 semantics, unanchored */
	    {"'nginx:1.2'.matches('^nginx:[0-9.]+$')", NULL, "true", NULL},
	    {"'xabcx'.matches('abc')", NULL, "true", NULL},
	    {"matches('abc', 'b')", NULL, "true", NULL},
	    {"'a\\n'.matches('a$')", NULL, "false", NULL},
	    {"'١'.matches('\\\\d')", NULL, "false", NULL},
	    {"'aa'.matches('(a)\\\\1')", NULL, NULL, "backreferences are not supported"},
	    {"'ab'.matches('a(?=b)')", NULL, NULL, "lookaround"},
	    {"'aaa'.matches('a++')", NULL, NULL, "possessive"},
	    {"'a'.matches('(')", NULL, NULL, "invalid regex"},
	    {"'abc 123 def 456'.find('[0-9]+')", NULL, "'123'", NULL},
	    {"'abc'.find('[0-9]+')", NULL, "''", NULL},
	    {"'abc 123 def 456'.findAll('[0-9]+')", NULL, "['123', '456']", NULL},
	    {"'a1b2c3'.findAll('[0-9]', 2)", NULL, "['1', '2']", NULL},
	    {"'ab'.findAll('x*')", NULL, "['', '', '']", NULL},
	    /* quantities (Kubernetes library) */
	    {"quantity('1Gi') == quantity('1024Mi')", NULL, "true", NULL},
	    {"quantity('200m').isLessThan(quantity('1'))", NULL, "true", NULL},
	    {"quantity('2').compareTo(quantity('1500m'))", NULL, "1", NULL},
	    {"quantity('1.5').isInteger() || quantity('-1.5').sign() != -1", NULL, "false", NULL},
	    {"quantity('2k').asInteger()", NULL, "2000", NULL},
	    {"quantity('1.5').asInteger()", NULL, NULL, "cannot convert value to integer"},
	    {"quantity('500m').asApproximateFloat()", NULL, "0.5", NULL},
	    {"isQuantity('200k') && !isQuantity('200K')", NULL, "true", NULL},
	    {"quantity('200K')", NULL, NULL, "quantities must match"},
	    {"quantity('1').isLessThan(1)", NULL, NULL, "no such overload"},
	    {"quantity('1Gi').add(quantity('512Mi')) == quantity('1536Mi')", NULL, "true", NULL},
	    {"quantity('1').sub(quantity('250m')) == quantity('750m')", NULL, "true", NULL},
	    {"quantity('1').sub(3).asInteger()", NULL, "-2", NULL},
	    {"string(quantity('1').sub(quantity('250m')))", NULL, NULL, "no such overload"},
	    {"quantity('1k').add(1).asApproximateFloat()", NULL, "1001.0", NULL},
	    /* semver (Kubernetes library) */
	    {"semver('1.2.3').isLessThan(semver('1.10.0'))", NULL, "true", NULL},
	    {"semver('1.2.3-alpha').compareTo(semver('1.2.3'))", NULL, "-1", NULL},
	    {"semver('1.2.3+build') == semver('1.2.3')", NULL, "true", NULL},
	    {"semver('v1.2.3')", NULL, NULL, "could not parse semver"},
	    {"semver('v01.2', true).major() + semver('v1.2', true).minor()", NULL, "3", NULL},
	    {"isSemver('1.2') || !isSemver('1.2', true)", NULL, "false", NULL},
	    {"semver('1.2.3').patch()", NULL, "3", NULL},
	    {"semver('1.2.3').isLessThan(quantity('1'))", NULL, NULL, "no such overload"},
	    /* urls (Kubernetes library) */
	    {"url('HTTPS://user@example.com:8443/a%20b/c?x=1&y=2&x=3#frag').getScheme()", NULL,
	     "'https'", NULL},
	    {"url('https://user@example.com:8443/a%20b/c?x=1').getHost()", NULL,
	     "'example.com:8443'", NULL},
	    {"url('https://example.com:8443/').getHostname() + url('https://example.com:8443/')"
	     ".getPort()",
	     NULL, "'example.com8443'", NULL},
	    {"url('https://[::1]:80/x').getHostname()", NULL, "'::1'", NULL},
	    {"url('https://example.com/a%20b/c?q').getEscapedPath()", NULL, "'/a%20b/c'", NULL},
	    {"url('https://example.com/?x=1&y=a+b&x=3&bad=%zz').getQuery()", NULL,
	     "{'x': ['1', '3'], 'y': ['a b']}", NULL},
	    {"url('/just/a/path').getHost()", NULL, "''", NULL},
	    {"url('example.com/x')", NULL, NULL, "invalid URI for request"},
	    {"url('https://example.com:port/')", NULL, NULL, "invalid port"},
	    {"isURL('https://a/%zz')", NULL, "false", NULL},
	    /* ip and cidr (Kubernetes library) */
	    {"cidr('10.0.0.0/8').containsIP('10.1.2.3') && "
	     "!cidr('10.0.0.0/8').containsIP('11.0.0.1')",
	     NULL, "true", NULL},
	    {"ip('::ffff:1.2.3.4')", NULL, NULL, "IPv4-mapped"},
	    {"string(cidr('192.168.0.1/24').masked())", NULL, "'192.168.0.0/24'", NULL},
	    {"ip('10.0.0.1').family() == 4 && ip('fe80::1').isLinkLocalUnicast()", NULL, "true",
	     NULL},
	    /* conversions */
	    {"int('42')", NULL, "42", NULL},
	    {"int(' 42')", NULL, NULL, "type conversion error"},
	    {"int('1.0')", NULL, NULL, "type conversion error"},
	    {"int(2.9)", NULL, "2", NULL},
	    {"int(-2.9)", NULL, "-2", NULL},
	    {"int(1e19)", NULL, NULL, "integer overflow"},
	    {"int(18446744073709551615u)", NULL, NULL, "integer overflow"},
	    {"int(timestamp('1970-01-01T00:01:00Z'))", NULL, "60", NULL},
	    {"uint(-1)", NULL, NULL, "unsigned integer overflow"},
	    {"uint('18446744073709551615')", NULL, "18446744073709551615u", NULL},
	    {"double('1.5')", NULL, "1.5", NULL},
	    {"double('NaN') != double('NaN')", NULL, "true", NULL},
	    {"string(1.0)", NULL, "'1'", NULL},
	    {"string(1e21)", NULL, "'1e+21'", NULL},
	    {"string(0.1)", NULL, "'0.1'", NULL},
	    {"string(123456789.0)", NULL, "'123456789'", NULL},
	    {"string(-1u)", NULL, NULL, "no such overload"},
	    {"string(b'\\xff')", NULL, NULL, "type conversion error"},
	    {"string(true)", NULL, "'true'", NULL},
	    {"bytes('é')", NULL, "b'\\xc3\\xa9'", NULL},
	    {"bool('True') && !bool('f')", NULL, "true", NULL},
	    {"bool('yes')", NULL, NULL, "type conversion error"},
	    {"type(1) == int && type('a') == string && type([]) == list", NULL, "true", NULL},
	    {"type(type(1))", NULL, "type", NULL},
	    {"type(duration('1s')) == google.protobuf.Duration", NULL, "true", NULL},
	    {"dyn(1) == 1", NULL, "true", NULL},
	    /* strings extension */
	    {"'héllo'.charAt(1)", NULL, "'é'", NULL},
	    {"'hello'.charAt(5)", NULL, "''", NULL},
	    {"'hello'.charAt(6)", NULL, NULL, "index out of range"},
	    {"'hello'.indexOf('l')", NULL, "2", NULL},
	    {"'hello'.lastIndexOf('l')", NULL, "3", NULL},
	    {"'hello'.indexOf('l', 3)", NULL, "3", NULL},
	    {"'hello'.indexOf('', 9)", NULL, NULL, "index out of range"},
	    {"'Hello'.lowerAscii() + 'Hello'.upperAscii()", NULL, "'helloHELLO'", NULL},
	    {"'a.b.c'.replace('.', '/')", NULL, "'a/b/c'", NULL},
	    {"'a.b.c'.replace('.', '/', 1)", NULL, "'a/b.c'", NULL},
	    {"'a,b,c'.split(',')", NULL, "['a', 'b', 'c']", NULL},
	    {"'a,b,c'.split(',', 2)", NULL, "['a', 'b,c']", NULL},
	    {"'hello'.substring(1, 3)", NULL, "'el'", NULL},
	    {"'hello'.substring(3, 1)", NULL, NULL, "invalid substring range"},
	    {"'  \\t x \\n'.trim()", NULL, "'x'", NULL},
	    {"['a', 'b'].join('-')", NULL, "'a-b'", NULL},
	    {"['a', 1].join()", NULL, NULL, "not a string"},
	    {"strings.quote('a\"b')", NULL, "'\"a\\\\\"b\"'", NULL},
	    {"'%s has %d items costing %.2f'.format(['cart', 3, 1.5])", NULL,
	     "'cart has 3 items costing 1.50'", NULL},
	    {"'%x %X %o %b'.format([255, 255, 8, 5])", NULL, "'ff FF 10 101'", NULL},
	    {"'%d'.format(['a'])", NULL, NULL, "decimal clause"},
	    {"'%s %s'.format(['a'])", NULL, NULL, "out of range"},
	    /* optionals */
	    {"{'a': 1}.?a", NULL, "optional.of(1)", NULL},
	    {"{'a': 1}.?b", NULL, "optional.none()", NULL},
	    {"{'a': 1}.?b.orValue(5)", NULL, "5", NULL},
	    {"{'a': {'b': 2}}.?a.b.value()", NULL, "2", NULL},
	    {"[1, 2][?5].hasValue()", NULL, "false", NULL},
	    {"{'a': 1}[?'a'].value()", NULL, "1", NULL},
	    {"[?optional.none(), ?optional.of(1), 2]", NULL, "[1, 2]", NULL},
	    {"{?'a': optional.none(), ?'b': optional.of(1)}", NULL, "{'b': 1}", NULL},
	    {"[?1]", NULL, NULL, "not an optional"},
	    {"optional.none().value()", NULL, NULL, "optional.none() dereference"},
	    {"optional.none().or(optional.of(3)).value()", NULL, "3", NULL},
	    {"optional.ofNonZeroValue('').hasValue()", NULL, "false", NULL},
	    {"'x'.orValue('y')", NULL, "'x'", NULL},
	    /* math, sets, lists, encoders */
	    {"math.greatest(1, 2.5, 2u)", NULL, "2.5", NULL},
	    {"math.least([3, -1, 2])", NULL, "-1", NULL},
	    {"math.least([])", NULL, NULL, "must not be empty"},
	    {"math.abs(-9223372036854775807 - 1)", NULL, NULL, "integer overflow"},
	    {"math.bitShiftLeft(1, 3) + math.bitAnd(6, 3)", NULL, "10", NULL},
	    {"math.round(-2.5) == -3.0 && math.trunc(2.7) == 2.0", NULL, "true", NULL},
	    {"math.isNaN(math.sqrt(-1))", NULL, "true", NULL},
	    {"sets.contains([1, 2, 3], [3, 1])", NULL, "true", NULL},
	    {"sets.equivalent([1, 1, 2], [2, 1])", NULL, "true", NULL},
	    {"sets.intersects([1], [2])", NULL, "false", NULL},
	    {"lists.range(3)", NULL, "[0, 1, 2]", NULL},
	    {"[1, 2, 3, 4].slice(1, 3)", NULL, "[2, 3]", NULL},
	    {"[[1], [2, [3]]].flatten()", NULL, "[1, 2, [3]]", NULL},
	    {"[[1], [2, [3]]].flatten(2)", NULL, "[1, 2, 3]", NULL},
	    {"[1, 2, 1].distinct()", NULL, "[1, 2]", NULL},
	    {"[3, 1, 2].sort()", NULL, "[1, 2, 3]", NULL},
	    {"[3, 'a'].sort()", NULL, NULL, "same type"},
	    {"[1, 2, 3].reverse()", NULL, "[3, 2, 1]", NULL},
	    {"[1, 2, 3].sum() + [].sum()", NULL, "6", NULL},
	    {"[2, 1].min() + [2, 1].max()", NULL, "3", NULL},
	    {"[].max()", NULL, NULL, "empty list"},
	    {"[1, 2].isSorted() && ![2, 1].isSorted()", NULL, "true", NULL},
	    {"[1, 2, 1].indexOf(1) + [1, 2, 1].lastIndexOf(1)", NULL, "2", NULL},
	    {"base64.encode(b'hello')", NULL, "'aGVsbG8='", NULL},
	    {"base64.decode('aGVsbG8=') == b'hello' && base64.decode('aGVsbG8') == b'hello'", NULL,
	     "true", NULL},
	    {"base64.decode('a?')", NULL, NULL, "illegal base64"},
	};

	(void)state;
	run_cases(cases, GV_ARRAY_LEN(cases));
}

/* JSON numbers: integral ones are ints, others doubles; strings and objects are borrowed. */
static void test_json(void **state)
{
	static const struct ccase cases[] = {
	    {"object.a", "{'a': 2}", "2", NULL},
	    {"object.a", "{'a': 2.0}", "2.0", NULL},
	    {"object.a", "{'a': 1e2}", "100.0", NULL},
	    {"object.a + 1", "{'a': 2.0}", NULL, "no such overload"},
	    {"object.a == 2 && object.a < 3 && object.a in [2]", "{'a': 2.0}", "true", NULL},
	    {"object.a", "{'a': [1, {'b': null}]}", "[1, {'b': null}]", NULL},
	    {"object == {'a': [1]}", "{'a': [1]}", "true", NULL},
	    {"object.l + [3]", "{'l': [1, 2]}", "[1, 2, 3]", NULL},
	    {"object.m.map(k, object.m[k])", "{'m': {'x': 1, 'y': 2}}", "[1, 2]", NULL},
	    {"object.m.size()", "{'m': {'x': 1, 'y': 2}}", "2", NULL},
	    {"1 in object.m", "{'m': {'1': 1}}", "false", NULL},
	};
	json_t *doc = load("{\"s\": \"text\", \"o\": {\"k\": 1}}");
	struct cel_eval *ev = cel_eval_new(0);
	struct cel_program *p = cel_compile("object.s", 8, 0, NULL);
	struct cel_value v;
	json_t *back;

	(void)state;
	run_cases(cases, GV_ARRAY_LEN(cases));
	/* no copies: the string value points into the document, the object wraps it */
	cel_bind_json(ev, "object", doc);
	cel_eval_run(ev, p, &v);
	assert_int_equal(v.kind, CEL_STRING);
	assert_ptr_equal(v.v.s.p, json_string_value(json_object_get(doc, "s")));
	cel_program_free(p);
	p = cel_compile("object.o", 8, 0, NULL);
	cel_eval_run(ev, p, &v);
	assert_int_equal(v.kind, CEL_MAP);
	assert_true(v.json);
	assert_ptr_equal(v.v.json, json_object_get(doc, "o"));
	back = cel_value_to_json(&v);
	assert_ptr_equal(back, json_object_get(doc, "o"));
	json_decref(back);
	cel_program_free(p);
	cel_eval_free(ev);
	json_decref(doc);
}

/*
 * Selection chains (evaluated as a whole) keep the semantics of one step at
 * a time, and a path read twice reads the document bound for this
 * evaluation.
 */
static void test_chains(void **state)
{
	static const struct ccase cases[] = {
	    {"object.a.?b.c.orValue(0)", "{'a': {'b': {'c': 1}}}", "1", NULL},
	    {"object.a.?b.c.orValue(0)", "{'a': {}}", "0", NULL},
	    {"object.a.?b.c", "{'a': {'b': {'c': 1}}}", "optional.of(1)", NULL},
	    {"object.a.?b.c", "{'a': {'b': {}}}", "optional.none()", NULL},
	    {"object.a.?b.c", "{'a': {'b': 1}}", NULL, "no such key: c"},
	    {"object.a.?b", "{'a': null}", "optional.none()", NULL},
	    {"object.a.b", "{'a': null}", NULL, "does not support field selection"},
	    {"object.a.b.orValue(2)", "{'a': {}}", NULL, "no such key: b"},
	    {"object.a.orValue(2)", "{'a': 1}", "1", NULL},
	    {"object.x.?y.orValue(2)", "{'a': 1}", NULL, "no such key: x"},
	    {"{'k': {'l': 1}}.?k.l.orValue(0)", NULL, "1", NULL},
	    {"{'k': {'l': 1}}.?k.?m.orValue(0)", NULL, "0", NULL},
	    {"optional.of({'l': [1]}).l.orValue([])", NULL, "[1]", NULL},
	    {"object.a.b + object.a.b", "{'a': {'b': 2}}", "4", NULL},
	    {"[{'a': 1}, {'a': 2}].all(x, x.?a.orValue(0) > 0)", NULL, "true", NULL},
	    {"object.l.all(x, x.?a.?b.orValue(true) == true)", "{'l': [{'a': {}}, {}]}", "true",
	     NULL},
	    {"object.l.exists(x, x.a.b == 1)", "{'l': [{'a': {'b': 2}}, {'a': {'b': 1}}]}", "true",
	     NULL},
	    /* a loop variable's paths are cached per element, never across elements */
	    {"object.l.map(x, has(x.a.b) ? x.a.b : 0)",
	     "{'l': [{'a': {'b': 2}}, {'a': {}}, {'a': {'b': 5}}]}", "[2, 0, 5]", NULL},
	    {"object.l.all(x, !has(x.a) || !has(x.a.b) || x.a.b == false)",
	     "{'l': [{'a': {'b': false}}, {}, {'a': {}}, {'a': {'b': true}}]}", "false", NULL},
	    {"object.l.map(x, object.l.map(x, x.a.b))", "{'l': [{'a': {'b': 1}}, {'a': {'b': 2}}]}",
	     "[[1, 2], [1, 2]]", NULL},
	};
	json_t *d1 = load("{'spec': {'n': 1}}"), *d2 = load("{'spec': {'n': 2}}");
	struct cel_eval *ev = cel_eval_new(0);
	const char *src = "object.spec.n + object.spec.n";
	struct cel_program *p = cel_compile(src, strlen(src), 0, NULL);
	struct cel_value v;

	(void)state;
	run_cases(cases, GV_ARRAY_LEN(cases));
	assert_non_null(p);
	cel_bind_json(ev, "object", d1);
	cel_eval_run(ev, p, &v);
	assert_int_equal(v.kind, CEL_INT);
	assert_int_equal(v.v.i, 2);
	cel_eval_clear(ev);
	cel_bind_json(ev, "object", d2);
	cel_eval_run(ev, p, &v);
	assert_int_equal(v.kind, CEL_INT);
	assert_int_equal(v.v.i, 4);
	cel_program_free(p);
	cel_eval_free(ev);
	json_decref(d1);
	json_decref(d2);
}

static void test_parse_errors(void **state)
{
	struct cel_parse_error e;
	struct cel_program *p;
	char *big;
	struct gv_buf b = {0};
	int i;

	(void)state;
	p = cel_compile("a &&\n  (b ||", 12, 0, &e);
	assert_null(p);
	assert_int_equal(e.line, 2);
	assert_int_equal(e.col, 8);
	assert_string_equal(e.caret, " |   (b ||\n | .......^");
	p = cel_compile("'é' + )", strlen("'é' + )"), 0, &e);
	assert_null(p);
	assert_int_equal(e.line, 1);
	assert_int_equal(e.col, 7); /* code points, not bytes */
	assert_non_null(strstr(e.msg, "mismatched input ')'"));

	/* nesting: 200 parentheses parse, 300 do not */
	for (i = 0; i < 200; i++)
		gv_buf_addc(&b, '(');
	gv_buf_addc(&b, '1');
	for (i = 0; i < 200; i++)
		gv_buf_addc(&b, ')');
	p = cel_compile(b.data, b.len, 0, &e);
	assert_non_null(p);
	cel_program_free(p);
	gv_buf_reset(&b);
	for (i = 0; i < 300; i++)
		gv_buf_adds(&b, "[");
	for (i = 0; i < 300; i++)
		gv_buf_adds(&b, "]");
	p = cel_compile(b.data, b.len, 0, &e);
	assert_null(p);
	assert_non_null(strstr(e.msg, "recursion limit"));
	/* long left-deep chains count too */
	gv_buf_reset(&b);
	gv_buf_adds(&b, "a");
	for (i = 0; i < 1000; i++)
		gv_buf_adds(&b, ".b");
	p = cel_compile(b.data, b.len, 0, &e);
	assert_null(p);
	assert_non_null(strstr(e.msg, "recursion limit"));
	/* while long && / || chains are balanced and accepted */
	gv_buf_reset(&b);
	gv_buf_adds(&b, "true");
	for (i = 0; i < 2000; i++)
		gv_buf_adds(&b, " && true");
	p = cel_compile(b.data, b.len, 0, &e);
	assert_non_null(p);
	cel_program_free(p);
	gv_buf_release(&b);
	/* size limit */
	big = gv_xmalloc(CEL_MAX_EXPR_BYTES + 2);
	memset(big, '1', CEL_MAX_EXPR_BYTES + 1);
	big[CEL_MAX_EXPR_BYTES + 1] = 0;
	p = cel_compile(big, CEL_MAX_EXPR_BYTES + 1, 0, &e);
	assert_null(p);
	assert_non_null(strstr(e.msg, "exceeds the limit"));
	free(big);
	/* NUL outside a string literal is an error, inside one a character */
	p = cel_compile("1\0002", 3, 0, &e);
	assert_null(p);
	assert_non_null(strstr(e.msg, "byte 0x00"));
	p = cel_compile("size('\0')", 9, 0, &e);
	assert_non_null(p);
	cel_program_free(p);
	/* unknown function deferred to evaluation with CEL_COMPILE_NO_CHECK */
	p = cel_compile("f(1) || true", 12, CEL_COMPILE_NO_CHECK, &e);
	assert_non_null(p);
	{
		struct cel_eval *ev = cel_eval_new(0);
		struct cel_value v;

		cel_eval_run(ev, p, &v);
		assert_int_equal(v.kind, CEL_BOOL);
		assert_true(v.v.b);
		cel_eval_free(ev);
	}
	cel_program_free(p);
}

#define REP10                                                                                      \
	".replace('a', 'aa').replace('a', 'aa').replace('a', 'aa').replace('a', 'aa')"             \
	".replace('a', 'aa').replace('a', 'aa').replace('a', 'aa').replace('a', 'aa')"             \
	".replace('a', 'aa').replace('a', 'aa')"

/* Hostile expressions end in a bounded error, quickly. */
static void test_hostile(void **state)
{
	static const char *const exprs[] = {
	    /* exponential string growth */
	    "lists.range(64).map(i, 'x').join('').size() > 0 && "
	    "cel.bind(s, 'xxxxxxxxxxxxxxxx', cel.bind(s, s + s + s + s + s + s + s + s, "
	    "cel.bind(s, s + s + s + s + s + s + s + s, cel.bind(s, s + s + s + s + s + s + s + s, "
	    "cel.bind(s, s + s + s + s + s + s + s + s, cel.bind(s, s + s + s + s + s + s + s + s, "
	    "cel.bind(s, s + s + s + s + s + s + s + s, s.size())))))))",
	    /* exponential list growth */
	    "[1, 2].map(a, [1, 2].map(b, [1, 2].map(c, [1, 2].map(d, [1, 2].map(e, "
	    "lists.range(100).map(f, lists.range(100).map(g, lists.range(100).map(h, "
	    "[h]))))))))",
	    /* a huge comprehension */
	    "lists.range(1000).all(x, lists.range(1000).all(y, lists.range(1000).all(z, true)))",
	    /* repeated doubling by replace */
	    "'a'" REP10 REP10 REP10 ".size()",
	    /* list concatenation in a comprehension */
	    "lists.range(2000).map(i, lists.range(2000)).flatten().size()",
	    /* a replacement inserted before every character of a long string */
	    "cel.bind(s, lists.range(1000).map(i, 'abcdefghij').join(''), s.replace('', s).size())",
	    /* a range past the budget */
	    "lists.range(100000000).size()",
	    /* string ops over a grown string */
	    "cel.bind(s, lists.range(100000).map(i, 'abcdefgh').join(''), "
	    "lists.range(1000).map(i, s.indexOf('z')).size())",
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(exprs); i++) {
		struct cel_parse_error e;
		struct cel_program *p = cel_compile(exprs[i], strlen(exprs[i]),
						    CEL_COMPILE_NO_COST | CEL_COMPILE_NO_TYPES, &e);
		struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
		struct cel_value v;
		struct timespec t0, t1;
		double secs;

		if (!p)
			fail_msg("%s: %s", exprs[i], e.msg);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
		cel_eval_run(ev, p, &v);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (v.kind != CEL_ERROR)
			fail_msg("hostile expression %zu did not fail", i);
		print_message("hostile %zu: %s (%.3f CPU s)\n", i, v.v.err->msg, secs);
		assert_true(secs < 10.0); /* a bound, not a benchmark: sanitizers are slow */
		cel_eval_free(ev);
		cel_program_free(p);
	}
}

static void test_regex_blowup(void **state)
{
	struct gv_buf b = {0};
	struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	struct cel_program *p;
	struct cel_value v;
	int i;

	(void)state;
	gv_buf_adds(&b, "'");
	for (i = 0; i < 40; i++)
		gv_buf_addc(&b, 'a');
	gv_buf_adds(&b, "!'.matches('^(a|a)*(a|a)*(a|a)*$')");
	p = cel_compile(b.data, b.len, 0, NULL);
	assert_non_null(p);
	cel_eval_run(ev, p, &v);
	assert_int_equal(v.kind, CEL_ERROR);
	assert_non_null(strstr(v.v.err->msg, "match limit"));
	cel_program_free(p);
	cel_eval_free(ev);
	gv_buf_release(&b);
}

/* The cost limit error is fatal: || and all() do not absorb it. */
static void test_cost_limit(void **state)
{
	const char *src = "lists.range(100).all(x, lists.range(100).all(y, true)) || true";
	struct cel_program *p = cel_compile(src, strlen(src), 0, NULL);
	struct cel_eval *ev = cel_eval_new(5000);
	struct cel_value v;
	uint64_t cost;

	(void)state;
	assert_non_null(p);
	cel_eval_run(ev, p, &v);
	assert_int_equal(v.kind, CEL_ERROR);
	assert_string_equal(v.v.err->msg, "operation cancelled: actual cost limit exceeded");
	cel_eval_reset(ev);
	cel_eval_free(ev);
	ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	cost = cel_eval_run(ev, p, &v);
	assert_int_equal(v.kind, CEL_BOOL);
	assert_true(cost > 10000);
	cel_eval_free(ev);
	cel_program_free(p);
}

static void test_output(void **state)
{
	static const struct {
		const char *expr, *json, *cel;
	} cases[] = {
	    {"1u", "1", "1u"},
	    {"2.0", "2.0", "2.0"},
	    {"b'ab'", "\"YWI=\"", "b\"ab\""},
	    {"{'a': [1, null]}", "{\"a\":[1,null]}", "{\"a\": [1, null]}"},
	    {"timestamp('2020-01-01T00:00:00Z')", "\"2020-01-01T00:00:00Z\"",
	     "timestamp(\"2020-01-01T00:00:00Z\")"},
	    {"duration('90s')", "\"90s\"", "duration(\"90s\")"},
	    {"int", "\"int\"", "int"},
	    {"optional.of(1)", "1", "optional.of(1)"},
	    {"{1: 2}", "{\"1\":2}", "{1: 2}"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct cel_program *p =
		    cel_compile(cases[i].expr, strlen(cases[i].expr), CEL_COMPILE_NO_TYPES, NULL);
		struct cel_eval *ev = cel_eval_new(0);
		struct cel_value v;
		struct gv_buf b = {0};
		json_t *j;
		char *s;

		assert_non_null(p);
		cel_eval_run(ev, p, &v);
		j = cel_value_to_json(&v);
		s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
		assert_string_equal(s, cases[i].json);
		cel_value_format(&v, &b);
		assert_string_equal(gv_buf_str(&b), cases[i].cel);
		free(s);
		json_decref(j);
		gv_buf_release(&b);
		cel_eval_free(ev);
		cel_program_free(p);
	}
}

struct thread_arg {
	const struct cel_program *p;
	const json_t *doc;
	int ok;
};

static void *eval_thread(void *arg)
{
	struct thread_arg *t = arg;
	struct cel_eval *ev = cel_eval_new(CEL_DEFAULT_COST_LIMIT);
	int i;

	cel_bind_json(ev, "object", t->doc);
	for (i = 0; i < 2000; i++) {
		struct cel_value v;
		struct gv_buf b = {0};

		cel_eval_run(ev, t->p, &v);
		cel_value_format(&v, &b);
		t->ok += strcmp(gv_buf_str(&b), "[\"1.2\", \"7.0\"]") == 0;
		gv_buf_release(&b);
		cel_eval_clear(ev);
	}
	cel_eval_free(ev);
	return NULL;
}

/* One compiled program (with a compiled regex) evaluated by several threads at once. */
static void test_threads(void **state)
{
	const char *src = "object.images.filter(i, i.matches('^[a-z]+:[0-9.]+$'))"
			  ".map(i, i.split(':')[1])";
	struct cel_program *p = cel_compile(src, strlen(src), 0, NULL);
	json_t *doc = load("{'images': ['nginx:1.2', 'bad image', 'redis:7.0']}");
	struct thread_arg args[4];
	pthread_t th[4];
	struct cel_eval *ev = cel_eval_new(0);
	struct cel_value v;
	struct gv_buf b = {0};
	int i;

	(void)state;
	assert_non_null(p);
	for (i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){p, doc, 0};
		assert_int_equal(pthread_create(&th[i], NULL, eval_thread, &args[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].ok, 2000);
	}
	cel_bind_json(ev, "object", doc);
	cel_eval_run(ev, p, &v);
	cel_value_format(&v, &b);
	assert_string_equal(gv_buf_str(&b), "[\"1.2\", \"7.0\"]");
	gv_buf_release(&b);
	cel_eval_free(ev);
	cel_program_free(p);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_literals),   cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_macros),     cmocka_unit_test(test_library),
	    cmocka_unit_test(test_json),       cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_hostile),    cmocka_unit_test(test_regex_blowup),
	    cmocka_unit_test(test_cost_limit), cmocka_unit_test(test_output),
	    cmocka_unit_test(test_threads),    cmocka_unit_test(test_chains),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
