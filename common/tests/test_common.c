/*
 * Unit tests for common/: UTF-8 decoding and encoding (utf8.h), the size
 * cap of struct gv_buf (gv.h), FNV-1a, the word-at-a-time hash and the
 * string-keyed map (hash.h), the series of a metrics family (metrics.h).
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
#include "common/hash.h"
#include "common/metrics.h"
#include "common/utf8.h"

#include "common/banned.h"

static void expect_decode(const char *s, size_t n, unsigned want_cp, size_t want_len)
{
	unsigned cp = 0;
	size_t len = gv_utf8_decode(s, n, &cp);

	assert_int_equal(cp, want_cp);
	assert_int_equal(len, want_len);
}

static void test_utf8_decode(void **state)
{
	(void)state;
	expect_decode("a", 1, 'a', 1);
	expect_decode("\xc3\xa9", 2, 0xE9, 2);
	expect_decode("\xe2\x82\xac", 3, 0x20AC, 3);
	expect_decode("\xf0\x9f\x98\x80", 4, 0x1F600, 4);
	expect_decode("\xef\xbf\xbd", 3, 0xFFFD, 3); /* a real U+FFFD */
	/* invalid: one byte of U+FFFD each */
	expect_decode("", 0, 0xFFFD, 1);
	expect_decode("\xc3", 1, 0xFFFD, 1);		 /* truncated */
	expect_decode("\xe2\x82", 2, 0xFFFD, 1);	 /* truncated */
	expect_decode("\xe2\x82\xac", 2, 0xFFFD, 1);	 /* n bounds the read */
	expect_decode("\xc0\xaf", 2, 0xFFFD, 1);	 /* overlong */
	expect_decode("\xe0\x80\xaf", 3, 0xFFFD, 1);	 /* overlong */
	expect_decode("\xed\xa0\x80", 3, 0xFFFD, 1);	 /* surrogate */
	expect_decode("\xf4\x90\x80\x80", 4, 0xFFFD, 1); /* past U+10FFFF */
	expect_decode("\x80", 1, 0xFFFD, 1);		 /* continuation */
	expect_decode("\xc3\x00", 2, 0xFFFD, 1);	 /* NUL stops it */
}

static void test_utf8_valid_len_put(void **state)
{
	struct gv_buf b = {0};
	const char s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";

	(void)state;
	assert_int_equal(gv_utf8_valid("", 0), 0);
	assert_int_equal(gv_utf8_valid("\0", 1), 1);
	assert_int_equal(gv_utf8_valid("\xe2\x82\xac", 3), 3);
	assert_int_equal(gv_utf8_valid("\xed\xa0\x80", 3), 0);
	assert_int_equal(gv_utf8_len(s, sizeof(s) - 1), 4);
	assert_int_equal(gv_utf8_len("\xff\xfe", 2), 2);
	gv_utf8_put(&b, 'a');
	gv_utf8_put(&b, 0xE9);
	gv_utf8_put(&b, 0x20AC);
	gv_utf8_put(&b, 0x1F600);
	assert_int_equal(b.len, sizeof(s) - 1);
	assert_memory_equal(b.data, s, b.len);
	gv_buf_release(&b);
}

static void test_buf_cap(void **state)
{
	struct gv_buf b = {.max = 8};

	(void)state;
	gv_buf_adds(&b, "12345");
	assert_false(b.over);
	gv_buf_addf(&b, "%d", 678);
	assert_string_equal(gv_buf_str(&b), "12345678");
	assert_false(b.over);
	/* past the cap: the append is dropped whole, and over stays set */
	gv_buf_addc(&b, '9');
	assert_true(b.over);
	assert_string_equal(gv_buf_str(&b), "12345678");
	gv_buf_addf(&b, "%s", "x");
	assert_string_equal(gv_buf_str(&b), "12345678");
	assert_true(b.over);
	gv_buf_reset(&b);
	assert_false(b.over);
	assert_int_equal(b.max, 8);
	gv_buf_adds(&b, "123456789");
	assert_true(b.over);
	assert_int_equal(b.len, 0);
	gv_buf_release(&b);
	assert_false(b.over);

	/* no cap (zero-initialised): grows as before */
	struct gv_buf u = {0};
	for (int i = 0; i < 1000; i++)
		gv_buf_adds(&u, "0123456789");
	assert_int_equal(u.len, 10000);
	assert_false(u.over);
	gv_buf_release(&u);
}

/* gv_buf_addu writes what "%zu" writes. */
static void test_buf_addu(void **state)
{
	static const size_t v[] = {0, 7, 10, 99, 12345, (size_t)-1};
	(void)state;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct gv_buf b = {0};
		char want[32];

		gv_buf_adds(&b, "x");
		gv_buf_addu(&b, v[i]);
		snprintf(want, sizeof(want), "x%zu", v[i]);
		assert_string_equal(gv_buf_str(&b), want);
		gv_buf_release(&b);
	}
}

static void test_fnv1a(void **state)
{
	(void)state;
	/* the FNV-1a 64 test vectors */
	assert_true(gv_hash_str("") == 0xcbf29ce484222325ULL);
	assert_true(gv_hash_str("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(gv_hash_str("foobar") == 0x85944171f73967e8ULL);
	assert_true(gv_fnv1a64("bar", 3, gv_fnv1a64("foo", 3, GV_FNV1A64_OFFSET)) ==
		    gv_hash_str("foobar"));
}

static void test_hash_words(void **state)
{
	static const char text[] = "0123456789abcdefghij";
	uint64_t seen[sizeof(text)];

	(void)state;
	/* every length (whole words and each tail) hashes differently */
	for (size_t n = 0; n < sizeof(text); n++) {
		seen[n] = gv_hash_words(text, n, 1);
		for (size_t m = 0; m < n; m++)
			assert_int_not_equal(seen[m], seen[n]);
	}
	/* the tail's bytes count, and only they (not what follows them) */
	assert_int_not_equal(gv_hash_words("abcdefghX", 9, 1), gv_hash_words("abcdefghY", 9, 1));
	assert_int_equal(gv_hash_words("abcdefghX1", 9, 1), gv_hash_words("abcdefghX2", 9, 1));
	assert_int_not_equal(gv_hash_words("ab", 2, 1), gv_hash_words("ab", 2, 2));
}

/* Label values that shift between labels are different series. */
static void test_metrics_series(void **state)
{
	static const char *const labels[] = {"a", "b", NULL};
	struct metrics_registry *r = metrics_registry_new();
	struct metrics_family *f = metrics_counter_new(r, "x_total", "Help.", labels);
	struct gv_buf out = {0};

	(void)state;
	metrics_inc(f, (const char *const[]){"ab", ""});
	metrics_inc(f, (const char *const[]){"a", "b"});
	metrics_inc(f, (const char *const[]){"", "ab"});
	metrics_add(f, (const char *const[]){"a", "b"}, 2);
	{
		/* one key for two families of the same labels: the same series */
		static const double buckets[] = {1};
		static const char *const one[] = {"a", NULL};
		struct metrics_family *hf =
		    metrics_histogram_new(r, "x_seconds", "Help.", labels, buckets, 1);
		struct metrics_family *f1 = metrics_counter_new(r, "y_total", "Help.", one);
		const char *const v[] = {"a", "b"};
		char big[1000];
		struct metrics_key k;

		metrics_key_make(f, v, &k);
		metrics_add_key(f, &k, 1);
		metrics_observe_key(hf, &k, 0.5);
		metrics_add_key(f1, &k, 1); /* a key of two values: not for f1 */
		metrics_key_release(&k);
		metrics_observe(hf, v, 2);
		/* a key longer than its buffer */
		memset(big, 'v', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		metrics_key_make(f, (const char *const[]){big, "z"}, &k);
		assert_true(k.text != k.small);
		metrics_add_key(f, &k, 3);
		metrics_key_release(&k);
		metrics_add(f, (const char *const[]){big, "z"}, 1);
	}
	metrics_render(r, &out);
	assert_non_null(strstr(gv_buf_str(&out), "x_total{a=\"ab\",b=\"\"} 1\n"));
	assert_non_null(strstr(gv_buf_str(&out), "x_total{a=\"a\",b=\"b\"} 4\n"));
	assert_non_null(strstr(gv_buf_str(&out), "x_seconds_count{a=\"a\",b=\"b\"} 2\n"));
	assert_non_null(strstr(gv_buf_str(&out), "x_seconds_bucket{a=\"a\",b=\"b\",le=\"1\"} 1\n"));
	assert_non_null(strstr(gv_buf_str(&out), "x_total{a=\"\",b=\"ab\"} 1\n"));
	assert_null(strstr(gv_buf_str(&out), "y_total{"));
	assert_non_null(strstr(gv_buf_str(&out), "vvvvvvvv\",b=\"z\"} 4\n"));
	gv_buf_release(&out);
	metrics_registry_free(r);
}

static void test_map(void **state)
{
	struct gv_map m = {0};
	char keys[500][8];
	size_t seen = 0;

	(void)state;
	assert_null(gv_map_get(&m, "x"));
	assert_null(gv_map_del(&m, "x"));
	for (int i = 0; i < 500; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		gv_map_put(&m, keys[i], keys[i]);
	}
	assert_int_equal(m.n, 500);
	gv_map_put(&m, "k7", keys[8]); /* replaces */
	assert_int_equal(m.n, 500);
	assert_ptr_equal(gv_map_get(&m, "k7"), keys[8]);
	/* delete the even keys: the odd ones stay reachable across the shifts */
	for (int i = 0; i < 500; i += 2)
		assert_non_null(gv_map_del(&m, keys[i]));
	assert_int_equal(m.n, 250);
	for (int i = 0; i < 500; i++) {
		if (i % 2 == 0)
			assert_null(gv_map_get(&m, keys[i]));
		else if (i != 7)
			assert_ptr_equal(gv_map_get(&m, keys[i]), keys[i]);
	}
	for (size_t i = 0; i < m.cap; i++)
		if (m.v[i].key)
			seen++;
	assert_int_equal(seen, 250);
	gv_map_release(&m);
	assert_int_equal(m.n, 0);
	assert_null(gv_map_get(&m, "k1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_utf8_decode), cmocka_unit_test(test_utf8_valid_len_put),
	    cmocka_unit_test(test_buf_cap),	cmocka_unit_test(test_fnv1a),
	    cmocka_unit_test(test_map),		cmocka_unit_test(test_buf_addu),
	    cmocka_unit_test(test_hash_words),	cmocka_unit_test(test_metrics_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
