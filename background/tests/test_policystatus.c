/*
 * Unit tests for background/policystatus.c: the status a policy document
 * should carry (Ready, BackgroundScan, rulecount, autogen), and the
 * lastTransitionTime rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "background/policystatus.h"

#include "common/banned.h"

#define T0 1767261600 /* 2026-01-01T10:00:00Z */

static json_t *doc_of(const char *text)
{
	json_error_t e;
	json_t *d = json_loads(text, 0, &e);

	if (!d) {
		fprintf(stderr, "bad test JSON: %s\n", e.text);
		fail();
	}
	return d;
}

static const char *POD_POLICY =
    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\","
    "\"metadata\":{\"name\":\"p\"},\"spec\":{\"rules\":["
    "{\"name\":\"tag\",\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},"
    "\"validate\":{\"message\":\"m\",\"pattern\":{\"spec\":{\"containers\":[{\"image\":\"*:*\"}]}}}"
    "},"
    "{\"name\":\"mut\",\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"ConfigMap\"]}}]},"
    "\"mutate\":{\"patchStrategicMerge\":{}}}]}}";

static const json_t *cond(const json_t *st, const char *type)
{
	size_t i;
	const json_t *c;

	json_array_foreach(json_object_get(st, "conditions"), i, c)
	{
		if (!strcmp(json_string_value(json_object_get(c, "type")), type))
			return c;
	}
	return NULL;
}

static const char *field(const json_t *c, const char *key)
{
	return json_string_value(json_object_get(c, key));
}

static void test_ready(void **state)
{
	json_t *doc = doc_of(POD_POLICY);
	json_t *st = policystatus_build(doc, NULL, NULL, NULL, T0);
	const json_t *r = cond(st, "Ready"), *rc = json_object_get(st, "rulecount");
	const json_t *ag = json_object_get(json_object_get(st, "autogen"), "rules");

	(void)state;
	assert_true(json_is_true(json_object_get(st, "ready")));
	assert_string_equal(field(r, "status"), "True");
	assert_string_equal(field(r, "reason"), "Succeeded");
	assert_string_equal(field(r, "message"), "Ready");
	assert_string_equal(field(r, "lastTransitionTime"), "2026-01-01T10:00:00Z");
	assert_null(cond(st, "BackgroundScan"));
	assert_int_equal(json_integer_value(json_object_get(rc, "validate")), 1);
	assert_int_equal(json_integer_value(json_object_get(rc, "mutate")), 1);
	assert_int_equal(json_integer_value(json_object_get(rc, "generate")), 0);
	assert_int_equal(json_integer_value(json_object_get(rc, "verifyimages")), 0);
	assert_int_equal(json_array_size(ag), 2); /* the Pod rule for controllers and CronJobs */
	json_decref(st);
	json_decref(doc);
}

static void test_autogen_and_failed(void **state)
{
	json_t *doc = doc_of(POD_POLICY), *st, *again;
	const json_t *r, *ag;

	(void)state;
	json_array_remove(json_object_get(json_object_get(doc, "spec"), "rules"), 1);
	st = policystatus_build(doc, "/spec/rules/0: bad", NULL, NULL, T0);
	r = cond(st, "Ready");
	assert_true(json_is_false(json_object_get(st, "ready")));
	assert_string_equal(field(r, "status"), "False");
	assert_string_equal(field(r, "reason"), "Failed");
	assert_string_equal(field(r, "message"), "/spec/rules/0: bad");
	ag = json_object_get(json_object_get(st, "autogen"), "rules");
	assert_int_equal(json_array_size(ag), 2);
	assert_string_equal(field(json_array_get(ag, 0), "name"), "autogen-tag");
	assert_string_equal(field(json_array_get(ag, 1), "name"), "autogen-cronjob-tag");
	/* as Kyverno writes them: the CRD's defaults, `resources` in match */
	assert_true(json_is_true(json_object_get(json_array_get(ag, 0), "skipBackgroundRequests")));
	assert_true(json_is_true(json_object_get(json_object_get(json_array_get(ag, 1), "validate"),
						 "allowExistingViolations")));
	assert_true(json_is_object(
	    json_object_get(json_object_get(json_array_get(ag, 0), "match"), "resources")));

	/* Same status later: the transition time is kept; fixed: a new one. */
	again = policystatus_build(doc, "/spec/rules/0: bad", NULL, st, T0 + 60);
	assert_true(json_equal(again, st));
	json_decref(again);
	again = policystatus_build(doc, NULL, NULL, st, T0 + 60);
	assert_string_equal(field(cond(again, "Ready"), "lastTransitionTime"),
			    "2026-01-01T10:01:00Z");
	json_decref(again);
	json_decref(st);
	json_decref(doc);
}

static void test_background_scan(void **state)
{
	json_t *doc = doc_of(POD_POLICY), *st;
	struct policystatus_scan s = {
	    .present = true, .when = RECONCILER_WAITING, .last = T0, .next = T0 + 3600};
	const json_t *c;

	(void)state;
	st = policystatus_build(doc, NULL, &s, NULL, T0);
	c = cond(st, "BackgroundScan");
	assert_string_equal(field(c, "status"), "True");
	assert_string_equal(field(c, "reason"), "Scheduled");
	assert_string_equal(field(c, "message"),
			    "last scan 2026-01-01T10:00:00Z, next scan 2026-01-01T11:00:00Z");
	json_decref(st);

	s.when = RECONCILER_SUSPENDED;
	s.suspended_by = "backgroundScanSuspend";
	st = policystatus_build(doc, NULL, &s, NULL, T0);
	c = cond(st, "BackgroundScan");
	assert_string_equal(field(c, "status"), "False");
	assert_string_equal(field(c, "reason"), "Suspended");
	assert_string_equal(field(c, "message"),
			    "suspended by backgroundScanSuspend, last scan 2026-01-01T10:00:00Z");
	json_decref(st);

	s.when = RECONCILER_INVALID;
	s.error = "spec.scanSchedule \"x\": bad";
	st = policystatus_build(doc, NULL, &s, NULL, T0);
	c = cond(st, "BackgroundScan");
	assert_string_equal(field(c, "reason"), "InvalidSchedule");
	assert_string_equal(field(c, "message"), "spec.scanSchedule \"x\": bad");
	json_decref(st);

	/* A policy that does not compile has no BackgroundScan condition. */
	st = policystatus_build(doc, "bad", &s, NULL, T0);
	assert_null(cond(st, "BackgroundScan"));
	json_decref(st);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ready),
	    cmocka_unit_test(test_autogen_and_failed),
	    cmocka_unit_test(test_background_scan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
