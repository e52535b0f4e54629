/*
 * Unit tests for engine/severity.c: a PolicyReport result's severity from
 * the policies.kyverno.io/severity annotation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "engine/engine.h"

#include "common/banned.h"

static void test_crd_values(void **state)
{
	const char *const v[] = {"critical", "high", "medium", "low", "info"};
	char copy[16];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		/* the value itself, not a pointer into the caller's string */
		snprintf(copy, sizeof(copy), "%s", v[i]);
		assert_string_equal(engine_report_severity(copy), v[i]);
		assert_ptr_not_equal(engine_report_severity(copy), copy);
	}
}

static void test_other_values(void **state)
{
	(void)state;
	/* exact values only: any other spelling leaves the field out */
	assert_null(engine_report_severity(NULL));
	assert_null(engine_report_severity(""));
	assert_null(engine_report_severity("Medium"));
	assert_null(engine_report_severity("HIGH"));
	assert_null(engine_report_severity("medium "));
	assert_null(engine_report_severity(" low"));
	assert_null(engine_report_severity("informational"));
	assert_null(engine_report_severity("crit"));
	assert_null(engine_report_severity("warning"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crd_values),
	    cmocka_unit_test(test_other_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
