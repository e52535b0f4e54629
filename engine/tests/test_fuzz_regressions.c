/*
 * Regression tests for what the libFuzzer targets found in engine/
 * (engine/fuzz/). Each test names the input that showed the bug; the leak
 * checks need `make SANITIZE=address,undefined test`.
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

#include "common/gv.h"
#include "engine/jmespath.h"

#include "common/banned.h"

/*
 * The P-256 certificate of engine/testdata/jmespath.test with one character
 * of its public point changed ("k3Wnj" -> "k6Wnj"): the point is not on the
 * curve, so OpenSSL cannot decode the key (X509_get0_pubkey() = NULL).
 */
static const char BAD_KEY_CERT[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBqDCCAU2gAwIBAgIBBzAKBggqhkjOPQQDAjATMREwDwYDVQQDDAhnYXZlbC1j\n"
    "YTAiGA8yMDI0MDEwMTAwMDAwMFoYDzIwMzQwMTAxMDAwMDAwWjAlMRMwEQYDVQQD\n"
    "DApnYXZlbC10ZXN0MQ4wDAYDVQQKDAVnYXZlbDBZMBMGByqGSM49AgEGCCqGSM49\n"
    "AwEHA0IABEshBxe6TwBwEae9JdPfVsqP6SlmJX3zmne+4uL8eZ8t0ROq8odk6Wnj\n"
    "Tqrri3uqwvNkhHAy7r3HkeJce48/f0ijfDB6MB0GA1UdDgQWBBRVQn5vZMUL8kDO\n"
    "WCl6b9ZCPP+wjzAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIFoDAmBgNVHREE\n"
    "HzAdgglnYXZlbC5kZXaCCmdhdmVsLnRlc3SHBH8AAAEwEwYDVR0lBAwwCgYIKwYB\n"
    "BQUHAwEwCgYIKoZIzj0EAwIDSQAwRgIhAMmy0YkLJJxuDdcsyzW5r/GsCVbEq3rZ\n"
    "7UhJV0eOLFFqAiEA7F+TA6gf7k17NMJ+E1gnpDT/PZwWJr/R2LbziJl+8zA=\n"
    "-----END CERTIFICATE-----\n";

/*
 * fuzz_jmespath_doc leak-32fd1e40: x509_decode() of a certificate whose key
 * OpenSSL cannot decode leaked the empty PublicKey object made before the
 * check (public_key_json() in jp_functions.c).
 */
static void test_x509_undecodable_key_no_leak(void **state)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e = {0};
	json_t *doc = json_pack("{s:s}", "cert", BAD_KEY_CERT);
	json_t *v;

	(void)state;
	v = jp_search("x509_decode(cert).[PublicKey, Subject.CommonName]", doc, &opt, &e);
	assert_non_null(v);
	assert_true(json_is_null(json_array_get(v, 0)));
	assert_string_equal(json_string_value(json_array_get(v, 1)), "gavel-test");
	json_decref(v);
	json_decref(doc);
}

static void expect_error(const char *expr, const char *text)
{
	struct jp_options opt = {.kyverno = true};
	struct jp_error e = {0};
	json_t *v = jp_search(expr, NULL, &opt, &e);

	assert_null(v);
	assert_non_null(strstr(e.msg, text));
}

/*
 * fuzz_jmespath crash-6cf056d9 (UBSan, signed overflow): semver_compare()
 * widened the wildcard "9223372036854775807.x" by computing 2^63-1 + 1 in a
 * long long. It now adds one as blang/semver does (Atoi, Go's wrapping int),
 * so the range becomes "<-9223372036854775808.0.0", which does not parse.
 */
static void test_semver_wildcard_int_max(void **state)
{
	(void)state;
	expect_error("semver_compare('1.0.0', '9223372036854775807.x')",
		     "Could not parse Range \"<-9223372036854775808.0.0\"");
	expect_error("semver_compare('1.0.0', '1.9223372036854775807.x')",
		     "Could not parse Range \"<1.-9223372036854775808.0\"");
}

/*
 * fuzz_jmespath crash-71182cde (UBSan, signed overflow): random() added 10
 * to a repeat count that strtol had saturated at 2^63-1
 * ("a{9223372036854775807,}") before refusing counts past 1000.
 */
static void test_random_repeat_int_max(void **state)
{
	(void)state;
	expect_error("random('a{9223372036854775807,}')", "invalid repeat count");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_x509_undecodable_key_no_leak),
	    cmocka_unit_test(test_semver_wildcard_int_max),
	    cmocka_unit_test(test_random_repeat_int_max),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
