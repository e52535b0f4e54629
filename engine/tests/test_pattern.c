/*
 * Unit tests for engine/pattern.c: the validate pattern language
 * (kyverno-semantics.md sections 3 and 4) and the pattern edge cases of
 * section 11 (E1-E17).
 *
 * Patterns and resources are written as JSON with single quotes standing
 * for double quotes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/pattern.h"

#include "engine/engine_int.h"

#include "common/banned.h"

static json_t *J(const char *s)
{
	char *t = gv_xstrdup(s);
	json_error_t jerr;
	json_t *j;

	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	j = json_loads(t, JSON_DECODE_ANY, &jerr);
	if (!j)
		fail_msg("bad test JSON %s: %s", s, jerr.text);
	free(t);
	return j;
}

/* n times 'a'; caller frees. */
static char *repeat_a(size_t n)
{
	char *s = gv_xmalloc(n + 1);

	memset(s, 'a', n);
	s[n] = '\0';
	return s;
}

static struct pattern *compile(const char *pat)
{
	struct gv_err err = {0};
	json_t *j = J(pat);
	struct pattern *p = pattern_compile(j, &err);

	json_decref(j);
	if (!p)
		fail_msg("compile %s: %s: %s", pat, err.pointer, err.msg);
	return p;
}

static const char *status_name(enum pattern_status s)
{
	static const char *names[] = {"PASS", "FAIL", "SKIP", "ERROR"};

	return names[s];
}

/*
 * Matches res (NULL = absent resource) against pat and checks the status,
 * the path (when want_path is not NULL) and the inner text (when want_msg
 * is not NULL).
 */
static void check_json(const char *pat, const json_t *res, enum pattern_status want,
		       const char *want_path, const char *want_msg)
{
	struct pattern *p = compile(pat);
	struct pattern_outcome o;

	pattern_match(p, res, &o);
	if (o.status != want)
		fail_msg("pattern %s: got %s (path '%s', msg '%s'), want %s", pat,
			 status_name(o.status), o.path, o.msg, status_name(want));
	if (want_path)
		assert_string_equal(o.path, want_path);
	if (want_msg)
		assert_string_equal(o.msg, want_msg);
	pattern_outcome_release(&o);
	pattern_free(p);
}

static void check(const char *pat, const char *res, enum pattern_status want, const char *want_path,
		  const char *want_msg)
{
	json_t *r = res ? J(res) : NULL;

	check_json(pat, r, want, want_path, want_msg);
	json_decref(r);
}

/* Full rule message (section 3.11) of one match. */
static void check_message(const char *pat, const char *res, const char *rule, const char *message,
			  enum pattern_status want, const char *want_text)
{
	struct pattern *p = compile(pat);
	json_t *r = J(res);
	struct pattern_outcome o;
	char *m;

	pattern_match(p, r, &o);
	assert_int_equal(o.status, want);
	m = pattern_message(&o, rule, message);
	assert_string_equal(m, want_text);
	free(m);
	pattern_outcome_release(&o);
	pattern_free(p);
	json_decref(r);
}

static void check_compile_error(const char *pat, enum gv_code code, const char *pointer,
				const char *msg)
{
	struct gv_err err = {0};
	json_t *j = J(pat);
	struct pattern *p = pattern_compile(j, &err);

	json_decref(j);
	if (p) {
		pattern_free(p);
		fail_msg("pattern %s compiled", pat);
	}
	assert_int_equal(err.code, code);
	assert_string_equal(err.pointer, pointer);
	assert_string_equal(err.msg, msg);
}

/* ------------------------------------------------------------------ */
/* 3.1: structure                                                      */

static void test_structure(void **state)
{
	(void)state;
	check("{'a':1}", "{'a':1}", PATTERN_PASS, "", "");
	check("{'a':{'b':1}}", "{'a':'x'}", PATTERN_FAIL, "/a/",
	      "pattern and resource have different structures. Path: /a/. Expected "
	      "map[string]interface {}, found string");
	check("{'a':{'b':1}}", "{}", PATTERN_FAIL, "/a/",
	      "pattern and resource have different structures. Path: /a/. Expected "
	      "map[string]interface {}, found <nil>");
	check("{'a':{'b':1}}", "{'a':[1]}", PATTERN_FAIL, "/a/",
	      "pattern and resource have different structures. Path: /a/. Expected "
	      "map[string]interface {}, found []interface {}");
	check("{'a':{'b':1}}", "{'a':2}", PATTERN_FAIL, "/a/",
	      "pattern and resource have different structures. Path: /a/. Expected "
	      "map[string]interface {}, found int64");
	check("{'a':{'b':1}}", "{'a':2.5}", PATTERN_FAIL, "/a/",
	      "pattern and resource have different structures. Path: /a/. Expected "
	      "map[string]interface {}, found float64");
	check("{'a':{'b':1}}", "{'a':true}", PATTERN_FAIL, "/a/",
	      "pattern and resource have different structures. Path: /a/. Expected "
	      "map[string]interface {}, found bool");
	/* the whole resource absent */
	check("{'a':1}", NULL, PATTERN_FAIL, "/",
	      "pattern and resource have different structures. Path: /. Expected "
	      "map[string]interface {}, found <nil>");
	check("{'a':[{'b':1}]}", "{'a':{'b':1}}", PATTERN_FAIL, "/a/",
	      "validation rule failed at path /a/, resource does not satisfy the expected "
	      "overlay pattern");
	check("{'a':[1]}", "{}", PATTERN_FAIL, "/a/",
	      "validation rule failed at path /a/, resource does not satisfy the expected "
	      "overlay pattern");
	check("{'a':'x'}", "{'a':'y'}", PATTERN_FAIL, "/a/",
	      "resource value 'y' does not match 'x' at path /a/");
	/* extra resource keys are ignored */
	check("{'a':1}", "{'a':1,'b':2}", PATTERN_PASS, "", "");
}

static void test_scalar_over_array(void **state)
{
	(void)state;
	check("{'a':'x*'}", "{'a':['x1','x2']}", PATTERN_PASS, "", "");
	check("{'a':'x*'}", "{'a':['x1','y2',3]}", PATTERN_FAIL, "/a/",
	      "resource value '[x1 y2 3]' does not match 'x*' at path /a/");
	check("{'a':'x*'}", "{'a':[]}", PATTERN_PASS, "", "");
	/* the %v of maps inside the array */
	check("{'a':'x'}", "{'a':[{'k':'v','b':null}]}", PATTERN_FAIL, "/a/",
	      "resource value '[map[b:<nil> k:v]]' does not match 'x' at path /a/");
	/* a list of scalars: only pat[0] counts */
	check("{'a':['x*','y*']}", "{'a':['x1','x2']}", PATTERN_PASS, "", "");
	check("{'a':['x*','y*']}", "{'a':['y1']}", PATTERN_FAIL, "/a/",
	      "resource value '[y1]' does not match 'x*' at path /a/");
	/* null pattern over an empty list passes (every element), over [1] fails */
	check("{'a':null}", "{'a':[]}", PATTERN_PASS, "", "");
	check("{'a':null}", "{'a':[1]}", PATTERN_FAIL, "/a/",
	      "resource value '[1]' does not match '<nil>' at path /a/");
}

/* ------------------------------------------------------------------ */
/* 3.3: arrays                                                         */

static void test_arrays(void **state)
{
	(void)state;
	check("{'a':[]}", "{'a':[1]}", PATTERN_FAIL, "/a/", "pattern Array empty");
	/* nested arrays: positional; a short resource list is an ERROR (empty path) */
	check("{'a':[[1],[2]]}", "{'a':[[1]]}", PATTERN_ERROR, "",
	      "validate Array failed, array length mismatch, resource Array len is 1 and "
	      "pattern Array len is 2");
	check("{'a':[[1],[2]]}", "{'a':[[1,1],[2],[9]]}", PATTERN_PASS, "", "");
	check("{'a':[[1],[2]]}", "{'a':[[1,2],[2]]}", PATTERN_FAIL, "/a/0/",
	      "resource value '[1 2]' does not match '1' at path /a/0/");
	/* positional elements that skip: all skipped => skip */
	check("{'a':[[{'(n)':'x'}]]}", "{'a':[[{'n':'y'}]]}", PATTERN_SKIP, "", NULL);
	/* E14: empty resource list passes a list pattern, absent fails */
	check("{'spec':{'imagePullSecrets':[{'name':'regcred'}]}}",
	      "{'spec':{'imagePullSecrets':[]}}", PATTERN_PASS, "", "");
	check("{'spec':{'imagePullSecrets':[{'name':'regcred'}]}}", "{'spec':{}}", PATTERN_FAIL,
	      "/spec/imagePullSecrets/", NULL);
	check("{'spec':{'imagePullSecrets':[{'name':'regcred'}]}}",
	      "{'spec':{'imagePullSecrets':[{'name':'other'}]}}", PATTERN_FAIL,
	      "/spec/imagePullSecrets/0/name/",
	      "resource value 'other' does not match 'regcred' at path "
	      "/spec/imagePullSecrets/0/name/");
	/* array of maps: a map pattern against a scalar element */
	check("{'a':[{'b':1}]}", "{'a':['s']}", PATTERN_FAIL, "/a/0/",
	      "pattern and resource have different structures. Path: /a/0/. Expected "
	      "map[string]interface {}, found string");
}

static void test_e13_first_list_element_only(void **state)
{
	(void)state;
	check("{'spec':{'containers':[{'name':'app-*'},{'name':'sidecar-*'}]}}",
	      "{'spec':{'containers':[{'name':'app-1'},{'name':'sidecar-1'}]}}", PATTERN_FAIL,
	      "/spec/containers/1/name/",
	      "resource value 'sidecar-1' does not match 'app-*' at path /spec/containers/1/name/");
}

static void test_e14_scalar_pattern_over_list(void **state)
{
	const char *pat = "{'spec':{'containers':[{'=(args)':'!--privileged'}]}}";

	(void)state;
	check(pat, "{'spec':{'containers':[{'args':['--a','--privileged']}]}}", PATTERN_FAIL,
	      "/spec/containers/0/args/",
	      "resource value '[--a --privileged]' does not match '!--privileged' at path "
	      "/spec/containers/0/args/");
	check(pat, "{'spec':{'containers':[{'name':'c'}]}}", PATTERN_PASS, "", "");
	check("{'spec':{'containers':[{'args':'!--privileged'}]}}",
	      "{'spec':{'containers':[{'name':'c'}]}}", PATTERN_FAIL, "/spec/containers/0/args/",
	      NULL);
}

/* ------------------------------------------------------------------ */
/* 3.4: scalar typing                                                  */

static void test_scalar_typing(void **state)
{
	(void)state;
	/* bool pattern */
	check("{'a':true}", "{'a':true}", PATTERN_PASS, "", "");
	check("{'a':true}", "{'a':'true'}", PATTERN_FAIL, "/a/",
	      "resource value 'true' does not match 'true' at path /a/");
	check("{'a':false}", "{'a':true}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':false}", "{}", PATTERN_FAIL, "/a/",
	      "resource value '<nil>' does not match 'false' at path /a/");
	/* int pattern */
	check("{'a':8080}", "{'a':8080}", PATTERN_PASS, "", "");
	check("{'a':8080}", "{'a':8080.0}", PATTERN_PASS, "", "");
	check("{'a':8080}", "{'a':8080.5}", PATTERN_FAIL, "/a/",
	      "resource value '8080.5' does not match '8080' at path /a/");
	check("{'a':8080}", "{'a':'8080'}", PATTERN_PASS, "", "");
	check("{'a':8080}", "{'a':'08080'}", PATTERN_PASS, "", "");
	check("{'a':8080}", "{'a':'8080.0'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':8080}", "{'a':' 8080'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':1}", "{'a':true}", PATTERN_FAIL, "/a/", NULL);
	/* float pattern */
	check("{'a':0.5}", "{'a':0.5}", PATTERN_PASS, "", "");
	check("{'a':0.5}", "{'a':'0.50'}", PATTERN_PASS, "", "");
	check("{'a':0.5}", "{'a':'5e-1'}", PATTERN_PASS, "", "");
	check("{'a':0.5}", "{'a':'half'}", PATTERN_FAIL, "/a/",
	      "resource value 'half' does not match '0.5' at path /a/");
	check("{'a':1.5}", "{'a':1}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':2.0}", "{'a':2}", PATTERN_PASS, "", "");
	check("{'a':1e6}", "{'a':3}", PATTERN_FAIL, "/a/",
	      "resource value '3' does not match '1e+06' at path /a/");
	/* null pattern: absent, null, "", 0, 0.0, false */
	check("{'a':null}", "{}", PATTERN_PASS, "", "");
	check("{'a':null}", "{'a':null}", PATTERN_PASS, "", "");
	check("{'a':null}", "{'a':''}", PATTERN_PASS, "", "");
	check("{'a':null}", "{'a':0}", PATTERN_PASS, "", "");
	check("{'a':null}", "{'a':0.0}", PATTERN_PASS, "", "");
	check("{'a':null}", "{'a':false}", PATTERN_PASS, "", "");
	check("{'a':null}", "{'a':'x'}", PATTERN_FAIL, "/a/",
	      "resource value 'x' does not match '<nil>' at path /a/");
	check("{'a':null}", "{'a':{}}", PATTERN_FAIL, "/a/",
	      "resource value 'map[]' does not match '<nil>' at path /a/");
	/* resource floats print with Go's %v */
	check("{'a':'<5'}", "{'a':80.0}", PATTERN_FAIL, "/a/",
	      "resource value '80' does not match '<5' at path /a/");
	check("{'a':'<5'}", "{'a':1000000.0}", PATTERN_FAIL, "/a/",
	      "resource value '1e+06' does not match '<5' at path /a/");
}

static void test_e15_scalar_typing(void **state)
{
	(void)state;
	check("{'data':{'enabled':true}}", "{'data':{'enabled':'true'}}", PATTERN_FAIL,
	      "/data/enabled/", NULL);
	check("{'data':{'enabled':'true'}}", "{'data':{'enabled':'true'}}", PATTERN_PASS, "", "");
	check("{'data':{'port':8080}}", "{'data':{'port':'8080'}}", PATTERN_PASS, "", "");
	check("{'data':{'ratio':0.5}}", "{'data':{'ratio':'0.50'}}", PATTERN_PASS, "", "");
	check("{'data':{'port':8080}}", "{'data':{'port':'08080'}}", PATTERN_PASS, "", "");
	/* string "true" matches bool true (stringified), bool true does not match "true" */
	check("{'a':'true'}", "{'a':true}", PATTERN_PASS, "", "");
	check("{'a':'false'}", "{'a':true}", PATTERN_FAIL, "/a/", NULL);
}

/* ------------------------------------------------------------------ */
/* 3.5: string mini-language                                           */

static void test_string_equality_and_wildcards(void **state)
{
	(void)state;
	check("{'a':'nginx'}", "{'a':'nginx'}", PATTERN_PASS, "", "");
	check("{'a':'ngin?'}", "{'a':'nginx'}", PATTERN_PASS, "", "");
	check("{'a':'ngin?'}", "{'a':'ngin'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'*'}", "{'a':''}", PATTERN_PASS, "", "");
	check("{'a':'?*'}", "{'a':''}", PATTERN_FAIL, "/a/", NULL);
	/* a literal a|b value matches the pattern a|b exactly (step 1) */
	check("{'a':'x|y'}", "{'a':'x|y'}", PATTERN_PASS, "", "");
	check("{'a':'x|y'}", "{'a':'y'}", PATTERN_PASS, "", "");
	check("{'a':'x|y'}", "{'a':'z'}", PATTERN_FAIL, "/a/",
	      "resource value 'z' does not match 'x|y' at path /a/");
	/* spaces around | and & are trimmed */
	check("{'a':'  x  |  y  '}", "{'a':'y'}", PATTERN_PASS, "", "");
	/* conjunctions */
	check("{'a':'a* & *z'}", "{'a':'abz'}", PATTERN_PASS, "", "");
	check("{'a':'a* & *z'}", "{'a':'abc'}", PATTERN_FAIL, "/a/", NULL);
	/* A & B | C == (A and B) or C */
	check("{'a':'a* & *z | q'}", "{'a':'q'}", PATTERN_PASS, "", "");
	check("{'a':'a* & *z | q'}", "{'a':'az'}", PATTERN_PASS, "", "");
	check("{'a':'a* & *z | q'}", "{'a':'a'}", PATTERN_FAIL, "/a/", NULL);
	/* negation with wildcard */
	check("{'a':'!*:latest'}", "{'a':'nginx:1'}", PATTERN_PASS, "", "");
	check("{'a':'!*:latest'}", "{'a':'nginx:latest'}", PATTERN_FAIL, "/a/", NULL);
	/* length < 2: plain equality, so "!", ">" and "<" are literals */
	check("{'a':'!'}", "{'a':'!'}", PATTERN_PASS, "", "");
	check("{'a':'>'}", "{'a':'>'}", PATTERN_PASS, "", "");
	check("{'a':'>'}", "{'a':'5'}", PATTERN_FAIL, "/a/", NULL);
	/* string comparison of numbers uses their text: ints in decimal */
	check("{'a':'8*'}", "{'a':80}", PATTERN_PASS, "", "");
	/* floats in Go 'E' form: 0.5 is "5E-01" */
	check("{'a':'5E-0?'}", "{'a':0.5}", PATTERN_PASS, "", "");
	check("{'a':'0.5*'}", "{'a':0.5}", PATTERN_FAIL, "/a/", NULL);
	/* ordering operators on non-numeric strings are false */
	check("{'a':'>abc'}", "{'a':'abd'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'<=abc'}", "{'a':'abc'}", PATTERN_FAIL, "/a/", NULL);
	/* operand trimmed after the operator */
	check("{'a':'!  foo'}", "{'a':'foo'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'>=  2'}", "{'a':2}", PATTERN_PASS, "", "");
	/* a wildcard against a map (here a list element) fails */
	check("{'=(a)':'*'}", "{'a':[{}]}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'!x'}", "{'a':[{}]}", PATTERN_FAIL, "/a/", NULL);
}

static void test_numeric_operators(void **state)
{
	(void)state;
	check("{'a':'>5'}", "{'a':6}", PATTERN_PASS, "", "");
	check("{'a':'>5'}", "{'a':5}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'>=5'}", "{'a':5}", PATTERN_PASS, "", "");
	check("{'a':'>=5'}", "{'a':4.5}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'<5'}", "{'a':4.5}", PATTERN_PASS, "", "");
	check("{'a':'<5'}", "{'a':'5'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'<=5'}", "{'a':'5'}", PATTERN_PASS, "", "");
	check("{'a':'<=5'}", "{'a':5.000001}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'!5'}", "{'a':6}", PATTERN_PASS, "", "");
	check("{'a':'!5'}", "{'a':5.0}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'5'}", "{'a':5}", PATTERN_PASS, "", "");
	check("{'a':'5'}", "{'a':5.0}", PATTERN_PASS, "", "");
	check("{'a':'>-1'}", "{'a':0}", PATTERN_PASS, "", "");
	/* numeric-looking strings compare as quantities */
	check("{'a':'1.1'}", "{'a':'1.10'}", PATTERN_PASS, "", "");
	check("{'a':'01'}", "{'a':'1'}", PATTERN_PASS, "", "");
	check("{'a':'1Gi'}", "{'a':'1024Mi'}", PATTERN_PASS, "", "");
	check("{'a':'>=100m'}", "{'a':'0.1'}", PATTERN_PASS, "", "");
	check("{'a':'<100m'}", "{'a':'0.1'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'>1Gi'}", "{'a':'1025Mi'}", PATTERN_PASS, "", "");
	/* a quantity pattern decides: no fall back to the string comparison */
	check("{'a':'!5'}", "{'a':'5.0'}", PATTERN_FAIL, "/a/", NULL);
	/* bools are neither durations nor quantities */
	check("{'a':'>1'}", "{'a':true}", PATTERN_FAIL, "/a/", NULL);
}

static void test_durations(void **state)
{
	(void)state;
	check("{'a':'<1h'}", "{'a':'30m'}", PATTERN_PASS, "", "");
	check("{'a':'<1h'}", "{'a':'90m'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'>=1h30m'}", "{'a':'5400s'}", PATTERN_PASS, "", "");
	check("{'a':'1h'}", "{'a':'60m'}", PATTERN_PASS, "", "");
	check("{'a':'!1h'}", "{'a':'60m'}", PATTERN_FAIL, "/a/", NULL);
	/* duration before quantity: "m" is minutes, so 500m < 1m is false */
	check("{'a':'<1m'}", "{'a':'500m'}", PATTERN_FAIL, "/a/", NULL);
	/* a float value is "%f" text, never a duration: falls to the quantity check */
	check("{'a':'0'}", "{'a':0.0}", PATTERN_PASS, "", "");
	check("{'a':'<1s'}", "{'a':5.0}", PATTERN_FAIL, "/a/", NULL);
	/* the value is not a duration and the operand not a quantity: string compare */
	check("{'a':'1h'}", "{'a':'1h'}", PATTERN_PASS, "", "");
	check("{'a':'1h*'}", "{'a':'1h30m'}", PATTERN_PASS, "", "");
}

static void test_null_as_zero(void **state)
{
	static const char *pass[] = {"'>=0'", "'<5'", "'<1h'", "'!5'", "'0'", "'<=1Gi'", "'0-1'"};
	static const char *fail[] = {"'>0'", "'5'", "'?*'", "'!foo'", "''", "'1-2'", "'>0s'"};
	char buf[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
		snprintf(buf, sizeof(buf), "{'a':%s}", pass[i]);
		check(buf, "{}", PATTERN_PASS, "", "");
		check(buf, "{'a':null}", PATTERN_PASS, "", "");
	}
	for (i = 0; i < sizeof(fail) / sizeof(fail[0]); i++) {
		snprintf(buf, sizeof(buf), "{'a':%s}", fail[i]);
		check(buf, "{}", PATTERN_FAIL, "/a/", NULL);
	}
	/* "*" as a scalar (not the whole value of a plain key) fails against null */
	check("{'=(a)':'*'}", "{'a':null}", PATTERN_FAIL, "/a/", NULL);
	check("{'=(a)':'*|x'}", "{'a':null}", PATTERN_FAIL, "/a/", NULL);
	/* null inside a scalar list is "0" too */
	check("{'a':'<5'}", "{'a':[null,1]}", PATTERN_PASS, "", "");
}

static void test_ranges(void **state)
{
	(void)state;
	check("{'a':'1-10'}", "{'a':1}", PATTERN_PASS, "", "");
	check("{'a':'1-10'}", "{'a':10}", PATTERN_PASS, "", "");
	check("{'a':'1-10'}", "{'a':11}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'1-10'}", "{'a':0.5}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'-10--8'}", "{'a':-9}", PATTERN_PASS, "", "");
	check("{'a':'-10--8'}", "{'a':-7}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'128Mi-512Mi'}", "{'a':'256Mi'}", PATTERN_PASS, "", "");
	check("{'a':'128Mi-512Mi'}", "{'a':'1Gi'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'1h-2h'}", "{'a':'90m'}", PATTERN_PASS, "", "");
	check("{'a':'1h-2h'}", "{'a':'3h'}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'0.00001!-2.00001'}", "{'a':3}", PATTERN_PASS, "", "");
	check("{'a':'0.00001!-2.00001'}", "{'a':1}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':'0.00001!-2.00001'}", "{'a':0}", PATTERN_PASS, "", "");
	/* 1h30m-2h is not a range: a plain (wildcard) string */
	check("{'a':'1h30m-2h'}", "{'a':'1h30m-2h'}", PATTERN_PASS, "", "");
	check("{'a':'1h30m-2h'}", "{'a':'100m'}", PATTERN_FAIL, "/a/", NULL);
	/* ranges combine with | and & */
	check("{'a':'1-2 | 8-9'}", "{'a':8}", PATTERN_PASS, "", "");
	check("{'a':'1-2 | 8-9'}", "{'a':5}", PATTERN_FAIL, "/a/", NULL);
}

static void test_e12_ranges(void **state)
{
	static const struct {
		const char *pat;
		enum pattern_status r3, r5, r6;
	} rows[] = {
	    {"2-5", PATTERN_PASS, PATTERN_PASS, PATTERN_FAIL},
	    {"2!-5", PATTERN_FAIL, PATTERN_FAIL, PATTERN_PASS},
	    {"!2-5", PATTERN_PASS, PATTERN_PASS, PATTERN_PASS},
	    {">1 & <4 | >5 & <7", PATTERN_PASS, PATTERN_FAIL, PATTERN_PASS},
	};
	char pat[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(pat, sizeof(pat), "{'spec':{'replicas':'%s'}}", rows[i].pat);
		/* integers as in the API, floats as the CLI converts them */
		check(pat, "{'spec':{'replicas':3}}", rows[i].r3, NULL, NULL);
		check(pat, "{'spec':{'replicas':5}}", rows[i].r5, NULL, NULL);
		check(pat, "{'spec':{'replicas':6}}", rows[i].r6, NULL, NULL);
		check(pat, "{'spec':{'replicas':3.0}}", rows[i].r3, NULL, NULL);
		check(pat, "{'spec':{'replicas':5.0}}", rows[i].r5, NULL, NULL);
		check(pat, "{'spec':{'replicas':6.0}}", rows[i].r6, NULL, NULL);
	}
	check("{'spec':{'replicas':'2-5'}}", "{'spec':{'replicas':6}}", PATTERN_FAIL,
	      "/spec/replicas/", "resource value '6' does not match '2-5' at path /spec/replicas/");
}

static void test_e10_missing_is_zero(void **state)
{
	(void)state;
	check("{'spec':{'terminationGracePeriodSeconds':'<=30'}}", "{'spec':{}}", PATTERN_PASS, "",
	      "");
	check("{'spec':{'terminationGracePeriodSeconds':'<=30'}}",
	      "{'spec':{'terminationGracePeriodSeconds':60}}", PATTERN_FAIL,
	      "/spec/terminationGracePeriodSeconds/", NULL);
	check(
	    "{'spec':{'=(securityContext)':{'runAsUser':'!0'}}}", "{'spec':{'securityContext':{}}}",
	    PATTERN_FAIL, "/spec/securityContext/runAsUser/",
	    "resource value '<nil>' does not match '!0' at path /spec/securityContext/runAsUser/");
	check("{'spec':{'=(securityContext)':{'runAsUser':'!0'}}}",
	      "{'spec':{'securityContext':{'runAsUser':1000}}}", PATTERN_PASS, "", "");
	check("{'spec':{'=(securityContext)':{'runAsUser':'!0'}}}",
	      "{'spec':{'securityContext':{'runAsUser':1000.0}}}", PATTERN_PASS, "", "");
	check("{'spec':{'containers':[{'resources':{'limits':{'memory':'<=1Gi'}}}]}}",
	      "{'spec':{'containers':[{'resources':{'limits':{'cpu':'1'}}}]}}", PATTERN_PASS, "",
	      "");
	check("{'spec':{'containers':[{'resources':{'limits':{'memory':'<=1Gi'}}}]}}",
	      "{'spec':{'containers':[{'resources':{}}]}}", PATTERN_FAIL,
	      "/spec/containers/0/resources/limits/", NULL);
}

static void test_e11_quantities_durations(void **state)
{
	const char *mem = "{'spec':{'containers':[{'resources':{'limits':{'memory':'<=1Gi'}}}]}}";

	(void)state;
	check(mem, "{'spec':{'containers':[{'resources':{'limits':{'memory':'1024Mi'}}}]}}",
	      PATTERN_PASS, "", "");
	check(mem, "{'spec':{'containers':[{'resources':{'limits':{'memory':'1Gi'}}}]}}",
	      PATTERN_PASS, "", "");
	check(mem, "{'spec':{'containers':[{'resources':{'limits':{'memory':'1.5Gi'}}}]}}",
	      PATTERN_FAIL, "/spec/containers/0/resources/limits/memory/",
	      "resource value '1.5Gi' does not match '<=1Gi' at path "
	      "/spec/containers/0/resources/limits/memory/");
	check("{'metadata':{'labels':{'version':'1.1'}}}",
	      "{'metadata':{'labels':{'version':'1.10'}}}", PATTERN_PASS, "", "");
	check("{'metadata':{'labels':{'version':'1.1'}}}",
	      "{'metadata':{'labels':{'version':'01.1'}}}", PATTERN_PASS, "", "");
	check("{'metadata':{'annotations':{'timeout':'<1h'}}}",
	      "{'metadata':{'annotations':{'timeout':'90m'}}}", PATTERN_FAIL,
	      "/metadata/annotations/timeout/", NULL);
	check("{'metadata':{'annotations':{'timeout':'<1h'}}}",
	      "{'metadata':{'annotations':{'timeout':'30m'}}}", PATTERN_PASS, "", "");
	check("{'spec':{'containers':[{'ports':[{'containerPort':'80'}]}]}}",
	      "{'spec':{'containers':[{'ports':[{'containerPort':80}]}]}}", PATTERN_PASS, "", "");
	check("{'spec':{'containers':[{'ports':[{'containerPort':'80'}]}]}}",
	      "{'spec':{'containers':[{'ports':[{'containerPort':80.0}]}]}}", PATTERN_PASS, "", "");
}

/* ------------------------------------------------------------------ */
/* 3.6: "*" on a map key                                               */

static void test_e9_absent_values(void **state)
{
	const char *probe = "{'spec':{'containers':[{'name':'*','livenessProbe':'*'}]}}";

	(void)state;
	check(probe, "{'spec':{'containers':[{'name':'a'}]}}", PATTERN_FAIL, "/spec/containers/0/",
	      "/spec/containers/0//livenessProbe not found");
	check(probe, "{'spec':{'containers':[{'name':'a','livenessProbe':null}]}}", PATTERN_FAIL,
	      "/spec/containers/0/", NULL);
	check(probe,
	      "{'spec':{'containers':[{'name':'a','livenessProbe':{'tcpSocket':{'port':80}}}]}}",
	      PATTERN_PASS, "", "");
	check(probe, "{'spec':{'containers':[{'name':'a','livenessProbe':[1]}]}}", PATTERN_PASS, "",
	      "");
	check(probe, "{'spec':{'containers':[{'name':'a','livenessProbe':0}]}}", PATTERN_PASS, "",
	      "");
	check("{'spec':{'hostNetwork':null}}", "{'spec':{}}", PATTERN_PASS, "", "");
	check("{'spec':{'hostNetwork':null}}", "{'spec':{'hostNetwork':false}}", PATTERN_PASS, "",
	      "");
	check("{'spec':{'hostNetwork':null}}", "{'spec':{'hostNetwork':true}}", PATTERN_FAIL,
	      "/spec/hostNetwork/",
	      "resource value 'true' does not match '<nil>' at path /spec/hostNetwork/");
	check("{'spec':{'priorityClassName':''}}", "{'spec':{}}", PATTERN_FAIL,
	      "/spec/priorityClassName/", NULL);
	check("{'spec':{'priorityClassName':''}}", "{'spec':{'priorityClassName':''}}",
	      PATTERN_PASS, "", "");
	/* "*" is only special as the whole value of a plain key */
	check("{'a':['*']}", "{'a':[{}]}", PATTERN_FAIL, "/a/", NULL);
	check("{'=(a)':'*'}", "{'a':{}}", PATTERN_FAIL, "/a/", NULL);
}

/* ------------------------------------------------------------------ */
/* 3.8: anchors                                                        */

static void test_anchor_parse(void **state)
{
	(void)state;
	/* spaces around an anchor are trimmed; the path uses the inner key */
	check("{' (a) ':'x','b':1}", "{'a':'y','b':2}", PATTERN_SKIP, "", NULL);
	check("{'=(a)':'x'}", "{'a':'y'}", PATTERN_FAIL, "/a/", NULL);
	/* lower-case x, empty parentheses and a newline inside are plain keys */
	check("{'x(a)':1}", "{'x(a)':1}", PATTERN_PASS, "", "");
	check("{'x(a)':1}", "{'a':1}", PATTERN_FAIL, "/x(a)/", NULL);
	check("{'()':1}", "{'()':2}", PATTERN_FAIL, "/()/", NULL);
	check("{'(a\\nb)':1}", "{}", PATTERN_FAIL, "/(a\nb)/", NULL);
	/* the inner key keeps inner parentheses */
	check("{'((a))':1}", "{'(a)':1}", PATTERN_PASS, "", "");
}

static void test_conditional_anchor(void **state)
{
	(void)state;
	check("{'(a)':'x','b':1}", "{'a':'x','b':1}", PATTERN_PASS, "", "");
	check("{'(a)':'x','b':1}", "{'a':'x','b':2}", PATTERN_FAIL, "/b/", NULL);
	check("{'(a)':'x','b':1}", "{'a':'y','b':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'y' does not match 'x' at path /a/");
	check("{'(a)':'x','b':1}", "{'b':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: conditional anchor key doesn't exist in the resource");
	/* a present null is evaluated (and fails a string) */
	check("{'(a)':'x','b':1}", "{'a':null,'b':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value '<nil>' does not match 'x' at path /a/");
	/* the whole value subtree is the condition */
	check("{'(a)':{'k':'v'},'b':1}", "{'a':{'k':'w'},'b':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'w' does not match 'v' at path /a/k/");
	check("{'(a)':{'k':'v'},'b':1}", "{'a':'s','b':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: pattern and resource have different structures. Path: "
	      "/a/. Expected map[string]interface {}, found string");
}

static void test_doc_socket_example(void **state)
{
	const char *pat =
	    "{'metadata':{'labels':{'allow-docker':'true'}},"
	    "'(spec)':{'(volumes)':[{'(hostPath)':{'path':'/var/run/docker.sock'}}]}}";

	(void)state;
	check(pat, "{'metadata':{'labels':{}},'spec':{}}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: conditional anchor mismatch: conditional anchor key "
	      "doesn't exist in the resource");
	check(
	    pat,
	    "{'metadata':{'labels':{}},'spec':{'volumes':[{'name':'a','hostPath':{'path':'/x'}}]}}",
	    PATTERN_SKIP, "", NULL);
	check(pat,
	      "{'metadata':{'labels':{'allow-docker':'true'}},'spec':{'volumes':[{'name':'a'},"
	      "{'name':'s','hostPath':{'path':'/var/run/docker.sock'}}]}}",
	      PATTERN_PASS, "", "");
	check(pat,
	      "{'metadata':{'labels':{}},'spec':{'volumes':[{'name':'s','hostPath':{'path':"
	      "'/var/run/docker.sock'}}]}}",
	      PATTERN_FAIL, "/metadata/labels/allow-docker/", NULL);
}

static void test_e2_conditional_skip(void **state)
{
	(void)state;
	check(
	    "{'spec':{'containers':[{'(image)':'*:latest','imagePullPolicy':'Always'}]}}",
	    "{'spec':{'containers':[{'name':'a','image':'nginx:1.25','imagePullPolicy':'"
	    "IfNotPresent'}]}}",
	    PATTERN_SKIP, "",
	    "conditional anchor mismatch: resource value 'nginx:1.25' does not match '*:latest' at "
	    "path /spec/containers/0/image/");
}

static void test_e3_per_element(void **state)
{
	const char *pat = "{'spec':{'containers':[{'name':'*','(image)':'*:latest | !*:*',"
			  "'imagePullPolicy':'!Always'}]}}";

	(void)state;
	check(
	    pat,
	    "{'spec':{'containers':[{'name':'a','image':'nginx:1.2.3','imagePullPolicy':'Always'}]}"
	    "}",
	    PATTERN_SKIP, "",
	    "conditional anchor mismatch: resource value 'nginx:1.2.3' does not match '*:latest | "
	    "!*:*' at path /spec/containers/0/image/");
	check(pat,
	      "{'spec':{'containers':[{'name':'a','image':'nginx','imagePullPolicy':'Always'}]}}",
	      PATTERN_FAIL, "/spec/containers/0/imagePullPolicy/", NULL);
	check(pat,
	      "{'spec':{'containers':[{'name':'a','image':'nginx','imagePullPolicy':'Never'}]}}",
	      PATTERN_PASS, "", "");
	check(
	    pat,
	    "{'spec':{'containers':[{'name':'a','image':'nginx:1.2.3','imagePullPolicy':'Always'},"
	    "{'name':'b','image':'busybox:1.28','imagePullPolicy':'Always'}]}}",
	    PATTERN_SKIP, "", NULL);
	check(pat,
	      "{'spec':{'containers':[{'name':'a','image':'nginx','imagePullPolicy':'Never'},"
	      "{'name':'b','image':'busybox:1.28','imagePullPolicy':'Always'}]}}",
	      PATTERN_PASS, "", "");
	check(
	    pat,
	    "{'spec':{'containers':[{'name':'b','image':'busybox:1.28','imagePullPolicy':'Always'},"
	    "{'name':'a','image':'nginx','imagePullPolicy':'Always'}]}}",
	    PATTERN_FAIL, "/spec/containers/1/imagePullPolicy/", NULL);
	/* :latest with Always is fine, with IfNotPresent fails */
	check(
	    pat,
	    "{'spec':{'containers':[{'name':'a','image':'x:latest','imagePullPolicy':'Always'}]}}",
	    PATTERN_FAIL, "/spec/containers/0/imagePullPolicy/",
	    "resource value 'Always' does not match '!Always' at path "
	    "/spec/containers/0/imagePullPolicy/");
}

static void test_e4_skip_preempts_siblings(void **state)
{
	const char *pat =
	    "{'spec':{'hostNetwork':false,'containers':[{'(name)':'istio-*','image':'istio/*'}]}}";

	(void)state;
	check(pat, "{'spec':{'hostNetwork':true,'containers':[{'name':'app','image':'app:1'}]}}",
	      PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'app' does not match 'istio-*' at path "
	      "/spec/containers/0/name/");
	check(pat,
	      "{'spec':{'hostNetwork':true,'containers':[{'name':'istio-proxy','image':'istio/"
	      "proxy'}]}}",
	      PATTERN_FAIL, "/spec/hostNetwork/", NULL);
}

static void test_e5_global_anchor(void **state)
{
	const char *pat = "{'spec':{'containers':[{'name':'*','<(image)':'corp.reg.com/*'}],"
			  "'imagePullSecrets':[{'name':'my-registry-secret'}]}}";

	(void)state;
	check(pat,
	      "{'spec':{'containers':[{'name':'a','image':'corp.reg.com/nginx'}],"
	      "'imagePullSecrets':[{'name':'other'}]}}",
	      PATTERN_FAIL, "/spec/imagePullSecrets/0/name/", NULL);
	check(pat,
	      "{'spec':{'containers':[{'name':'a','image':'docker.io/nginx'}],"
	      "'imagePullSecrets':[{'name':'other'}]}}",
	      PATTERN_SKIP, "",
	      "global anchor mismatch: resource value 'docker.io/nginx' does not match "
	      "'corp.reg.com/*' at path /spec/containers/0/image/");
	check(pat,
	      "{'spec':{'containers':[{'name':'a','image':'corp.reg.com/a'},{'name':'b','image':"
	      "'docker.io/b'}],'imagePullSecrets':[{'name':'other'}]}}",
	      PATTERN_FAIL, "/spec/imagePullSecrets/0/name/", NULL);
	check(pat,
	      "{'spec':{'containers':[{'name':'a','image':'corp.reg.com/a'}],"
	      "'imagePullSecrets':[{'name':'my-registry-secret'}]}}",
	      PATTERN_PASS, "", "");
	/* absent global key: the rest is enforced */
	check(pat, "{'spec':{'containers':[{'name':'a'}],'imagePullSecrets':[{'name':'x'}]}}",
	      PATTERN_FAIL, "/spec/imagePullSecrets/0/name/", NULL);
	/* a global anchor at map level skips the whole rule, whatever else fails */
	check("{'<(kind)':'Pod','spec':{'x':1}}", "{'kind':'Deployment','spec':{'x':2}}",
	      PATTERN_SKIP, "",
	      "global anchor mismatch: resource value 'Deployment' does not match 'Pod' at path "
	      "/kind/");
	/* a global skip propagates unchanged through maps and =() */
	check("{'=(spec)':{'<(a)':1,'b':2},'c':3}", "{'spec':{'a':2,'b':0},'c':0}", PATTERN_SKIP,
	      "", "global anchor mismatch: resource value '2' does not match '1' at path /spec/a/");
}

static void test_e6_equality_anchor(void **state)
{
	const char *pat =
	    "{'spec':{'=(volumes)':[{'=(hostPath)':{'path':'!/var/run/docker.sock'}}]}}";

	(void)state;
	check(pat, "{'spec':{}}", PATTERN_PASS, "", "");
	check(pat, "{'spec':{'volumes':[{'name':'a','emptyDir':{}}]}}", PATTERN_PASS, "", "");
	check(
	    pat, "{'spec':{'volumes':[{'name':'s','hostPath':{'path':'/var/run/docker.sock'}}]}}",
	    PATTERN_FAIL, "/spec/volumes/0/hostPath/path/",
	    "resource value '/var/run/docker.sock' does not match '!/var/run/docker.sock' at path "
	    "/spec/volumes/0/hostPath/path/");
	/* scalar value of an equality anchor */
	check("{'spec':{'=(hostNetwork)':false}}", "{'spec':{'hostNetwork':true}}", PATTERN_FAIL,
	      "/spec/hostNetwork/", NULL);
	check("{'spec':{'=(hostNetwork)':false}}", "{'spec':{'hostNetwork':null}}", PATTERN_FAIL,
	      "/spec/hostNetwork/", NULL);
}

static void test_e7_negation_anchor(void **state)
{
	const char *pat = "{'spec':{'=(volumes)':[{'X(hostPath)':'null'}]}}";
	const char *var = "{'spec':{'=(volumes)':[{'(name)':'cache-*','X(hostPath)':'null'}]}}";

	(void)state;
	check(pat, "{'spec':{'volumes':[{'name':'a'},{'name':'b','hostPath':{'path':'/'}}]}}",
	      PATTERN_FAIL, "/spec/volumes/1/hostPath/",
	      "negation anchor matched in resource: /spec/volumes/1/hostPath/ is not allowed");
	/* whatever the value, even null */
	check(pat, "{'spec':{'volumes':[{'name':'a','hostPath':null}]}}", PATTERN_FAIL,
	      "/spec/volumes/0/hostPath/", NULL);
	check(pat, "{'spec':{'volumes':[{'name':'a'}]}}", PATTERN_PASS, "", "");
	check(var, "{'spec':{'volumes':[{'name':'data','hostPath':{}},{'name':'cache-1'}]}}",
	      PATTERN_PASS, "", "");
	check(
	    var,
	    "{'spec':{'volumes':[{'name':'data','hostPath':{}},{'name':'cache-1','hostPath':{}}]}}",
	    PATTERN_FAIL, "/spec/volumes/1/hostPath/", NULL);
	check(var, "{'spec':{'volumes':[{'name':'data','hostPath':{}}]}}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'data' does not match 'cache-*' at path "
	      "/spec/volumes/0/name/");
	/* a negation failure stays a FAIL even with absent existence keys */
	check("{'^(list)':[{'a':1}],'X(b)':null}", "{'b':1}", PATTERN_FAIL, "/b/", NULL);
}

static void test_e8_existence_anchor(void **state)
{
	const char *pat = "{'spec':{'^(containers)':[{'image':'nginx:latest'}]}}";
	const char *var = "{'spec':{'^(initContainers)':[{'name':'init-*'}],'containers':[{'image':"
			  "'reg.io/*'}]}}";

	(void)state;
	check(pat, "{'spec':{'containers':[{'image':'busybox'},{'image':'nginx:latest'}]}}",
	      PATTERN_PASS, "", "");
	check(pat, "{'spec':{'containers':[{'image':'busybox'}]}}", PATTERN_FAIL,
	      "/spec/containers/", "existence anchor validation failed at path /spec/containers/");
	check(pat, "{'spec':{}}", PATTERN_PASS, "", "");
	/* an empty resource list has no satisfying element */
	check(pat, "{'spec':{'containers':[]}}", PATTERN_FAIL, "/spec/containers/", NULL);
	check(
	    pat, "{'spec':{'containers':{'image':'nginx:latest'}}}", PATTERN_FAIL,
	    "/spec/containers/",
	    "invalid resource type map[string]interface {}: Existence ^ () anchor can be used only "
	    "on list/array type resource");
	check("{'^(a)':['x']}", "{'a':['x']}", PATTERN_FAIL, "/a/",
	      "invalid pattern type []interface {}: Pattern has to be of type map to compare "
	      "against items in resource");
	/* every pattern element needs its own match */
	check("{'^(c)':[{'n':'a'},{'n':'b'}]}", "{'c':[{'n':'b'},{'n':'a'}]}", PATTERN_PASS, "",
	      "");
	check("{'^(c)':[{'n':'a'},{'n':'b'}]}", "{'c':[{'n':'a'},{'n':'a'}]}", PATTERN_FAIL, "/c/",
	      NULL);
	/* an element that skips does not satisfy */
	check("{'^(c)':[{'(n)':'a','v':1}]}", "{'c':[{'n':'b','v':1}]}", PATTERN_FAIL, "/c/", NULL);
	/* variant: ERROR instead of FAIL when the existence key is never present */
	check(var, "{'spec':{'containers':[{'image':'docker.io/nginx'}]}}", PATTERN_ERROR, "",
	      "resource value 'docker.io/nginx' does not match 'reg.io/*' at path "
	      "/spec/containers/0/image/");
	check_message(
	    var, "{'spec':{'containers':[{'image':'docker.io/nginx'}]}}", "r", NULL, PATTERN_ERROR,
	    "validation error: rule r execution error: resource value 'docker.io/nginx' does "
	    "not match 'reg.io/*' at path /spec/containers/0/image/");
	check(var,
	      "{'spec':{'initContainers':[{'name':'init-a'}],'containers':[{'image':'docker.io/"
	      "nginx'}]}}",
	      PATTERN_FAIL, "/spec/containers/0/image/", NULL);
	/* anchors run before plain keys: the empty list fails first */
	check(var, "{'spec':{'initContainers':[],'containers':[{'image':'docker.io/nginx'}]}}",
	      PATTERN_FAIL, "/spec/initContainers/",
	      "existence anchor validation failed at path /spec/initContainers/");
}

static void test_presence_table(void **state)
{
	(void)state;
	/* a conditional key absent in one element, present in another: FAIL */
	check("{'c':[{'(n)':'a*','v':1}]}", "{'c':[{'v':2},{'n':'ab','v':2}]}", PATTERN_FAIL,
	      "/c/1/v/", NULL);
	/*
	 * a conditional key never present while another part fails: ERROR
	 * (the elements tried by an existence anchor are recorded too)
	 */
	check("{'^(c)':[{'(n)':'a*'}]}", "{'c':[{'v':2}]}", PATTERN_ERROR, "",
	      "existence anchor validation failed at path /c/");
	check("{'^(c)':[{'(n)':'a*'}]}", "{'c':[{'n':'b'}]}", PATTERN_FAIL, "/c/",
	      "existence anchor validation failed at path /c/");
	/* a skip still wins over the presence table */
	check("{'c':[{'(n)':'a*','v':1}],'d':1}", "{'c':[{'v':2}],'d':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: conditional anchor key doesn't exist in the resource");
	/* presence is sticky and keyed by the anchored spelling across maps */
	check("{'x':{'^(k)':[{'a':1}]},'y':{'^(k)':[{'a':1}]},'z':1}",
	      "{'x':{'k':[{'a':1}]},'y':{},'z':2}", PATTERN_FAIL, "/z/", NULL);
	/* X() keys do not turn failures into errors */
	check("{'spec':{'X(hostPID)':'null','containers':[{'image':'reg/*'}]}}",
	      "{'spec':{'containers':[{'image':'docker/x'}]}}", PATTERN_FAIL,
	      "/spec/containers/0/image/", NULL);
	/* =() and <() keys are not recorded */
	check("{'=(a)':1,'<(b)':1,'c':1}", "{'c':2}", PATTERN_FAIL, "/c/", NULL);
}

static void test_direct_vs_aggregate(void **state)
{
	(void)state;
	/* a direct conditional skip swallows a failing sibling anchor */
	check("{'(a)':'x','X(b)':null,'c':1}", "{'a':'y','b':1,'c':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'y' does not match 'x' at path /a/");
	check("{'(a)':'x','X(b)':null,'c':1}", "{'a':'x','b':1,'c':2}", PATTERN_FAIL, "/b/", NULL);
	/* ... even when another anchor applied */
	check("{'(a)':'x','=(d)':1,'c':1}", "{'a':'y','d':1,'c':2}", PATTERN_SKIP, "", NULL);
	/* an aggregate skip (all list elements skipped) only skips when nothing applied */
	check("{'=(l)':[{'(n)':'x','v':1}],'c':1}", "{'l':[{'n':'y'}],'c':2}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'y' does not match 'x' at path /l/0/n/");
	check("{'=(l)':[{'(n)':'x','v':1}],'=(o)':1,'c':1}", "{'l':[{'n':'y'}],'c':2}",
	      PATTERN_FAIL, "/c/", NULL);
	/* ... and a failing anchor after an aggregate skip is reported */
	check("{'=(l)':[{'(n)':'x'}],'X(z)':null}", "{'l':[{'n':'y'}],'z':1}", PATTERN_FAIL, "/z/",
	      "negation anchor matched in resource: /z/ is not allowed");
	/* anchors are evaluated in byte order: ( = X ^ */
	check("{'=(a)':1,'X(b)':null}", "{'a':2,'b':1}", PATTERN_FAIL, "/a/", NULL);
	check("{'^(a)':[{'k':1}],'X(b)':null}", "{'a':[{'k':2}],'b':1}", PATTERN_FAIL, "/b/", NULL);
	/* several skipped children: texts joined (see SKIP_SEP in pattern.c) */
	check("{'c':[{'(n)':'x'}]}", "{'c':[{'n':'a'},{'n':'b'}]}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'a' does not match 'x' at path /c/0/n/; "
	      "conditional anchor mismatch: resource value 'b' does not match 'x' at path /c/1/n/");
}

static void test_plain_key_order(void **state)
{
	(void)state;
	/* plain keys: ascending */
	check("{'a':1,'b':1,'c':1}", "{'a':0,'b':0,'c':0}", PATTERN_FAIL, "/a/", NULL);
	/* keys whose value holds anchors come first, in descending order */
	check("{'a':1,'b':{'=(x)':1},'c':{'=(y)':1},'d':1}",
	      "{'a':0,'b':{'x':0},'c':{'y':0},'d':0}", PATTERN_FAIL, "/c/y/", NULL);
	check("{'a':1,'b':[{'=(x)':1}],'d':1}", "{'a':0,'b':[{'x':0}],'d':0}", PATTERN_FAIL,
	      "/b/0/x/", NULL);
	/* global anchors come first too */
	check("{'a':1,'<(z)':1}", "{'a':0,'z':1}", PATTERN_FAIL, "/a/", NULL);
	check("{'a':1,'<(z)':1}", "{'a':0,'z':0}", PATTERN_SKIP, "", NULL);
	/* deep anchors count */
	check("{'a':1,'b':{'c':{'d':[{'X(e)':null}]}}}", "{'a':0,'b':{'c':{'d':[{'e':1}]}}}",
	      PATTERN_FAIL, "/b/c/d/0/e/", NULL);
}

/* ------------------------------------------------------------------ */
/* 3.9: metadata labels / annotations                                  */

static void test_e16_label_keys(void **state)
{
	const char *wild = "{'metadata':{'labels':{'app.kubernetes.io/*':'?*'}}}";

	(void)state;
	check(wild, "{'metadata':{'labels':{'app.kubernetes.io/name':'web'}}}", PATTERN_PASS, "",
	      "");
	check(wild, "{'metadata':{'labels':{'app':'web'}}}", PATTERN_FAIL,
	      "/metadata/labels/app.kubernetes.io/*/",
	      "resource value '<nil>' does not match '?*' at path "
	      "/metadata/labels/app.kubernetes.io/*/");
	/* the renamed key is checked under its real name */
	check(wild, "{'metadata':{'labels':{'app.kubernetes.io/name':''}}}", PATTERN_FAIL,
	      "/metadata/labels/app.kubernetes.io/name/", NULL);
	check("{'metadata':{'=(labels)':{'X(team)':null}}}",
	      "{'metadata':{'labels':{'team':'red'}}}", PATTERN_PASS, "", "");
	check("{'metadata':{'=(labels)':{'X(team)':'null'}}}",
	      "{'metadata':{'labels':{'team':'red'}}}", PATTERN_FAIL, "/metadata/labels/team/",
	      "negation anchor matched in resource: /metadata/labels/team/ is not allowed");
}

static void test_label_expansion(void **state)
{
	(void)state;
	/* annotations, anchored metadata, and metadata at any depth */
	check("{'metadata':{'annotations':{'x/*':'on'}}}",
	      "{'metadata':{'annotations':{'x/y':'off'}}}", PATTERN_FAIL,
	      "/metadata/annotations/x/y/", NULL);
	check("{'=(metadata)':{'labels':{'a*':'1'}}}", "{'metadata':{'labels':{'ab':'1'}}}",
	      PATTERN_PASS, "", "");
	check("{'spec':{'template':{'metadata':{'labels':{'tier-*':'?*'}}}}}",
	      "{'spec':{'template':{'metadata':{'labels':{'tier-x':'web'}}}}}", PATTERN_PASS, "",
	      "");
	/* anchored wildcard keys keep their anchor after renaming */
	check("{'metadata':{'labels':{'X(team-*)':'null'}}}",
	      "{'metadata':{'labels':{'team-a':'1'}}}", PATTERN_FAIL, "/metadata/labels/team-a/",
	      NULL);
	check("{'metadata':{'labels':{'X(team-*)':'null'}}}", "{'metadata':{'labels':{'x':'1'}}}",
	      PATTERN_PASS, "", "");
	check("{'metadata':{'labels':{'(env-*)':'prod','owner':'?*'}}}",
	      "{'metadata':{'labels':{'env-1':'dev'}}}", PATTERN_SKIP, "",
	      "conditional anchor mismatch: resource value 'dev' does not match 'prod' at path "
	      "/metadata/labels/env-1/");
	/* a renamed conditional key counts as present: FAIL, not ERROR */
	check("{'metadata':{'labels':{'(env-*)':'prod','owner':'?*'}}}",
	      "{'metadata':{'labels':{'env-1':'prod'}}}", PATTERN_FAIL, "/metadata/labels/owner/",
	      NULL);
	/* keys are ordered under their new names: "*x" sorts before "c", "zx" after */
	check("{'metadata':{'labels':{'c':'1','*x':'1'}}}",
	      "{'metadata':{'labels':{'c':'0','zx':'0'}}}", PATTERN_FAIL, "/metadata/labels/c/",
	      NULL);
	check("{'metadata':{'labels':{'c':'1','*x':'1'}}}", "{'metadata':{'labels':{'c':'0'}}}",
	      PATTERN_FAIL, "/metadata/labels/*x/", NULL);
	/* the first matching resource key is used */
	check("{'metadata':{'labels':{'a*':'1'}}}", "{'metadata':{'labels':{'a1':'1','a2':'2'}}}",
	      PATTERN_PASS, "", "");
	/* non-string values are dropped only when the resource has the labels map */
	check("{'metadata':{'=(labels)':{'a':null}}}", "{'metadata':{'labels':{'a':'x'}}}",
	      PATTERN_PASS, "", "");
	check("{'metadata':{'=(labels)':{'a':1}}}", "{'metadata':{'labels':{'a':'x'}}}",
	      PATTERN_PASS, "", "");
	check("{'x':{'=(labels)':{'a':1}}}", "{'x':{'labels':{'a':'x'}}}", PATTERN_FAIL,
	      "/x/labels/a/", NULL);
	check("{'metadata':{'labels':{'a':1}}}", "{'metadata':{'labels':'s'}}", PATTERN_FAIL,
	      "/metadata/labels/", NULL);
	/* not under metadata: wildcard keys are literal */
	check("{'spec':{'labels':{'a*':'1'}}}", "{'spec':{'labels':{'ab':'1'}}}", PATTERN_FAIL,
	      "/spec/labels/a*/", NULL);
}

/* ------------------------------------------------------------------ */
/* 3.11: messages                                                      */

static void test_e1_messages(void **state)
{
	const char *pat = "{'metadata':{'labels':{'team':'?*'}}}";

	(void)state;
	check_message(pat, "{'metadata':{'labels':{'app':'web'}}}", "r", "label team is required",
		      PATTERN_FAIL,
		      "validation error: label team is required. rule r failed at path "
		      "/metadata/labels/team/");
	check(pat, "{'metadata':{}}", PATTERN_FAIL, "/metadata/labels/", NULL);
	check(pat, "{'metadata':{'labels':{'team':''}}}", PATTERN_FAIL, "/metadata/labels/team/",
	      NULL);
	check_message(pat, "{'metadata':{'labels':{'team':'a'}}}", "r", "m", PATTERN_PASS,
		      "validation rule 'r' passed.");
}

static void test_messages(void **state)
{
	const char *pat = "{'spec':{'x':1}}";
	const char *skip = "{'(k)':1,'x':1}";
	const char *err = "{'^(e)':[{'a':1}],'x':1}";

	(void)state;
	check_message(pat, "{'spec':{'x':2}}", "r", NULL, PATTERN_FAIL,
		      "validation error: rule r failed at path /spec/x/");
	check_message(pat, "{'spec':{'x':2}}", "r", "", PATTERN_FAIL,
		      "validation error: rule r failed at path /spec/x/");
	check_message(pat, "{'spec':{'x':2}}", "r", "x must be 1.", PATTERN_FAIL,
		      "validation error: x must be 1. rule r failed at path /spec/x/");
	check_message(pat, "{'spec':{'x':2}}", "r", "x must be 1", PATTERN_FAIL,
		      "validation error: x must be 1. rule r failed at path /spec/x/");
	check_message(
	    skip, "{'k':2,'x':2}", "r", "m", PATTERN_SKIP,
	    "conditional anchor mismatch: resource value '2' does not match '1' at path /k/");
	check_message(err, "{'x':2}", "r", "bad", PATTERN_ERROR,
		      "validation error: bad. rule r execution error: resource value '2' does not "
		      "match '1' at path /x/");
	check_message(
	    "{'a':[[1],[1]]}", "{'a':[[1]]}", "r", NULL, PATTERN_ERROR,
	    "validation error: rule r execution error: validate Array failed, array length "
	    "mismatch, resource Array len is 1 and pattern Array len is 2");
	check_message(pat, "{'spec':{'x':1}}", "check", NULL, PATTERN_PASS,
		      "validation rule 'check' passed.");
}

/* ------------------------------------------------------------------ */
/* 4: anyPattern                                                       */

static char *any(const char *const *pats, size_t n, const char *res, const char *message,
		 enum pattern_status *st)
{
	struct pattern *ps[8];
	json_t *r = J(res);
	char *m;
	size_t i;

	for (i = 0; i < n; i++)
		ps[i] = compile(pats[i]);
	m = pattern_any(ps, n, r, "r", message, st);
	for (i = 0; i < n; i++)
		pattern_free(ps[i]);
	json_decref(r);
	return m;
}

static void check_any(const char *const *pats, size_t n, const char *res, const char *message,
		      enum pattern_status want, const char *want_msg)
{
	enum pattern_status st = PATTERN_ERROR;
	char *m = any(pats, n, res, message, &st);

	assert_int_equal(st, want);
	assert_string_equal(m, want_msg);
	free(m);
}

static void test_e17_any_pattern(void **state)
{
	static const char *const ns[] = {"{'metadata':{'namespace':'?*'}}",
					 "{'metadata':{'namespace':'!default'}}"};
	static const char *const sk[] = {
	    "{'spec':{'containers':[{'(image)':'a/*','imagePullPolicy':'Always'}]}}",
	    "{'spec':{'containers':[{'(image)':'b/*','imagePullPolicy':'Always'}]}}"};

	(void)state;
	check_any(ns, 2, "{'metadata':{'name':'x'}}", "A namespace is required", PATTERN_FAIL,
		  "validation error: A namespace is required. rule r[0] failed at path "
		  "/metadata/namespace/ rule r[1] failed at path /metadata/namespace/");
	check_any(ns, 2, "{'metadata':{'name':'x','namespace':'dev'}}", "A namespace is required",
		  PATTERN_PASS, "validation rule 'r' anyPattern[0] passed.");
	check_any(ns, 2, "{'metadata':{'name':'x','namespace':'default'}}", NULL, PATTERN_PASS,
		  "validation rule 'r' anyPattern[0] passed.");
	check_any(sk, 2, "{'spec':{'containers':[{'image':'c/x','imagePullPolicy':'Never'}]}}", "m",
		  PATTERN_SKIP,
		  "rule r[0] skipped: conditional anchor mismatch: resource value 'c/x' does not "
		  "match 'a/*' at path /spec/containers/0/image/ rule r[1] skipped: conditional "
		  "anchor mismatch: resource value 'c/x' does not match 'b/*' at path "
		  "/spec/containers/0/image/");
	/* mixed skip and fail: only the failing index is listed */
	check_any(sk, 2, "{'spec':{'containers':[{'image':'b/x','imagePullPolicy':'Never'}]}}",
		  NULL, PATTERN_FAIL,
		  "validation error: rule r[1] failed at path /spec/containers/0/imagePullPolicy/");
	/* the second pattern passes */
	check_any(sk, 2, "{'spec':{'containers':[{'image':'b/x','imagePullPolicy':'Always'}]}}",
		  NULL, PATTERN_PASS, "validation rule 'r' anyPattern[1] passed.");
}

static void test_any_pattern_edges(void **state)
{
	static const char *const pe[] = {"{'^(e)':[{'a':1}],'x':1}", "{'x':1}"};
	enum pattern_status st = PATTERN_ERROR;
	char *m;

	(void)state;
	/* an empty-path failure is a "failed:" fragment and a FAIL, not an ERROR */
	check_any(pe, 2, "{'x':2}", "x must be 1.", PATTERN_FAIL,
		  "validation error: x must be 1. rule r[0] failed: resource value '2' does not "
		  "match '1' at path /x/ rule r[1] failed at path /x/");
	/* empty anyPattern: PASS with the raw message */
	m = pattern_any(NULL, 0, NULL, "r", "raw message", &st);
	assert_int_equal(st, PATTERN_PASS);
	assert_string_equal(m, "raw message");
	free(m);
	m = pattern_any(NULL, 0, NULL, "r", NULL, &st);
	assert_int_equal(st, PATTERN_PASS);
	assert_string_equal(m, "");
	free(m);
}

/* ------------------------------------------------------------------ */
/* Compilation                                                         */

static void test_compile_errors(void **state)
{
	(void)state;
	check_compile_error("{'spec':{'containers':[{'+(name)':'x'}]}}", GV_EINVAL,
			    "/spec/containers/0/+(name)", "unsupported anchor +(name)");
	check_compile_error("{'spec':{'^(containers)':{'a':1}}}", GV_EINVAL, "/spec/^(containers)",
			    "existence anchor should have value of type list");
	check_compile_error("{'spec':{'^(containers)':[]}}", GV_EINVAL, "/spec/^(containers)",
			    "existence anchor: should have atleast one value");
	check_compile_error("{'metadata':{'annotations':{'a/b~c':{'+(x)':1}}}}", GV_EINVAL,
			    "/metadata/annotations/a~1b~0c/+(x)", "unsupported anchor +(x)");
}

static void test_depth_limit(void **state)
{
	struct gv_err err = {0};
	json_t *root = json_object(), *cur = root;
	struct pattern *p;
	int i;

	(void)state;
	for (i = 0; i < 300; i++) {
		json_t *next = json_object();

		json_object_set_new(cur, "a", next);
		cur = next;
	}
	p = pattern_compile(root, &err);
	assert_null(p);
	assert_int_equal(err.code, GV_ELIMIT);
	json_decref(root);

	/* 200 levels are fine, and matching them is bounded by the pattern */
	root = json_object();
	cur = root;
	for (i = 0; i < 200; i++) {
		json_t *next = json_object();

		json_object_set_new(cur, "a", next);
		cur = next;
	}
	json_object_set_new(cur, "v", json_integer(1));
	p = pattern_compile(root, NULL);
	assert_non_null(p);
	{
		struct pattern_outcome o;

		pattern_match(p, root, &o);
		assert_int_equal(o.status, PATTERN_PASS);
		pattern_outcome_release(&o);
	}
	pattern_free(p);
	json_decref(root);
}

/* Compile once, match many; the pattern tree is not needed after compile. */
static void test_compile_once(void **state)
{
	json_t *pj = J("{'spec':{'containers':[{'image':'reg/* | !*'}]}}");
	struct pattern *p = pattern_compile(pj, NULL);
	json_t *good = J("{'spec':{'containers':[{'image':'reg/a'}]}}");
	json_t *bad = J("{'spec':{'containers':[{'image':'x'}]}}");
	struct pattern_outcome o;
	int i;

	(void)state;
	json_decref(pj);
	assert_non_null(p);
	for (i = 0; i < 100; i++) {
		pattern_match(p, i % 2 ? good : bad, &o);
		assert_int_equal(o.status, i % 2 ? PATTERN_PASS : PATTERN_FAIL);
		pattern_outcome_release(&o);
	}
	pattern_free(p);
	json_decref(good);
	json_decref(bad);
}

/*
 * The work of a match is charged to a step budget (engine_int.h): a step
 * per resource value visited, per 16 code points a wildcard compares. A
 * budget that runs out makes the match an error.
 */
static void test_budget(void **state)
{
	struct pattern *p = compile("{'spec':{'containers':[{'image':'reg/*'}]}}");
	json_t *r =
	    J("{'spec':{'containers':[{'image':'reg/a'},{'image':'reg/b'},{'image':'x'}]}}");
	struct jp_budget b = {.max = 100};
	struct pattern_outcome o;
	struct pattern *pats[2];
	enum pattern_status st;
	char *a, *text, *m;
	json_t *tr;

	(void)state;
	/* root, spec, containers, 3 elements and 3 images: 9 values */
	pattern_match_budget(p, r, &b, &o);
	assert_int_equal(o.status, PATTERN_FAIL);
	assert_string_equal(o.path, "/spec/containers/2/image/");
	assert_int_equal(b.used, 9);
	pattern_outcome_release(&o);

	/* running out is an error, whatever the match would have given */
	b = (struct jp_budget){.max = 5};
	pattern_match_budget(p, r, &b, &o);
	assert_int_equal(o.status, PATTERN_ERROR);
	assert_string_equal(o.path, "");
	assert_string_equal(o.msg, "rule evaluation step budget (5) exceeded");
	assert_int_equal(b.used, 5);
	m = pattern_message(&o, "r", "msg");
	assert_string_equal(m, "validation error: msg. rule r execution error: rule evaluation "
			       "step budget (5) exceeded");
	free(m);
	pattern_outcome_release(&o);

	/* anyPattern: one budget for all the patterns, and running out is no failure */
	pats[0] = p;
	pats[1] = p;
	b = (struct jp_budget){.max = 12};
	m = pattern_any_budget(pats, 2, r, "r", NULL, &b, &st);
	assert_int_equal(st, PATTERN_ERROR);
	assert_string_equal(m, "validation error: rule r execution error: rule evaluation step "
			       "budget (12) exceeded");
	free(m);
	pattern_free(p);
	json_decref(r);

	/* a quadratic wildcard: 100 x 10,000 code points, about 62,500 steps */
	a = repeat_a(100);
	text = repeat_a(10000);
	tr = json_pack("{s:s}", "t", text);
	free(text);
	text = gv_xasprintf("{'t':'*%sb'}", a);
	p = compile(text);
	b = (struct jp_budget){.max = 1000};
	pattern_match_budget(p, tr, &b, &o);
	assert_int_equal(o.status, PATTERN_ERROR);
	assert_string_equal(o.msg, "rule evaluation step budget (1000) exceeded");
	pattern_outcome_release(&o);
	b = (struct jp_budget){.max = 100000};
	pattern_match_budget(p, tr, &b, &o);
	assert_int_equal(o.status, PATTERN_FAIL);
	assert_true(b.used > 50000 && b.used < 70000);
	pattern_outcome_release(&o);
	pattern_free(p);
	json_decref(tr);
	free(text);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_structure),
	    cmocka_unit_test(test_scalar_over_array),
	    cmocka_unit_test(test_arrays),
	    cmocka_unit_test(test_e13_first_list_element_only),
	    cmocka_unit_test(test_e14_scalar_pattern_over_list),
	    cmocka_unit_test(test_scalar_typing),
	    cmocka_unit_test(test_e15_scalar_typing),
	    cmocka_unit_test(test_string_equality_and_wildcards),
	    cmocka_unit_test(test_numeric_operators),
	    cmocka_unit_test(test_durations),
	    cmocka_unit_test(test_null_as_zero),
	    cmocka_unit_test(test_ranges),
	    cmocka_unit_test(test_e12_ranges),
	    cmocka_unit_test(test_e10_missing_is_zero),
	    cmocka_unit_test(test_e11_quantities_durations),
	    cmocka_unit_test(test_e9_absent_values),
	    cmocka_unit_test(test_anchor_parse),
	    cmocka_unit_test(test_conditional_anchor),
	    cmocka_unit_test(test_doc_socket_example),
	    cmocka_unit_test(test_e2_conditional_skip),
	    cmocka_unit_test(test_e3_per_element),
	    cmocka_unit_test(test_e4_skip_preempts_siblings),
	    cmocka_unit_test(test_e5_global_anchor),
	    cmocka_unit_test(test_e6_equality_anchor),
	    cmocka_unit_test(test_e7_negation_anchor),
	    cmocka_unit_test(test_e8_existence_anchor),
	    cmocka_unit_test(test_presence_table),
	    cmocka_unit_test(test_direct_vs_aggregate),
	    cmocka_unit_test(test_plain_key_order),
	    cmocka_unit_test(test_e16_label_keys),
	    cmocka_unit_test(test_label_expansion),
	    cmocka_unit_test(test_e1_messages),
	    cmocka_unit_test(test_messages),
	    cmocka_unit_test(test_e17_any_pattern),
	    cmocka_unit_test(test_any_pattern_edges),
	    cmocka_unit_test(test_compile_errors),
	    cmocka_unit_test(test_depth_limit),
	    cmocka_unit_test(test_compile_once),
	    cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
