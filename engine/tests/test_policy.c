/*
 * Unit tests for engine/policy.c: policy compilation and the checks of
 * Kyverno's policy admission (kyverno-semantics.md sections 1.1-1.8, 7.1,
 * E22, E23), autogen (section 9, E25) and the effective failure action of a
 * rule (section 1.4).
 */
#include "engine/tests/testutil.h"

#include "engine/engine_int.h"

#include "common/banned.h"

#define CP	      "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n"
#define NP	      "apiVersion: kyverno.io/v1\nkind: Policy\nmetadata: {name: p, namespace: dev}\n"
#define MATCH_POD     "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
#define LABEL_PATTERN "      pattern: {metadata: {labels: {team: '?*'}}}\n"

static struct engine_policy *compile(const char *yaml, struct gv_err *err)
{
	json_t *doc = Y(yaml);
	struct engine_policy *p = engine_policy_compile(doc, err);

	json_decref(doc);
	return p;
}

static struct engine_policy *compile_ok(const char *yaml)
{
	struct gv_err err = {0};
	struct engine_policy *p = compile(yaml, &err);

	if (!p)
		print_error("compile failed: %s: %s\n%s\n", err.pointer, err.msg, yaml);
	CHECK(p != NULL, "policy did not compile");
	return p;
}

/* The policy must be rejected; msg is a prefix of the message, pointer exact (NULLs skip). */
static void check_rejected(const char *yaml, const char *msg, const char *pointer)
{
	struct gv_err err = {0};
	struct engine_policy *p = compile(yaml, &err);

	CHECK(p == NULL, "policy accepted, want '%s':\n%s", msg ? msg : "an error",
	      strstr(yaml, "rules:") ? strstr(yaml, "rules:") : yaml);
	if (p) {
		engine_policy_unref(p);
		return;
	}
	CHECK_INT(err.code, GV_EINVAL);
	if (msg)
		CHECK_PREFIX(err.msg, msg);
	if (pointer)
		CHECK_STR(err.pointer, pointer);
}

/* The policy must be rejected with exactly msg. */
static void check_rejected_exact(const char *yaml, const char *msg, const char *pointer)
{
	struct gv_err err = {0};
	struct engine_policy *p = compile(yaml, &err);

	CHECK(p == NULL, "policy accepted, want '%s'", msg);
	if (p) {
		engine_policy_unref(p);
		return;
	}
	CHECK_STR(err.msg, msg);
	if (pointer)
		CHECK_STR(err.pointer, pointer);
}

static void check_accepted(const char *yaml)
{
	struct engine_policy *p = compile_ok(yaml);
	engine_policy_unref(p);
}

/* ---- compile errors (section 1.1, 1.8, 7.1) ---- */

static void test_reject_structure(void **state)
{
	(void)state;
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN
				"  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN,
			     "Duplicate rule name: 'r'", "/spec/rules/1/name");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n" MATCH_POD "    validate:\n"
				"      patern: {metadata: {name: '?*'}}\n",
			     "unknown field \"patern\"", "/spec/rules/0/validate/patern");
	check_rejected_exact("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"
			     "metadata: {name: p, namespace: default}\n"
			     "spec:\n  background: false\n  rules:\n"
			     "  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN,
			     "A clusterpolicy should not have the namespace defined",
			     "/metadata/namespace");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n" MATCH_POD "    validate:\n"
				"      message: nothing\n",
			     "one of pattern, anyPattern, deny, foreach, cel must be specified",
			     "/spec/rules/0/validate");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN
				"      deny: {}\n",
			     "only one of pattern, anyPattern, deny, foreach, cel can be specified",
			     "/spec/rules/0/validate");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n    match: {any: [{resources: {}}]}\n"
				"    validate:\n" LABEL_PATTERN,
			     "match resources not specified", "/spec/rules/0/match/any/0");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n    match: {any: [{clusterRoles: [cluster-admin]}]}\n"
				"    validate:\n" LABEL_PATTERN,
			     "match resources not specified", "/spec/rules/0/match/any/0");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n" MATCH_POD "    validate:\n"
				"      deny:\n        conditions:\n          any:\n"
				"          - {key: a, operator: equals, value: a}\n",
			     "entered value of `operator` is invalid: equals",
			     "/spec/rules/0/validate/deny/conditions/any/0/operator");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n"
				"    match: {any: [{resources: {kinds: [Pod], names: "
				"['{{ request.object.metadata.name }}']}}]}\n"
				"    validate:\n" LABEL_PATTERN,
			     "rule \"r\" should not have variables in match section",
			     "/spec/rules/0/match");
	check_rejected_exact(CP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n" MATCH_POD "    validate:\n"
				"      pattern: {spec: {+(hostNetwork): false}}\n",
			     "unsupported anchor +(hostNetwork)",
			     "/spec/rules/0/validate/pattern/spec/+(hostNetwork)");
	/* a rule needs exactly one of validate, mutate, generate, verifyImages */
	check_rejected(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD,
		       "No operation defined", NULL);
	check_rejected(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN
			  "    mutate: {patchStrategicMerge: {metadata: {labels: {a: b}}}}\n",
		       "Multiple operations defined", NULL);
	/* match/any together with all */
	check_rejected(CP
		       "spec:\n  background: false\n  rules:\n"
		       "  - name: r\n"
		       "    match: {any: [{resources: {kinds: [Pod]}}], all: [{resources: {kinds: "
		       "[Pod]}}]}\n"
		       "    validate:\n" LABEL_PATTERN,
		       "can't specify any/all together", NULL);
	/* name and names together */
	check_rejected(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n"
			  "    match: {any: [{resources: {kinds: [Pod], name: a, names: [b]}}]}\n"
			  "    validate:\n" LABEL_PATTERN,
		       NULL, NULL);
	/* names longer than 63 characters */
	check_rejected(
	    CP "spec:\n  background: false\n  rules:\n"
	       "  - name: "
	       "r0123456789012345678901234567890123456789012345678901234567890123\n" MATCH_POD
	       "    validate:\n" LABEL_PATTERN,
	    NULL, NULL);
	check_rejected(
	    "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"
	    "metadata: {name: p0123456789012345678901234567890123456789012345678901234567890123}\n"
	    "spec:\n  background: false\n  rules:\n"
	    "  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN,
	    NULL, NULL);
	/* admission: false together with background: false */
	check_rejected(CP "spec:\n  background: false\n  admission: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN,
		       NULL, NULL);
	CHECK_DONE();
}

static void test_reject_label_values(void **state)
{
	(void)state;
	/* section 1.8: non-string label values in a pattern */
	check_rejected(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      pattern: {metadata: {labels: {team: 1}}}\n",
		       "labels and annotations supports only string values", NULL);
	check_rejected(CP
		       "spec:\n  background: false\n  rules:\n"
		       "  - name: r\n" MATCH_POD "    validate:\n"
		       "      pattern: {spec: {template: {metadata: {annotations: {a: true}}}}}\n",
		       "labels and annotations supports only string values", NULL);
	/* strings are fine, and so is a non-string under =(labels) (E16) */
	check_accepted(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      pattern: {metadata: {=(labels): {X(team): null}}}\n");
	CHECK_DONE();
}

static void test_reject_conditions(void **state)
{
	(void)state;
	/* section 1.8: {{ request.operation }} compared with something else */
	check_rejected(CP
		       "spec:\n  background: false\n  rules:\n"
		       "  - name: r\n" MATCH_POD "    preconditions:\n      all:\n"
		       "      - {key: '{{ request.operation }}', operator: Equals, value: CREAT}\n"
		       "    validate:\n" LABEL_PATTERN,
		       NULL, NULL);
	check_accepted(CP
		       "spec:\n  background: false\n  rules:\n"
		       "  - name: r\n" MATCH_POD "    preconditions:\n      all:\n"
		       "      - {key: '{{ request.operation }}', operator: AnyIn, value: [CREATE, "
		       "UPDATE]}\n"
		       "    validate:\n" LABEL_PATTERN);
	/* section 1.8: a condition without a value */
	check_rejected(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      deny:\n        conditions:\n          all:\n"
			  "          - {key: a, operator: Equals}\n",
		       NULL, NULL);
	CHECK_DONE();
}

static void test_reject_variables(void **state)
{
	(void)state;
	/* section 1.8: unknown variable roots */
	check_rejected(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      message: 'owner {{ foo.bar }}'\n" LABEL_PATTERN,
		       "policy contains invalid variables", NULL);
	/* ... a declared context entry makes the root known */
	check_accepted(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD
			  "    context: [{name: foo, variable: {value: {bar: x}}}]\n"
			  "    validate:\n"
			  "      message: 'owner {{ foo.bar }}'\n" LABEL_PATTERN);
	/* section 1.7: element variables outside a foreach */
	check_rejected(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      message: 'bad {{ element.name }}'\n" LABEL_PATTERN,
		       "variable 'element' present outside of foreach at path", NULL);
	/* ... inside a foreach they are fine */
	check_accepted(CP
		       "spec:\n  background: false\n  rules:\n"
		       "  - name: r\n" MATCH_POD "    validate:\n"
		       "      foreach:\n      - list: request.object.spec.containers\n"
		       "        deny:\n          conditions:\n            any:\n"
		       "            - {key: '{{ element.name }}', operator: Equals, value: x}\n");
	CHECK_DONE();
}

static void test_reject_namespaced_policy(void **state)
{
	(void)state;
	/* section 1.2 */
	check_rejected_exact(NP
			     "spec:\n  background: false\n"
			     "  validationFailureActionOverrides: [{action: Enforce, namespaces: "
			     "[dev]}]\n  rules:\n"
			     "  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN,
			     "Use of validationFailureActionOverrides is supported only with "
			     "ClusterPolicy",
			     "/spec/validationFailureActionOverrides");
	/* section 1.6 */
	check_rejected(NP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n"
			  "    match: {any: [{resources: {kinds: [Pod], namespaces: [dev]}}]}\n"
			  "    validate:\n" LABEL_PATTERN,
		       "Filtering namespaces not allowed in namespaced policies", NULL);
	/* E22: cluster-scoped kinds */
	check_rejected_exact(NP "spec:\n  background: false\n  rules:\n"
				"  - name: r\n"
				"    match: {any: [{resources: {kinds: [Namespace]}}]}\n"
				"    validate:\n      pattern: {metadata: {name: '?*'}}\n",
			     "Cluster wide resource 'Namespace' not allowed in namespaced policy",
			     "/spec/rules/0/match/any/0/resources/kinds/0");
	/* a ClusterPolicy may use overrides */
	check_accepted(CP "spec:\n  background: false\n"
			  "  validationFailureActionOverrides: [{action: Enforce, namespaces: "
			  "[dev]}]\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN);
	CHECK_DONE();
}

static void test_reject_background(void **state)
{
	const char *msg_prefix = "only select variables are allowed in background mode. Set "
				 "spec.background=false to disable background mode for this policy "
				 "rule: ";
	char *want;
	(void)state;

	/* E23: admission-only variables with background (default true) */
	want =
	    gv_xasprintf("%svariable {{ request.userInfo.username }} is not allowed", msg_prefix);
	check_rejected_exact(CP
			     "spec:\n  rules:\n"
			     "  - name: r\n" MATCH_POD "    validate:\n"
			     "      message: 'by {{ request.userInfo.username }}'\n" LABEL_PATTERN,
			     want, "/spec/rules/0");
	free(want);
	want = gv_xasprintf("%svariable {{serviceAccountName}} is not allowed", msg_prefix);
	check_rejected_exact(CP
			     "spec:\n  background: true\n  rules:\n"
			     "  - name: r\n" MATCH_POD "    validate:\n"
			     "      deny:\n        conditions:\n          all:\n"
			     "          - {key: '{{serviceAccountName}}', operator: Equals, value: "
			     "admin}\n",
			     want, "/spec/rules/0");
	free(want);
	want = gv_xasprintf("%svariable {{ request.roles }} is not allowed", msg_prefix);
	check_rejected_exact(CP "spec:\n  rules:\n"
				"  - name: r\n" MATCH_POD
				"    preconditions: [{key: '{{ request.roles }}', operator: AnyIn, "
				"value: ['default:admin']}]\n"
				"    validate:\n" LABEL_PATTERN,
			     want, "/spec/rules/0");
	free(want);
	/* E23: user-info match/exclude with background */
	want = gv_xasprintf(
	    "%sinvalid variable used at path: spec/rules[0]/exclude/any[0]/clusterRoles",
	    msg_prefix);
	check_rejected_exact(CP "spec:\n  rules:\n"
				"  - name: r\n" MATCH_POD
				"    exclude: {any: [{clusterRoles: [cluster-admin]}]}\n"
				"    validate:\n" LABEL_PATTERN,
			     want, "/spec/rules/0");
	free(want);
	want = gv_xasprintf("%sinvalid variable used at path: spec/rules[1]/match/any[0]/subjects",
			    msg_prefix);
	check_rejected_exact(
	    CP "spec:\n  rules:\n"
	       "  - name: a\n" MATCH_POD "    validate:\n" LABEL_PATTERN "  - name: b\n"
	       "    match: {any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, "
	       "name: alice}]}]}\n"
	       "    validate:\n" LABEL_PATTERN,
	    want, "/spec/rules/1");
	free(want);
	/* the same policies without background are accepted */
	check_accepted(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      message: 'by {{ request.userInfo.username }}'\n" LABEL_PATTERN);
	check_accepted(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD
			  "    exclude: {any: [{clusterRoles: [cluster-admin]}]}\n"
			  "    validate:\n" LABEL_PATTERN);
	/* E23: request.oldObject passes the creation-time check */
	check_accepted(
	    CP "spec:\n  rules:\n"
	       "  - name: r\n" MATCH_POD "    validate:\n"
	       "      deny:\n        conditions:\n          all:\n"
	       "          - {key: '{{ request.oldObject.metadata.name }}', operator: Equals, "
	       "value: x}\n");
	CHECK_DONE();
}

static void test_reject_background_kinds(void **state)
{
	(void)state;
	/* section 7.1: kinds ["*"] and subresources */
	check_rejected(CP "spec:\n  rules:\n"
			  "  - name: r\n    match: {any: [{resources: {kinds: ['*']}}]}\n"
			  "    validate:\n      pattern: {metadata: {labels: {team: '?*'}}}\n",
		       "wildcard policy not allowed in background mode", NULL);
	{
		struct gv_err err = {0};
		struct engine_policy *p =
		    compile(CP "spec:\n  rules:\n"
			       "  - name: r\n    match: {any: [{resources: {kinds: "
			       "[Pod/exec]}}]}\n"
			       "    validate:\n      deny: {}\n",
			    &err);
		CHECK(p == NULL, "subresource kind with background accepted");
		CHECK(p || strstr(err.msg, "background scan enabled with subresource"),
		      "message '%s'", err.msg);
		engine_policy_unref(p);
	}
	/* without background both are accepted */
	check_accepted(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n    match: {any: [{resources: {kinds: ['*']}}]}\n"
			  "    validate:\n      pattern: {metadata: {labels: {team: '?*'}}}\n");
	check_accepted(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n    match: {any: [{resources: {kinds: [Pod/exec]}}]}\n"
			  "    validate:\n      deny: {}\n");
	CHECK_DONE();
}

/* ---- accessors ---- */

static void test_accessors(void **state)
{
	struct engine_policy *p;
	(void)state;

	p = compile_ok("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"
		       "metadata: {name: p, annotations: {policies.kyverno.io/severity: high}}\n"
		       "spec:\n  rules:\n"
		       "  - name: r\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
		       "    validate:\n" LABEL_PATTERN);
	if (p) {
		CHECK_STR(engine_policy_name(p), "p");
		CHECK_STR(engine_policy_namespace(p), "");
		CHECK_STR(engine_policy_kind(p), "ClusterPolicy");
		CHECK(engine_policy_background(p), "background defaults to true");
		CHECK(engine_policy_admission(p), "admission defaults to true");
		CHECK(!engine_policy_emit_warning(p), "emitWarning defaults to false");
		CHECK(engine_policy_failure_policy(p) == ENGINE_FAILURE_FAIL, "failurePolicy Fail");
		CHECK_STR(engine_policy_annotation(p, "policies.kyverno.io/severity"), "high");
		CHECK(engine_policy_annotation(p, "nope") == NULL, "missing annotation");
		CHECK_INT(engine_policy_rule_count(p), 1);
		CHECK_STR(engine_policy_rule_name(p, 0), "r");
		CHECK(engine_policy_rule_background_safe(p, 0), "background-safe");
		CHECK_INT(p->action, ENGINE_AUDIT);
		engine_policy_unref(p);
	}
	p = compile_ok(
	    NP "spec:\n  background: false\n  failurePolicy: Ignore\n"
	       "  emitWarning: true\n  rules:\n"
	       "  - name: safe\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	       "    validate:\n" LABEL_PATTERN
	       "  - name: unsafe\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	       "    validate:\n      message: 'by {{ request.userInfo.username }}'\n" LABEL_PATTERN
	       "  - name: unsafe-match\n"
	       "    match: {any: [{resources: {kinds: [ConfigMap]}, roles: ['dev:admin']}]}\n"
	       "    validate:\n" LABEL_PATTERN);
	if (p) {
		CHECK_STR(engine_policy_namespace(p), "dev");
		CHECK_STR(engine_policy_kind(p), "Policy");
		CHECK(!engine_policy_background(p), "background false");
		CHECK(engine_policy_emit_warning(p), "emitWarning");
		CHECK(engine_policy_failure_policy(p) == ENGINE_FAILURE_IGNORE,
		      "failurePolicy Ignore");
		CHECK_INT(engine_policy_rule_count(p), 3);
		CHECK(engine_policy_rule_background_safe(p, 0), "rule safe");
		CHECK(!engine_policy_rule_background_safe(p, 1),
		      "request.userInfo is admission-only");
		CHECK(!engine_policy_rule_background_safe(p, 2),
		      "roles in match are admission-only");
		engine_policy_unref(p);
	}
	/* webhookConfiguration.failurePolicy */
	p = compile_ok(
	    CP "spec:\n  background: false\n  webhookConfiguration: {failurePolicy: Ignore}\n"
	       "  rules:\n  - name: r\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	       "    validate:\n" LABEL_PATTERN);
	if (p) {
		CHECK(engine_policy_failure_policy(p) == ENGINE_FAILURE_IGNORE,
		      "webhookConfiguration.failurePolicy Ignore");
		engine_policy_unref(p);
	}
	CHECK_DONE();
}

/* ---- effective failure action (section 1.4) ---- */

static enum engine_action action_of(const char *spec_and_rules, const char *ns, const char *labels)
{
	char *yaml = gv_xasprintf(CP "spec:\n  background: false\n%s", spec_and_rules);
	struct engine_policy *p = compile_ok(yaml);
	json_t *l = labels ? J(labels) : NULL;
	enum engine_action a = ENGINE_AUDIT;

	if (p) {
		a = rule_effective_action(p, &p->rules[0], ns, l);
		engine_policy_unref(p);
	}
	json_decref(l);
	free(yaml);
	return a;
}

#define RULE_CM "  - name: r\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"

static void test_effective_action(void **state)
{
	(void)state;
	/* spec.validationFailureAction: only Enforce/enforce enforce, default Audit */
	CHECK_INT(action_of("  rules:\n" RULE_CM "    validate:\n" LABEL_PATTERN, "dev", NULL),
		  ENGINE_AUDIT);
	CHECK_INT(action_of("  validationFailureAction: Enforce\n  rules:\n" RULE_CM
			    "    validate:\n" LABEL_PATTERN,
			    "dev", NULL),
		  ENGINE_ENFORCE);
	CHECK_INT(action_of("  validationFailureAction: enforce\n  rules:\n" RULE_CM
			    "    validate:\n" LABEL_PATTERN,
			    "dev", NULL),
		  ENGINE_ENFORCE);
	CHECK_INT(action_of("  validationFailureAction: audit\n  rules:\n" RULE_CM
			    "    validate:\n" LABEL_PATTERN,
			    "dev", NULL),
		  ENGINE_AUDIT);
	/* rule failureAction wins over the spec action */
	CHECK_INT(action_of("  validationFailureAction: Audit\n  rules:\n" RULE_CM
			    "    validate:\n      failureAction: Enforce\n" LABEL_PATTERN,
			    "dev", NULL),
		  ENGINE_ENFORCE);
	CHECK_INT(action_of("  validationFailureAction: Enforce\n  rules:\n" RULE_CM
			    "    validate:\n      failureAction: Audit\n" LABEL_PATTERN,
			    "dev", NULL),
		  ENGINE_AUDIT);
	/* spec overrides: first matching entry decides, namespaces are wildcards */
	{
		const char *pol = "  validationFailureAction: Audit\n"
				  "  validationFailureActionOverrides:\n"
				  "  - {action: Enforce, namespaces: ['prod-*']}\n"
				  "  - {action: Audit, namespaces: [prod-x, staging]}\n"
				  "  - {action: Enforce, namespaceSelector: {matchLabels: {env: "
				  "secure}}}\n"
				  "  rules:\n" RULE_CM "    validate:\n" LABEL_PATTERN;
		CHECK_INT(action_of(pol, "prod-1", NULL), ENGINE_ENFORCE);
		CHECK_INT(action_of(pol, "prod-x", NULL), ENGINE_ENFORCE);
		CHECK_INT(action_of(pol, "staging", NULL), ENGINE_AUDIT);
		CHECK_INT(action_of(pol, "dev", NULL), ENGINE_AUDIT);
		CHECK_INT(action_of(pol, "dev", "{'env': 'secure'}"), ENGINE_ENFORCE);
		CHECK_INT(action_of(pol, "dev", "{'env': 'open'}"), ENGINE_AUDIT);
		/* cluster-scoped: only entries without namespaces/selector can match */
		CHECK_INT(action_of(pol, "", NULL), ENGINE_AUDIT);
	}
	/* an entry without namespaces and selector matches every namespace, cluster scope too */
	{
		const char *pol = "  validationFailureActionOverrides: [{action: Enforce}]\n"
				  "  rules:\n" RULE_CM "    validate:\n" LABEL_PATTERN;
		CHECK_INT(action_of(pol, "dev", NULL), ENGINE_ENFORCE);
		CHECK_INT(action_of(pol, "", NULL), ENGINE_ENFORCE);
	}
	/* rule overrides replace the spec overrides entirely */
	{
		const char *pol =
		    "  validationFailureAction: Audit\n"
		    "  validationFailureActionOverrides: [{action: Enforce, namespaces: "
		    "['prod-*']}]\n"
		    "  rules:\n" RULE_CM "    validate:\n"
		    "      failureActionOverrides: [{action: Audit, namespaces: "
		    "[prod-1]}]\n" LABEL_PATTERN;
		CHECK_INT(action_of(pol, "prod-1", NULL), ENGINE_AUDIT);
		CHECK_INT(action_of(pol, "prod-2", NULL), ENGINE_AUDIT);
	}
	{
		const char *pol = "  rules:\n" RULE_CM "    validate:\n"
				  "      failureAction: Audit\n"
				  "      failureActionOverrides: [{action: Enforce, namespaces: "
				  "[prod]}]\n" LABEL_PATTERN;
		CHECK_INT(action_of(pol, "prod", NULL), ENGINE_ENFORCE);
		CHECK_INT(action_of(pol, "dev", NULL), ENGINE_AUDIT);
	}
	/* routing order: spec overrides come before the rule failureAction */
	{
		const char *pol =
		    "  validationFailureActionOverrides: [{action: Enforce, namespaces: "
		    "[prod]}]\n"
		    "  rules:\n" RULE_CM
		    "    validate:\n      failureAction: Audit\n" LABEL_PATTERN;
		CHECK_INT(action_of(pol, "prod", NULL), ENGINE_ENFORCE);
		CHECK_INT(action_of(pol, "dev", NULL), ENGINE_AUDIT);
	}
	CHECK_DONE();
}

/* ---- autogen (section 9, E25) ---- */

static json_t *autogen_of(const char *yaml)
{
	json_t *doc = Y(yaml);
	json_t *r = autogen_rules(doc);

	json_decref(doc);
	return r;
}

static const char *rule_name_at(const json_t *rules, size_t i)
{
	return json_string_value(json_object_get(json_array_get(rules, i), "name"));
}

/* j at a path of object keys and array indexes ("a/0/b"). */
static const json_t *at(const json_t *j, const char *path)
{
	char *copy = gv_xstrdup(path), *save = NULL;

	for (char *seg = strtok_r(copy, "/", &save); seg && j; seg = strtok_r(NULL, "/", &save)) {
		if (json_is_array(j))
			j = json_array_get(j, strtoul(seg, NULL, 10));
		else
			j = json_object_get(j, seg);
	}
	free(copy);
	return j;
}

#define ALL_CONTROLLERS                                                                            \
	"['apps/v1/DaemonSet', 'apps/v1/Deployment', 'batch/v1/Job', 'apps/v1/ReplicaSet', "       \
	"'v1/ReplicationController', 'apps/v1/StatefulSet']"

static const char autogen_policy[] =
    CP "spec:\n  background: false\n  rules:\n"
       "  - name: r\n"
       "    match: {any: [{resources: {kinds: [Pod], namespaces: [prod]}}]}\n"
       "    preconditions:\n      all:\n"
       "      - {key: \"{{ request.object.metadata.labels.skip || '' }}\", operator: NotEquals, "
       "value: 'yes'}\n"
       "      - {key: '{{ request.\"object\".metadata.name }}', operator: NotEquals, value: x}\n"
       "    validate:\n"
       "      failureAction: Enforce\n"
       "      allowExistingViolations: false\n"
       "      failureActionOverrides: [{action: Audit, namespaces: [dev]}]\n"
       "      message: images must come from reg.io\n"
       "      pattern: {spec: {containers: [{image: 'reg.io/*'}]}}\n";

static void test_autogen_rules(void **state)
{
	json_t *g = autogen_of(autogen_policy);
	struct engine_policy *p;
	(void)state;

	CHECK_INT(json_array_size(g), 2);
	CHECK_STR(rule_name_at(g, 0), "autogen-r");
	CHECK_STR(rule_name_at(g, 1), "autogen-cronjob-r");
	/* controllers: GVK kinds, other filter fields copied */
	CHECK_JSON(at(g, "0/match/any/0/resources/kinds"), ALL_CONTROLLERS);
	CHECK_JSON(at(g, "0/match/any/0/resources/namespaces"), "['prod']");
	CHECK_JSON(at(g, "0/validate/pattern"),
		   "{'spec': {'template': {'spec': {'containers': [{'image': 'reg.io/*'}]}}}}");
	CHECK_JSON(at(g, "0/validate/failureAction"), "'Enforce'");
	CHECK_JSON(at(g, "0/validate/allowExistingViolations"), "false");
	CHECK_JSON(at(g, "0/validate/failureActionOverrides"),
		   "[{'action': 'Audit', 'namespaces': ['dev']}]");
	CHECK_JSON(at(g, "0/validate/message"), "'images must come from reg.io'");
	CHECK_STR(json_string_value(at(g, "0/preconditions/all/0/key")),
		  "{{ request.object.spec.template.metadata.labels.skip || '' }}");
	/* request."object" is left alone */
	CHECK_STR(json_string_value(at(g, "0/preconditions/all/1/key")),
		  "{{ request.\"object\".metadata.name }}");
	/* CronJob */
	CHECK_JSON(at(g, "1/match/any/0/resources/kinds"), "['batch/v1/CronJob']");
	CHECK_JSON(at(g, "1/match/any/0/resources/namespaces"), "['prod']");
	CHECK_JSON(at(g, "1/validate/pattern"),
		   "{'spec': {'jobTemplate': {'spec': {'template': {'spec': {'containers': "
		   "[{'image': 'reg.io/*'}]}}}}}}");
	CHECK_STR(json_string_value(at(g, "1/preconditions/all/0/key")),
		  "{{ request.object.spec.jobTemplate.spec.template.metadata.labels.skip || '' }}");
	CHECK_STR(json_string_value(at(g, "1/preconditions/all/1/key")),
		  "{{ request.\"object\".metadata.name }}");
	json_decref(g);

	/* the compiled policy has the original rule first, then the generated ones */
	p = compile_ok(autogen_policy);
	if (p) {
		CHECK_INT(engine_policy_rule_count(p), 3);
		CHECK_STR(engine_policy_rule_name(p, 0), "r");
		CHECK_STR(engine_policy_rule_name(p, 1), "autogen-r");
		CHECK_STR(engine_policy_rule_name(p, 2), "autogen-cronjob-r");
		CHECK(!p->rules[1].allow_existing, "allowExistingViolations carried over");
		CHECK(p->rules[1].has_action && p->rules[1].action == ENGINE_ENFORCE,
		      "failureAction carried over");
		engine_policy_unref(p);
	}
	CHECK_DONE();
}

static void test_autogen_bodies(void **state)
{
	json_t *g;
	(void)state;

	/* deny: not wrapped, variables rewritten (object and oldObject, spec and metadata) */
	g = autogen_of(
	    CP "spec:\n  background: false\n  rules:\n"
	       "  - name: r\n" MATCH_POD "    validate:\n"
	       "      deny:\n        conditions:\n          any:\n"
	       "          - {key: '{{ request.object.spec.hostNetwork }}', operator: Equals, "
	       "value: true}\n"
	       "          - {key: '{{ request.oldObject.spec.hostNetwork }}', operator: "
	       "Equals, value: true}\n"
	       "          - {key: '{{ request.oldObject.metadata.name }}', operator: "
	       "Equals, value: x}\n");
	CHECK_INT(json_array_size(g), 2);
	CHECK(at(g, "0/validate/pattern") == NULL, "deny gets no pattern");
	CHECK_JSON(at(g, "0/validate/deny/conditions/any/0/key"),
		   "'{{ request.object.spec.template.spec.hostNetwork }}'");
	CHECK_JSON(at(g, "0/validate/deny/conditions/any/1/key"),
		   "'{{ request.oldObject.spec.template.spec.hostNetwork }}'");
	CHECK_JSON(at(g, "0/validate/deny/conditions/any/2/key"),
		   "'{{ request.oldObject.spec.template.metadata.name }}'");
	CHECK_JSON(at(g, "1/validate/deny/conditions/any/0/key"),
		   "'{{ request.object.spec.jobTemplate.spec.template.spec.hostNetwork }}'");
	json_decref(g);

	/* anyPattern: every element wrapped */
	g = autogen_of(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      anyPattern:\n"
			  "      - {spec: {hostNetwork: false}}\n"
			  "      - {metadata: {labels: {ok: 'true'}}}\n");
	CHECK_JSON(at(g, "0/validate/anyPattern"),
		   "[{'spec': {'template': {'spec': {'hostNetwork': false}}}},"
		   " {'spec': {'template': {'metadata': {'labels': {'ok': 'true'}}}}}]");
	CHECK_JSON(at(g, "1/validate/anyPattern/1"),
		   "{'spec': {'jobTemplate': {'spec': {'template': {'metadata': {'labels': {'ok': "
		   "'true'}}}}}}}");
	json_decref(g);

	/* foreach: the list expression is rewritten */
	g = autogen_of(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD "    validate:\n"
			  "      foreach:\n"
			  "      - list: request.object.spec.containers\n"
			  "        pattern: {image: 'reg.io/*'}\n");
	CHECK_JSON(at(g, "0/validate/foreach/0/list"),
		   "'request.object.spec.template.spec.containers'");
	CHECK_JSON(at(g, "0/validate/foreach/0/pattern"), "{'image': 'reg.io/*'}");
	CHECK_JSON(at(g, "1/validate/foreach/0/list"),
		   "'request.object.spec.jobTemplate.spec.template.spec.containers'");
	json_decref(g);
	CHECK_DONE();
}

static void test_autogen_filters(void **state)
{
	json_t *g;
	(void)state;

	/* only filters holding Pod get the controller kinds; GVK forms count in kinds */
	g = autogen_of(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n"
			  "    match: {any: [{resources: {kinds: [v1/Pod]}}, {resources: {kinds: "
			  "[Deployment]}}]}\n"
			  "    exclude: {any: [{resources: {namespaces: [kube-system]}}]}\n"
			  "    validate:\n" LABEL_PATTERN);
	CHECK_INT(json_array_size(g), 2);
	CHECK_JSON(at(g, "0/match/any/0/resources/kinds"), ALL_CONTROLLERS);
	CHECK_JSON(at(g, "0/match/any/1/resources/kinds"), "['Deployment']");
	CHECK_JSON(at(g, "0/exclude/any/0/resources/namespaces"), "['kube-system']");
	json_decref(g);

	/* exclude kinds must contain Pod too */
	g = autogen_of(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n" MATCH_POD
			  "    exclude: {any: [{resources: {kinds: [Service]}}]}\n"
			  "    validate:\n" LABEL_PATTERN);
	CHECK_INT(json_array_size(g), 0);
	json_decref(g);
	g = autogen_of(
	    CP "spec:\n  background: false\n  rules:\n"
	       "  - name: r\n" MATCH_POD
	       "    exclude: {any: [{resources: {kinds: [Pod], namespaces: [kube-system]}}]}\n"
	       "    validate:\n" LABEL_PATTERN);
	CHECK_INT(json_array_size(g), 2);
	CHECK_JSON(at(g, "0/exclude/any/0/resources/kinds"), ALL_CONTROLLERS);
	CHECK_JSON(at(g, "1/exclude/any/0/resources/kinds"), "['batch/v1/CronJob']");
	json_decref(g);

	/* legacy match form */
	g = autogen_of(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: r\n    match: {resources: {kinds: [Pod]}}\n"
			  "    validate:\n" LABEL_PATTERN);
	CHECK_INT(json_array_size(g), 2);
	CHECK_JSON(at(g, "0/match/resources/kinds"), ALL_CONTROLLERS);
	json_decref(g);

	/* a rule that does not match Pods gets no generated rules */
	g = autogen_of(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: a\n" MATCH_POD "    validate:\n" LABEL_PATTERN
			  "  - name: b\n    match: {any: [{resources: {kinds: [Deployment]}}]}\n"
			  "    validate:\n" LABEL_PATTERN
			  "  - name: c\n    match: {any: [{resources: {kinds: [v1/Pod]}}]}\n"
			  "    validate:\n" LABEL_PATTERN);
	CHECK_INT(json_array_size(g), 4);
	CHECK_STR(rule_name_at(g, 0), "autogen-a");
	CHECK_STR(rule_name_at(g, 1), "autogen-cronjob-a");
	CHECK_STR(rule_name_at(g, 2), "autogen-c");
	CHECK_STR(rule_name_at(g, 3), "autogen-cronjob-c");
	json_decref(g);

	/* names are truncated to 63 characters */
	g = autogen_of(
	    CP "spec:\n  background: false\n  rules:\n"
	       "  - name: abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789\n" MATCH_POD
	       "    validate:\n" LABEL_PATTERN);
	CHECK_STR(rule_name_at(g, 0),
		  "autogen-abcdefghij0123456789abcdefghij0123456789abcdefghij01234");
	CHECK_STR(rule_name_at(g, 1),
		  "autogen-cronjob-abcdefghij0123456789abcdefghij0123456789abcdefg");
	json_decref(g);
	CHECK_DONE();
}

static void test_autogen_disabled(void **state)
{
	static const char *const off[] = {
	    /* name / names / selector / annotations in match or exclude of any rule */
	    "    match: {any: [{resources: {kinds: [Pod], names: ['web-*']}}]}\n",
	    "    match: {any: [{resources: {kinds: [Pod], name: web}}]}\n",
	    "    match: {any: [{resources: {kinds: [Pod], selector: {matchLabels: {a: b}}}}]}\n",
	    "    match: {any: [{resources: {kinds: [Pod], annotations: {a: b}}}]}\n",
	    MATCH_POD "    exclude: {any: [{resources: {selector: {matchLabels: {a: b}}}}]}\n",
	    MATCH_POD "    exclude: {any: [{resources: {names: [x]}}]}\n",
	    "    match: {resources: {kinds: [Pod], selector: {matchLabels: {a: b}}}}\n",
	    /* Pod together with another kind in one list */
	    "    match: {any: [{resources: {kinds: [Pod, Service]}}]}\n",
	    /* only v1/Pod: not recognised by the policy-wide check */
	    "    match: {any: [{resources: {kinds: [v1/Pod]}}]}\n",
	};
	json_t *g;
	(void)state;

	for (size_t i = 0; i < GV_ARRAY_LEN(off); i++) {
		char *yaml = gv_xasprintf(CP "spec:\n  background: false\n  rules:\n"
					     "  - name: r\n%s    validate:\n" LABEL_PATTERN,
					  off[i]);
		g = autogen_of(yaml);
		CHECK(json_array_size(g) == 0, "autogen not disabled by:\n%s", off[i]);
		json_decref(g);
		free(yaml);
	}
	/* a selector in another rule disables autogen for the whole policy */
	g = autogen_of(CP
		       "spec:\n  background: false\n  rules:\n"
		       "  - name: a\n" MATCH_POD "    validate:\n" LABEL_PATTERN "  - name: b\n"
		       "    match: {any: [{resources: {kinds: [Service], selector: {matchLabels: "
		       "{a: b}}}}]}\n"
		       "    validate:\n" LABEL_PATTERN);
	CHECK_INT(json_array_size(g), 0);
	json_decref(g);
	/* a generate rule disables it too */
	g = autogen_of(CP
		       "spec:\n  background: false\n  rules:\n"
		       "  - name: a\n" MATCH_POD "    validate:\n" LABEL_PATTERN
		       "  - name: g\n    match: {any: [{resources: {kinds: [Namespace]}}]}\n"
		       "    generate: {kind: ConfigMap, name: c, namespace: default, data: {}}\n");
	CHECK_INT(json_array_size(g), 0);
	json_decref(g);
	CHECK_DONE();
}

/* Section 9.1: a mutate rule using patchesJson6902 turns autogen off. */
static void test_autogen_disabled_by_json6902(void **state)
{
	json_t *g;
	(void)state;

	g = autogen_of(
	    CP
	    "spec:\n  background: false\n  rules:\n"
	    "  - name: a\n" MATCH_POD "    validate:\n" LABEL_PATTERN "  - name: m\n" MATCH_POD
	    "    mutate: {patchesJson6902: '[{\"op\": \"add\", \"path\": \"/metadata/labels/a\", "
	    "\"value\": \"b\"}]'}\n");
	CHECK_INT(json_array_size(g), 0);
	json_decref(g);
	/* also inside a mutate foreach */
	g = autogen_of(CP "spec:\n  background: false\n  rules:\n"
			  "  - name: a\n" MATCH_POD "    validate:\n" LABEL_PATTERN
			  "  - name: m\n" MATCH_POD
			  "    mutate: {foreach: [{list: request.object.spec.containers, "
			  "patchesJson6902: '[]'}]}\n");
	CHECK_INT(json_array_size(g), 0);
	json_decref(g);
	CHECK_DONE();
}

static json_t *autogen_annotated(const char *value)
{
	char *yaml = gv_xasprintf("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"
				  "metadata:\n  name: p\n  annotations:\n"
				  "    pod-policies.kyverno.io/autogen-controllers: '%s'\n"
				  "spec:\n  background: false\n  rules:\n"
				  "  - name: r\n" MATCH_POD "    validate:\n" LABEL_PATTERN,
				  value);
	json_t *g = autogen_of(yaml);

	free(yaml);
	return g;
}

static void test_autogen_annotation(void **state)
{
	json_t *g;
	(void)state;

	g = autogen_annotated("none");
	CHECK_INT(json_array_size(g), 0);
	json_decref(g);

	g = autogen_annotated("Deployment");
	CHECK_INT(json_array_size(g), 1);
	CHECK_STR(rule_name_at(g, 0), "autogen-r");
	CHECK_JSON(at(g, "0/match/any/0/resources/kinds"), "['apps/v1/Deployment']");
	json_decref(g);

	g = autogen_annotated("Deployment,CronJob");
	CHECK_INT(json_array_size(g), 2);
	CHECK_STR(rule_name_at(g, 0), "autogen-r");
	CHECK_JSON(at(g, "0/match/any/0/resources/kinds"), "['apps/v1/Deployment']");
	CHECK_STR(rule_name_at(g, 1), "autogen-cronjob-r");
	json_decref(g);

	g = autogen_annotated("CronJob");
	CHECK_INT(json_array_size(g), 1);
	CHECK_STR(rule_name_at(g, 0), "autogen-cronjob-r");
	json_decref(g);

	/* split on "," without trimming: " StatefulSet" is not a controller */
	g = autogen_annotated("Deployment, StatefulSet");
	CHECK_INT(json_array_size(g), 1);
	CHECK_JSON(at(g, "0/match/any/0/resources/kinds"), "['apps/v1/Deployment']");
	json_decref(g);

	g = autogen_annotated("DaemonSet,Job");
	CHECK_INT(json_array_size(g), 1);
	CHECK_JSON(at(g, "0/match/any/0/resources/kinds"), "['apps/v1/DaemonSet', 'batch/v1/Job']");
	json_decref(g);
	CHECK_DONE();
}

/* ---- engine_doc_reads_outside ---- */

static void check_reads_outside(const char *yaml, bool want)
{
	json_t *doc = Y(yaml);

	CHECK_INT(engine_doc_reads_outside(doc), want);
	json_decref(doc);
}

static void test_doc_reads_outside(void **state)
{
	static const char head[] = "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"
				   "metadata: {name: p}\nspec:\n  rules:\n  - name: r\n";
	char buf[1024];
	(void)state;

	CHECK_INT(engine_doc_reads_outside(NULL), false);
	/* the object alone, and variables computed from it */
	snprintf(buf, sizeof(buf),
		 "%s    context:\n    - name: n\n      variable: {jmesPath: "
		 "'request.object.metadata.name'}\n    validate:\n      pattern: {metadata: "
		 "{name: '?*'}}\n",
		 head);
	check_reads_outside(buf, false);
	/* a context entry that reads the cluster or a registry */
	snprintf(buf, sizeof(buf),
		 "%s    context:\n    - name: cm\n      configMap: {name: c, namespace: d}\n",
		 head);
	check_reads_outside(buf, true);
	snprintf(buf, sizeof(buf), "%s    context:\n    - name: a\n      apiCall: {urlPath: /x}\n",
		 head);
	check_reads_outside(buf, true);
	snprintf(buf, sizeof(buf),
		 "%s    validate:\n      foreach:\n      - list: request.object.spec.containers\n"
		 "        context:\n        - name: i\n          imageRegistry: {reference: x}\n",
		 head);
	check_reads_outside(buf, true);
	snprintf(buf, sizeof(buf),
		 "%s    context:\n    - name: g\n      globalReference: {name: x}\n", head);
	check_reads_outside(buf, true);
	/* validate.cel parameter objects and authorization checks */
	snprintf(buf, sizeof(buf),
		 "%s    validate:\n      cel:\n        paramKind: {apiVersion: v1, kind: "
		 "ConfigMap}\n        paramRef: {name: limits}\n        expressions:\n"
		 "        - expression: \"params.data.max == '1'\"\n",
		 head);
	check_reads_outside(buf, true);
	snprintf(buf, sizeof(buf),
		 "%s    validate:\n      cel:\n        expressions:\n        - expression: "
		 "\"authorizer.group('').resource('pods').check('get').allowed()\"\n",
		 head);
	check_reads_outside(buf, true);
	snprintf(buf, sizeof(buf),
		 "%s    validate:\n      cel:\n        expressions:\n        - expression: "
		 "\"object.spec.replicas <= 3\"\n",
		 head);
	check_reads_outside(buf, false);
	/* time and chance */
	snprintf(buf, sizeof(buf),
		 "%s    validate:\n      deny:\n        conditions:\n          any:\n"
		 "          - {key: \"{{ time_after(time_now_utc(), '2030-01-01T00:00:00Z') }}\", "
		 "operator: Equals, value: true}\n",
		 head);
	check_reads_outside(buf, true);
	check_reads_outside("{message: \"{{ time_since('', '2020-01-01T00:00:00Z', '') }}\"}",
			    true);
	check_reads_outside("{a: [1, {b: \"{{ random('[a-z]{4}') }}\"}]}", true);
	/* a key named like an entry outside `context` is nothing */
	check_reads_outside("{spec: {configMap: {name: x}}}", false);
	check_reads_outside("{context: {apiCall: {}}}", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reject_structure),
	    cmocka_unit_test(test_reject_label_values),
	    cmocka_unit_test(test_reject_conditions),
	    cmocka_unit_test(test_reject_variables),
	    cmocka_unit_test(test_reject_namespaced_policy),
	    cmocka_unit_test(test_reject_background),
	    cmocka_unit_test(test_reject_background_kinds),
	    cmocka_unit_test(test_accessors),
	    cmocka_unit_test(test_effective_action),
	    cmocka_unit_test(test_autogen_rules),
	    cmocka_unit_test(test_autogen_bodies),
	    cmocka_unit_test(test_autogen_filters),
	    cmocka_unit_test(test_autogen_disabled),
	    cmocka_unit_test(test_autogen_disabled_by_json6902),
	    cmocka_unit_test(test_autogen_annotation),
	    cmocka_unit_test(test_doc_reads_outside),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
