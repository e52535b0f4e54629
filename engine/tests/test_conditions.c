/*
 * Unit tests for engine/conditions.c: the condition operators of
 * kyverno-semantics.md section 5.3 (condition_op_eval on prepared operands)
 * and the any/all block logic of section 5.1 (conditions_compile +
 * conditions_eval), with the deny/precondition cases of E18, E19 and E21.
 *
 * Operands of the operator tables are prepared values as section 0 and 5.2
 * describe them: every number is a float64 (JF()).
 */
#include "engine/tests/testutil.h"

#include "engine/engine_int.h"

#include "common/banned.h"

static const struct {
	const char *name;
	enum cond_op op;
} op_names[] = {
    {"Equals", COND_EQUALS},
    {"Equal", COND_EQUALS},
    {"NotEquals", COND_NOT_EQUALS},
    {"NotEqual", COND_NOT_EQUALS},
    {"In", COND_IN},
    {"NotIn", COND_NOT_IN},
    {"AnyIn", COND_ANY_IN},
    {"AllIn", COND_ALL_IN},
    {"AnyNotIn", COND_ANY_NOT_IN},
    {"AllNotIn", COND_ALL_NOT_IN},
    {"GreaterThan", COND_GT},
    {"GreaterThanOrEquals", COND_GE},
    {"LessThan", COND_LT},
    {"LessThanOrEquals", COND_LE},
    {"DurationGreaterThan", COND_DUR_GT},
    {"DurationGreaterThanOrEquals", COND_DUR_GE},
    {"DurationLessThan", COND_DUR_LT},
    {"DurationLessThanOrEquals", COND_DUR_LE},
};

static enum cond_op op_of(const char *name)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(op_names); i++)
		if (!strcmp(op_names[i].name, name))
			return op_names[i].op;
	fail_msg("unknown operator %s in test table", name);
	return COND_EQUALS;
}

struct op_case {
	const char *op;
	const char *key;   /* JF() text */
	const char *value; /* JF() text */
	int want;
};

static void run_cases(const struct op_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *k = JF(c[i].key), *v = JF(c[i].value);
		struct gv_err err = {0};
		bool got = false;

		CHECK(condition_op_eval(op_of(c[i].op), k, v, NULL, &got, &err) == GV_OK,
		      "key %s %s value %s: %s", c[i].key, c[i].op, c[i].value, err.msg);

		CHECK(got == (c[i].want != 0), "key %s %s value %s: got %s, want %s", c[i].key,
		      c[i].op, c[i].value, got ? "true" : "false", c[i].want ? "true" : "false");
		json_decref(k);
		json_decref(v);
	}
	CHECK_DONE();
}

#define RUN(table) run_cases(table, GV_ARRAY_LEN(table))

/* ---- Equals / NotEquals (section 5.3, E18) ---- */

static void test_equals_bool_and_number(void **state)
{
	static const struct op_case cases[] = {
	    /* bool key: value must be a bool and equal */
	    {"Equals", "true", "true", 1},
	    {"Equals", "false", "false", 1},
	    {"Equals", "true", "false", 0},
	    {"Equals", "true", "'true'", 0},
	    {"Equals", "true", "1", 0},
	    /* number key: numeric equality, a string value parsed as a float */
	    {"Equals", "3", "3", 1},
	    {"Equals", "3", "3.0", 1},
	    {"Equals", "3", "4", 0},
	    {"Equals", "3", "'3'", 1},
	    {"Equals", "2", "'2'", 1}, /* E18: length(...) Equals "2" */
	    {"Equals", "3", "'3.0'", 1},
	    {"Equals", "3.5", "'3.5'", 1},
	    {"Equals", "3", "'abc'", 0},
	    {"Equals", "3", "'1h'", 0}, /* a duration is not a float */
	    {"Equals", "3", "true", 0},
	    {"Equals", "3", "null", 0},
	    {"Equal", "3", "3", 1},
	};
	(void)state;
	RUN(cases);
}

static void test_equals_string(void **state)
{
	static const struct op_case cases[] = {
	    {"Equals", "'abc'", "'abc'", 1},
	    {"Equals", "'abc'", "'ABC'", 0},
	    /* the value is a wildcard pattern, the key is literal */
	    {"Equals", "'abc'", "'a*'", 1},
	    {"Equals", "'abc'", "'a?c'", 1},
	    {"Equals", "'nginx:latest'", "'*:latest'", 1},
	    {"Equals", "'nginx:1.25'", "'*:latest'", 0},
	    {"Equals", "'a*'", "'abc'", 0},
	    /* E18: annotation "3" against the YAML number 3 */
	    {"Equals", "'3'", "3", 0},
	    {"Equals", "'3'", "'3'", 1},
	    /* a string key wants a string value */
	    {"Equals", "'abc'", "true", 0},
	    {"Equals", "'abc'", "null", 0},
	    {"Equals", "'abc'", "['abc']", 0},
	    {"Equals", "'true'", "true", 0},
	};
	(void)state;
	RUN(cases);
}

static void test_equals_duration(void **state)
{
	static const struct op_case cases[] = {
	    {"Equals", "'1h'", "'60m'", 1},
	    {"Equals", "'90s'", "'1m30s'", 1},
	    {"Equals", "'1h'", "'2h'", 0},
	    {"Equals", "'1h'", "'1h'", 1},
	    /* the other side may be a number of seconds */
	    {"Equals", "'1h'", "3600", 1},
	    {"Equals", "'5m'", "300", 1},
	    {"Equals", "'5m'", "301", 0},
	    {"Equals", "'0s'", "0", 1},
	    /* the value may be the duration */
	    {"Equals", "'60m'", "'1h'", 1},
	    /* "0" is not a duration; as a quantity it needs a quantity value */
	    {"Equals", "'0'", "'0s'", 0},
	    {"NotEquals", "'1h'", "'60m'", 0},
	    {"NotEquals", "'1h'", "'2h'", 1},
	    {"NotEquals", "'1h'", "3600", 0},
	};
	(void)state;
	RUN(cases);
}

static void test_equals_quantity(void **state)
{
	static const struct op_case cases[] = {
	    {"Equals", "'1Gi'", "'1024Mi'", 1},
	    {"Equals", "'1Gi'", "'1G'", 0},
	    {"Equals", "'500m'", "'0.5'", 1},
	    {"Equals", "'1'", "'1.0'", 1},
	    /* no wildcard fallback for a quantity key */
	    {"Equals", "'1Gi'", "'1*'", 0},
	    {"Equals", "'10'", "'1*'", 0},
	    {"Equals", "'1Gi'", "'*'", 0},
	    /* a non-string value never equals a quantity key */
	    {"Equals", "'1Gi'", "1073741824", 0},
	    {"NotEquals", "'1Gi'", "'1024Mi'", 0},
	    {"NotEquals", "'1Gi'", "'2Gi'", 1},
	    {"NotEquals", "'1Gi'", "'abc'", 1},
	    {"NotEquals", "'1Gi'", "5", 1},
	    /* quantity key, empty value: !wildcard("", key) */
	    {"NotEquals", "'1Gi'", "''", 1},
	};
	(void)state;
	RUN(cases);
}

static void test_equals_map_list_null(void **state)
{
	static const struct op_case cases[] = {
	    {"Equals", "{'a':'b'}", "{'a':'b'}", 1},
	    {"Equals", "{'a':'b','c':['d']}", "{'c':['d'],'a':'b'}", 1},
	    {"Equals", "{'a':'b'}", "{'a':'c'}", 0},
	    {"Equals", "{'a':'b'}", "{'a':'b','c':'d'}", 0},
	    {"Equals", "['a','b']", "['a','b']", 1},
	    {"Equals", "['a','b']", "['b','a']", 0},
	    {"Equals", "['a*']", "['abc']", 0}, /* deep equality, no wildcards */
	    {"Equals", "['a']", "'a'", 0},
	    {"Equals", "{'a':'b'}", "['a']", 0},
	    {"Equals", "[]", "{}", 0},
	    /* null key: always false, for NotEquals too */
	    {"Equals", "null", "null", 0},
	    {"Equals", "null", "'x'", 0},
	    {"NotEquals", "null", "'x'", 0},
	    {"NotEquals", "null", "null", 0},
	    {"NotEquals", "{'a':'b'}", "{'a':'b'}", 0},
	    {"NotEquals", "{'a':'b'}", "{'a':'c'}", 1},
	    {"NotEquals", "{'a':'b'}", "'x'", 1},
	    {"NotEquals", "['a']", "['b']", 1},
	    {"NotEquals", "['a']", "{}", 1},
	};
	(void)state;
	RUN(cases);
}

static void test_not_equals_mismatch_is_true(void **state)
{
	static const struct op_case cases[] = {
	    {"NotEquals", "true", "true", 0},	  {"NotEquals", "true", "false", 1},
	    {"NotEquals", "false", "'false'", 1}, /* E18: type mismatch is true */
	    {"NotEquals", "true", "1", 1},	  {"NotEquals", "3", "3", 0},
	    {"NotEquals", "3", "'3'", 0},	  {"NotEquals", "3", "4", 1},
	    {"NotEquals", "3", "'abc'", 1},	  {"NotEquals", "3", "true", 1},
	    {"NotEquals", "3", "null", 1},	  {"NotEquals", "'3'", "3", 1},
	    {"NotEquals", "'abc'", "'abc'", 0},	  {"NotEquals", "'abc'", "'a*'", 0},
	    {"NotEquals", "'abc'", "'x*'", 1},	  {"NotEquals", "'abc'", "true", 1},
	    {"NotEquals", "'abc'", "null", 1},	  {"NotEqual", "'a'", "'b'", 1},
	    {"NotEqual", "'a'", "'a'", 0},
	};
	(void)state;
	RUN(cases);
}

/* ---- AnyIn / AllIn / AnyNotIn / AllNotIn (section 5.3, E19) ---- */

static void test_set_scalar_key_list_value(void **state)
{
	static const struct op_case cases[] = {
	    {"AnyIn", "'a'", "['a','b']", 1},
	    {"AnyIn", "'c'", "['a','b']", 0},
	    {"AllIn", "'a'", "['a','b']", 1},
	    {"AllIn", "'c'", "['a','b']", 0},
	    {"AnyNotIn", "'c'", "['a','b']", 1},
	    {"AnyNotIn", "'a'", "['a','b']", 0},
	    {"AllNotIn", "'c'", "['a','b']", 1},
	    {"AllNotIn", "'a'", "['a','b']", 0},
	    {"AnyIn", "'a'", "[]", 0},
	    {"AnyNotIn", "'a'", "[]", 1},
	    /* bidirectional wildcards */
	    {"AnyIn", "'reg.io/a'", "['reg.io/*']", 1},
	    {"AnyIn", "'*'", "['gold','silver']", 1}, /* E19: a "*" key matches anything */
	    {"AnyIn", "'gol?'", "['gold']", 1},
	    {"AnyNotIn", "'*'", "['gold']", 0},
	    {"AllNotIn", "'docker.io/x'", "['reg.io/*']", 1},
	    {"AllIn", "'reg.io/x'", "['docker.io/*','reg.io/*']", 1},
	    /* keys and value elements compared as fmt.Sprint texts */
	    {"AnyIn", "3", "['3']", 1},
	    {"AnyIn", "3", "[3]", 1},
	    {"AnyIn", "'3'", "[3]", 1},
	    {"AnyIn", "0.5", "['0.5']", 1},
	    {"AnyIn", "true", "['true']", 1},
	    {"AnyIn", "1000000", "['1e+06']", 1},
	    {"AnyIn", "1000000", "['1000000']", 0},
	};
	(void)state;
	RUN(cases);
}

static void test_set_scalar_key_string_value(void **state)
{
	static const struct op_case cases[] = {
	    /* wildcard(V, k) */
	    {"AnyIn", "'abc'", "'abc'", 1},
	    {"AnyIn", "'abc'", "'a*'", 1},
	    {"AnyIn", "'abc'", "'x*'", 0},
	    {"AnyNotIn", "'abc'", "'x*'", 1},
	    {"AllNotIn", "'abc'", "'a*'", 0},
	    /* a string value is not a pattern for the key's wildcards */
	    {"AnyIn", "'a*'", "'abc'", 0},
	    /* ranges */
	    {"AnyIn", "'5'", "'1-10'", 1},
	    {"AnyIn", "5", "'1-10'", 1},
	    {"AnyIn", "'1'", "'1-10'", 1},
	    {"AnyIn", "'10'", "'1-10'", 1},
	    {"AnyIn", "'11'", "'1-10'", 0},
	    {"AllIn", "'11'", "'1-10'", 0},
	    {"AnyNotIn", "'11'", "'1-10'", 1},
	    {"AllNotIn", "'5'", "'1-10'", 0},
	    {"AnyIn", "'abc'", "'1-10'", 0},
	    {"AnyNotIn", "'abc'", "'1-10'", 1},
	    /* ranges of quantities and durations (pattern language, section 3.5) */
	    {"AnyIn", "'1536Mi'", "'1Gi-2Gi'", 1},
	    {"AnyIn", "'3Gi'", "'1Gi-2Gi'", 0},
	    {"AnyIn", "'90m'", "'1h-2h'", 1},
	    {"AnyNotIn", "'3h'", "'1h-2h'", 1},
	    /* JSON string lists: equality, no wildcards */
	    {"AnyIn", "'a'", "'[\\'a\\',\\'b\\']'", 1},
	    {"AnyIn", "'c'", "'[\\'a\\',\\'b\\']'", 0},
	    {"AnyNotIn", "'c'", "'[\\'a\\',\\'b\\']'", 1},
	    {"AllNotIn", "'a'", "'[\\'a\\',\\'b\\']'", 0},
	    {"AnyIn", "'abc'", "'[\\'a*\\']'", 0},
	    /* valid JSON that is not a string list: the condition is false */
	    {"AnyIn", "'6'", "'5'", 0},
	    {"AnyNotIn", "'6'", "'5'", 0}, /* E19 */
	    {"AllNotIn", "'6'", "'5'", 0},
	    {"AnyNotIn", "'x'", "'true'", 0},
	    {"AnyIn", "'x'", "'[1,2]'", 0},
	    {"AnyNotIn", "'x'", "'{}'", 0},
	    /* anything else: a one-element list compared by equality */
	    {"AnyIn", "'x'", "'y'", 0},
	    {"AnyNotIn", "'x'", "'y'", 1},
	    {"AllNotIn", "'x'", "'y'", 1},
	};
	(void)state;
	RUN(cases);
}

static void test_set_other_values_and_keys(void **state)
{
	static const struct op_case cases[] = {
	    /* scalar key, value number/bool/map/null: false, NotIn too */
	    {"AnyIn", "'3'", "3", 0},
	    {"AnyNotIn", "'3'", "4", 0},
	    {"AllNotIn", "'3'", "4", 0},
	    {"AnyIn", "'true'", "true", 0},
	    {"AnyNotIn", "'x'", "null", 0},
	    {"AnyIn", "'a'", "{'a':'a'}", 0},
	    {"AllNotIn", "'a'", "{'b':'b'}", 0},
	    /* map or null key: false */
	    {"AnyIn", "null", "['a']", 0},
	    {"AllIn", "null", "['a']", 0},
	    {"AnyNotIn", "null", "['a']", 0},
	    {"AllNotIn", "null", "['a']", 0},
	    {"AnyNotIn", "{'a':'b'}", "['a']", 0},
	    {"AllNotIn", "{}", "['a']", 0},
	    {"AnyIn", "{'a':'b'}", "['a']", 0},
	};
	(void)state;
	RUN(cases);
}

static void test_set_list_key(void **state)
{
	static const struct op_case cases[] = {
	    {"AnyIn", "['a','b']", "['a']", 1},
	    {"AnyIn", "['c','d']", "['a']", 0},
	    {"AllIn", "['a','b']", "['a']", 0},
	    {"AllIn", "['a','b']", "['a','b','c']", 1},
	    {"AnyNotIn", "['a','b']", "['a']", 1},
	    {"AnyNotIn", "['a','b']", "['a','b']", 0},
	    {"AllNotIn", "['c','d']", "['a','b']", 1},
	    {"AllNotIn", "['a','d']", "['a','b']", 0},
	    /* E19: images against an allowed registry */
	    {"AnyNotIn", "['reg.io/a','docker.io/b']", "['reg.io/*']", 1},
	    {"AnyNotIn", "['reg.io/a']", "['reg.io/*']", 0},
	    /* wildcards on both sides */
	    {"AllIn", "['a*']", "['abc','x']", 1},
	    {"AnyIn", "['abc']", "['a?c']", 1},
	    {"AnyIn", "[1000000]", "['1e+06']", 1},
	    {"AllIn", "[1, 2]", "['1','2']", 1},
	    /* empty key lists: AllIn / AllNotIn vacuously true */
	    {"AnyIn", "[]", "['x']", 0},
	    {"AllIn", "[]", "['x']", 1},
	    {"AnyNotIn", "[]", "['x']", 0},
	    {"AllNotIn", "[]", "['x']", 1},
	    {"AllIn", "[]", "['reg.io/*']", 1}, /* E19 */
	    /* number/bool value: one-element list for AnyIn/AnyNotIn only */
	    {"AnyIn", "[3, 4]", "3", 1},
	    {"AnyIn", "[4]", "3", 0},
	    {"AnyNotIn", "[4]", "3", 1},
	    {"AnyIn", "[true]", "true", 1},
	    {"AllIn", "[3]", "3", 0},
	    {"AllNotIn", "[4]", "3", 0},
	    /* map/null value */
	    {"AnyIn", "['a']", "{'a':1}", 0},
	    {"AnyNotIn", "['a']", "null", 0},
	};
	(void)state;
	RUN(cases);
}

static void test_set_list_key_string_value(void **state)
{
	static const struct op_case cases[] = {
	    /* one key equal to the string: shortcut */
	    {"AllIn", "['abc']", "'abc'", 1},
	    {"AnyIn", "['a*']", "'a*'", 1},
	    {"AnyNotIn", "['abc']", "'abc'", 0},
	    {"AllNotIn", "['abc']", "'abc'", 0},
	    /* ranges, per key */
	    {"AllIn", "[1, 5]", "'1-10'", 1},
	    {"AllIn", "['5']", "'1-10'", 1},
	    {"AllIn", "[1, 11]", "'1-10'", 0},
	    {"AnyIn", "[1, 11]", "'1-10'", 1},
	    {"AnyIn", "[11, 12]", "'1-10'", 0},
	    {"AnyNotIn", "[1, 11]", "'1-10'", 1},
	    {"AnyNotIn", "[1, 5]", "'1-10'", 0},
	    {"AllNotIn", "[11, 12]", "'1-10'", 1},
	    {"AllNotIn", "[5, 12]", "'1-10'", 0},
	    /* JSON string list: pairs compared with bidirectional wildcards */
	    {"AllIn", "['a','b']", "'[\\'a\\',\\'b\\']'", 1},
	    {"AllIn", "['a','c']", "'[\\'a\\',\\'b\\']'", 0},
	    {"AnyIn", "['abc','x']", "'[\\'a*\\']'", 1},
	    /* valid JSON, not a string list: false */
	    {"AnyNotIn", "['6','7']", "'5'", 0},
	    {"AllNotIn", "['6']", "'5'", 0},
	    /* other strings: one-element list, bidirectional wildcards */
	    {"AnyIn", "['abc','x']", "'a*'", 1},
	    {"AllIn", "['abc','x']", "'a*'", 0},
	    {"AnyNotIn", "['abc','x']", "'a*'", 1},
	};
	(void)state;
	RUN(cases);
}

static void test_legacy_in_not_in(void **state)
{
	static const struct op_case cases[] = {
	    /* scalar key: AnyIn / AnyNotIn */
	    {"In", "'a'", "['a','b']", 1},
	    {"In", "'c'", "['a','b']", 0},
	    {"In", "'abc'", "['a*']", 1},
	    {"In", "'abc'", "'a*'", 1},
	    {"In", "['a']", "'a'", 1},
	    {"In", "['a','b']", "'[\\'a\\',\\'b\\',\\'c\\']'", 1},
	    {"NotIn", "['a','x']", "'[\\'a\\',\\'b\\']'", 1},
	    {"NotIn", "'c'", "['a','b']", 1},
	    {"NotIn", "'a'", "['a','b']", 0},
	    {"NotIn", "'abc'", "['a*']", 0},
	    /* list key: exact set tests */
	    {"In", "['a','b']", "['a','b','c']", 1},
	    {"In", "['a','x']", "['a','b']", 0},
	    {"In", "['abc']", "['a*']", 0},
	    {"In", "['a*']", "['abc']", 0},
	    {"In", "[]", "['a']", 1},
	    {"NotIn", "['a','x']", "['a','b']", 1},
	    {"NotIn", "['a','b']", "['a','b','c']", 0},
	    {"NotIn", "['abc']", "['a*']", 1},
	    {"NotIn", "[]", "['a']", 0},
	    /* non-string value elements: false */
	    {"In", "['a']", "['a', 1]", 0},
	    {"NotIn", "['x']", "['b', 1]", 0},
	};
	(void)state;
	RUN(cases);
}

/* ---- numeric operators (section 5.3) ---- */

static void test_numeric_numbers(void **state)
{
	static const struct op_case cases[] = {
	    {"GreaterThan", "5", "3", 1},
	    {"GreaterThan", "3", "3", 0},
	    {"GreaterThan", "2.5", "2", 1},
	    {"GreaterThanOrEquals", "3", "3", 1},
	    {"GreaterThanOrEquals", "2", "3", 0},
	    {"LessThan", "2", "3", 1},
	    {"LessThan", "3", "3", 0},
	    {"LessThanOrEquals", "3", "3", 1},
	    {"LessThanOrEquals", "4", "3", 0},
	    {"LessThan", "-1", "0", 1},
	    /* number key, string value: duration, float, int */
	    {"GreaterThan", "5", "'3'", 1},
	    {"LessThan", "5", "'10'", 1},
	    {"GreaterThan", "5", "'4.5'", 1},
	    {"GreaterThan", "90", "'1m'", 1},
	    {"LessThan", "30", "'1m'", 1},
	    {"GreaterThanOrEquals", "60", "'1m'", 1},
	    {"GreaterThan", "5", "'abc'", 0},
	    {"LessThan", "5", "'abc'", 0},
	    {"GreaterThan", "5", "true", 0},
	    {"GreaterThan", "5", "null", 0},
	    {"GreaterThan", "5", "[3]", 0}, /* only a single value */
	};
	(void)state;
	RUN(cases);
}

static void test_numeric_strings(void **state)
{
	static const struct op_case cases[] = {
	    /* durations */
	    {"GreaterThan", "'1h'", "'30m'", 1},
	    {"LessThan", "'1h'", "'30m'", 0},
	    {"GreaterThan", "'1h'", "1800", 1},
	    {"LessThanOrEquals", "'1m'", "60", 1},
	    {"LessThan", "'90m'", "'1h'", 0},
	    /* quantities, across units */
	    {"GreaterThan", "'1Gi'", "'1000Mi'", 1},
	    {"LessThan", "'512Mi'", "'1Gi'", 1},
	    {"GreaterThanOrEquals", "'1Gi'", "'1024Mi'", 1},
	    {"LessThanOrEquals", "'1Gi'", "'1024Mi'", 1},
	    {"LessThan", "'1Gi'", "'1024Mi'", 0},
	    {"LessThan", "'500m'", "'1'", 1},
	    {"GreaterThan", "'10'", "'9'", 1},
	    /* numeric strings against numbers */
	    {"GreaterThan", "'10'", "9", 1},
	    {"LessThan", "'1.5'", "2", 1},
	    {"GreaterThan", "'3'", "2", 1},
	    {"GreaterThan", "'3'", "'abc'", 0},
	    /* semver */
	    {"GreaterThan", "'1.10.0'", "'1.9.0'", 1},
	    {"LessThan", "'1.2.3'", "'1.2.10'", 1},
	    {"GreaterThanOrEquals", "'1.2.3'", "'1.2.3'", 1},
	    {"LessThan", "'1.2.3-alpha'", "'1.2.3'", 1},
	    {"GreaterThan", "'1.2.3'", "1", 0}, /* the value must be a semver string */
	    {"GreaterThan", "'1.2.3'", "'abc'", 0},
	    /* no lexical comparison */
	    {"GreaterThan", "'abc'", "'abb'", 0},
	    {"LessThan", "'abc'", "'abd'", 0},
	    /* bool, map, list, null keys: false */
	    {"GreaterThan", "true", "false", 0},
	    {"GreaterThan", "[5]", "3", 0},
	    {"LessThan", "null", "3", 0},
	    {"LessThan", "{'a':1}", "3", 0},
	};
	(void)state;
	RUN(cases);
}

static void test_duration_operators(void **state)
{
	static const struct op_case cases[] = {
	    {"DurationGreaterThan", "'1h'", "'30m'", 1},
	    {"DurationGreaterThan", "'30m'", "'1h'", 0},
	    {"DurationGreaterThan", "'1h'", "'60m'", 0},
	    {"DurationGreaterThanOrEquals", "'1h'", "'60m'", 1},
	    {"DurationLessThan", "'30m'", "'1h'", 1},
	    {"DurationLessThan", "'1h'", "'1h'", 0},
	    {"DurationLessThanOrEquals", "'1h'", "'60m'", 1},
	    /* numbers are seconds */
	    {"DurationGreaterThanOrEquals", "3600", "'1h'", 1},
	    {"DurationLessThan", "'59s'", "60", 1},
	    {"DurationGreaterThan", "120", "60", 1},
	    /* a key string that is not a duration: false */
	    {"DurationLessThan", "'abc'", "'1h'", 0},
	    {"DurationGreaterThan", "'abc'", "'1h'", 0},
	};
	(void)state;
	RUN(cases);
}

/* ---- blocks: conditions_compile + conditions_eval (section 5.1) ---- */

static const char root_yaml[] =
    "request:\n"
    "  operation: CREATE\n"
    "  object:\n"
    "    metadata:\n"
    "      name: x\n"
    "      annotations: {replicas: '3', tier: '*', level: '6'}\n"
    "    spec:\n"
    "      type: ClusterIP\n"
    "      replicas: 3\n"
    "      hostNetwork: false\n"
    "      containers: [{name: a, image: reg.io/a}, {name: b, image: docker.io/b}]\n";

struct block {
	struct conditions c;
	json_t *root;
	json_t *msgs;
	struct gv_err err;
	bool result;
	enum gv_code rc;
};

/* Compiles conds (YAML; NULL = absent) and evaluates it against root_yaml. */
static void eval_block(struct block *b, const char *conds)
{
	json_t *j = conds ? Y(conds) : NULL;
	struct gv_buf ptr = {0};
	struct gv_err cerr = {0};
	struct var_ctx ctx;

	memset(b, 0, sizeof(*b));
	if (conditions_compile(j, &b->c, &ptr, &cerr))
		fail_msg("compile %s: %s: %s", conds, cerr.pointer, cerr.msg);
	json_decref(j);
	gv_buf_release(&ptr);
	b->root = Y(root_yaml);
	b->msgs = json_array();
	ctx = (struct var_ctx){.root = b->root, .delete_op = false};
	b->result = !b->result; /* make sure eval sets it */
	b->rc = conditions_eval(&b->c, &ctx, &b->result, b->msgs, &b->err);
}

static void block_release(struct block *b)
{
	conditions_release(&b->c);
	json_decref(b->root);
	json_decref(b->msgs);
}

/* Evaluates conds and checks the result and the collected messages (JSON text). */
static void check_block(const char *conds, bool want, const char *want_msgs)
{
	struct block b;

	eval_block(&b, conds);
	CHECK(b.rc == GV_OK, "%s: unexpected error %s", conds, b.err.msg);
	CHECK(b.rc || b.result == want, "%s: got %s, want %s", conds, b.result ? "true" : "false",
	      want ? "true" : "false");
	if (want_msgs)
		CHECK_JSON(b.msgs, want_msgs);
	block_release(&b);
}

static void check_block_error(const char *conds, const char *want_msg)
{
	struct block b;

	eval_block(&b, conds);
	CHECK(b.rc == GV_EEVAL, "%s: got rc %d, want GV_EEVAL", conds, (int)b.rc);
	CHECK_STR(b.err.msg, want_msg);
	block_release(&b);
}

#define T_   "{key: a, operator: Equals, value: a"
#define F_   "{key: a, operator: Equals, value: b"
#define ERR_ "{key: '{{ request.object.metadata.labels.team }}', operator: Equals, value: a"

static void test_block_any_all_logic(void **state)
{
	(void)state;
	/* absent conditions: true */
	check_block(NULL, true, "[]");
	/* absent any: true; all vacuously true */
	check_block("{}", true, "[]");
	check_block("{all: []}", true, "[]");
	check_block("{all: [" T_ "}]}", true, NULL);
	check_block("{all: [" T_ "}, " F_ "}]}", false, NULL);
	/* explicit empty any: false */
	check_block("{any: []}", false, "[]");
	check_block("{any: [], all: [" T_ "}]}", false, NULL);
	check_block("{any: [" F_ "}, " T_ "}]}", true, NULL);
	check_block("{any: [" F_ "}, " F_ "}]}", false, NULL);
	check_block("{any: [" T_ "}], all: [" F_ "}]}", false, NULL);
	check_block("{any: [" T_ "}], all: [" T_ "}]}", true, NULL);
	/* legacy bare list: all must hold */
	check_block("[" T_ "}, " T_ "}]", true, NULL);
	check_block("[" T_ "}, " F_ "}]", false, NULL);
	check_block("[]", true, NULL);
	CHECK_DONE();
}

static void test_block_short_circuit(void **state)
{
	(void)state;
	/* conditions after the stopping point are not evaluated: no error */
	check_block("{any: [" T_ "}, " ERR_ "}]}", true, NULL);
	check_block("{all: [" F_ "}, " ERR_ "}]}", false, NULL);
	/* all stops at its first false condition even after any succeeded */
	check_block("{any: [" T_ "}], all: [" F_ "}, " ERR_ "}]}", false, NULL);
	/* reaching the bad condition is an error */
	check_block_error("{any: [" F_ "}, " ERR_ "}]}",
			  "failed to substitute variables in condition key: failed to resolve "
			  "request.object.metadata.labels.team at path : JMESPath query failed: "
			  "Unknown key \"labels\" in path");
	check_block_error("{all: [" T_ "}, " ERR_ "}]}",
			  "failed to substitute variables in condition key: failed to resolve "
			  "request.object.metadata.labels.team at path : JMESPath query failed: "
			  "Unknown key \"labels\" in path");
	check_block_error("{all: [{key: a, operator: Equals, value: "
			  "'{{ request.object.metadata.labels.team }}'}]}",
			  "failed to substitute variables in condition value: failed to resolve "
			  "request.object.metadata.labels.team at path : JMESPath query failed: "
			  "Unknown key \"labels\" in path");
	CHECK_DONE();
}

static void test_block_messages(void **state)
{
	(void)state;
	/* true block: messages of the true conditions that were evaluated */
	check_block("{any: [" F_ ", message: m1}, " T_ ", message: m2}, " T_ ", message: m3}],"
		    " all: [" T_ ", message: a1}, " T_ ", message: a2}]}",
		    true, "['m2', 'a1', 'a2']");
	/* false block: messages of the false conditions that were evaluated */
	check_block("{any: [" F_ ", message: m1}, " F_ ", message: m2}]}", false, "['m1', 'm2']");
	check_block("{all: [" T_ ", message: t}, " F_ ", message: f}, " F_ ", message: g}]}", false,
		    "['f']");
	check_block("{any: [" T_ ", message: x}], all: [" F_ ", message: f}]}", false, "['f']");
	/* conditions without a message add nothing */
	check_block("{all: [" T_ "}, " T_ ", message: only}]}", true, "['only']");
	/* E21: the precondition message of a false condition */
	check_block("{all: [{key: '{{ request.object.spec.type }}', operator: Equals, "
		    "value: NodePort, message: not a NodePort}]}",
		    false, "['not a NodePort']");
	CHECK_DONE();
}

static void test_block_operand_typing(void **state)
{
	(void)state;
	/* E18: the annotation "3" is a string, the YAML 3 a number */
	check_block("{any: [{key: '{{ request.object.metadata.annotations.replicas }}', "
		    "operator: Equals, value: 3}]}",
		    false, NULL);
	check_block("{any: [{key: '{{ request.object.metadata.annotations.replicas }}', "
		    "operator: Equals, value: '3'}]}",
		    true, NULL);
	check_block("{any: [{key: '{{ length(request.object.spec.containers) }}', "
		    "operator: Equals, value: '2'}]}",
		    true, NULL);
	check_block("{any: [{key: '{{ request.object.spec.hostNetwork || `false` }}', "
		    "operator: NotEquals, value: 'false'}]}",
		    true, NULL);
	/* JMESPath numbers against YAML integers */
	check_block("{all: [{key: '{{ request.object.spec.replicas }}', operator: GreaterThan, "
		    "value: 2}]}",
		    true, NULL);
	check_block("{all: [{key: '{{ request.object.spec.replicas }}', operator: Equals, "
		    "value: 3}]}",
		    true, NULL);
	/* E19 */
	check_block("{any: [{key: '{{ request.object.spec.containers[].image }}', "
		    "operator: AnyNotIn, value: ['reg.io/*']}]}",
		    true, NULL);
	check_block("{any: [{key: '{{ request.object.metadata.annotations.tier || '''' }}', "
		    "operator: AnyIn, value: [gold, silver]}]}",
		    true, NULL);
	check_block("{any: [{key: '{{ request.object.spec.initContainers[].image || `[]` }}', "
		    "operator: AllIn, value: ['reg.io/*']}]}",
		    true, NULL);
	check_block("{any: [{key: '{{ request.object.spec.initContainers[].image }}', "
		    "operator: AllIn, value: ['reg.io/*']}]}",
		    false, NULL);
	check_block("{any: [{key: '{{ request.object.metadata.annotations.level }}', "
		    "operator: AnyNotIn, value: '5'}]}",
		    false, NULL);
	check_block("{any: [{key: '{{ request.object.metadata.annotations.level }}', "
		    "operator: AnyNotIn, value: ['5']}]}",
		    true, NULL);
	/* a value holding a variable */
	check_block(
	    "{all: [{key: x, operator: Equals, value: '{{ request.object.metadata.name }}'}]}",
	    true, NULL);
	CHECK_DONE();
}

static void test_compile_operators(void **state)
{
	struct gv_buf ptr = {0};
	(void)state;

	/* the 18 exact spellings compile */
	for (size_t i = 0; i < GV_ARRAY_LEN(op_names); i++) {
		char *text =
		    gv_xasprintf("{all: [{key: a, operator: %s, value: a}]}", op_names[i].name);
		json_t *j = Y(text);
		struct conditions c;
		struct gv_err err = {0};

		CHECK(conditions_compile(j, &c, &ptr, &err) == GV_OK, "operator %s: %s",
		      op_names[i].name, err.msg);
		if (!err.code) {
			CHECK_INT(c.nall, 1);
			CHECK(c.nall == 1 && c.all[0].op == op_names[i].op, "operator %s: wrong op",
			      op_names[i].name);
			conditions_release(&c);
		}
		json_decref(j);
		free(text);
	}
	/* spellings are case-sensitive (section 5.3, 1.8) */
	{
		static const char *const bad[] = {"equals", "EQUALS", "AnyNotin", "Contains", "=="};
		for (size_t i = 0; i < GV_ARRAY_LEN(bad); i++) {
			char *text =
			    gv_xasprintf("{any: [{key: a, operator: '%s', value: a}]}", bad[i]);
			char *want =
			    gv_xasprintf("entered value of `operator` is invalid: %s", bad[i]);
			json_t *j = Y(text);
			struct conditions c;
			struct gv_err err = {0};

			CHECK(conditions_compile(j, &c, &ptr, &err) == GV_EINVAL,
			      "operator %s accepted", bad[i]);
			CHECK_STR(err.msg, want);
			CHECK_STR(err.pointer, "/any/0/operator");
			json_decref(j);
			free(text);
			free(want);
		}
	}
	gv_buf_release(&ptr);
	CHECK_DONE();
}

static void test_compile_shapes(void **state)
{
	struct gv_buf ptr = {0};
	struct conditions c;
	struct gv_err err = {0};
	json_t *j;
	(void)state;

	j = Y("{any: [{key: a, operator: Equals, value: a}], all: []}");
	CHECK(conditions_compile(j, &c, &ptr, &err) == GV_OK, "%s", err.msg);
	CHECK(c.present, "present");
	CHECK(c.any_present, "any present");
	CHECK_INT(c.nany, 1);
	CHECK_INT(c.nall, 0);
	conditions_release(&c);
	json_decref(j);

	j = Y("[{key: a, operator: Equals, value: a}, {key: b, operator: In, value: [b]}]");
	CHECK(conditions_compile(j, &c, &ptr, &err) == GV_OK, "%s", err.msg);
	CHECK(c.present, "legacy present");
	CHECK(!c.any_present, "legacy list has no any");
	CHECK_INT(c.nall, 2);
	conditions_release(&c);
	json_decref(j);

	CHECK(conditions_compile(NULL, &c, &ptr, &err) == GV_OK, "%s", err.msg);
	CHECK(!c.present, "absent conditions");
	conditions_release(&c);

	/* section 1.8: a condition without an operator is rejected */
	j = Y("{all: [{key: a, value: a}]}");
	gv_err_clear(&err);
	CHECK(conditions_compile(j, &c, &ptr, &err) == GV_EINVAL, "missing operator accepted");
	CHECK_PREFIX(err.pointer, "/all/0");
	json_decref(j);

	/* section 1.8: a condition without a key is rejected */
	j = Y("{all: [{operator: Equals, value: a}]}");
	gv_err_clear(&err);
	CHECK(conditions_compile(j, &c, &ptr, &err) == GV_EINVAL, "missing key accepted");
	json_decref(j);

	gv_buf_release(&ptr);
	CHECK_DONE();
}

/* Section 1.8: "Conditions missing key, value or operator" are rejected. */
static void test_compile_missing_value(void **state)
{
	struct gv_buf ptr = {0};
	struct conditions c;
	struct gv_err err = {0};
	json_t *j = Y("{all: [{key: a, operator: Equals}]}");
	(void)state;

	CHECK(conditions_compile(j, &c, &ptr, &err) == GV_EINVAL, "missing value accepted");
	if (!err.code)
		conditions_release(&c);
	json_decref(j);
	gv_buf_release(&ptr);
	CHECK_DONE();
}

/*
 * Operator work is charged to a step budget (engine_int.h): operands that
 * JMESPath built may be large lists sharing their parts. Running out is an
 * error, not a false condition.
 */
static void test_budget(void **state)
{
	json_t *key = json_array(), *value = JF("['*z']");
	struct jp_budget b = {.max = 1000};
	struct gv_err err = {0};
	bool r = true;

	(void)state;
	for (int i = 0; i < 100; i++)
		json_array_append_new(key, json_string("abc"));
	/* AnyIn: a step to start, one per key and value formatted, one per pair */
	assert_int_equal(condition_op_eval(COND_ANY_IN, key, value, &b, &r, &err), GV_OK);
	assert_false(r);
	assert_int_equal(b.used, 1 + 100 + 1 + 100);

	b = (struct jp_budget){.max = 50};
	r = true;
	assert_int_equal(condition_op_eval(COND_ANY_IN, key, value, &b, &r, &err), GV_ELIMIT);
	assert_false(r);
	assert_string_equal(err.msg, "rule evaluation step budget (50) exceeded");
	assert_int_equal(b.used, 50);

	/* Equals walks both lists: a step per pair of values compared */
	b = (struct jp_budget){.max = 1000};
	gv_err_clear(&err);
	assert_int_equal(condition_op_eval(COND_EQUALS, key, key, &b, &r, &err), GV_OK);
	assert_true(r);
	assert_int_equal(b.used, 1 + 1 + 100);

	/* texts: a step per 16 bytes of the operands, per 16 code points a wildcard compares */
	json_decref(key);
	json_decref(value);
	{
		char *t = gv_xmalloc(16001), *w = gv_xmalloc(103);

		memset(t, 'a', 16000);
		t[16000] = '\0';
		w[0] = '*';
		memset(w + 1, 'a', 100);
		w[101] = 'b';
		w[102] = '\0';
		key = json_string(t);
		value = json_string(w);
		free(t);
		free(w);
	}
	b = (struct jp_budget){.max = 1000000};
	assert_int_equal(condition_op_eval(COND_EQUALS, key, value, &b, &r, &err), GV_OK);
	assert_false(r);
	/* about 100 x 16,000 comparisons: 100,000 steps */
	assert_in_range(b.used, 90000, 110000);
	b = (struct jp_budget){.max = 10000};
	assert_int_equal(condition_op_eval(COND_EQUALS, key, value, &b, &r, &err), GV_ELIMIT);
	json_decref(key);
	json_decref(value);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_equals_bool_and_number),
	    cmocka_unit_test(test_equals_string),
	    cmocka_unit_test(test_equals_duration),
	    cmocka_unit_test(test_equals_quantity),
	    cmocka_unit_test(test_equals_map_list_null),
	    cmocka_unit_test(test_not_equals_mismatch_is_true),
	    cmocka_unit_test(test_set_scalar_key_list_value),
	    cmocka_unit_test(test_set_scalar_key_string_value),
	    cmocka_unit_test(test_set_other_values_and_keys),
	    cmocka_unit_test(test_set_list_key),
	    cmocka_unit_test(test_set_list_key_string_value),
	    cmocka_unit_test(test_legacy_in_not_in),
	    cmocka_unit_test(test_numeric_numbers),
	    cmocka_unit_test(test_numeric_strings),
	    cmocka_unit_test(test_duration_operators),
	    cmocka_unit_test(test_block_any_all_logic),
	    cmocka_unit_test(test_block_short_circuit),
	    cmocka_unit_test(test_block_messages),
	    cmocka_unit_test(test_block_operand_typing),
	    cmocka_unit_test(test_compile_operators),
	    cmocka_unit_test(test_compile_shapes),
	    cmocka_unit_test(test_compile_missing_value),
	    cmocka_unit_test(test_budget),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
