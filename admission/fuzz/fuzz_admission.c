/*
 * fuzz_admission.c - the pure admission handler (admission/admission.h):
 * body bytes -> admission_handle() and admission_handle_policy() -> reply,
 * with a fixed small policy set (and two ValidatingPolicies), namespace
 * labels and resourceFilters. No
 * sockets. A 200 reply must be an AdmissionReview jansson reads back, with
 * response.uid and response.allowed; every reply body must be
 * NUL-terminated at len.
 *
 * The handler, its metrics registry and its emit callback are made per input
 * (metric label values come from the request), so no input changes what a
 * later one sees; the policy set is compiled once.
 *
 * Input: the request body. Seeds: AdmissionReviews wrapped around the
 * resources of the golden cases and samples (build/fuzz/seeds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "admission/admission.h"
#include "common/fuzz/fuzz.h"
#include "common/yaml.h"

#include "common/banned.h"

static const char POLICIES[] =
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata: {name: require-team}\n"
    "spec:\n"
    "  validationFailureAction: Enforce\n"
    "  rules:\n"
    "  - name: team\n"
    "    match: {any: [{resources: {kinds: [Pod, Deployment], operations: [CREATE, UPDATE]}}]}\n"
    "    validate:\n"
    "      message: \"label team is required on {{ request.object.metadata.name }}\"\n"
    "      pattern: {metadata: {labels: {team: \"?*\"}}}\n"
    "  - name: no-latest\n"
    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
    "    validate:\n"
    "      message: \"no latest\"\n"
    "      pattern: {spec: {=(initContainers): [{image: \"!*:latest\"}], containers: [{image: "
    "\"!*:latest\", =(resources): {=(limits): {=(memory): \"<=1Gi\"}}}]}}\n"
    "---\n"
    "apiVersion: kyverno.io/v1\n"
    "kind: ClusterPolicy\n"
    "metadata:\n"
    "  name: audit-warn\n"
    "  annotations: {policies.kyverno.io/severity: medium, policies.kyverno.io/scored: \"false\"}\n"
    "spec:\n"
    "  background: false\n"
    "  emitWarning: true\n"
    "  failurePolicy: Ignore\n"
    "  rules:\n"
    "  - name: privileged\n"
    "    match: {any: [{resources: {kinds: [Pod], namespaceSelector: {matchExpressions: "
    "[{key: env, operator: In, values: [prod]}]}}}]}\n"
    "    exclude: {any: [{subjects: [{kind: User, name: admin}]}]}\n"
    "    validate:\n"
    "      failureAction: Audit\n"
    "      message: \"{{ request.object.metadata.annotations.\\\"a.b/c\\\" || 'x' }}: "
    "{{ request.userInfo.username }}\"\n"
    "      anyPattern:\n"
    "      - spec: {containers: [{=(securityContext): {=(privileged): false}}]}\n"
    "      - metadata: {labels: {privileged: \"true\"}}\n"
    "  - name: each-container\n"
    "    match: {any: [{resources: {kinds: [Pod], operations: [CREATE, UPDATE, DELETE]}}]}\n"
    "    context:\n"
    "    - name: cnt\n"
    "      variable: {jmesPath: \"length(request.object.spec.containers || `[]`)\", default: 0}\n"
    "    validate:\n"
    "      failureAction: Audit\n"
    "      foreach:\n"
    "      - list: \"request.object.spec.containers\"\n"
    "        deny:\n"
    "          conditions:\n"
    "            any:\n"
    "            - {key: \"{{ element.name }}\", operator: AnyIn, value: [bad, \"evil*\"]}\n"
    "            - {key: \"{{ cnt }}\", operator: GreaterThan, value: 5}\n"
    "---\n"
    "apiVersion: kyverno.io/v1\n"
    "kind: Policy\n"
    "metadata: {name: ns-limit, namespace: default}\n"
    "spec:\n"
    "  validationFailureAction: Enforce\n"
    "  background: false\n"
    "  rules:\n"
    "  - name: replicas\n"
    "    match: {any: [{resources: {kinds: [apps/v1/Deployment], selector: {matchLabels: "
    "{app: \"*\"}}}}]}\n"
    "    preconditions: {all: [{key: \"{{ request.operation }}\", operator: NotEquals, value: "
    "DELETE}]}\n"
    "    validate:\n"
    "      message: \"too many replicas: {{ request.object.spec.replicas }}\"\n"
    "      deny: {conditions: {all: [{key: \"{{ request.object.spec.replicas }}\", operator: "
    "GreaterThan, value: 3}]}}\n";

static const char NAMESPACES[] = "{\"default\":{\"env\":\"prod\"},\"dev\":{\"env\":\"dev\"}}";

static const char CONFIG[] = "{\"resourceFilters\":\"[Event,*,*][*,kube-system,*][Node,*,*]\","
			     "\"excludeUsernames\":\"system:serviceaccount:kube-system:*\","
			     "\"excludeGroups\":\"system:nodes\"}";

/* ValidatingPolicies: their results go into the emitted items too. */
static const char VPOLICIES[] =
    "[{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"ValidatingPolicy\","
    "\"metadata\":{\"name\":\"vp-team\"},\"spec\":{\"validationActions\":[\"Audit\","
    "\"Warn\"],\"matchConstraints\":{\"resourceRules\":[{\"apiGroups\":[\"\"],"
    "\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\",\"UPDATE\"],\"resources\":["
    "\"pods\",\"configmaps\"]}]},\"validations\":[{\"expression\":"
    "\"has(object.metadata.labels) && 'team' in object.metadata.labels\"}]}},"
    "{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"NamespacedValidatingPolicy\","
    "\"metadata\":{\"name\":\"nvp-deny\",\"namespace\":\"default\"},\"spec\":{"
    "\"validationActions\":[\"Deny\"],\"matchConstraints\":{\"resourceRules\":[{"
    "\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],"
    "\"resources\":[\"configmaps\"]}]},\"validations\":[{\"expression\":"
    "\"!has(object.data) || size(object.data) < 4\"}]}}]";

static struct view_state *state;

static struct view_state *load_state(void)
{
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	struct engine_policy *pv[8];
	struct engine_policyset *set;
	struct view_config *cfg;
	struct view_state *st;
	json_t *ns, *data;
	size_t n = 0;

	if (gv_yaml_load(POLICIES, sizeof(POLICIES) - 1, "policies", &docs, &err)) {
		fprintf(stderr, "fuzz_admission: policies: %s\n", err.msg);
		abort();
	}
	for (size_t i = 0; i < docs.n; i++) {
		if (!(pv[n] = engine_policy_compile(docs.v[i].value, &err))) {
			fprintf(stderr, "fuzz_admission: policy %zu: %s: %s\n", i, err.pointer,
				err.msg);
			abort();
		}
		n++;
	}
	set = engine_policyset_new(pv, n, NULL, 0);
	ns = json_loads(NAMESPACES, 0, NULL);
	data = json_loads(CONFIG, 0, NULL);
	cfg = view_config_new(data);
	st = view_state_new(set, ns, cfg);
	{
		json_t *vp = json_loads(VPOLICIES, 0, NULL), *none = json_array();
		struct view_vpolset *vs = view_vpolset_new(vp, none);
		if (!vp || view_vpolset_count(vs) != 2) {
			fprintf(stderr, "fuzz_admission: ValidatingPolicies not loaded\n");
			abort();
		}
		view_state_set_vpols(st, vs);
		view_vpolset_unref(vs);
		json_decref(none);
		json_decref(vp);
	}
	view_config_unref(cfg);
	json_decref(data);
	json_decref(ns);
	engine_policyset_unref(set);
	for (size_t i = 0; i < n; i++)
		engine_policy_unref(pv[i]);
	gv_docs_release(&docs);
	return st;
}

static void check_reply(const struct admission_reply *r, const char *what)
{
	json_t *j, *resp;

	if (!r->body || !r->content_type || strlen(r->body) != r->len) {
		fprintf(stderr, "%s: reply body missing or not NUL-terminated at len\n", what);
		abort();
	}
	if (r->http != 200)
		return;
	j = json_loadb(r->body, r->len, 0, NULL);
	resp = json_object_get(j, "response");
	if (!j || !json_is_string(json_object_get(resp, "uid")) ||
	    !json_is_boolean(json_object_get(resp, "allowed"))) {
		fprintf(stderr, "%s: 200 reply is not an AdmissionReview: %s\n", what, r->body);
		abort();
	}
	json_decref(j);
}

/* The emit callback: each audit item is freed at once (memory checked by the sanitizers). */
static void emit_free(void *ud, struct view_audit_item *it)
{
	(void)ud;
	view_audit_item_free(it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct admission_fixed_source src;
	struct admission_handler_config hc = {0};
	struct admission_handler *h;
	struct metrics_registry *metrics;
	struct admission_reply r;
	struct gv_buf text = {0};

	fuzz_init();
	if (!state)
		state = load_state();
	admission_fixed_source_init(&src, state);
	metrics = metrics_registry_new();
	hc.source = &src.source;
	hc.namespace = "gavel";
	hc.emit = emit_free;
	hc.metrics = metrics;
	h = admission_handler_new(&hc);

	admission_handle(h, (const char *)data, size, &r);
	check_reply(&r, "admission_handle");
	admission_reply_release(&r);
	admission_handle_policy(h, (const char *)data, size, &r);
	check_reply(&r, "admission_handle_policy");
	admission_reply_release(&r);

	metrics_render(metrics, &text);
	gv_buf_release(&text);

	admission_handler_free(h);
	metrics_registry_free(metrics);
	admission_fixed_source_release(&src);
	return 0;
}
