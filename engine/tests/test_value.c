/*
 * Unit tests for engine/value.c: wildcards, quantities, durations, Go
 * number parsing and formatting, semantic versions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/value.h"

#include "common/banned.h"

static void test_wildcard(void **state)
{
	(void)state;
	assert_true(value_wildcard("", ""));
	assert_false(value_wildcard("", "a"));
	assert_true(value_wildcard("*", ""));
	assert_true(value_wildcard("*", "anything/at:all"));
	assert_false(value_wildcard("?*", ""));
	assert_true(value_wildcard("?*", "a"));
	assert_true(value_wildcard("a?c", "abc"));
	assert_false(value_wildcard("a?c", "ac"));
	assert_false(value_wildcard("a?c", "abbc"));
	assert_true(value_wildcard("?", "/")); /* any character, not only alphanumerics */
	assert_true(value_wildcard("a*c", "a/b/c"));
	assert_true(value_wildcard("*:latest", "nginx:latest"));
	assert_false(value_wildcard("*:latest", "nginx:1.25"));
	assert_false(value_wildcard("A*", "abc")); /* case-sensitive */
	assert_true(value_wildcard("a*b*c", "axxbyyc"));
	assert_true(value_wildcard("*a", "bba"));
	assert_false(value_wildcard("*a", "ab"));
	assert_false(value_wildcard("abc*", "ab"));
	assert_false(value_wildcard("*?", ""));
	assert_true(value_wildcard("**", ""));
	assert_false(value_wildcard("a", ""));
	assert_true(value_wildcard("istio-*", "istio-proxy"));
	/* '?' is one code point, not one byte */
	assert_true(value_wildcard("?", "\xc3\xa9"));
	assert_false(value_wildcard("??", "\xc3\xa9"));
	assert_true(value_wildcard("caf?", "caf\xc3\xa9"));
	assert_true(value_wildcard("\xc3\xa9*", "\xc3\xa9t\xc3\xa9"));
	/* invalid bytes decode to U+FFFD like Go's []rune conversion */
	assert_true(value_wildcard("?", "\xff"));
	assert_true(value_wildcard("\xfe", "\xff"));
	assert_true(value_wildcard("!*:*", "!nginx:1"));
	assert_false(value_wildcard("*:*", "nginx"));
}

static void test_has_wildcard(void **state)
{
	(void)state;
	assert_true(value_has_wildcard("app.kubernetes.io/*"));
	assert_true(value_has_wildcard("a?"));
	assert_false(value_has_wildcard("plain"));
	assert_false(value_has_wildcard(""));
}

static int qcmp(const char *a, const char *b)
{
	struct value_quantity qa, qb;

	assert_true(value_parse_quantity(a, &qa));
	assert_true(value_parse_quantity(b, &qb));
	return value_quantity_cmp(&qa, &qb);
}

static void test_quantity_equal_forms(void **state)
{
	(void)state;
	assert_int_equal(qcmp("1Gi", "1024Mi"), 0);
	assert_int_equal(qcmp("0.2", "200m"), 0);
	assert_int_equal(qcmp("1e3", "1000"), 0);
	assert_int_equal(qcmp("1k", "1000"), 0);
	assert_int_equal(qcmp("1E3", "1k"), 0);
	assert_int_equal(qcmp(".5", "500m"), 0);
	assert_int_equal(qcmp("1.1", "1.10"), 0);
	assert_int_equal(qcmp("01.1", "1.1"), 0);
	assert_int_equal(qcmp("1.5Gi", "1536Mi"), 0);
	assert_int_equal(qcmp("0.1Ki", "102.4"), 0);
	assert_int_equal(qcmp("1Ki", "1024"), 0);
	assert_int_equal(qcmp("1Ei", "1152921504606846976"), 0);
	assert_int_equal(qcmp("1M", "1000k"), 0);
	assert_int_equal(qcmp("1000000n", "1m"), 0);
	assert_int_equal(qcmp("1u", "1000n"), 0);
	assert_int_equal(qcmp("1T", "1e12"), 0);
	assert_int_equal(qcmp("1P", "1e15"), 0);
	assert_int_equal(qcmp("1E", "1e18"), 0);
	assert_int_equal(qcmp("2Ti", "2048Gi"), 0);
	assert_int_equal(qcmp("1Pi", "1024Ti"), 0);
	assert_int_equal(qcmp("5.000000", "5"), 0);
	assert_int_equal(qcmp("80.000000", "80"), 0);
	assert_int_equal(qcmp("0", "0m"), 0);
	assert_int_equal(qcmp("-0", "0"), 0);
	assert_int_equal(qcmp("1e-3", "1m"), 0);
	assert_int_equal(qcmp("+1", "1"), 0);
	/* odd forms ParseQuantity accepts */
	assert_int_equal(qcmp(".", "0"), 0);
	assert_int_equal(qcmp("m", "0"), 0);
	assert_int_equal(qcmp("Gi", "0"), 0);
	assert_int_equal(qcmp("-", "0"), 0);
	assert_int_equal(qcmp("1.", "1"), 0);
	assert_int_equal(qcmp("1e+3", "1k"), 0);
}

static void test_quantity_order(void **state)
{
	(void)state;
	assert_int_equal(qcmp("1.5Gi", "1Gi"), 1);
	assert_int_equal(qcmp("1Gi", "1.5Gi"), -1);
	assert_int_equal(qcmp("100m", "0.2"), -1);
	assert_int_equal(qcmp("1G", "1Gi"), -1);
	assert_int_equal(qcmp("-2", "0"), -1);
	assert_int_equal(qcmp("-1", "-500m"), -1);
	assert_int_equal(qcmp("-500m", "-1"), 1);
	assert_int_equal(qcmp("512Mi", "128Mi"), 1);
	assert_int_equal(qcmp("1", "999m"), 1);
	assert_int_equal(qcmp("1n", "0"), 1);
	/* values below 1n are rounded up to 1n (slow path) */
	assert_int_equal(qcmp("1e-10", "1n"), 0);
	assert_int_equal(qcmp("0.0000000001", "1n"), 0);
	assert_int_equal(qcmp("-1e-10", "-1n"), 0);
	assert_int_equal(qcmp("0e-10", "0"), 0);
	/* exponent form keeps its exact value; long digit strings are capped at 2^63-1 */
	assert_int_equal(qcmp("1e30", "1e29"), 1);
	assert_int_equal(qcmp("10000000000000000000", "9223372036854775807"), 0);
	assert_int_equal(qcmp("1e19", "10000000000000000000"), 1);
	/* long fractions are exact to 1n */
	assert_int_equal(qcmp("1.0000000000000000001", "1000000001n"), 0);
	assert_int_equal(qcmp("123456789012345678.5", "123456789012345678500m"), 0);
}

/* Text comparison past 2^63 is exact on the decimal digits, with the exponent
 * read as ParseQuantity reads it (Go's int32 cut), never overflowing. */
static void test_quantity_cmp_text_exponent(void **state)
{
	int c = 99;

	(void)state;
	assert_true(value_quantity_cmp_text("1e30", "1e29", &c));
	assert_int_equal(c, 1);
	assert_true(value_quantity_cmp_text("2e2147483647", "1e2147483647", &c));
	assert_int_equal(c, 1);
	assert_true(value_quantity_cmp_text("0.001e-2147483648", "1e30", &c));
	assert_int_equal(c, -1);
	/* 2^32 + 30 reads as 30 */
	assert_true(value_quantity_cmp_text("1e4294967326", "1e30", &c));
	assert_int_equal(c, 0);
	/* 2^63 - 1 reads as -1 */
	assert_true(value_quantity_cmp_text("1e9223372036854775807", "1e30", &c));
	assert_int_equal(c, -1);
	assert_true(value_quantity_cmp_text("1e9223372036854775807", "100m", &c));
	assert_int_equal(c, 0);
}

static void test_quantity_parse(void **state)
{
	struct value_quantity q;
	static const char *bad[] = {"",	     "abc", "1Mx",   "e",   "1 Gi", "1.5.5",  "1K",
				    "i",     "1e",  "1e3x",  "--1", "1i",   "Always", "1h",
				    "1e1.5", "5s",  "1h30m", " 1",  "1ee3", "1Mi5"};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (value_parse_quantity(bad[i], &q))
			fail_msg("'%s' parsed as a quantity", bad[i]);
	}
	assert_true(value_parse_quantity("1Gi", &q));
	assert_true(q.binary);
	assert_true(fabsl(q.v - 1073741824.0L) < 1e-6L);
	assert_true(value_parse_quantity("250m", &q));
	assert_false(q.binary);
	assert_true(fabsl(q.v - 0.25L) < 1e-9L);
	assert_true(value_parse_quantity("-2", &q));
	assert_true(q.neg);
	assert_true(q.v < 0);
}

static long double dur(const char *s)
{
	long double ns = -12345;

	if (!value_parse_duration(s, &ns))
		fail_msg("'%s' is not a duration", s);
	return ns;
}

static void test_duration_parse(void **state)
{
	long double ns;
	static const char *bad[] = {"",
				    "1",
				    "1d",
				    ".s",
				    "1h 30m",
				    "5.000000",
				    "-",
				    "h",
				    "1..5s",
				    "1.5",
				    "+",
				    "1e3s",
				    "00",
				    "0x",
				    "9999999999999999999h",
				    "2562047h47m16.854775808s",
				    "µs"};
	size_t i;

	assert_true(dur("1h30m") == 5400e9L);
	assert_true(dur("-1.5s") == -1.5e9L);
	assert_true(dur("300ms") == 300e6L);
	assert_true(dur("0") == 0);
	assert_true(dur("-0") == 0);
	assert_true(dur("+5s") == 5e9L);
	assert_true(dur("1.5h") == 5400e9L);
	assert_true(dur("1\xc2\xb5s") == 1000); /* micro sign */
	assert_true(dur("1\xce\xbcs") == 1000); /* greek mu */
	assert_true(dur("1us") == 1000);
	assert_true(dur("1ns") == 1);
	assert_true(dur("90m") == 5400e9L);
	assert_true(dur(".5s") == 5e8L);
	assert_true(dur("1.s") == 1e9L);
	assert_true(dur("0s") == 0);
	assert_true(dur("1h1m1s1ms1us1ns") == 3661001001001.0L);
	assert_true(dur("2562047h47m16.854775807s") == 9223372036854775807.0L);
	assert_true(dur("-2562047h47m16.854775808s") == -9223372036854775808.0L);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (value_parse_duration(bad[i], &ns))
			fail_msg("'%s' parsed as a duration", bad[i]);
	}
}

static void check_dur_fmt(long double ns, const char *want)
{
	struct gv_buf b = {0};

	value_format_duration(ns, &b);
	assert_string_equal(gv_buf_str(&b), want);
	gv_buf_release(&b);
}

static void test_duration_format(void **state)
{
	(void)state;
	check_dur_fmt(0, "0s");
	check_dur_fmt(1, "1ns");
	check_dur_fmt(999, "999ns");
	check_dur_fmt(1500, "1.5\xc2\xb5s");
	check_dur_fmt(1500000, "1.5ms");
	check_dur_fmt(1e6L, "1ms");
	check_dur_fmt(1.5e9L, "1.5s");
	check_dur_fmt(60e9L, "1m0s");
	check_dur_fmt(5400e9L, "1h30m0s");
	check_dur_fmt(3600e9L, "1h0m0s");
	check_dur_fmt(-90e9L, "-1m30s");
	check_dur_fmt(3661001001001.0L, "1h1m1.001001001s");
	check_dur_fmt(9223372036854775807.0L, "2562047h47m16.854775807s");
	check_dur_fmt(-9223372036854775808.0L, "-2562047h47m16.854775808s");
}

static void check_go(json_t *v, const char *want)
{
	char *s = value_go_string(v);

	assert_string_equal(s, want);
	free(s);
	json_decref(v);
}

static void test_go_format(void **state)
{
	(void)state;
	check_go(json_string("nginx:1.25"), "nginx:1.25");
	check_go(json_integer(80), "80");
	check_go(json_integer(-7), "-7");
	check_go(json_real(80.0), "80");
	check_go(json_real(0.5), "0.5");
	check_go(json_real(1e6), "1e+06");
	check_go(json_real(123456.0), "123456");
	check_go(json_real(1234567.0), "1.234567e+06");
	check_go(json_real(1e-5), "1e-05");
	check_go(json_real(0.0001), "0.0001");
	check_go(json_real(3.14), "3.14");
	check_go(json_real(1.0 / 3), "0.3333333333333333");
	check_go(json_real(1e21), "1e+21");
	check_go(json_real(-2.5), "-2.5");
	check_go(json_real(0.0), "0");
	check_go(json_real(0.1 + 0.2), "0.30000000000000004");
	check_go(json_real(5e-324), "5e-324");
	check_go(json_real(1.7976931348623157e308), "1.7976931348623157e+308");
	check_go(json_null(), "<nil>");
	check_go(json_true(), "true");
	check_go(json_false(), "false");
	check_go(json_pack("[s,i,n,f]", "a", 1, 2.5), "[a 1 <nil> 2.5]");
	check_go(json_array(), "[]");
	check_go(json_object(), "map[]");
	check_go(json_pack("{s:i,s:s}", "b", 1, "a", "x"), "map[a:x b:1]");
	check_go(json_pack("{s:{s:[s,s]}}", "k", "z", "p", "q"), "map[k:map[z:[p q]]]");
	check_go(json_pack("[{s:b}]", "on", 1), "[map[on:true]]");
}

static void check_float(double v, char fmt, const char *want)
{
	struct gv_buf b = {0};

	value_format_float(v, fmt, &b);
	assert_string_equal(gv_buf_str(&b), want);
	gv_buf_release(&b);
}

static void test_format_float(void **state)
{
	(void)state;
	check_float(0.5, 'E', "5E-01");
	check_float(80, 'E', "8E+01");
	check_float(5, 'E', "5E+00");
	check_float(1234.5, 'E', "1.2345E+03");
	check_float(1e-7, 'E', "1E-07");
	check_float(1e100, 'E', "1E+100");
	check_float(0, 'E', "0E+00");
	check_float(-0.25, 'e', "-2.5e-01");
	check_float(0.001, 'f', "0.001");
	check_float(1e6, 'f', "1000000");
	check_float(12.5, 'g', "12.5");
	check_float(-0.0, 'g', "-0");
	check_float(INFINITY, 'g', "+Inf");
	check_float(-INFINITY, 'g', "-Inf");
	check_float(NAN, 'g', "NaN");
}

static void test_go_int(void **state)
{
	long long v = 0;

	(void)state;
	assert_true(value_parse_go_int("08080", &v));
	assert_int_equal(v, 8080);
	assert_true(value_parse_go_int("+5", &v));
	assert_int_equal(v, 5);
	assert_true(value_parse_go_int("-9223372036854775808", &v));
	assert_true(v == INT64_MIN);
	assert_true(value_parse_go_int("9223372036854775807", &v));
	assert_true(v == INT64_MAX);
	assert_false(value_parse_go_int("9223372036854775808", &v));
	assert_false(value_parse_go_int("1_000", &v));
	assert_false(value_parse_go_int(" 1", &v));
	assert_false(value_parse_go_int("", &v));
	assert_false(value_parse_go_int("-", &v));
	assert_false(value_parse_go_int("1.0", &v));
	assert_false(value_parse_go_int("0x10", &v));
}

static void test_go_float(void **state)
{
	double v = 0;

	(void)state;
	assert_true(value_parse_go_float("0.50", &v));
	assert_true(v == 0.5);
	assert_true(value_parse_go_float("1e3", &v));
	assert_true(v == 1000);
	assert_true(value_parse_go_float("1_000.5", &v));
	assert_true(v == 1000.5);
	assert_true(value_parse_go_float(".5", &v));
	assert_true(v == 0.5);
	assert_true(value_parse_go_float("1.", &v));
	assert_true(v == 1);
	assert_true(value_parse_go_float("-2", &v));
	assert_true(v == -2);
	assert_true(value_parse_go_float("0x1p-2", &v));
	assert_true(v == 0.25);
	assert_true(value_parse_go_float("inf", &v));
	assert_true(isinf(v) && v > 0);
	assert_true(value_parse_go_float("-Infinity", &v));
	assert_true(isinf(v) && v < 0);
	assert_true(value_parse_go_float("NaN", &v));
	assert_true(isnan(v));
	assert_true(value_parse_go_float("1e-400", &v));
	assert_true(v == 0);
	assert_false(value_parse_go_float("+nan", &v));
	assert_false(value_parse_go_float("_1", &v));
	assert_false(value_parse_go_float("1__0", &v));
	assert_false(value_parse_go_float("0x1", &v));
	assert_false(value_parse_go_float("1e400", &v));
	assert_false(value_parse_go_float("abc", &v));
	assert_false(value_parse_go_float(".", &v));
	assert_false(value_parse_go_float("", &v));
	assert_false(value_parse_go_float(" 1", &v));
	assert_false(value_parse_go_float("1e", &v));
	assert_false(value_parse_go_float("1.5Gi", &v));
}

static void test_semver(void **state)
{
	struct value_semver a, b;
	static const char *bad[] = {"1.2",     "01.2.3", "1.02.3",   "1.2.03", "1.2.3-01",
				    "1.2.3-",  "1.2.3+", "a.b.c",    "",       "1.2.3-a..b",
				    "1.2.3.4", "v",	 "1.2.3-a$", "1.2.x"};
	static const char *chain[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
				      "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
				      "1.0.0-rc.1",  "1.0.0",	      "1.0.1",
				      "1.2.3",	     "1.10.0",	      "2.0.0"};
	size_t i;

	(void)state;
	assert_true(value_parse_semver("1.2.3", &a));
	assert_int_equal(a.major, 1);
	assert_int_equal(a.minor, 2);
	assert_int_equal(a.patch, 3);
	assert_string_equal(a.pre, "");
	assert_true(value_parse_semver("v1.2.3", &a));
	assert_int_equal(a.patch, 3);
	assert_true(value_parse_semver("1.2.3-rc.1+build.5", &a));
	assert_string_equal(a.pre, "rc.1");
	assert_true(value_parse_semver("1.2.3-rc-1", &a));
	assert_string_equal(a.pre, "rc-1");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (value_parse_semver(bad[i], &a))
			fail_msg("'%s' parsed as a semver", bad[i]);
	}
	for (i = 0; i + 1 < sizeof(chain) / sizeof(chain[0]); i++) {
		assert_true(value_parse_semver(chain[i], &a));
		assert_true(value_parse_semver(chain[i + 1], &b));
		if (value_semver_cmp(&a, &b) != -1 || value_semver_cmp(&b, &a) != 1)
			fail_msg("%s < %s does not hold", chain[i], chain[i + 1]);
		assert_int_equal(value_semver_cmp(&a, &a), 0);
	}
	assert_true(value_parse_semver("1.0.0+a", &a));
	assert_true(value_parse_semver("1.0.0+b", &b));
	assert_int_equal(value_semver_cmp(&a, &b), 0);
}

static void test_number(void **state)
{
	double d = 0;
	json_t *i = json_integer(42), *r = json_real(0.5), *s = json_string("1");

	(void)state;
	assert_true(value_number(i, &d));
	assert_true(d == 42);
	assert_true(value_number(r, &d));
	assert_true(d == 0.5);
	assert_false(value_number(s, &d));
	assert_false(value_number(NULL, &d));
	json_decref(i);
	json_decref(r);
	json_decref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wildcard),
	    cmocka_unit_test(test_has_wildcard),
	    cmocka_unit_test(test_quantity_equal_forms),
	    cmocka_unit_test(test_quantity_order),
	    cmocka_unit_test(test_quantity_cmp_text_exponent),
	    cmocka_unit_test(test_quantity_parse),
	    cmocka_unit_test(test_duration_parse),
	    cmocka_unit_test(test_duration_format),
	    cmocka_unit_test(test_go_format),
	    cmocka_unit_test(test_format_float),
	    cmocka_unit_test(test_go_int),
	    cmocka_unit_test(test_go_float),
	    cmocka_unit_test(test_semver),
	    cmocka_unit_test(test_number),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
