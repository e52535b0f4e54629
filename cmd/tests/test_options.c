/*
 * test_options.c - cmd_take(), the option parsing of the subcommands.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cmd/cmd.h"

static void test_take(void **state)
{
	char a0[] = "scan", a1[] = "--kubeconfig=/a", a2[] = "--kubeconfig", a3[] = "/b",
	     a4[] = "--kubeconfig-x", a5[] = "-o", a6[] = "yaml", a7[] = "--output", a8[] = "json",
	     a9[] = "--output";
	char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9};
	int argc = (int)(sizeof(argv) / sizeof(*argv));
	const char *v = NULL;
	bool missing = false;
	int i;

	(void)state;
	/* --name=VALUE */
	i = 1;
	assert_true(cmd_take(argc, argv, &i, "--kubeconfig", NULL, &v, &missing));
	assert_string_equal(v, "/a");
	assert_int_equal(i, 1);
	/* --name VALUE: i moves past the value */
	i = 2;
	assert_true(cmd_take(argc, argv, &i, "--kubeconfig", NULL, &v, &missing));
	assert_string_equal(v, "/b");
	assert_int_equal(i, 3);
	/* a longer option is not this one */
	i = 4;
	assert_false(cmd_take(argc, argv, &i, "--kubeconfig", NULL, &v, &missing));
	assert_int_equal(i, 4);
	/* the short form, when there is one */
	i = 5;
	assert_false(cmd_take(argc, argv, &i, "--output", NULL, &v, &missing));
	assert_true(cmd_take(argc, argv, &i, "--output", "-o", &v, &missing));
	assert_string_equal(v, "yaml");
	assert_int_equal(i, 6);
	i = 7;
	assert_true(cmd_take(argc, argv, &i, "--output", "-o", &v, &missing));
	assert_string_equal(v, "json");
	/* the value missing at the end */
	i = 9;
	v = NULL;
	assert_false(missing);
	assert_true(cmd_take(argc, argv, &i, "--output", "-o", &v, &missing));
	assert_true(missing);
	assert_null(v);
	assert_int_equal(i, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_take),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
