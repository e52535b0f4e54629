/*
 * test_jp.c - `gavel jp query` (cmd_jp) on files: JSON input read with the
 * JSON parser (escaped surrogate pairs, which the YAML loader refuses), YAML
 * input and YAML that starts like JSON read with the YAML loader, errors.
 * Runs the command itself; its stdout and stderr go to temporary files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd/cmd.h"

#include "common/banned.h"

struct run {
	int rc;
	char out[4096]; /* stdout, the trailing newline removed */
	char err[4096]; /* stderr */
};

/* Reads what fd holds from its start into buf (NUL-terminated). */
static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n;
	size_t len = 0;

	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
}

/* gavel jp query EXPR -i FILE, FILE holding `input`. */
static struct run query(const char *expr, const char *input)
{
	char in[] = "/tmp/gavel-test-jp-in-XXXXXX", out[] = "/tmp/gavel-test-jp-out-XXXXXX",
	     err[] = "/tmp/gavel-test-jp-err-XXXXXX";
	char a0[] = "jp", a1[] = "query", a3[] = "-i";
	char *e = strdup(expr);
	char *argv[] = {a0, a1, e, a3, in, NULL};
	int fin = mkstemp(in), fout = mkstemp(out), ferr = mkstemp(err);
	int save_out, save_err;
	size_t n = strlen(input);
	struct run r;

	assert_non_null(e);
	assert_true(fin >= 0 && fout >= 0 && ferr >= 0);
	assert_int_equal(write(fin, input, n), (ssize_t)n);
	close(fin);
	fflush(stdout);
	fflush(stderr);
	save_out = dup(1);
	save_err = dup(2);
	dup2(fout, 1);
	dup2(ferr, 2);
	r.rc = cmd_jp(5, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(save_out, 1);
	dup2(save_err, 2);
	close(save_out);
	close(save_err);
	slurp(fout, r.out, sizeof(r.out));
	slurp(ferr, r.err, sizeof(r.err));
	n = strlen(r.out);
	if (n && r.out[n - 1] == '\n')
		r.out[n - 1] = '\0';
	close(fout);
	close(ferr);
	unlink(in);
	unlink(out);
	unlink(err);
	free(e);
	return r;
}

#define CHECK_QUERY(expr, input, want)                                                             \
	do {                                                                                       \
		struct run r_ = query(expr, input);                                                \
		if (r_.rc != 0 || strcmp(r_.out, want) != 0)                                       \
			fail_msg("jp query '%s' on [%s]: rc %d, out [%s], err [%s]; want [%s]",    \
				 expr, input, r_.rc, r_.out, r_.err, want);                        \
	} while (0)

static void test_json_surrogate_pairs(void **state)
{
	(void)state;
	/* U+1F600 as an escaped surrogate pair, in an object, an array, alone */
	CHECK_QUERY("a", "{\"a\": \"\\ud83d\\ude00\"}", "\"\xf0\x9f\x98\x80\"");
	CHECK_QUERY("[1]", "[\"x\", \"\\ud83d\\ude00!\"]", "\"\xf0\x9f\x98\x80!\"");
	CHECK_QUERY("@", "\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"");
	CHECK_QUERY("length(@)", " \n\t\"\\ud83d\\ude00\"\n", "1");
	CHECK_QUERY("a.b[0]", "\r\n {\"a\": {\"b\": [\"\\u00e9\\ud834\\udd1e\"]}}\n",
		    "\"\xc3\xa9\xf0\x9d\x84\x9e\"");
}

static void test_json_values(void **state)
{
	(void)state;
	CHECK_QUERY("[0].a", "[{\"a\": 1}]", "1");
	CHECK_QUERY("a", "{\"a\": [true, null, 2.5, \"s\"]}", "[true,null,2.5,\"s\"]");
	CHECK_QUERY("keys(@)", "{\"b\": 1, \"a\": 2}", "[\"b\",\"a\"]");
}

static void test_yaml(void **state)
{
	(void)state;
	CHECK_QUERY("a[1]", "a: [1, 2]\n", "2");
	/* starts like JSON but is YAML: the YAML loader reads it */
	CHECK_QUERY("a", "{a: 1}", "1");
	CHECK_QUERY("key", "\"key\": value\n", "\"value\"");
	CHECK_QUERY("[0].a", "[{a: yes}]", "true");
	/* a YAML escape the JSON grammar lacks */
	CHECK_QUERY("a", "a: \"\\x41\"\n", "\"A\"");
	/* the first document counts; no document is null */
	CHECK_QUERY("a", "a: 1\n---\na: 2\n", "1");
	CHECK_QUERY("@", "", "null");
	CHECK_QUERY("@", "# only a comment\n", "null");
}

static void test_errors(void **state)
{
	struct run r;

	(void)state;
	/* a lone surrogate: neither JSON nor YAML */
	r = query("a", "{\"a\": \"\\ud83d\"}");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "error: "));
	/* two values */
	r = query("@", "{\"a\": 1} {\"b\": 2}");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.out, "");
	r = query("@", "\"x\" \"y\"");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_surrogate_pairs),
	    cmocka_unit_test(test_json_values),
	    cmocka_unit_test(test_yaml),
	    cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
