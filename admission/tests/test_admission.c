/*
 * Unit tests for admission/: the pure handler (AdmissionReview bytes in,
 * bytes out) with real policies, the denial message and its go-yaml-style
 * YAML (kyverno-semantics.md section 8.2, E26), warnings and their limits
 * (k8s-wire.md 1.6), v1beta1, DELETE on oldObject, dryRun, resourceFilters,
 * gavel's own namespace, malformed bodies (400 reasons), /validate-policy,
 * the audit results emitted, the metrics registry and the request JSON
 * parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "admission/admission_int.h"
#include "background/rbac.h"
#include "background/snapshot.h"
#include "common/yaml.h"

#include "common/banned.h"

/* ---- fixtures ---- */

/* E26: p1 Enforce fails (a), p2 failurePolicy Fail errors (b) and passes (c), p3 Audit+emitWarning
 * fails (d). */
static const char E26_POLICIES[] =
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: p1}\n"
    "spec:\n"
    "  validationFailureAction: Enforce\n"
    "  rules:\n"
    "  - name: a\n"
    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
    "    validate:\n"
    "      message: \"label team is required\"\n"
    "      pattern: {metadata: {labels: {team: \"?*\"}}}\n"
    "---\n"
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: p2}\n"
    "spec:\n"
    "  validationFailureAction: Enforce\n"
    "  failurePolicy: FAILURE_POLICY\n"
    "  rules:\n"
    "  - name: b\n"
    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
    "    context:\n"
    "    - name: x\n"
    "      variable: {jmesPath: \"request.object.metadata.nothing.here\"}\n"
    "    validate:\n"
    "      message: never\n"
    "      deny: {conditions: {any: [{key: \"{{ x }}\", operator: Equals, value: \"1\"}]}}\n"
    "  - name: c\n"
    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
    "    validate:\n"
    "      message: name needed\n"
    "      pattern: {metadata: {name: \"?*\"}}\n"
    "---\n"
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: p3}\n"
    "spec:\n"
    "  emitWarning: true\n"
    "  rules:\n"
    "  - name: d\n"
    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
    "    validate:\n"
    "      failureAction: Audit\n"
    "      message: \"images must not use latest: {{ request.object.metadata.name }}\"\n"
    "      pattern: {spec: {containers: [{image: \"!*:latest\"}]}}\n";

/* Protects ConfigMaps labelled protected=true from deletion (judged on oldObject). */
static const char DELETE_POLICY[] =
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: protect}\n"
    "spec:\n"
    "  background: false\n"
    "  rules:\n"
    "  - name: no-delete\n"
    "    match: {any: [{resources: {kinds: [ConfigMap], operations: [DELETE]}}]}\n"
    "    validate:\n"
    "      failureAction: Enforce\n"
    "      message: \"{{ request.object.metadata.name }} is protected\"\n"
    "      deny:\n"
    "        conditions:\n"
    "          any:\n"
    "          - {key: \"{{ request.object.metadata.labels.protected || '' }}\", operator: "
    "Equals, value: \"true\"}\n";

/* Only p3-like audit results: what gets reported. */
static const char AUDIT_POLICY[] =
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: audit-team, annotations: {policies.kyverno.io/severity: medium}}\n"
    "spec:\n"
    "  rules:\n"
    "  - name: team\n"
    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
    "    validate:\n"
    "      failureAction: Audit\n"
    "      message: team label\n"
    "      pattern: {metadata: {labels: {team: \"?*\"}}}\n";

static const char POD_X[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\","
			    "\"namespace\":\"default\",\"uid\":\"pod-uid-1\"},\"spec\":{"
			    "\"containers\":[{\"name\":\"c\",\"image\":\"nginx:latest\"}]}}";

static const char POD_GOOD[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"good\",\"namespace\":"
    "\"default\",\"uid\":\"pod-uid-2\",\"labels\":{\"team\":\"a\"}},\"spec\":{\"containers\":[{"
    "\"name\":\"c\",\"image\":\"nginx:1.25\"}]}}";

/* What the handler emits (the report writer's queue in gavel serve). */
struct collector {
	struct view_audit_item *items[8];
	size_t n;
};

static void collect(void *ud, struct view_audit_item *it)
{
	struct collector *c = ud;

	if (c->n < GV_ARRAY_LEN(c->items))
		c->items[c->n++] = it;
	else
		view_audit_item_free(it);
}

struct fixture {
	struct engine_policyset *set;
	struct view_state *state;
	struct admission_fixed_source src;
	struct metrics_registry *metrics;
	struct collector queue;
	struct admission_handler *h;
};

static struct engine_policyset *compile_set(const char *yaml)
{
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	struct engine_policy *pv[16];
	struct engine_policyset *set;
	size_t n = 0;

	if (gv_yaml_load(yaml, strlen(yaml), "test", &docs, &err))
		fail_msg("policies: %s", err.msg);
	for (size_t i = 0; i < docs.n; i++) {
		struct gv_err e = {0};
		pv[n] = engine_policy_compile(docs.v[i].value, &e);
		if (!pv[n])
			fail_msg("policy %zu: %s: %s", i, e.pointer, e.msg);
		n++;
	}
	set = engine_policyset_new(pv, n, NULL, 0);
	for (size_t i = 0; i < n; i++)
		engine_policy_unref(pv[i]);
	gv_docs_release(&docs);
	return set;
}

/* config: JSON of the ConfigMap data or NULL; namespaces: JSON {ns: labels} or NULL. */
static void fixture_init(struct fixture *f, const char *yaml, const char *config,
			 const char *namespaces)
{
	json_t *cfg_data = config ? json_loads(config, 0, NULL) : NULL;
	json_t *ns = namespaces ? json_loads(namespaces, 0, NULL) : NULL;
	struct view_config *cfg = view_config_new(cfg_data);
	struct admission_handler_config hc = {0};

	memset(f, 0, sizeof(*f));
	f->set = compile_set(yaml);
	f->state = view_state_new(f->set, ns, cfg);
	admission_fixed_source_init(&f->src, f->state);
	f->metrics = metrics_registry_new();
	hc.source = &f->src.source;
	hc.namespace = "gavel";
	hc.emit = collect;
	hc.emit_ud = &f->queue;
	hc.metrics = f->metrics;
	f->h = admission_handler_new(&hc);
	view_config_unref(cfg);
	json_decref(cfg_data);
	json_decref(ns);
}

static void fixture_release(struct fixture *f)
{
	admission_handler_free(f->h);
	for (size_t i = 0; i < f->queue.n; i++)
		view_audit_item_free(f->queue.items[i]);
	metrics_registry_free(f->metrics);
	admission_fixed_source_release(&f->src);
	view_state_unref(f->state);
	engine_policyset_unref(f->set);
}

static char *with_failure_policy(const char *fp)
{
	const char *at = strstr(E26_POLICIES, "FAILURE_POLICY");

	return gv_xasprintf("%.*s%s%s", (int)(at - E26_POLICIES), E26_POLICIES, fp,
			    at + strlen("FAILURE_POLICY"));
}

/* An AdmissionReview; object/old are JSON text or NULL (null). */
static char *review(const char *api, const char *op, const char *kind, const char *ns,
		    const char *name, const char *object, const char *old, bool dry_run)
{
	return gv_xasprintf(
	    "{\"apiVersion\":\"%s\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"req-1\","
	    "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"%s\"},\"resource\":{\"group\":"
	    "\"\",\"version\":\"v1\",\"resource\":\"x\"},\"name\":\"%s\",\"namespace\":\"%s\","
	    "\"operation\":\"%s\",\"userInfo\":{\"username\":\"alice\",\"groups\":[\"dev\"]},"
	    "\"object\":%s,\"oldObject\":%s,\"dryRun\":%s}}",
	    api, kind, name, ns, op, object ? object : "null", old ? old : "null",
	    dry_run ? "true" : "false");
}

static json_t *handle(struct fixture *f, const char *body, int want_http)
{
	struct admission_reply r;
	json_t *j;

	admission_handle(f->h, body, strlen(body), &r);
	assert_int_equal(r.http, want_http);
	if (want_http != 200) {
		j = json_string(r.body);
		admission_reply_release(&r);
		return j;
	}
	assert_string_equal(r.content_type, "application/json");
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(j);
	admission_reply_release(&r);
	return j;
}

static const char *resp_str(const json_t *j, const char *a, const char *b)
{
	const json_t *v = json_object_get(json_object_get(j, "response"), a);

	if (b)
		v = json_object_get(v, b);
	return json_string_value(v);
}

static bool allowed(const json_t *j)
{
	return json_is_true(json_object_get(json_object_get(j, "response"), "allowed"));
}

static const json_t *warnings(const json_t *j)
{
	return json_object_get(json_object_get(j, "response"), "warnings");
}

static size_t queue_drain_all(struct collector *c, struct view_audit_item **out, size_t max)
{
	size_t n = c->n < max ? c->n : max;

	memcpy(out, c->items, n * sizeof(*out));
	memmove(c->items, c->items + n, (c->n - n) * sizeof(*out));
	c->n -= n;
	return n;
}

/* ---- the handler ---- */

static void test_e26_denied_exact_message(void **state)
{
	struct fixture f;
	char *pols = with_failure_policy("Fail");
	char *body =
	    review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, false);
	json_t *j;

	(void)state;
	fixture_init(&f, pols, NULL, NULL);
	j = handle(&f, body, 200);
	assert_string_equal(json_string_value(json_object_get(j, "apiVersion")),
			    "admission.k8s.io/v1");
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "AdmissionReview");
	assert_string_equal(resp_str(j, "uid", NULL), "req-1");
	assert_false(allowed(j));
	assert_null(warnings(j)); /* no warnings on a denial */
	assert_int_equal(json_integer_value(json_object_get(
			     json_object_get(json_object_get(j, "response"), "status"), "code")),
			 403);
	assert_string_equal(
	    resp_str(j, "status", "message"),
	    "\n\nresource Pod/default/x was blocked due to the following policies \n\n"
	    "p1:\n"
	    "  a: 'validation error: label team is required. rule a failed at path "
	    "/metadata/labels/'\n"
	    "p2:\n"
	    "  b: 'failed to check deny conditions: failed to substitute variables in "
	    "condition key: failed to resolve x at path : failed to load context: failed to "
	    "evaluate jmespath request.object.metadata.nothing.here for variable x: Unknown "
	    "key \"nothing\" in path'\n");
	json_decref(j);
	fixture_release(&f);
	free(body);
	free(pols);
}

static void test_e26_ignore_allowed_with_warnings(void **state)
{
	struct fixture f;
	char *pols = with_failure_policy("Ignore");
	const char *no_p1 = strstr(pols, "---\n") + 4; /* drop p1 */
	char *body =
	    review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, false);
	json_t *j;

	(void)state;
	fixture_init(&f, no_p1, NULL, NULL);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	assert_null(json_object_get(json_object_get(j, "response"), "status"));
	assert_int_equal(json_array_size(warnings(j)), 2);
	assert_string_equal(json_string_value(json_array_get(warnings(j), 0)),
			    "policy p2.b: failed to check deny conditions: failed to substitute "
			    "variables in condition key: failed to resolve x at path : failed to "
			    "load context: failed to evaluate jmespath "
			    "request.object.metadata.nothing.here for variable x: Unknown key "
			    "\"nothing\" i..."); /* cut at the API server's 256 characters */
	assert_string_equal(json_string_value(json_array_get(warnings(j), 1)),
			    "policy p3.d: validation error: images must not use latest: x. rule d "
			    "failed at path /spec/containers/0/image/");
	json_decref(j);
	fixture_release(&f);
	free(body);
	free(pols);
}

/* The fake discovery of test_subresource_parent_kind: deployments of apps/v1. */
static char *fake_resource_kind(void *ud, const char *group, const char *version,
				const char *resource)
{
	(void)ud;
	if (!strcmp(group, "apps") && !strcmp(version, "v1") && !strcmp(resource, "deployments"))
		return gv_xstrdup("Deployment");
	return NULL;
}

/*
 * A subresource request (deployments/scale, its object an autoscaling/v1
 * Scale) is matched as the top-level resource's kind: "Deployment/scale"
 * (kyverno-semantics.md section 2.3); the pattern reads the Scale.
 */
static void test_subresource_parent_kind(void **state)
{
	static const char pol[] =
	    "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: s}\n"
	    "spec:\n  background: false\n  rules:\n  - name: max\n"
	    "    match: {any: [{resources: {kinds: [Deployment/scale]}}]}\n"
	    "    validate:\n      failureAction: Enforce\n      message: too many\n"
	    "      pattern: {spec: {replicas: <9}}\n";
	struct fixture f;
	struct admission_handler_config hc = {0};
	char *body = gv_xasprintf(
	    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	    "{\"uid\":\"req-1\",\"kind\":{\"group\":\"autoscaling\",\"version\":\"v1\",\"kind\":"
	    "\"Scale\"},\"resource\":{\"group\":\"apps\",\"version\":\"v1\",\"resource\":"
	    "\"deployments\"},\"subResource\":\"scale\",\"name\":\"d\",\"namespace\":\"default\","
	    "\"operation\":\"UPDATE\",\"userInfo\":{\"username\":\"alice\"},\"object\":"
	    "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":\"d\","
	    "\"namespace\":\"default\"},\"spec\":{\"replicas\":%d}},\"oldObject\":null}}",
	    9);
	json_t *j;

	(void)state;
	/* without discovery: the Scale is not a Deployment, nothing matches */
	fixture_init(&f, pol, NULL, NULL);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	/* with it: denied */
	admission_handler_free(f.h);
	hc.source = &f.src.source;
	hc.namespace = "gavel";
	hc.metrics = f.metrics;
	hc.resource_kind = fake_resource_kind;
	f.h = admission_handler_new(&hc);
	j = handle(&f, body, 200);
	assert_false(allowed(j));
	assert_non_null(strstr(resp_str(j, "status", "message"), "too many"));
	json_decref(j);
	fixture_release(&f);
	free(body);
}

static void test_allowed_and_v1beta1(void **state)
{
	struct fixture f;
	char *pols = with_failure_policy("Fail");
	char *body = review("admission.k8s.io/v1beta1", "CREATE", "Pod", "default", "good",
			    POD_GOOD, NULL, false);
	json_t *j;

	(void)state;
	fixture_init(&f, pols, NULL, NULL);
	j = handle(&f, body, 200);
	assert_string_equal(json_string_value(json_object_get(j, "apiVersion")),
			    "admission.k8s.io/v1beta1");
	assert_string_equal(resp_str(j, "uid", NULL), "req-1");
	/* p2.b errors under failurePolicy Fail: still denied, only p2 listed. */
	assert_false(allowed(j));
	assert_string_equal(resp_str(j, "status", "message"),
			    "\n\nresource Pod/default/good was blocked due to the following "
			    "policies \n\np2:\n  b: 'failed to check deny conditions: failed to "
			    "substitute variables in condition key: failed to resolve x at path : "
			    "failed to load context: failed to evaluate jmespath "
			    "request.object.metadata.nothing.here for variable x: Unknown key "
			    "\"nothing\" in path'\n");
	json_decref(j);
	fixture_release(&f);
	free(body);
	free(pols);

	fixture_init(&f, AUDIT_POLICY, NULL, NULL);
	body = review("admission.k8s.io/v1beta1", "CREATE", "Pod", "default", "good", POD_GOOD,
		      NULL, false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	assert_null(warnings(j)); /* audit without emitWarning: no warnings */
	json_decref(j);
	free(body);
	fixture_release(&f);
}

static void test_delete_judged_on_old_object(void **state)
{
	struct fixture f;
	const char *cm = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
			 "\"keep\",\"namespace\":\"default\",\"uid\":\"cm-1\",\"labels\":{"
			 "\"protected\":\"true\"}}}";
	const char *cm2 = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
			  "\"other\",\"namespace\":\"default\"}}";
	char *body;
	json_t *j;

	(void)state;
	fixture_init(&f, DELETE_POLICY, NULL, NULL);
	body = review("admission.k8s.io/v1", "DELETE", "ConfigMap", "default", "keep", NULL, cm,
		      false);
	j = handle(&f, body, 200);
	assert_false(allowed(j));
	assert_string_equal(resp_str(j, "status", "message"),
			    "\n\nresource ConfigMap/default/keep was blocked due to the following "
			    "policies \n\nprotect:\n  no-delete: keep is protected\n");
	json_decref(j);
	free(body);
	/* Another ConfigMap may go; and CREATE of the protected one is not matched. */
	body = review("admission.k8s.io/v1", "DELETE", "ConfigMap", "default", "other", NULL, cm2,
		      false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	body = review("admission.k8s.io/v1", "CREATE", "ConfigMap", "default", "keep", cm, NULL,
		      false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	/* A DELETE without oldObject (API server before 1.15): nothing to judge. */
	body = review("admission.k8s.io/v1", "DELETE", "ConfigMap", "default", "keep", NULL, NULL,
		      false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	fixture_release(&f);
}

static void test_dry_run_judged_not_reported(void **state)
{
	struct fixture f;
	struct view_audit_item *items[8];
	char *body;
	json_t *j;
	size_t n;

	(void)state;
	fixture_init(&f, AUDIT_POLICY, NULL, NULL);
	body = review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, true);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	assert_int_equal(queue_drain_all(&f.queue, items, 8), 0);

	body = review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	n = queue_drain_all(&f.queue, items, 8);
	assert_int_equal(n, 1);
	assert_string_equal(items[0]->kind, "Pod");
	assert_string_equal(items[0]->namespace, "default");
	assert_string_equal(items[0]->name, "x");
	assert_string_equal(items[0]->uid, "pod-uid-1");
	assert_string_equal(items[0]->operation, "CREATE");
	assert_string_equal(items[0]->request_uid, "req-1");
	assert_int_equal(items[0]->nresults, 1);
	assert_string_equal(engine_policy_name(items[0]->results[0].policy), "audit-team");
	assert_string_equal(items[0]->results[0].rule, "team");
	assert_int_equal(items[0]->results[0].status, ENGINE_FAIL);
	assert_string_equal(
	    engine_policy_annotation(items[0]->results[0].policy, "policies.kyverno.io/severity"),
	    "medium");
	view_audit_item_free(items[0]);

	/* DryRun of an Enforce denial is still denied. */
	fixture_release(&f);
	fixture_init(&f, DELETE_POLICY, NULL, NULL);
	body =
	    review("admission.k8s.io/v1", "DELETE", "ConfigMap", "default", "keep", NULL,
		   "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"keep\","
		   "\"namespace\":\"default\",\"labels\":{\"protected\":\"true\"}}}",
		   true);
	j = handle(&f, body, 200);
	assert_false(allowed(j));
	json_decref(j);
	free(body);
	fixture_release(&f);
}

static void test_resource_filters_and_own_namespace(void **state)
{
	struct fixture f;
	char *pols = with_failure_policy("Fail");
	const char *cfg = "{\"resourceFilters\":\"[Event,*,*] [Pod,kube-system,*][*,kube-public,*]"
			  "[Pod,default,skip-*]\",\"excludeGroups\":\"system:nodes, ops\"}";
	const char *pod_ks = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\","
			     "\"namespace\":\"kube-system\"},\"spec\":{\"containers\":[{\"name\":"
			     "\"c\",\"image\":\"nginx:latest\"}]}}";
	const char *ns_obj = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
			     "\"kube-public\"}}";
	char *body;
	json_t *j;

	(void)state;
	fixture_init(&f, pols, cfg, NULL);
	/* A violating Pod in kube-system: filtered. */
	body =
	    review("admission.k8s.io/v1", "CREATE", "Pod", "kube-system", "x", pod_ks, NULL, false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	/* Name wildcard. */
	body = review("admission.k8s.io/v1", "CREATE", "Pod", "default", "skip-me", POD_X, NULL,
		      false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	/* The same Pod elsewhere is judged. */
	body = review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, false);
	j = handle(&f, body, 200);
	assert_false(allowed(j));
	json_decref(j);
	free(body);
	/* gavel's own namespace: allowed without evaluation. */
	body = review("admission.k8s.io/v1", "CREATE", "Pod", "gavel", "x", POD_X, NULL, false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	/* [*,kube-public,*] also filters the kube-public Namespace object itself. */
	assert_true(view_config_filtered(view_state_config(f.state), "", "v1", "Namespace", "", "",
					 "kube-public"));
	assert_false(view_config_filtered(view_state_config(f.state), "", "v1", "Namespace", "", "",
					  "team-a"));
	assert_true(view_config_filtered(view_state_config(f.state), "", "v1", "Event", "",
					 "team-a", "e1"));
	assert_false(view_config_filtered(view_state_config(f.state), "", "v1", "Pod", "exec",
					  "kube-system", "x"));
	body = review("admission.k8s.io/v1", "CREATE", "Namespace", "", "kube-public", ns_obj, NULL,
		      false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	/* Excluded group. */
	{
		json_t *ui = json_pack("{s:s,s:[s,s]}", "username", "n1", "groups", "x", "ops");
		assert_true(view_config_user_excluded(view_state_config(f.state), ui));
		json_decref(ui);
		ui = json_pack("{s:s,s:[s]}", "username", "n1", "groups", "dev");
		assert_false(view_config_user_excluded(view_state_config(f.state), ui));
		json_decref(ui);
	}
	fixture_release(&f);
	free(pols);
}

static void test_kind_selectors(void **state)
{
	json_t *d =
	    json_pack("{s:s}", "resourceFilters",
		      "[*/*,kube-node-lease,*][Pod/exec,*,*][apps/v1/Deployment,*,d1][v1/Node]");
	struct view_config *c = view_config_new(d);

	(void)state;
	assert_true(view_config_filtered(c, "", "v1", "Lease", "", "kube-node-lease", "x"));
	assert_true(view_config_filtered(c, "", "v1", "Pod", "status", "kube-node-lease", "x"));
	assert_true(view_config_filtered(c, "", "v1", "Pod", "exec", "team", "x"));
	assert_false(view_config_filtered(c, "", "v1", "Pod", "", "team", "x"));
	assert_true(view_config_filtered(c, "apps", "v1", "Deployment", "", "t", "d1"));
	assert_false(view_config_filtered(c, "apps", "v1", "Deployment", "", "t", "d2"));
	assert_true(view_config_filtered(c, "", "v1", "Node", "", "", "n1"));
	view_config_unref(c);
	json_decref(d);
}

static void test_namespace_selector_uses_snapshot_labels(void **state)
{
	static const char pol[] =
	    "apiVersion: kyverno.io/v1\n"
	    "kind: ClusterPolicy\n"
	    "metadata: {name: prod-only}\n"
	    "spec:\n"
	    "  rules:\n"
	    "  - name: r\n"
	    "    match: {any: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: "
	    "{env: prod}}}}]}\n"
	    "    validate:\n"
	    "      failureAction: Enforce\n"
	    "      message: no latest\n"
	    "      pattern: {spec: {containers: [{image: \"!*:latest\"}]}}\n";
	struct fixture f;
	char *body;
	json_t *j;

	(void)state;
	fixture_init(&f, pol, NULL, "{\"default\":{\"env\":\"prod\"},\"dev\":{\"env\":\"dev\"}}");
	body = review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, false);
	j = handle(&f, body, 200);
	assert_false(allowed(j));
	json_decref(j);
	free(body);
	body = review("admission.k8s.io/v1", "CREATE", "Pod", "dev", "x",
		      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\","
		      "\"namespace\":\"dev\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
		      "\"nginx:latest\"}]}}",
		      NULL, false);
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	fixture_release(&f);
}

static void expect_400(struct fixture *f, const char *body, const char *reason)
{
	json_t *j = handle(f, body, 400);

	if (!strstr(json_string_value(j), reason))
		fail_msg("400 reason \"%s\" does not contain \"%s\"", json_string_value(j), reason);
	json_decref(j);
}

static void test_bad_requests(void **state)
{
	struct fixture f;
	struct admission_reply r;

	(void)state;
	fixture_init(&f, AUDIT_POLICY, NULL, NULL);
	expect_400(&f, "", "malformed JSON: empty body");
	expect_400(&f, "{\"a\":", "malformed JSON: unexpected end of input at line 1 column 6");
	expect_400(&f, "{\n \"a\": tru}", "malformed JSON: invalid token at line 2 column 7");
	expect_400(&f, "\"just a string\"", "malformed JSON: '[' or '{' expected");
	expect_400(&f, "{} {}", "end of input expected");
	expect_400(&f, "[]", "not a JSON object");
	expect_400(&f, "{\"apiVersion\":\"v1\",\"kind\":\"AdmissionReview\"}",
		   "apiVersion must be admission.k8s.io/v1");
	expect_400(&f, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}",
		   "kind must be AdmissionReview");
	expect_400(&f, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
		   "request is missing");
	expect_400(&f,
		   "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		   "\"request\":{\"operation\":\"CREATE\"}}",
		   "request.uid is missing");
	expect_400(&f,
		   "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		   "\"request\":{\"uid\":\"u\",\"operation\":\"PATCH\"}}",
		   "request.operation must be");
	expect_400(&f,
		   "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		   "\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\"}}",
		   "request.kind.kind is missing");
	expect_400(
	    &f,
	    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	    "\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"kind\":{\"kind\":\"Pod\"},"
	    "\"object\":[1]}}",
	    "must be objects or null");
	/* Bodies need not be NUL-terminated: a prefix of a valid review is malformed. */
	admission_handle(f.h, "{\"apiVersion\":1}XXXX", 16, &r);
	assert_int_equal(r.http, 400);
	assert_string_equal(r.content_type, "text/plain; charset=utf-8");
	admission_reply_release(&r);
	fixture_release(&f);
}

static struct view_state *no_state(void *ud)
{
	(void)ud;
	return NULL;
}

static void test_not_ready_503(void **state)
{
	struct admission_source src = {.acquire = no_state};
	struct admission_handler_config hc = {.source = &src};
	struct admission_handler *h = admission_handler_new(&hc);
	char *body =
	    review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, false);
	struct admission_reply r;

	(void)state;
	assert_false(admission_handler_ready(h));
	admission_handle(h, body, strlen(body), &r);
	assert_int_equal(r.http, 503);
	admission_reply_release(&r);
	admission_handler_free(h);
	free(body);
}

/* ---- request.roles and request.clusterRoles ---- */

static const char ROLES_POLICIES[] =
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: cm-guard}\n"
    "spec:\n"
    "  background: false\n"
    "  validationFailureAction: Enforce\n"
    "  rules:\n"
    "  - name: cluster-role\n"
    "    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
    "    exclude: {any: [{clusterRoles: [cm-admin]}]}\n"
    "    validate:\n"
    "      message: \"roles {{ request.roles }} clusterRoles {{ request.clusterRoles }}\"\n"
    "      deny: {}\n"
    "  - name: role\n"
    "    match: {any: [{resources: {kinds: [Secret]}}]}\n"
    "    exclude: {any: [{roles: [\"team-a:secret-writer\"]}]}\n"
    "    validate:\n"
    "      message: \"needs team-a:secret-writer, has {{ request.roles }}\"\n"
    "      deny: {}\n";

static const char ROLES_RBS[] =
    "[{\"metadata\":{\"name\":\"w\",\"namespace\":\"team-a\"},\"roleRef\":{\"kind\":\"Role\","
    "\"name\":\"secret-writer\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]},"
    "{\"metadata\":{\"name\":\"v\",\"namespace\":\"team-b\"},\"roleRef\":{\"kind\":\"Role\","
    "\"name\":\"viewer\"},\"subjects\":[{\"kind\":\"Group\",\"name\":\"dev\"}]}]";

static const char ROLES_CRBS[] =
    "[{\"metadata\":{\"name\":\"cm\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":"
    "\"cm-admin\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}]";

/* A roles source answering from a fixed index, or not ready while index is NULL. */
struct index_source {
	struct rbac_index *index;
	int lookups;
};

static enum gv_code index_lookup(void *ud, const json_t *user_info, const char *ns, json_t **roles,
				 json_t **cluster_roles, struct gv_err *err)
{
	struct index_source *s = ud;

	s->lookups++;
	if (!s->index)
		return gv_err_set(err, GV_ENOENT, "bindings not listed yet");
	rbac_index_lookup(s->index, user_info, ns, roles, cluster_roles);
	return GV_OK;
}

static bool index_ready(void *ud)
{
	return ((struct index_source *)ud)->index != NULL;
}

/* A CREATE of kind/name in ns by user (groups ["dev"]). */
static char *review_by(const char *user, const char *kind, const char *ns, const char *name)
{
	char *obj = gv_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"%s\",\"metadata\":{\"name\":"
				 "\"%s\",\"namespace\":\"%s\"}}",
				 kind, name, ns);
	char *body = review("admission.k8s.io/v1", "CREATE", kind, ns, name, obj, NULL, false);
	char *who = gv_xasprintf("\"username\":\"%s\"", user);
	char *out = gv_str_replace_all(body, "\"username\":\"alice\"", who);

	free(obj);
	free(body);
	free(who);
	return out;
}

static void test_roles_and_cluster_roles(void **state)
{
	struct fixture f;
	json_t *rbs = json_loads(ROLES_RBS, 0, NULL), *crbs = json_loads(ROLES_CRBS, 0, NULL);
	struct index_source is = {0};
	struct view_roles_source src = {index_lookup, index_ready, &is};
	struct admission_handler_config hc = {0};
	struct admission_handler *h;
	char *body;
	json_t *j;

	(void)state;
	fixture_init(&f, ROLES_POLICIES, NULL, NULL);
	hc.source = &f.src.source;
	hc.namespace = "gavel";
	hc.roles = &src;
	h = admission_handler_new(&hc);
	admission_handler_free(f.h);
	f.h = h;

	/* Not ready while the bindings are not listed: 503, never judged without them. */
	assert_false(admission_handler_ready(h));
	body = review_by("alice", "ConfigMap", "team-a", "c");
	j = handle(&f, body, 503);
	assert_string_equal(json_string_value(j), "not ready: bindings not listed yet\n");
	json_decref(j);
	free(body);

	is.index = rbac_index_build(rbs, crbs);
	assert_true(admission_handler_ready(h));

	/* alice is bound to cm-admin: excluded. */
	body = review_by("alice", "ConfigMap", "team-a", "c");
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);

	/* bob (group dev) is not: denied, and the variables carry his computed lists. */
	body = review_by("bob", "ConfigMap", "team-a", "c");
	j = handle(&f, body, 200);
	assert_false(allowed(j));
	assert_non_null(strstr(resp_str(j, "status", "message"),
			       "cluster-role: roles [\"team-b:viewer\"] clusterRoles []"));
	json_decref(j);
	free(body);

	/* roles: alice holds team-a:secret-writer, bob does not. */
	body = review_by("alice", "Secret", "team-b", "s");
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	json_decref(j);
	free(body);
	body = review_by("bob", "Secret", "team-a", "s");
	j = handle(&f, body, 200);
	assert_false(allowed(j));
	assert_non_null(strstr(resp_str(j, "status", "message"),
			       "needs team-a:secret-writer, has [\"team-b:viewer\"]"));
	json_decref(j);
	free(body);

	/* Requests allowed without evaluation (gavel's namespace) need no lookup. */
	is.lookups = 0;
	body = review_by("bob", "ConfigMap", "gavel", "c");
	j = handle(&f, body, 200);
	assert_true(allowed(j));
	assert_int_equal(is.lookups, 0);
	json_decref(j);
	free(body);

	rbac_index_unref(is.index);
	json_decref(rbs);
	json_decref(crbs);
	fixture_release(&f);
}

static void test_validate_policy(void **state)
{
	struct fixture f;
	const char *bad =
	    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":"
	    "{\"name\":\"bad\"},\"spec\":{\"rules\":[{\"name\":\"r\",\"match\":{"
	    "\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},\"validate\":{"
	    "\"message\":\"user {{request.userInfo.username}}\",\"deny\":{}}}]}}";
	const char *good =
	    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":"
	    "{\"name\":\"good\"},\"spec\":{\"background\":false,\"rules\":[{\"name\":"
	    "\"r\",\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},"
	    "\"validate\":{\"message\":\"user {{request.userInfo.username}}\","
	    "\"deny\":{}}}]}}";
	struct admission_reply r;
	char *body;
	json_t *j;

	(void)state;
	fixture_init(&f, AUDIT_POLICY, NULL, NULL);
	body =
	    review("admission.k8s.io/v1", "CREATE", "ClusterPolicy", "", "bad", bad, NULL, false);
	admission_handle_policy(f.h, body, strlen(body), &r);
	assert_int_equal(r.http, 200);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_false(allowed(j));
	/* Kyverno's message, as it is (no JSON pointer in front) */
	assert_non_null(strstr(resp_str(j, "status", "message"),
			       "only select variables are allowed in background mode"));
	assert_null(strstr(resp_str(j, "status", "message"), "/spec/rules/0:"));
	json_decref(j);
	admission_reply_release(&r);
	free(body);

	body =
	    review("admission.k8s.io/v1", "CREATE", "ClusterPolicy", "", "good", good, NULL, false);
	admission_handle_policy(f.h, body, strlen(body), &r);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_true(allowed(j));
	json_decref(j);
	admission_reply_release(&r);
	free(body);

	/* DELETE of a bad policy and other kinds pass. */
	body =
	    review("admission.k8s.io/v1", "DELETE", "ClusterPolicy", "", "bad", NULL, bad, false);
	admission_handle_policy(f.h, body, strlen(body), &r);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_true(allowed(j));
	json_decref(j);
	admission_reply_release(&r);
	free(body);

	admission_handle_policy(f.h, "nope", 4, &r);
	assert_int_equal(r.http, 400);
	admission_reply_release(&r);

	/* A background policy on a subresource: denied (Kyverno's message). */
	{
		static const char *const kinds[] = {"Pod/exec", "Scale", "*/*", "*/status",
						    "Pod/*"};
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			char *doc = gv_xasprintf(
			    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\","
			    "\"metadata\":{\"name\":\"sub\"},\"spec\":{%s\"rules\":[{\"name\":"
			    "\"r\",\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\","
			    "\"%s\"]}}]},\"validate\":{\"deny\":{}}}]}}",
			    "", kinds[i]);
			char *off = gv_xasprintf(
			    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\","
			    "\"metadata\":{\"name\":\"sub\"},\"spec\":{%s\"rules\":[{\"name\":"
			    "\"r\",\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\","
			    "\"%s\"]}}]},\"validate\":{\"deny\":{}}}]}}",
			    "\"background\":false,", kinds[i]);
			body = review("admission.k8s.io/v1", "CREATE", "ClusterPolicy", "", "sub",
				      doc, NULL, false);
			admission_handle_policy(f.h, body, strlen(body), &r);
			j = json_loadb(r.body, r.len, 0, NULL);
			assert_false(allowed(j));
			assert_true(!strncmp(resp_str(j, "status", "message"),
					     "background scan enabled with subresource ", 41));
			json_decref(j);
			admission_reply_release(&r);
			free(body);
			body = review("admission.k8s.io/v1", "CREATE", "ClusterPolicy", "", "sub",
				      off, NULL, false);
			admission_handle_policy(f.h, body, strlen(body), &r);
			j = json_loadb(r.body, r.len, 0, NULL);
			assert_true(allowed(j));
			json_decref(j);
			admission_reply_release(&r);
			free(body);
			free(doc);
			free(off);
		}
	}

	/* GlobalContextEntry: one source; no data for a GET apiCall. */
	{
		static const char *const cases[][2] = {
		    {"{\"kubernetesResource\":{\"version\":\"v1\",\"resource\":\"pods\"}}", NULL},
		    {"{\"apiCall\":{\"urlPath\":\"/api/v1/pods\",\"refreshInterval\":\"10s\"}}",
		     NULL},
		    {"{\"apiCall\":{\"method\":\"POST\",\"urlPath\":\"/x\",\"data\":[{\"key\":"
		     "\"a\",\"value\":1}]}}",
		     NULL},
		    {"{\"apiCall\":{\"method\":\"GET\",\"service\":{\"url\":\"http://x\"},"
		     "\"data\":[{\"key\":\"foo\",\"value\":\"bar\"}]}}",
		     "spec.apiCall.data: Forbidden: data is not allowed for GET requests"},
		    {"{}", "spec: Required value: a kubernetesResource or an apiCall is required"},
		};
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char *doc = gv_xasprintf(
			    "{\"apiVersion\":\"kyverno.io/v2alpha1\",\"kind\":"
			    "\"GlobalContextEntry\",\"metadata\":{\"name\":\"g\"},\"spec\":%s}",
			    cases[i][0]);
			body = review("admission.k8s.io/v1", "CREATE", "GlobalContextEntry", "",
				      "g", doc, NULL, false);
			admission_handle_policy(f.h, body, strlen(body), &r);
			j = json_loadb(r.body, r.len, 0, NULL);
			if (cases[i][1]) {
				assert_false(allowed(j));
				assert_string_equal(resp_str(j, "status", "message"), cases[i][1]);
			} else {
				assert_true(allowed(j));
			}
			json_decref(j);
			admission_reply_release(&r);
			free(body);
			free(doc);
		}
	}

	/* The deprecated operators: allowed with Kyverno's warning, once per operator. */
	{
		const char *notin =
		    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":"
		    "{\"name\":\"ni\"},\"spec\":{\"background\":false,\"rules\":[{\"name\":"
		    "\"r\",\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},"
		    "\"validate\":{\"deny\":{\"conditions\":{\"any\":[{\"key\":\"a\","
		    "\"operator\":\"NotIn\",\"value\":[\"b\"]},{\"key\":\"a\",\"operator\":"
		    "\"NotIn\",\"value\":[\"c\"]}]}}}}]}}";
		const json_t *ws;
		body = review("admission.k8s.io/v1", "CREATE", "ClusterPolicy", "", "ni", notin,
			      NULL, false);
		admission_handle_policy(f.h, body, strlen(body), &r);
		j = json_loadb(r.body, r.len, 0, NULL);
		assert_true(allowed(j));
		ws = json_object_get(json_object_get(j, "response"), "warnings");
		assert_int_equal(json_array_size(ws), 1);
		assert_string_equal(json_string_value(json_array_get(ws, 0)),
				    "Operator NotIn has been deprecated and will be removed soon.");
		json_decref(j);
		admission_reply_release(&r);
		free(body);
	}

	/* A typo in an enumerated field: denied with the API server's message. */
	{
		const char *typo =
		    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":"
		    "{\"name\":\"typo\"},\"spec\":{\"validationFailureAction\":\"Enforse\","
		    "\"rules\":[{\"name\":\"r\",\"match\":{\"any\":[{\"resources\":{\"kinds\":"
		    "[\"Pod\"]}}]},\"validate\":{\"pattern\":{\"metadata\":{\"name\":\"?*\"}}}}]}}";
		body = review("admission.k8s.io/v1", "CREATE", "ClusterPolicy", "", "typo", typo,
			      NULL, false);
		admission_handle_policy(f.h, body, strlen(body), &r);
		j = json_loadb(r.body, r.len, 0, NULL);
		assert_false(allowed(j));
		assert_string_equal(resp_str(j, "status", "message"),
				    "spec.validationFailureAction: Unsupported value: \"Enforse\": "
				    "supported values: \"audit\", \"enforce\", \"Audit\", "
				    "\"Enforce\"");
		json_decref(j);
		admission_reply_release(&r);
		free(body);
	}
	/* A mutate rule: accepted, with a warning that gavel does not evaluate it. */
	{
		const char *mutate =
		    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":"
		    "{\"name\":\"m\"},\"spec\":{\"rules\":[{\"name\":\"add\",\"match\":{"
		    "\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},\"mutate\":{"
		    "\"patchStrategicMerge\":{\"metadata\":{\"labels\":{\"a\":\"b\"}}}}}]}}";
		const json_t *warnings;
		body = review("admission.k8s.io/v1", "CREATE", "ClusterPolicy", "", "m", mutate,
			      NULL, false);
		admission_handle_policy(f.h, body, strlen(body), &r);
		j = json_loadb(r.body, r.len, 0, NULL);
		assert_true(allowed(j));
		warnings = json_object_get(json_object_get(j, "response"), "warnings");
		assert_int_equal(json_array_size(warnings), 1);
		assert_string_equal(json_string_value(json_array_get(warnings, 0)),
				    "policy m: gavel is a validate engine and does not evaluate "
				    "its mutate rule add");
		json_decref(j);
		admission_reply_release(&r);
		free(body);
	}
	fixture_release(&f);
}

/* The denial message of /validate-policy for object (op CREATE or DELETE), NULL when allowed. */
static char *policy_answer(struct fixture *f, const char *op, const char *object)
{
	char *body = review("admission.k8s.io/v1", op, "PolicyException", "default", "exc",
			    strcmp(op, "DELETE") ? object : NULL,
			    strcmp(op, "DELETE") ? NULL : object, false);
	struct admission_reply r;
	char *msg = NULL;
	json_t *j;

	admission_handle_policy(f->h, body, strlen(body), &r);
	assert_int_equal(r.http, 200);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(j);
	assert_int_equal(allowed(j), r.allowed);
	if (!allowed(j)) {
		assert_non_null(resp_str(j, "status", "message"));
		msg = gv_xstrdup(resp_str(j, "status", "message"));
	}
	json_decref(j);
	admission_reply_release(&r);
	free(body);
	return msg;
}

/* A PolicyException document: apiVersion, then the spec's members. */
static char *exception_doc(const char *api, const char *spec)
{
	return gv_xasprintf("{\"apiVersion\":\"%s\",\"kind\":\"PolicyException\",\"metadata\":"
			    "{\"name\":\"exc\",\"namespace\":\"default\"},\"spec\":{%s}}",
			    api, spec);
}

static void expect_policy_answer(struct fixture *f, const char *op, const char *api,
				 const char *spec, const char *want)
{
	char *doc = exception_doc(api, spec);
	char *msg = policy_answer(f, op, doc);

	if (!want && msg)
		fail_msg("%s %s {%s}: denied: %s", op, api, spec, msg);
	if (want && (!msg || strcmp(msg, want)))
		fail_msg("%s %s {%s}: got [%s], want [%s]", op, api, spec, msg ? msg : "(allowed)",
			 want);
	free(msg);
	free(doc);
}

/*
 * /validate-policy compiles PolicyExceptions too (engine_exception_compile)
 * and denies a malformed one with "<JSON pointer>: <reason>".
 */
static bool fake_known(void *ud, const char *kind)
{
	(void)ud;
	return !strcmp(kind, "Pod") || !strcmp(kind, "Pod/exec") || !strcmp(kind, "ConfigMap");
}

static void test_policy_kinds_known(void **state)
{
	static const char *const cases[][2] = {
	    {"{\"any\":[{\"resources\":{\"kinds\":[\"Pod\",\"Pod/exec\",\"*\"]}}]}", NULL},
	    {"{\"resources\":{\"kinds\":[\"ConfigMap\",\"Foo\"]}}", NULL},
	    {"{\"resources\":{\"kinds\":[\"Bar\",\"Foo\"]}}",
	     "/spec/rules/0/match/resources/kinds/0"},
	    {"{\"all\":[{\"resources\":{\"kinds\":[\"Pod/x\"]}},{\"resources\":{\"kinds\":"
	     "[\"Pod/foo\"]}}]}",
	     "/spec/rules/0/match/all/0/resources/kinds/0"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = gv_xasprintf("{\"spec\":{\"rules\":[{\"name\":\"r\",\"match\":%s}]}}",
					  cases[i][0]);
		json_t *doc = json_loads(text, 0, NULL);
		struct gv_err err = {0};
		bool ok = admission_policy_kinds_known(doc, fake_known, NULL, &err);
		assert_int_equal(ok, cases[i][1] == NULL);
		if (cases[i][1]) {
			assert_string_equal(err.pointer, cases[i][1]);
			assert_non_null(strstr(err.msg, "unable to convert GVK to GVR for kinds"));
		}
		json_decref(doc);
		free(text);
	}
}

static void test_validate_policy_exception(void **state)
{
	static const char good[] =
	    "\"exceptions\":[{\"policyName\":\"p1\",\"ruleNames\":[\"a\"]}],"
	    "\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"],\"namespaces\":"
	    "[\"dev\"]}}]}";
	static const char with_condition[] =
	    "\"exceptions\":[{\"policyName\":\"p1\",\"ruleNames\":[\"a\"]}],"
	    "\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},"
	    "\"conditions\":{\"any\":[{\"key\":\"{{ request.object.metadata.name }}\","
	    "\"operator\":\"Equals\",\"value\":\"x\"}]}";
	static const char not_a_list[] =
	    "\"exceptions\":{\"policyName\":\"p1\"},"
	    "\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]}";
	static const char any_and_all[] =
	    "\"exceptions\":[{\"policyName\":\"p1\",\"ruleNames\":[\"a\"]}],"
	    "\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}],"
	    "\"all\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]}";
	static const char bad_operator[] =
	    "\"exceptions\":[{\"policyName\":\"p1\",\"ruleNames\":[\"a\"]}],"
	    "\"match\":{\"any\":[{\"resources\":{\"kinds\":[\"Pod\"]}}]},"
	    "\"conditions\":{\"any\":[{\"key\":\"a\",\"operator\":\"NoSuchOperator\","
	    "\"value\":\"b\"}]}";
	struct fixture f;
	char *msg;

	(void)state;
	fixture_init(&f, AUDIT_POLICY, NULL, NULL);
	/* every version Kyverno served */
	expect_policy_answer(&f, "CREATE", "kyverno.io/v2", good, NULL);
	expect_policy_answer(&f, "UPDATE", "kyverno.io/v2beta1", good, NULL);
	expect_policy_answer(&f, "CREATE", "kyverno.io/v2alpha1", good, NULL);
	expect_policy_answer(&f, "CREATE", "kyverno.io/v2", with_condition, NULL);
	/* who made the request: only in an exception that stays out of background scans */
	expect_policy_answer(&f, "CREATE", "kyverno.io/v2",
			     "\"background\":false,\"exceptions\":[{\"policyName\":\"p1\","
			     "\"ruleNames\":[\"a\"]}],\"match\":{\"any\":[{\"resources\":"
			     "{\"kinds\":[\"Pod\"]},\"subjects\":[{\"kind\":\"User\",\"name\":"
			     "\"chip\"}]}]}",
			     NULL);
	expect_policy_answer(&f, "CREATE", "kyverno.io/v2",
			     "\"exceptions\":[{\"policyName\":\"p1\",\"ruleNames\":[\"a\"]}],"
			     "\"match\":{\"all\":[{\"resources\":{\"kinds\":[\"Pod\"]}},"
			     "{\"resources\":{\"kinds\":[\"Pod\"]},\"clusterRoles\":[\"admin\"]}]}",
			     "spec.match.all[1]: Forbidden: invalid variables");

	expect_policy_answer(&f, "CREATE", "kyverno.io/v2", not_a_list,
			     "spec.exceptions: exceptions must be a list");
	expect_policy_answer(&f, "UPDATE", "kyverno.io/v2beta1", any_and_all,
			     "spec.match: can't specify any/all together with the resources "
			     "field");
	expect_policy_answer(&f, "CREATE", "kyverno.io/v1", good,
			     "apiVersion: unsupported apiVersion \"kyverno.io/v1\" for "
			     "PolicyException (want kyverno.io/v2, kyverno.io/v2beta1 or "
			     "kyverno.io/v2alpha1)");
	msg = policy_answer(&f, "CREATE",
			    "{\"apiVersion\":\"kyverno.io/v2\",\"kind\":"
			    "\"PolicyException\",\"metadata\":{},\"spec\":{}}");
	assert_non_null(msg);
	assert_string_equal(msg, "metadata.name: name is required");
	free(msg);
	{
		char *doc = exception_doc("kyverno.io/v2", bad_operator);

		msg = policy_answer(&f, "CREATE", doc);
		assert_non_null(msg);
		assert_true(!strncmp(msg, "spec.conditions.any[0]", 22));
		assert_non_null(strstr(msg, "NoSuchOperator"));
		free(msg);
		free(doc);
	}

	/* DELETE of a malformed one, and a PolicyException of another group, pass */
	expect_policy_answer(&f, "DELETE", "kyverno.io/v2", not_a_list, NULL);
	expect_policy_answer(&f, "CREATE", "example.com/v1", not_a_list, NULL);
	fixture_release(&f);
}

static void test_warnings_limits(void **state)
{
	struct admission_warnings w = {0};
	char big[600];

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	admission_warnings_add(&w, "line one\nline\ttwo");
	admission_warnings_add(&w, "line one\nline\ttwo"); /* duplicate */
	admission_warnings_add(&w, big);
	assert_int_equal(w.n, 2);
	assert_string_equal(w.v[0], "line one line two");
	assert_int_equal(strlen(w.v[1]), ADMISSION_WARNING_MAX);
	assert_string_equal(w.v[1] + ADMISSION_WARNING_MAX - 3, "...");
	for (int i = 0; i < 40; i++) {
		char *s = gv_xasprintf("%d %s", i, big);
		admission_warnings_add(&w, s);
		free(s);
	}
	assert_true(w.total <= ADMISSION_WARNINGS_TOTAL);
	assert_true(w.dropped > 0);
	admission_warnings_release(&w);
	/* Multi-byte characters count once; an invalid UTF-8 byte becomes U+FFFD. */
	admission_warnings_add(&w, "caf\xc3\xa9 \xff!");
	assert_string_equal(w.v[0], "caf\xc3\xa9 \xef\xbf\xbd!");
	assert_int_equal(w.total, 7);
	admission_warnings_release(&w);
}

/* ---- the YAML of the denial message ---- */

static char *scalar(const char *s, bool key)
{
	struct gv_buf b = {0};

	admission_yaml_scalar(&b, s, 4, key);
	return gv_buf_detach(&b);
}

static void check_scalar(const char *in, const char *want)
{
	char *got = scalar(in, false);

	if (strcmp(got, want))
		fail_msg("scalar \"%s\": got [%s], want [%s]", in, got, want);
	free(got);
}

static void test_yaml_scalars(void **state)
{
	(void)state;
	check_scalar("plain text", "plain text\n");
	check_scalar("validation error: x", "'validation error: x'\n");
	check_scalar("it's: here", "'it''s: here'\n");
	check_scalar("ends with colon:", "'ends with colon:'\n");
	check_scalar("a #comment", "'a #comment'\n");
	check_scalar("a#b", "a#b\n");
	check_scalar("- dash", "'- dash'\n");
	check_scalar("-dash", "-dash\n");
	check_scalar("*star", "'*star'\n");
	check_scalar("[x]", "'[x]'\n");
	check_scalar("x, y [z]", "x, y [z]\n");
	check_scalar(" lead", "' lead'\n");
	check_scalar("trail ", "'trail '\n");
	check_scalar("", "\"\"\n");
	check_scalar("true", "\"true\"\n");
	check_scalar("yes", "\"yes\"\n");
	check_scalar("Off", "\"Off\"\n");
	check_scalar("null", "\"null\"\n");
	check_scalar("~", "\"~\"\n");
	check_scalar("123", "\"123\"\n");
	check_scalar("-1.5e3", "\"-1.5e3\"\n");
	check_scalar("0x1F", "\"0x1F\"\n");
	check_scalar("1_000", "\"1_000\"\n");
	check_scalar(".5", "\".5\"\n");
	check_scalar(".inf", "\".inf\"\n");
	check_scalar("1:30", "\"1:30\"\n");
	check_scalar("2024-01-31", "\"2024-01-31\"\n");
	check_scalar("2024-02-30", "2024-02-30\n");
	check_scalar("2024-01-31T10:00:00Z", "\"2024-01-31T10:00:00Z\"\n");
	check_scalar("1.2.3", "1.2.3\n");
	check_scalar("tab\there", "\"tab\\there\"\n");
	check_scalar("bell\a", "\"bell\\a\"\n");
	check_scalar("caf\xc3\xa9: ok", "'caf\xc3\xa9: ok'\n");
	check_scalar("emoji \xf0\x9f\x98\x80", "\"emoji \\U0001F600\"\n");
	check_scalar("line1\nline2", "|-\n    line1\n    line2\n");
	check_scalar("line1\nline2\n", "|\n    line1\n    line2\n");
	check_scalar("line1\n\nline2\n\n", "|+\n    line1\n\n    line2\n\n");
	check_scalar(" indented\nx", "|2-\n     indented\n    x\n");
	check_scalar("trailing space \nx", "\"trailing space \\nx\"\n");
	{
		char *k = scalar("true", true);
		assert_string_equal(k, "\"true\"");
		free(k);
		k = scalar("multi\nline", true);
		assert_string_equal(k, "\"multi\\nline\"");
		free(k);
	}
}

static void test_yaml_key_order(void **state)
{
	struct admission_msg_entry v[] = {
	    {"pol", "rule10", "m10"}, {"pol", "rule2", "m2"}, {"b", "x", "1"},
	    {"a-b", "r", "2"},	      {"ab", "r", "3"},	      {"pol", "rule2", "m2b"},
	};
	struct gv_buf b = {0};

	(void)state;
	assert_true(admission_yaml_key_cmp("rule2", "rule10") < 0);
	assert_true(admission_yaml_key_cmp("a-b", "ab") < 0);
	assert_true(admission_yaml_key_cmp("B", "a") < 0);
	assert_int_equal(admission_yaml_key_cmp("x", "x"), 0);
	admission_yaml_policies(&b, v, GV_ARRAY_LEN(v));
	assert_string_equal(gv_buf_str(&b), "a-b:\n  r: \"2\"\nab:\n  r: \"3\"\nb:\n  x: \"1\"\n"
					    "pol:\n  rule2: m2b\n  rule10: m10\n");
	gv_buf_release(&b);
}

/* ---- metrics ---- */

static void test_metrics(void **state)
{
	struct metrics_registry *r = metrics_registry_new();
	static const char *const labels[] = {"a", "b", NULL};
	static const double buckets[] = {0.1, 1};
	struct metrics_family *c = metrics_counter_new(r, "x_total", "Xs.", labels);
	struct metrics_family *h = metrics_histogram_new(r, "y_seconds", "Ys.", NULL, buckets, 2);
	struct metrics_family *g = metrics_gauge_new(r, "z", "Z.", NULL);
	struct gv_buf b = {0};

	(void)state;
	assert_ptr_equal(metrics_counter_new(r, "x_total", "again", labels), c);
	assert_null(metrics_gauge_new(r, "x_total", "wrong type", labels));
	metrics_inc(c, (const char *const[]){"2", "q\"\n"});
	metrics_inc(c, (const char *const[]){"1", "v"});
	metrics_add(c, (const char *const[]){"1", "v"}, 2);
	metrics_observe(h, NULL, 0.05);
	metrics_observe(h, NULL, 0.5);
	metrics_observe(h, NULL, 5);
	metrics_set(g, NULL, 1.5);
	metrics_inc(NULL, NULL); /* no-op */
	metrics_render(r, &b);
	assert_non_null(strstr(gv_buf_str(&b), "# HELP x_total Xs.\n# TYPE x_total counter\n"
					       "x_total{a=\"1\",b=\"v\"} 3\n"
					       "x_total{a=\"2\",b=\"q\\\"\\n\"} 1\n"));
	assert_non_null(strstr(gv_buf_str(&b), "y_seconds_bucket{le=\"0.1\"} 1\n"
					       "y_seconds_bucket{le=\"1\"} 2\n"
					       "y_seconds_bucket{le=\"+Inf\"} 3\n"
					       "y_seconds_sum 5.55\ny_seconds_count 3\n"));
	assert_non_null(strstr(gv_buf_str(&b), "z 1.5\n"));
	gv_buf_release(&b);
	metrics_registry_free(r);
}

/* kyverno_policy_rule_info_total and the result labels of each policy kind (view/metrics.h). */
static void test_policy_metric_labels(void **state)
{
	static const char yaml[] =
	    "apiVersion: kyverno.io/v1\nkind: Policy\nmetadata: {name: np, namespace: team}\n"
	    "spec:\n  validationFailureAction: Enforce\n  background: false\n  rules:\n"
	    "  - name: r1\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	    "    validate: {message: m, pattern: {metadata: {labels: {a: \"?*\"}}}}\n";
	static const char vp[] =
	    "{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"NamespacedValidatingPolicy\","
	    "\"metadata\":{\"name\":\"nv\",\"namespace\":\"team\"},\"spec\":{"
	    "\"validationActions\":[\"Audit\"],\"evaluation\":{\"background\":{\"enabled\":"
	    "false}},\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],"
	    "\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],\"resources\":[\"pods\"]}]},"
	    "\"validations\":[{\"expression\":\"true\"}]}}";
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	struct engine_policy *p;
	struct engine_policyset *set;
	struct view_state *st;
	struct view_vpolset *vs;
	json_t *vpols = json_array();
	struct view_result_labels l = {0};
	struct gv_buf b = {0};

	(void)state;
	json_array_append_new(vpols, json_loads(vp, 0, NULL));
	assert_int_equal(gv_yaml_load(yaml, strlen(yaml), "t", &docs, &err), GV_OK);
	p = engine_policy_compile(docs.v[0].value, &err);
	assert_non_null(p);
	set = engine_policyset_new(&p, 1, NULL, 0);
	st = view_state_new(set, NULL, NULL);
	vs = view_vpolset_new(vpols, NULL);
	view_state_set_vpols(st, vs);
	view_policy_rule_info_render(st, &b);
	assert_non_null(strstr(gv_buf_str(&b), "# TYPE kyverno_policy_rule_info_total gauge\n"));
	assert_non_null(strstr(gv_buf_str(&b),
			       "kyverno_policy_rule_info_total{policy_validation_mode=\"enforce\","
			       "policy_type=\"namespaced\",policy_background_mode=\"false\","
			       "policy_namespace=\"team\",policy_name=\"np\",rule_name=\"r1\","
			       "rule_type=\"validate\",status_ready=\"true\"} 1\n"));
	assert_non_null(strstr(gv_buf_str(&b),
			       "kyverno_policy_rule_info_total{policy_validation_mode=\"audit\","
			       "policy_type=\"namespaced\",policy_background_mode=\"false\","
			       "policy_namespace=\"team\",policy_name=\"nv\",rule_name=\"\","
			       "rule_type=\"validate\",status_ready=\"true\"} 1\n"));
	view_result_labels_policy(&l, p, ENGINE_AUDIT);
	assert_string_equal(l.policy_validation_mode, "audit");
	assert_string_equal(l.policy_type, "namespaced");
	assert_string_equal(l.policy_namespace, "team");
	view_result_labels_vpol(&l, view_vpolset_policy(vs, 0));
	assert_string_equal(l.policy_name, "nv");
	assert_string_equal(l.policy_background_mode, "false");
	gv_buf_release(&b);
	/* no state yet: the family's header alone */
	view_policy_rule_info_render(NULL, &b);
	assert_null(strstr(gv_buf_str(&b), "} 1"));
	gv_buf_release(&b);
	view_vpolset_unref(vs);
	view_state_unref(st);
	engine_policyset_unref(set);
	engine_policy_unref(p);
	gv_docs_release(&docs);
	json_decref(vpols);
}

static void test_handler_metrics(void **state)
{
	struct fixture f;
	char *pols = with_failure_policy("Fail");
	char *body =
	    review("admission.k8s.io/v1", "CREATE", "Pod", "default", "x", POD_X, NULL, false);
	struct gv_buf b = {0};
	json_t *j;

	(void)state;
	fixture_init(&f, pols, NULL, NULL);
	j = handle(&f, body, 200);
	json_decref(j);
	metrics_render(f.metrics, &b);
	assert_non_null(strstr(gv_buf_str(&b), "kyverno_admission_requests_total{resource_kind="
					       "\"Pod\",resource_namespace=\"default\","
					       "resource_request_operation=\"create\","
					       "request_allowed=\"false\"} 1\n"));
	assert_non_null(strstr(gv_buf_str(&b),
			       "kyverno_policy_results_total{policy_validation_mode=\"enforce\","
			       "policy_type=\"cluster\",policy_background_mode=\"true\","
			       "policy_namespace=\"-\",policy_name=\"p1\",resource_kind=\"Pod\","
			       "resource_namespace=\"default\",resource_request_operation="
			       "\"create\",rule_name=\"a\",rule_result=\"fail\",rule_type="
			       "\"validate\",rule_execution_cause=\"admission_request\","
			       "dry_run=\"false\"} 1\n"));
	assert_non_null(strstr(gv_buf_str(&b), "{policy_validation_mode=\"audit\",policy_type="
					       "\"cluster\",policy_background_mode=\"true\","
					       "policy_namespace=\"-\",policy_name=\"p3\""));
	assert_non_null(strstr(gv_buf_str(&b), "kyverno_admission_review_duration_seconds_count{"));
	gv_buf_release(&b);
	fixture_release(&f);
	free(body);
	free(pols);
}

/* ---- request JSON parser ---- */

static void same_as_jansson(const char *text)
{
	struct gv_err err = {0};
	json_t *a = json_loads(text, JSON_ALLOW_NUL, NULL);
	json_t *b = gv_json_parse(text, strlen(text), &err);

	if (!a || !b || !json_equal(a, b))
		fail_msg("parse of %s differs from jansson (%s)", text, err.msg);
	json_decref(a);
	json_decref(b);
}

static void parse_error(const char *text, const char *want)
{
	struct gv_err err = {0};
	json_t *v = gv_json_parse(text, strlen(text), &err);

	assert_null(v);
	if (!strstr(err.msg, want))
		fail_msg("parse error of %s: got \"%s\", want \"%s\"", text, err.msg, want);
}

static void test_json_parser(void **state)
{
	(void)state;
	same_as_jansson("{\"a\":[1,-2,0,3.5,-0.0,1e3,2E-2,true,false,null],\"b\":{}}");
	same_as_jansson("[\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\"]");
	same_as_jansson("[\"caf\xc3\xa9\",\"\xe2\x82\xac\",\"\xf0\x9f\x98\x80\"]");
	same_as_jansson("{\"k\":1,\"k\":2}");
	same_as_jansson("  [9223372036854775807, -9223372036854775808, 1e308]  \n");
	same_as_jansson("{\"nul\":\"a\\u0000b\"}");
	parse_error("{\"nul\\u0000key\":1}", "NUL byte in object key");
	parse_error("[9223372036854775808]", "too big integer");
	parse_error("[-9223372036854775809]", "too big negative integer");
	parse_error("[1e400]", "real number overflow");
	parse_error("[01]", "',' or ']' expected");
	parse_error("[1.]", "invalid number");
	parse_error("[\"\\ud800\"]", "lone high surrogate");
	parse_error("[\"\\udc00\"]", "lone low surrogate");
	parse_error("[\"\\x\"]", "invalid escape");
	parse_error("[\"a\tb\"]", "control character");
	parse_error("[\"\xc3\"]", "invalid UTF-8");
	parse_error("[\"\xed\xa0\x80\"]", "invalid UTF-8");
	parse_error("[\"\xc0\xaf\"]", "invalid UTF-8");
	parse_error("[\"abc", "unterminated string");
	parse_error("{\"a\" 1}", "':' expected");
	parse_error("{1:2}", "string or '}' expected");
	{
		struct gv_buf deep = {0};
		for (int i = 0; i < GV_JSON_MAX_DEPTH + 1; i++)
			gv_buf_addc(&deep, '[');
		parse_error(gv_buf_str(&deep), "nesting too deep");
		gv_buf_release(&deep);
	}
}

/*
 * gv_json_parse_list() of text against gv_json_parse(): the same object
 * without "items", and each span parses to the same element (exactly its
 * bytes); nitems elements expected.
 */
static void same_as_list(const char *text, size_t nitems)
{
	struct gv_err err = {0};
	json_t *full = gv_json_parse(text, strlen(text), &err), *items;
	struct gv_json_span *spans = NULL;
	size_t n = 0;
	json_t *head = gv_json_parse_list(text, strlen(text), "items", &spans, &n, &err);

	if (!full || !head)
		fail_msg("list parse of %s failed: %s", text, err.msg);
	assert_int_equal(n, nitems);
	items = json_object_get(full, "items");
	if (json_is_array(items)) {
		assert_int_equal(json_array_size(items), n);
		for (size_t i = 0; i < n; i++) {
			const char *at = text + spans[i].off;
			/* gv_json_parse() reads objects and arrays; jansson the rest */
			json_t *e = *at == '{' || *at == '['
					? gv_json_parse(at, spans[i].len, &err)
					: json_loadb(at, spans[i].len, JSON_DECODE_ANY, NULL);
			if (!e || !json_equal(e, json_array_get(items, i)))
				fail_msg("element %zu of %s differs (%.*s)", i, text,
					 (int)spans[i].len, text + spans[i].off);
			json_decref(e);
		}
		json_object_del(full, "items");
	}
	if (!json_equal(full, head))
		fail_msg("list head of %s differs", text);
	json_decref(full);
	json_decref(head);
	free(spans);
}

static void list_error(const char *text, const char *want)
{
	struct gv_err err = {0};
	struct gv_json_span *spans = (struct gv_json_span *)&err; /* must be reset */
	size_t n = 7;
	json_t *v = gv_json_parse_list(text, strlen(text), "items", &spans, &n, &err);

	assert_null(v);
	assert_null(spans);
	assert_int_equal(n, 0);
	if (!strstr(err.msg, want))
		fail_msg("list parse error of %s: got \"%s\", want \"%s\"", text, err.msg, want);
}

static void test_json_parse_list(void **state)
{
	(void)state;
	same_as_list("{\"kind\":\"PodList\",\"metadata\":{\"continue\":\"x\"},\"items\":"
		     "[{\"a\":1,\"items\":[2]},{\"b\":[1.5,true,null,\"\\u00e9\"]},[],\"s\",3]}",
		     5);
	same_as_list("{\"items\": [ ] , \"k\":1}", 0);
	same_as_list(" { \"items\" : [ {\"x\":\"caf\xc3\xa9\"} ,\n{} ] } ", 2);
	same_as_list("{\"k\":{\"items\":[1,2]}}", 0);		    /* not top level */
	same_as_list("{\"items\":5}", 0);			    /* not an array: kept */
	same_as_list("{\"items\":[1],\"items\":[{\"z\":2},3]}", 2); /* the last counts */
	same_as_list("{}", 0);
	list_error("[1,2]", "'{' expected");
	list_error("", "empty body");
	list_error("{\"items\":[{\"a\":1e400}]}", "real number overflow");
	list_error("{\"items\":[{\"a\":\"\\ud800\"}]}", "lone high surrogate");
	list_error("{\"items\":[{\"a\\u0000\":1}]}", "NUL byte in object key");
	list_error("{\"items\":[{\"a\":1},]}", "invalid token");
	list_error("{\"items\":[{\"a\":1}", "',' or ']' expected");
	list_error("{\"items\":[],\"k\":\"\xc3\"}", "invalid UTF-8");
	list_error("{\"items\":[]} x", "end of input expected");
	{
		struct gv_buf deep = {0};
		gv_buf_add(&deep, "{\"items\":", 9);
		for (int i = 0; i < GV_JSON_MAX_DEPTH; i++)
			gv_buf_addc(&deep, '[');
		list_error(gv_buf_str(&deep), "nesting too deep");
		gv_buf_release(&deep);
	}
}

/* ---- snapshot building (background/snapshot.h), as cluster mode feeds the handler ---- */

static void test_snapshot_build(void **state)
{
	json_t *pols = json_loads(
	    "[{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":{\"name\":"
	    "\"ok\"},\"spec\":{\"rules\":[{\"name\":\"r\",\"match\":{\"any\":[{\"resources\":{"
	    "\"kinds\":[\"Pod\"]}}]},\"validate\":{\"failureAction\":\"Enforce\",\"message\":"
	    "\"m\",\"pattern\":{\"metadata\":{\"labels\":{\"team\":\"?*\"}}}}}]}},"
	    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"ClusterPolicy\",\"metadata\":{\"name\":"
	    "\"broken\"},\"spec\":{\"rules\":[{\"name\":\"r\",\"match\":{\"any\":[{\"resources\":"
	    "{\"kinds\":[\"Pod\"]}}]},\"validate\":{\"message\":\"{{request.userInfo.username}}\","
	    "\"deny\":{}}}]}},"
	    "{\"apiVersion\":\"kyverno.io/v1\",\"kind\":\"Policy\",\"metadata\":{\"name\":\"ns\","
	    "\"namespace\":\"team\"},\"spec\":{\"rules\":[{\"name\":\"r\",\"match\":{\"any\":[{"
	    "\"resources\":{\"kinds\":[\"Pod\"]}}]},\"validate\":{\"message\":\"m\",\"pattern\":{"
	    "\"metadata\":{\"name\":\"?*\"}}}}]}}]",
	    0, NULL);
	json_t *nss = json_loads("[{\"metadata\":{\"name\":\"a\",\"labels\":{\"env\":\"prod\"}}},"
				 "{\"metadata\":{\"name\":\"b\"}}]",
				 0, NULL);
	struct engine_policyset *set;
	json_t *map;
	size_t n = 0;

	(void)state;
	assert_non_null(pols);
	set = snapshot_build_policyset(pols, NULL, NULL, 0, &n);
	assert_int_equal(n, 2); /* "broken" is logged and left out */
	assert_int_equal(engine_policyset_count(set), 2);
	assert_string_equal(engine_policy_name(engine_policyset_get(set, 0)), "ok");
	assert_string_equal(engine_policy_namespace(engine_policyset_get(set, 1)), "team");
	engine_policyset_unref(set);
	map = snapshot_build_namespaces(nss);
	assert_string_equal(json_string_value(json_object_get(json_object_get(map, "a"), "env")),
			    "prod");
	assert_int_equal(json_object_size(json_object_get(map, "b")), 0);
	json_decref(map);
	json_decref(nss);
	json_decref(pols);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_e26_denied_exact_message),
	    cmocka_unit_test(test_e26_ignore_allowed_with_warnings),
	    cmocka_unit_test(test_allowed_and_v1beta1),
	    cmocka_unit_test(test_subresource_parent_kind),
	    cmocka_unit_test(test_delete_judged_on_old_object),
	    cmocka_unit_test(test_dry_run_judged_not_reported),
	    cmocka_unit_test(test_resource_filters_and_own_namespace),
	    cmocka_unit_test(test_kind_selectors),
	    cmocka_unit_test(test_namespace_selector_uses_snapshot_labels),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_not_ready_503),
	    cmocka_unit_test(test_roles_and_cluster_roles),
	    cmocka_unit_test(test_validate_policy),
	    cmocka_unit_test(test_validate_policy_exception),
	    cmocka_unit_test(test_policy_kinds_known),
	    cmocka_unit_test(test_warnings_limits),
	    cmocka_unit_test(test_yaml_scalars),
	    cmocka_unit_test(test_yaml_key_order),
	    cmocka_unit_test(test_metrics),
	    cmocka_unit_test(test_handler_metrics),
	    cmocka_unit_test(test_policy_metric_labels),
	    cmocka_unit_test(test_json_parser),
	    cmocka_unit_test(test_json_parse_list),
	    cmocka_unit_test(test_snapshot_build),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
