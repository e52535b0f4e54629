/*
 * Unit tests for the Events of background scans (background/events.c,
 * view/events.c) written through a test transport, the PolicyException
 * list of a skip message, and the policy metrics of view/metrics.c
 * (kyverno_policy_execution_duration_seconds, kyverno_policy_changes_total).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>

#include "background/events.h"
#include "view/events.h"
#include "view/metrics.h"
#include "common/metrics.h"

#include "common/banned.h"

/* ---- Events written through a test transport ---- */

struct sink {
	pthread_mutex_t mu;
	json_t *posted; /* the Events POSTed */
};

static void transport(void *ud, struct kube_exchange *x)
{
	struct sink *s = ud;
	json_t *body = x->body ? json_loadb(x->body, x->body_len, 0, NULL) : NULL;

	pthread_mutex_lock(&s->mu);
	if (body && !strcmp(x->method, "POST"))
		json_array_append(s->posted, body);
	pthread_mutex_unlock(&s->mu);
	json_decref(body);
	x->http = 201;
	gv_buf_adds(&x->response, "{}");
}

/* Waits until n Events are written (at most 5 s); returns how many were. */
static size_t wait_written(struct kube_events *ev, size_t n)
{
	for (int i = 0; i < 500 && kube_events_written(ev) < n; i++) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	return (size_t)kube_events_written(ev);
}

static const char POLICY[] =
    "{\"apiVersion\": \"kyverno.io/v1\", \"kind\": \"ClusterPolicy\","
    " \"metadata\": {\"name\": \"require-labels\", \"uid\": \"p-uid\", \"generation\": 1},"
    " \"spec\": {\"background\": true, \"rules\": [{\"name\": \"check-team\","
    " \"match\": {\"any\": [{\"resources\": {\"kinds\": [\"Pod\"]}}]},"
    " \"validate\": {\"message\": \"label team is required\","
    " \"pattern\": {\"metadata\": {\"labels\": {\"team\": \"?*\"}}}}}]}}";

static json_t *pod(const char *rv)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Pod",
			 "metadata", "name", "web", "namespace", "apps", "uid", "pod-uid",
			 "resourceVersion", rv);
}

static const json_t *find_event(const json_t *posted, const char *kind, const char *component)
{
	size_t i;
	const json_t *e;

	json_array_foreach(posted, i, e)
	{
		const json_t *inv = json_object_get(e, "involvedObject");
		if (!strcmp(json_string_value(json_object_get(inv, "kind")), kind) &&
		    !strcmp(json_string_value(json_object_get(e, "reportingComponent")), component))
			return e;
	}
	return NULL;
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void test_scan_events_once_per_change(void **state)
{
	struct sink s = {.posted = json_array()};
	struct kube_client *c = kube_client_new_transport(transport, &s);
	struct kube_events *ev = kube_events_start(c, KUBE_EVENTS_OMIT_DEFAULT);
	struct scan_events *se = scan_events_new(ev);
	json_t *doc = json_loads(POLICY, 0, NULL);
	struct engine_policy *p = engine_policy_compile(doc, NULL);
	struct engine_rule_result rr = {.rule = (char *)"check-team",
					.status = ENGINE_FAIL,
					.message =
					    (char *)"validation error: label team is required"};
	struct engine_response resp = {.policy = p, .rules = &rr, .nrules = 1};
	json_t *obj = pod("1");
	const json_t *e;

	(void)state;
	pthread_mutex_init(&s.mu, NULL);
	assert_non_null(p);
	assert_null(scan_events_new(NULL));
	/* a failure: PolicyViolation on the Pod and on the policy */
	scan_events_response(se, obj, &resp);
	assert_int_equal(wait_written(ev, 2), 2);
	pthread_mutex_lock(&s.mu);
	e = find_event(s.posted, "Pod", "kyverno-scan");
	assert_non_null(e);
	assert_string_equal(str(e, "reason"), "PolicyViolation");
	assert_string_equal(str(e, "type"), "Warning");
	assert_string_equal(str(e, "message"), "policy require-labels/check-team fail: validation "
					       "error: label team is required");
	assert_string_equal(str(json_object_get(e, "metadata"), "namespace"), "apps");
	assert_string_equal(str(json_object_get(e, "involvedObject"), "uid"), "pod-uid");
	e = find_event(s.posted, "ClusterPolicy", "kyverno-scan");
	assert_non_null(e);
	assert_string_equal(str(e, "message"), "Pod apps/web: [check-team] fail");
	assert_string_equal(str(e, "action"), "Resource Passed");
	assert_string_equal(str(json_object_get(e, "metadata"), "namespace"), "default");
	assert_string_equal(str(json_object_get(e, "involvedObject"), "apiVersion"),
			    "kyverno.io/v1");
	pthread_mutex_unlock(&s.mu);

	/* the same result again: nothing; the object changed: again */
	scan_events_response(se, obj, &resp);
	json_decref(obj);
	obj = pod("2");
	scan_events_response(se, obj, &resp);
	assert_int_equal(wait_written(ev, 4), 4);
	/* it passes now: PolicyApplied, omitted by default */
	rr.status = ENGINE_PASS;
	json_decref(obj);
	obj = pod("3");
	scan_events_response(se, obj, &resp);
	/* a forgotten memo writes the failure once more */
	rr.status = ENGINE_FAIL;
	scan_events_reset(se);
	scan_events_response(se, obj, &resp);
	assert_int_equal(wait_written(ev, 6), 6);
	scan_events_free(se);
	kube_events_stop(ev);
	pthread_mutex_lock(&s.mu);
	assert_int_equal(json_array_size(s.posted), 6);
	pthread_mutex_unlock(&s.mu);
	json_decref(obj);
	engine_policy_unref(p);
	json_decref(doc);
	kube_client_free(c);
	json_decref(s.posted);
	pthread_mutex_destroy(&s.mu);
}

static void test_exception_events(void **state)
{
	struct sink s = {.posted = json_array()};
	struct kube_client *c = kube_client_new_transport(transport, &s);
	struct kube_events *ev = kube_events_start(c, 0);
	struct kube_event_object pol = {.api_version = "kyverno.io/v1",
					.kind = "ClusterPolicy",
					.name = "disallow-latest"},
				 res = {.api_version = "v1",
					.kind = "Pod",
					.namespace = "apps",
					.name = "web"};
	const json_t *e;

	(void)state;
	pthread_mutex_init(&s.mu, NULL);
	view_events_exception(ev, VIEW_EVENTS_ADMISSION, &pol, &res, "tag",
			      "rule is skipped due to policy exceptionsdev/allow-a, allow-b");
	assert_int_equal(wait_written(ev, 3), 3);
	kube_events_stop(ev);
	e = find_event(s.posted, "PolicyException", "kyverno-admission");
	assert_non_null(e);
	assert_string_equal(str(e, "reason"), "PolicySkipped");
	assert_string_equal(str(e, "type"), "Normal");
	assert_string_equal(str(json_object_get(e, "involvedObject"), "apiVersion"),
			    "kyverno.io/v2");
	assert_string_equal(str(json_object_get(e, "metadata"), "namespace"), "dev");
	assert_string_equal(str(e, "message"), "resource Pod/apps/web was skipped from policy rule "
					       "/disallow-latest/tag pursuant to policy exception "
					       "dev/allow-a");
	e = find_event(s.posted, "ClusterPolicy", "kyverno-admission");
	assert_non_null(e);
	assert_string_equal(str(e, "message"), "resource Pod/apps/web was skipped from policy rule "
					       "/disallow-latest/tag pursuant to policy exceptions "
					       "dev/allow-a, allow-b");
	kube_client_free(c);
	json_decref(s.posted);
	pthread_mutex_destroy(&s.mu);
}

static void count_one(void *ud, const char *ns, const char *name)
{
	struct gv_buf *b = ud;

	gv_buf_addf(b, "[%s|%s]", ns, name);
}

static void test_exception_names(void **state)
{
	struct gv_buf b = {0};

	(void)state;
	assert_int_equal(view_events_exceptions_each("rule is skipped due to policy exception ns/x",
						     count_one, &b),
			 1);
	assert_string_equal(gv_buf_str(&b), "[ns|x]");
	b.len = 0;
	assert_int_equal(view_events_exceptions_each(
			     "rule is skipped due to policy exceptionsa/x,b/y, z", count_one, &b),
			 3);
	assert_string_equal(gv_buf_str(&b), "[a|x][b|y][|z]");
	assert_int_equal(view_events_exceptions_each("validation error: nope", count_one, &b), 0);
	assert_int_equal(view_events_exceptions_each(NULL, count_one, &b), 0);
	gv_buf_release(&b);
}

/* ---- metrics ---- */

static struct engine_policy *compile(const char *name, const char *action, int generation)
{
	json_t *doc = json_loads(POLICY, 0, NULL);
	struct engine_policy *p;

	json_object_set_new(json_object_get(doc, "metadata"), "name", json_string(name));
	json_object_set_new(json_object_get(doc, "spec"), "validationFailureAction",
			    json_string(action));
	json_object_set_new(json_object_get(doc, "metadata"), "generation",
			    json_integer(generation));
	p = engine_policy_compile(doc, NULL);
	json_decref(doc);
	assert_non_null(p);
	return p;
}

static char *render(struct metrics_registry *r)
{
	struct gv_buf b = {0};

	metrics_render(r, &b);
	return gv_buf_detach(&b);
}

static void test_policy_changes(void **state)
{
	struct metrics_registry *r = metrics_registry_new();
	struct metrics_family *f = view_policy_changes_new(r);
	struct engine_policy *a = compile("a", "Audit", 1), *b = compile("b", "Audit", 1);
	struct engine_policy *a2 = compile("a", "Enforce", 2), *a3 = compile("a", "Enforce", 3);
	struct engine_policyset *s1 =
	    engine_policyset_new((struct engine_policy *[]){a, b}, 2, NULL, 0);
	struct engine_policyset *s2 =
	    engine_policyset_new((struct engine_policy *[]){a2}, 1, NULL, 0);
	struct engine_policyset *s3 =
	    engine_policyset_new((struct engine_policy *[]){a3}, 1, NULL, 0);
	char *text;

	(void)state;
	assert_null(view_policy_changes_new(NULL));
	view_policy_changes_count(f, NULL, s1);
	view_policy_changes_count(f, s1, s2); /* a: Audit -> Enforce; b gone */
	view_policy_changes_count(f, s2, s3); /* same spec, new generation: no change */
	view_policy_changes_count(f, s3, NULL);
	text = render(r);
	assert_non_null(strstr(text,
			       "kyverno_policy_changes_total{policy_validation_mode=\"audit\","
			       "policy_type=\"cluster\",policy_background_mode=\"true\","
			       "policy_namespace=\"-\",policy_name=\"a\","
			       "policy_change_type=\"created\"} 1\n"));
	assert_non_null(strstr(text, "policy_name=\"b\",policy_change_type=\"deleted\"} 1\n"));
	assert_non_null(strstr(text,
			       "kyverno_policy_changes_total{policy_validation_mode=\"audit\","
			       "policy_type=\"cluster\",policy_background_mode=\"true\","
			       "policy_namespace=\"-\",policy_name=\"a\","
			       "policy_change_type=\"updated\"} 1\n"));
	assert_non_null(strstr(text,
			       "kyverno_policy_changes_total{policy_validation_mode=\"enforce\","
			       "policy_type=\"cluster\",policy_background_mode=\"true\","
			       "policy_namespace=\"-\",policy_name=\"a\","
			       "policy_change_type=\"updated\"} 1\n"));
	assert_non_null(strstr(text, "policy_validation_mode=\"enforce\",policy_type=\"cluster\","
				     "policy_background_mode=\"true\",policy_namespace=\"-\","
				     "policy_name=\"a\",policy_change_type=\"deleted\"} 1\n"));
	free(text);
	engine_policyset_unref(s1);
	engine_policyset_unref(s2);
	engine_policyset_unref(s3);
	engine_policy_unref(a);
	engine_policy_unref(b);
	engine_policy_unref(a2);
	engine_policy_unref(a3);
	metrics_registry_free(r);
}

static void test_execution_duration(void **state)
{
	struct metrics_registry *r = metrics_registry_new();
	struct metrics_family *f = view_policy_duration_new(r);
	struct view_result_labels l = {.policy_validation_mode = "audit",
				       .policy_type = "cluster",
				       .policy_background_mode = "true",
				       .policy_namespace = "-",
				       .policy_name = "p",
				       .resource_kind = "Pod",
				       .resource_namespace = "apps",
				       .resource_request_operation = "create",
				       .rule_name = "r",
				       .rule_result = "fail",
				       .rule_execution_cause = "admission_request"};
	char *text;

	(void)state;
	assert_ptr_equal(view_policy_duration_new(r), f);
	view_result_observe(f, &l, 0.003);
	view_result_observe(f, &l, 0.2);
	text = render(r);
	assert_non_null(
	    strstr(text, "# TYPE kyverno_policy_execution_duration_seconds histogram\n"));
	assert_non_null(strstr(text,
			       "rule_type=\"validate\",rule_execution_cause=\"admission_request\","
			       "dry_run=\"false\",le=\"0.005\"} 1\n"));
	assert_non_null(strstr(text, "dry_run=\"false\",le=\"0.25\"} 2\n"));
	assert_non_null(strstr(text, "dry_run=\"false\",le=\"30\"} 2\n"));
	assert_non_null(strstr(text, "dry_run=\"false\",le=\"+Inf\"} 2\n"));
	free(text);
	metrics_registry_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scan_events_once_per_change),
	    cmocka_unit_test(test_exception_events),
	    cmocka_unit_test(test_exception_names),
	    cmocka_unit_test(test_policy_changes),
	    cmocka_unit_test(test_execution_duration),
	};

	json_object_seed(0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
