/*
 * Unit tests for background/webhookconfig.c on policies.kyverno.io
 * ValidatingPolicy and NamespacedValidatingPolicy: rules from
 * matchConstraints.resourceRules, autogen kinds, failure policy, timeout,
 * evaluation.admission, JSON mode, scope of a namespaced policy, and a set
 * mixed with a ClusterPolicy.
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

static json_t *fake_resolve(void *ud, const char *kind)
{
	(void)ud;
	if (!strcmp(kind, "ConfigMap"))
		return json_pack("[{s:s, s:s, s:[s], s:s}]", "apiGroup", "", "apiVersion", "v1",
				 "resources", "configmaps", "scope", "Namespaced");
	return NULL;
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

static json_t *build(const char *docs)
{
	json_t *d = load(docs);
	json_t *cc =
	    load("{\"url\":\"https://127.0.0.1:9443/validate-policy\",\"caBundle\":\"Q0E=\"}");
	json_t *out = webhookconfig_build(d, NULL, "gavel", cc, 0, &R);

	json_decref(d);
	json_decref(cc);
	return out;
}

/* The rules of the webhook named name, compact with sorted keys (caller frees), or NULL. */
static char *rules_of(const json_t *hooks, const char *name)
{
	size_t i;
	const json_t *wh;

	json_array_foreach(hooks, i, wh)
	{
		if (!strcmp(json_string_value(json_object_get(wh, "name")), name))
			return json_dumps(json_object_get(wh, "rules"),
					  JSON_COMPACT | JSON_SORT_KEYS);
	}
	return NULL;
}

static const json_t *hook(const json_t *hooks, const char *name)
{
	size_t i;
	const json_t *wh;

	json_array_foreach(hooks, i, wh)
	{
		if (!strcmp(json_string_value(json_object_get(wh, "name")), name))
			return wh;
	}
	return NULL;
}

#define VPOL(kind, ns, spec)                                                                       \
	"{\"apiVersion\":\"policies.kyverno.io/v1beta1\",\"kind\":\"" kind                         \
	"\",\"metadata\":{\"name\":\"p\"" ns "},\"spec\":{" spec                                   \
	",\"validations\":[{\"expression\":\"true\"}]}}"

#define POD_RULE(ops)                                                                              \
	"\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"]," \
	"\"resources\":[\"pods\"],\"operations\":" ops "}]}"

#define OPS_CU "[\"CREATE\",\"UPDATE\"]"
#define CU     "\"operations\":[\"CREATE\",\"UPDATE\"]"

static void test_pod_policy_autogen(void **state)
{
	json_t *out =
	    build("[" VPOL("ValidatingPolicy", "", POD_RULE("[\"CREATE\",\"UPDATE\"]")) "]");
	char *s = rules_of(out, "validate.gavel.svc-fail");
	const json_t *wh = hook(out, "validate.gavel.svc-fail");

	(void)state;
	assert_int_equal(json_array_size(out), 1);
	assert_non_null(s);
	assert_string_equal(
	    s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"]," CU ",\"resources\":[\"pods\"],"
	       "\"scope\":\"*\"},"
	       "{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"]," CU
	       ",\"resources\":[\"daemonsets\",\"deployments\",\"replicasets\",\"statefulsets\"],"
	       "\"scope\":\"*\"},"
	       "{\"apiGroups\":[\"batch\"],\"apiVersions\":[\"v1\"]," CU
	       ",\"resources\":[\"cronjobs\",\"jobs\"],\"scope\":\"*\"}]");
	assert_string_equal(json_string_value(json_object_get(wh, "failurePolicy")), "Fail");
	assert_int_equal(json_integer_value(json_object_get(wh, "timeoutSeconds")), 10);
	assert_null(json_object_get(wh, "matchConditions"));
	free(s);
	json_decref(out);
}

static void test_autogen_controllers(void **state)
{
	json_t *out = build("[" VPOL("ValidatingPolicy", "",
				     POD_RULE(OPS_CU) ",\"autogen\":{\"podControllers\":{"
						      "\"controllers\":[\"deployments\"]}}") "]");
	char *s = rules_of(out, "validate.gavel.svc-fail");

	(void)state;
	assert_string_equal(s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"]," CU
			       ",\"resources\":[\"pods\"],"
			       "\"scope\":\"*\"},"
			       "{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"]," CU
			       ",\"resources\":[\"deployments\"],\"scope\":\"*\"}]");
	free(s);
	json_decref(out);

	/* controllers [] disables autogen; so does a second resource rule */
	out = build("[" VPOL("ValidatingPolicy", "",
			     POD_RULE(OPS_CU) ",\"autogen\":{\"podControllers\":{"
					      "\"controllers\":[]}}") "]");
	s = rules_of(out, "validate.gavel.svc-fail");
	assert_string_equal(s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"]," CU
			       ",\"resources\":[\"pods\"],\"scope\":\"*\"}]");
	free(s);
	json_decref(out);
	out = build("[" VPOL("ValidatingPolicy", "",
			     "\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],"
			     "\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"],\"operations\":"
			     "[\"CREATE\"]},{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
			     "\"resources\":[\"pods\"],\"operations\":[\"UPDATE\"]}]}") "]");
	s = rules_of(out, "validate.gavel.svc-fail");
	assert_string_equal(
	    s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],"
	       "\"resources\":[\"pods\"],\"scope\":\"*\"},{\"apiGroups\":[\"\"],\"apiVersions\":["
	       "\"v1\"],\"operations\":[\"UPDATE\"],\"resources\":[\"pods\"],\"scope\":\"*\"}]");
	free(s);
	json_decref(out);
}

static void test_ignore_timeout_wildcards(void **state)
{
	json_t *out = build("[" VPOL(
	    "ValidatingPolicy", "",
	    "\"failurePolicy\":\"Ignore\",\"webhookConfiguration\":{\"timeoutSeconds\":"
	    "17},\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"*\"],"
	    "\"apiVersions\":[\"*\"],\"resources\":[\"*/scale\",\"deployments/*\"],"
	    "\"operations\":[\"*\"],\"scope\":\"Namespaced\"},{\"apiGroups\":[\"\",\"apps\"],"
	    "\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"],\"operations\":["
	    "\"DELETE\"]}]}") "]");
	const json_t *wh = hook(out, "validate.gavel.svc-ignore");
	char *s = rules_of(out, "validate.gavel.svc-ignore");

	(void)state;
	assert_int_equal(json_array_size(out), 1);
	assert_non_null(wh);
	assert_string_equal(json_string_value(json_object_get(wh, "failurePolicy")), "Ignore");
	assert_int_equal(json_integer_value(json_object_get(wh, "timeoutSeconds")), 17);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(wh, "clientConfig"), "url")),
	    "https://127.0.0.1:9443/validate/ignore");
	/* sorted by apiGroup: "", "*", "apps" */
	assert_string_equal(
	    s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":[\"DELETE\"],"
	       "\"resources\":[\"configmaps\"],\"scope\":\"*\"},"
	       "{\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],\"operations\":[\"CONNECT\","
	       "\"CREATE\",\"DELETE\",\"UPDATE\"],\"resources\":[\"*/scale\",\"deployments/*\"],"
	       "\"scope\":\"Namespaced\"},"
	       "{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],\"operations\":[\"DELETE\"],"
	       "\"resources\":[\"configmaps\"],\"scope\":\"*\"}]");
	free(s);
	json_decref(out);
}

static void test_not_registered(void **state)
{
	json_t *out = build(
	    "[" VPOL("ValidatingPolicy", "",
		     POD_RULE(OPS_CU) ",\"evaluation\":{\"admission\":{\"enabled\":false}"
				      "}") "," VPOL("ValidatingPolicy", "",
						    POD_RULE(OPS_CU) ",\"evaluation\":{"
								     "\"mode\":\"JSON\"}") "]");

	(void)state;
	assert_int_equal(json_array_size(out), 0);
	json_decref(out);
	/* background off does not take it out of admission */
	out = build("[" VPOL("ValidatingPolicy", "",
			     POD_RULE(OPS_CU) ",\"evaluation\":{\"admission\":{\"enabled\":true},"
					      "\"background\":{\"enabled\":false}}") "]");
	assert_int_equal(json_array_size(out), 1);
	json_decref(out);
}

static void test_namespaced(void **state)
{
	json_t *out = build(
	    "[" VPOL("NamespacedValidatingPolicy", ",\"namespace\":\"team\"",
		     "\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],"
		     "\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"],\"operations\":["
		     "\"CREATE\"]},{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":["
		     "\"namespaces\"],\"operations\":[\"CREATE\"],\"scope\":\"Cluster\"}]}") "]");
	char *s = rules_of(out, "validate.gavel.svc-fail");

	(void)state;
	assert_string_equal(s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":["
			       "\"CREATE\"],\"resources\":[\"configmaps\"],\"scope\":"
			       "\"Namespaced\"}]");
	free(s);
	json_decref(out);
}

static void test_mixed_with_clusterpolicy(void **state)
{
	json_t *out = build(
	    "[{\"kind\":\"ClusterPolicy\",\"metadata\":{\"name\":\"cm\"},\"spec\":{\"rules\":[{"
	    "\"name\":\"r\",\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"ConfigMap\"],"
	    "\"operations\":[\"CREATE\"]}}]},\"validate\":{\"message\":\"m\",\"pattern\":{"
	    "\"metadata\":{\"name\":\"?*\"}}}}]}}," VPOL(
		"ValidatingPolicy", "",
		"\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],\"apiVersions\":["
		"\"v1\"],\"resources\":[\"configmaps\",\"secrets\"],\"operations\":[\"CREATE\"]}]"
		"}") "]");
	char *s = rules_of(out, "validate.gavel.svc-fail");

	(void)state;
	/* the "*"-scoped rule of the ValidatingPolicy absorbs the ClusterPolicy's */
	assert_string_equal(s, "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":["
			       "\"CREATE\"],\"resources\":[\"configmaps\",\"secrets\"],\"scope\":"
			       "\"*\"}]");
	free(s);
	json_decref(out);
}

static void test_resolve_crd(void **state)
{
	json_t *crds =
	    load("[{\"spec\":{\"group\":\"e2e.gavel.dev\",\"scope\":\"Cluster\",\"names\":{"
		 "\"plural\":\"widgets\",\"kind\":\"Widget\"},\"versions\":[{\"name\":\"v1beta1\","
		 "\"served\":true},{\"name\":\"v1\",\"served\":true,\"storage\":true},{\"name\":"
		 "\"v2\",\"served\":false}]}}]");
	json_t *out;
	char *s;

	(void)state;
	out = webhookconfig_resolve_crd(crds, "Widget");
	s = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "[{\"apiGroup\":\"e2e.gavel.dev\",\"apiVersion\":\"v1\","
			       "\"resources\":[\"widgets\"],\"scope\":\"Cluster\"}]");
	free(s);
	json_decref(out);
	out = webhookconfig_resolve_crd(crds, "e2e.gavel.dev/v1beta1/Widget");
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(out, 0), "apiVersion")), "v1beta1");
	json_decref(out);
	/* not served, another group, a subresource, an unknown kind */
	assert_null(webhookconfig_resolve_crd(crds, "e2e.gavel.dev/v2/Widget"));
	assert_null(webhookconfig_resolve_crd(crds, "other.dev/v1/Widget"));
	assert_null(webhookconfig_resolve_crd(crds, "Widget/status"));
	assert_null(webhookconfig_resolve_crd(crds, "Gadget"));
	json_decref(crds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pod_policy_autogen),
	    cmocka_unit_test(test_autogen_controllers),
	    cmocka_unit_test(test_ignore_timeout_wildcards),
	    cmocka_unit_test(test_not_registered),
	    cmocka_unit_test(test_namespaced),
	    cmocka_unit_test(test_mixed_with_clusterpolicy),
	    cmocka_unit_test(test_resolve_crd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
