/*
 * Regression tests for what the libFuzzer targets found in admission/
 * (admission/fuzz/), each with the input that found it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "admission/admission_int.h"

#include "common/banned.h"

/*
 * fuzz_message (input "\xe0\x8a\x8a"): admission_warnings_add() checked
 * only that a lead byte was followed by continuation bytes, so overlong
 * forms, UTF-16 surrogates (ED A0..BF) and code points past U+10FFFF
 * (F4 90.., F5..F7) reached the AdmissionReview's warnings as invalid UTF-8,
 * which the API server drops. Each byte that is not part of well-formed
 * UTF-8 now becomes U+FFFD, as in Go's encoding/json.
 */
static void test_warnings_invalid_utf8_replaced(void **state)
{
	static const char *const bad[] = {"\xe0\x8a\x8a", "\xc0\xaf", "\xed\xa0\x80",
					  "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80"};
	struct admission_warnings w = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[32];
		json_t *s;

		/* numbered: the same number of U+FFFD would be a duplicate */
		snprintf(text, sizeof(text), "%zu %s", i, bad[i]);
		admission_warnings_add(&w, text);
		assert_int_equal(w.n, i + 1);
		s = json_string(w.v[i]); /* NULL when not valid UTF-8 */
		assert_non_null(s);
		json_decref(s);
	}
	/* one U+FFFD per byte, as Go's encoding/json writes it */
	assert_string_equal(w.v[1], "1 \xef\xbf\xbd\xef\xbf\xbd");
	admission_warnings_release(&w);

	/* well-formed neighbours are kept, a cut sequence is replaced */
	admission_warnings_add(&w, "a\xed\x9f\xbf \xf4\x8f\xbf\xbf \xe2\x82z");
	assert_string_equal(w.v[0], "a\xed\x9f\xbf \xf4\x8f\xbf\xbf \xef\xbf\xbd\xef\xbf\xbdz");
	admission_warnings_release(&w);
}

/*
 * fuzz_message crash-2245ac77: admission_yaml_key_cmp() (go-yaml's
 * keyList.Less) added up digit runs in int64 and overflowed on 19 digits or
 * more: undefined behaviour in C (UBSan: message.c "signed integer
 * overflow"), where Go wraps around. Go's answer for these keys is
 * "9223372036854775808" < "1" (the run wraps to INT64_MIN); the sum is now
 * done in uint64_t and compared as Go compares int64.
 */
static void test_key_cmp_long_digit_runs(void **state)
{
	(void)state;
	assert_true(admission_yaml_key_cmp("9223372036854775808", "1") < 0);
	assert_true(admission_yaml_key_cmp("9223372036854775807", "1") > 0);
	/* 2^64 + 1 wraps to 1, below 2 */
	assert_true(admission_yaml_key_cmp("a18446744073709551617", "a2") < 0);
	/* 2^64 + 5 wraps to 5: equal numbers, the longer run sorts last */
	assert_true(admission_yaml_key_cmp("18446744073709551621", "5") > 0);
	/* the fuzzer's key: must not trip UBSan */
	assert_true(admission_yaml_key_cmp("require-team444444444444444444444444team", "r") > 0);
	assert_true(admission_yaml_key_cmp("require-team444444444444444444444444team",
					   "require-team444444444444444444444445team") != 0);
}

/*
 * fuzz_message crash-03e79fed (key ".9_9"): go-yaml resolves a plain scalar
 * starting with '.' with strconv.ParseFloat, which takes underscores between
 * digits, so ".9_9" is the float 0.99 and go-yaml quotes it; gavel's
 * admission_yaml_non_string() checked the YAML float pattern without
 * underscores and wrote it plain, so the denial message differed from
 * Kyverno's. Also resolve.go's "0b"/"0o" forms whose digits carry a sign.
 */
static void test_non_string_dot_underscore(void **state)
{
	struct gv_buf b = {0};

	(void)state;
	assert_true(admission_yaml_non_string(".9_9"));
	assert_true(admission_yaml_non_string(".1_5e1_0"));
	assert_true(admission_yaml_non_string(".9"));
	assert_false(admission_yaml_non_string(".9_"));
	assert_false(admission_yaml_non_string("._9"));
	assert_false(admission_yaml_non_string(".9__9"));
	assert_false(admission_yaml_non_string(".9_e1"));
	assert_false(admission_yaml_non_string(".9e_1"));
	assert_false(admission_yaml_non_string(".9e999")); /* out of range: a string */
	assert_true(admission_yaml_non_string("-.9_9"));
	assert_true(admission_yaml_non_string("0b-101"));
	assert_true(admission_yaml_non_string("0o+17"));
	assert_true(admission_yaml_non_string("-0o17"));
	assert_false(admission_yaml_non_string("-0b-1"));
	assert_false(admission_yaml_non_string("0o8"));
	admission_yaml_scalar(&b, ".9_9", 2, true);
	assert_string_equal(gv_buf_str(&b), "\".9_9\"");
	gv_buf_release(&b);
}

/*
 * fuzz_json crash-1143d0bd: jansson 2.14 reads `{"":null\0}` (its lexer skips
 * a NUL byte right after a number or literal), gv_json_parse() does
 * not. JSON has no such byte outside strings: the stricter answer is right
 * and is pinned here, with its position.
 */
static void test_json_nul_after_literal_refused(void **state)
{
	static const char body[] = "{\"\":null\0}";
	struct gv_err err = {0};
	json_t *j;

	(void)state;
	j = gv_json_parse(body, sizeof(body) - 1, &err);
	assert_null(j);
	assert_int_equal(err.code, GV_EINVAL);
	assert_non_null(strstr(err.msg, "at line 1 column"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_warnings_invalid_utf8_replaced),
	    cmocka_unit_test(test_key_cmp_long_digit_runs),
	    cmocka_unit_test(test_non_string_dot_underscore),
	    cmocka_unit_test(test_json_nul_after_literal_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
