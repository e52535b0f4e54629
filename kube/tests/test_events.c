/*
 * Unit tests for kube/events.c: the --omit-events list, and emitting with
 * no recorder or an omitted reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kube/events.h"

#include "common/banned.h"

static void test_parse_omit(void **state)
{
	unsigned mask = 99;
	struct gv_err err = {0};

	(void)state;
	assert_true(kube_events_parse_omit("PolicyApplied,PolicySkipped", &mask, NULL));
	assert_int_equal(mask, KUBE_EVENTS_OMIT_DEFAULT);
	assert_true(kube_events_parse_omit("", &mask, NULL));
	assert_int_equal(mask, 0);
	assert_true(kube_events_parse_omit("PolicyViolation", &mask, NULL));
	assert_int_equal(mask, 1u << KUBE_EVENT_POLICY_VIOLATION);
	assert_false(kube_events_parse_omit("PolicyViolation,Nope", &mask, &err));
	assert_string_equal(err.msg, "unknown event \"Nope\" (want PolicyViolation, PolicyError, "
				     "PolicyApplied, PolicySkipped)");
	assert_string_equal(kube_event_reason_name(KUBE_EVENT_POLICY_ERROR), "PolicyError");
}

static void test_emit_without_recorder(void **state)
{
	struct kube_event_object o = {.api_version = "v1", .kind = "Pod", .name = "p"};

	(void)state;
	assert_false(kube_events_emit(NULL, &o, KUBE_EVENT_POLICY_VIOLATION, "kyverno-admission",
				      NULL, "m"));
	assert_int_equal(kube_events_dropped(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_omit),
	    cmocka_unit_test(test_emit_without_recorder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
