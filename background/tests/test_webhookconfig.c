/*
 * Unit tests for background/webhookconfig.c: the resource webhooks built
 * from policy documents (Fail/Ignore split, fine-grained webhooks,
 * operations, grouping, timeouts, selectors), with a fake discovery.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "background/webhookconfig.h"

#include "common/banned.h"

/* A few kinds as a 1.2x API server serves them. */
static json_t *fake_resolve(void *ud, const char *kind)
{
	(void)ud;
	if (!strcmp(kind, "*") || !strncmp(kind, "*/", 2))
		return json_pack("[{s:s, s:s, s:[s], s:s}]", "apiGroup", "*", "apiVersion", "*",
				 "resources", strcmp(kind, "*") ? kind : "*", "scope", "*");
	if (!strcmp(kind, "Pod"))
		return json_pack("[{s:s, s:s, s:[s, s], s:s}]", "apiGroup", "", "apiVersion", "v1",
				 "resources", "pods", "pods/ephemeralcontainers", "scope",
				 "Namespaced");
	if (!strcmp(kind, "ConfigMap") || !strcmp(kind, "Secret"))
		return json_pack("[{s:s, s:s, s:[s], s:s}]", "apiGroup", "", "apiVersion", "v1",
				 "resources", strcmp(kind, "Secret") ? "configmaps" : "secrets",
				 "scope", "Namespaced");
	if (!strcmp(kind, "Namespace"))
		return json_pack("[{s:s, s:s, s:[s], s:s}]", "apiGroup", "", "apiVersion", "v1",
				 "resources", "namespaces", "scope", "Cluster");
	return NULL; /* autogen kinds and the rest: not served */
}

static const struct webhookconfig_resolver R = {fake_resolve, NULL};

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);

	if (!v) {
		fprintf(stderr, "bad test JSON: %s: %s\n", e.text, text);
		fail();
	}
	return v;
}

static json_t *build(const char *docs, const char *data)
{
	json_t *d = load(docs), *cm = data ? load(data) : NULL;
	json_t *cc =
	    load("{\"url\":\"https://127.0.0.1:9443/validate-policy\",\"caBundle\":\"Q0E=\"}");
	json_t *out = webhookconfig_build(d, cm, "gavel", cc, 0, &R);

	json_decref(d);
	json_decref(cm);
	json_decref(cc);
	return out;
}

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
}

#define POLICY(name, extra, kinds, matchextra, rest)                                               \
	"{\"kind\":\"ClusterPolicy\",\"metadata\":{\"name\":\"" name "\"},\"spec\":{" extra        \
	"\"rules\":[{\"name\":\"r\",\"match\":{\"any\":[{\"resources\":{\"kinds\":" kinds          \
	    matchextra "}}]}," rest                                                                \
	"\"validate\":{\"message\":\"m\",\"pattern\":{\"metadata\":{\"name\":\"?*\"}}}}]}}"

static void test_no_policy(void **state)
{
	json_t *out = build("[]", NULL);

	(void)state;
	assert_int_equal(json_array_size(out), 0);
	json_decref(out);
}

static void test_fail_and_ignore(void **state)
{
	json_t *out = build("[" POLICY("a", "", "[\"ConfigMap\"]", "", "") "," POLICY(
				"b", "\"failurePolicy\":\"Ignore\",\"webhookTimeoutSeconds\":40,",
				"[\"Secret\",\"Namespace\"]", "", "") "]",
			    NULL);
	const json_t *f = json_array_get(out, 0), *ig = json_array_get(out, 1);
	char *s;

	(void)state;
	assert_int_equal(json_array_size(out), 2);
	assert_string_equal(json_string_value(json_object_get(f, "name")),
			    "validate.gavel.svc-fail");
	assert_string_equal(json_string_value(json_object_get(f, "failurePolicy")), "Fail");
	assert_int_equal(json_integer_value(json_object_get(f, "timeoutSeconds")), 10);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(f, "clientConfig"), "url")),
	    "https://127.0.0.1:9443/validate/fail");
	s = dump(json_object_get(f, "rules"));
	assert_string_equal(s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":["
			       "\"CONNECT\",\"CREATE\",\"DELETE\",\"UPDATE\"],\"resources\":["
			       "\"configmaps\"],\"scope\":\"Namespaced\"}]");
	free(s);
	s = dump(json_object_get(f, "namespaceSelector"));
	assert_string_equal(s, "{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\","
			       "\"operator\":\"NotIn\",\"values\":[\"gavel\"]}]}");
	free(s);
	assert_string_equal(json_string_value(json_object_get(ig, "name")),
			    "validate.gavel.svc-ignore");
	assert_string_equal(json_string_value(json_object_get(ig, "failurePolicy")), "Ignore");
	assert_int_equal(json_integer_value(json_object_get(ig, "timeoutSeconds")), 30);
	/* Cluster-scoped and namespaced resources are separate rules. */
	assert_int_equal(json_array_size(json_object_get(ig, "rules")), 2);
	json_decref(out);
}

static void test_operations(void **state)
{
	json_t *out =
	    build("[" POLICY("a", "", "[\"ConfigMap\"]", "",
			     "\"exclude\":{\"any\":[{\"resources\":{\"operations\":[\"DELETE\"]}}]}"
			     ",") "," POLICY("b", "", "[\"*/scale\"]",
					     ",\"operations\":[\"CREATE\"]", "") "]",
		  NULL);
	char *s = dump(json_object_get(json_array_get(out, 0), "rules"));

	(void)state;
	assert_string_equal(
	    s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":[\"CONNECT\","
	       "\"CREATE\",\"UPDATE\"],\"resources\":[\"configmaps\"],\"scope\":\"Namespaced\"},"
	       "{\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],\"operations\":[\"CREATE\"],"
	       "\"resources\":[\"*/scale\"],\"scope\":\"*\"}]");
	free(s);
	json_decref(out);
}

static void test_finegrained_and_configmap(void **state)
{
	json_t *out = build(
	    "[" POLICY(
		"mc",
		"\"failurePolicy\":\"Ignore\",\"webhookConfiguration\":{\"matchConditions\":[{"
		"\"name\":\"n\",\"expression\":\"true\"}]},",
		"[\"Pod\"]", "",
		"") "," POLICY("off", "\"admission\":false,", "[\"Secret\"]", "", "") "]",
	    "{\"webhooks\":\"[{\\\"objectSelector\\\":{\\\"matchLabels\\\":{\\\"a\\\":\\\"b\\\"}}}]"
	    "\","
	    "\"matchConditions\":\"[{\\\"name\\\":\\\"g\\\",\\\"expression\\\":\\\"false\\\"}]\"}");
	const json_t *w = json_array_get(out, 0);
	char *s;

	(void)state;
	assert_int_equal(json_array_size(out), 1); /* admission: false gives nothing */
	assert_string_equal(json_string_value(json_object_get(w, "name")),
			    "validate.gavel.svc-ignore-finegrained-mc");
	s = dump(json_object_get(w, "matchConditions"));
	assert_string_equal(s, "[{\"expression\":\"false\",\"name\":\"g\"},{\"expression\":"
			       "\"true\",\"name\":\"n\"}]");
	free(s);
	s = dump(json_object_get(w, "objectSelector"));
	assert_string_equal(s, "{\"matchLabels\":{\"a\":\"b\"}}");
	free(s);
	s = dump(json_object_get(json_array_get(json_object_get(w, "rules"), 0), "resources"));
	assert_string_equal(s, "[\"pods\",\"pods/ephemeralcontainers\"]");
	free(s);
	assert_true(webhookconfig_owned("validate.gavel.svc-ignore-finegrained-mc"));
	assert_false(webhookconfig_owned("validate-policy.gavel.svc"));
	assert_false(webhookconfig_owned("validate.gavel.svc"));
	json_decref(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_policy),
	    cmocka_unit_test(test_fail_and_ignore),
	    cmocka_unit_test(test_operations),
	    cmocka_unit_test(test_finegrained_and_configmap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
