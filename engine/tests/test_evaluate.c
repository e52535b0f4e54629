/*
 * Unit tests for engine/evaluate.c: engine_evaluate() and engine_decide()
 * on small policies (kyverno-semantics.md sections 1.4-1.7, 5.1, 6.6, 7,
 * 8, 10 and the cases E1, E18, E20-E25).
 */
#include "engine/tests/testutil.h"

#include "engine/engine_int.h"

#include "common/banned.h"

#define CP "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n"
/* The wrapper of section 11: ClusterPolicy p, background false, rule r on Pods. */
#define E_HDR	      CP "spec:\n  background: false\n  rules:\n  - name: r\n"
#define MATCH_POD     "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
#define ENFORCE	      "    validate:\n      failureAction: Enforce\n"
#define LABEL_PATTERN "      pattern: {metadata: {labels: {team: '?*'}}}\n"

#define POD_X(labels)                                                                              \
	"apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default" labels "}\n"

struct run {
	struct engine_policyset *set;
	struct engine_report rep;
	enum gv_code rc;
};

static struct engine_policy *compile(const char *yaml)
{
	json_t *doc = Y(yaml);
	struct gv_err err = {0};
	struct engine_policy *p = engine_policy_compile(doc, &err);

	json_decref(doc);
	if (!p)
		fail_msg("policy does not compile: %s: %s\n%s", err.pointer, err.msg, yaml);
	return p;
}

static struct engine_exception *compile_exception(const char *yaml)
{
	json_t *doc = Y(yaml);
	struct gv_err err = {0};
	struct engine_exception *e = engine_exception_compile(doc, &err);

	json_decref(doc);
	if (!e)
		fail_msg("exception does not compile: %s: %s\n%s", err.pointer, err.msg, yaml);
	return e;
}

static struct engine_policyset *set_of(struct engine_policy **pols, size_t n,
				       struct engine_exception **exc, size_t nexc)
{
	struct engine_policyset *s = engine_policyset_new(pols, n, exc, nexc);

	for (size_t i = 0; i < n; i++)
		engine_policy_unref(pols[i]);
	return s;
}

static void run_set(struct run *r, struct engine_policyset *set, const struct engine_input *in,
		    enum engine_mode mode)
{
	struct gv_err err = {0};

	r->set = set;
	r->rc = engine_evaluate(set, in, mode, &r->rep, &err);
	if (r->rc)
		fail_msg("engine_evaluate: %s", err.msg);
}

/* Evaluates one policy (YAML) against in. */
static void run1(struct run *r, const char *policy, const struct engine_input *in,
		 enum engine_mode mode)
{
	struct engine_policy *p = compile(policy);

	run_set(r, set_of(&p, 1, NULL, 0), in, mode);
}

static void run_release(struct run *r)
{
	engine_report_release(&r->rep);
	engine_policyset_unref(r->set);
}

static size_t nresults(const struct run *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->rep.n; i++)
		n += r->rep.v[i].nrules;
	return n;
}

static const struct engine_rule_result *result(const struct run *r, const char *policy,
					       const char *rule)
{
	for (size_t i = 0; i < r->rep.n; i++) {
		const struct engine_response *resp = &r->rep.v[i];
		if (policy && strcmp(engine_policy_name(resp->policy), policy))
			continue;
		for (size_t j = 0; j < resp->nrules; j++)
			if (!strcmp(resp->rules[j].rule, rule))
				return &resp->rules[j];
	}
	return NULL;
}

static const char *status_str(enum engine_status s)
{
	return engine_status_name(s);
}

/* Checks rule's status and (when msg is not NULL) its exact message. */
#define CHECK_RESULT(run, rule, want_status, want_msg)                                             \
	do {                                                                                       \
		const struct engine_rule_result *tu_r = result((run), NULL, (rule));               \
		CHECK(tu_r != NULL, "no result for rule %s", (rule));                              \
		if (tu_r) {                                                                        \
			CHECK(tu_r->status == (want_status),                                       \
			      "rule %s: status %s, want %s (message '%s')", (rule),                \
			      status_str(tu_r->status), status_str(want_status), tu_r->message);   \
			if ((want_msg) != NULL)                                                    \
				CHECK_STR(tu_r->message, (const char *)(want_msg));                \
		}                                                                                  \
	} while (0)

#define CHECK_NO_RESULT(run, rule)                                                                 \
	do {                                                                                       \
		const struct engine_rule_result *tu_r = result((run), NULL, (rule));               \
		CHECK(tu_r == NULL, "rule %s: unexpected result %s '%s'", (rule),                  \
		      tu_r ? status_str(tu_r->status) : "", tu_r ? tu_r->message : "");            \
	} while (0)

/* Evaluates policy against one object (YAML) as a CREATE and runs the checks in body. */
static void eval_create(struct run *r, const char *policy, const char *object)
{
	json_t *o = Y(object);
	struct engine_input in = {.object = o, .operation = "CREATE"};

	run1(r, policy, &in, ENGINE_ADMISSION);
	json_decref(o);
}

/* ---- E1, messages ---- */

static void test_e1_pattern_failure(void **state)
{
	static const char pol[] =
	    E_HDR MATCH_POD ENFORCE "      message: label team is required\n" LABEL_PATTERN;
	struct run r;
	const struct engine_rule_result *rr;
	(void)state;

	CHECK_STR(engine_status_name(ENGINE_PASS), "pass");
	CHECK_STR(engine_status_name(ENGINE_FAIL), "fail");
	CHECK_STR(engine_status_name(ENGINE_WARN), "warn");
	CHECK_STR(engine_status_name(ENGINE_ERROR), "error");
	CHECK_STR(engine_status_name(ENGINE_SKIP), "skip");
	eval_create(&r, pol, POD_X(", labels: {app: web}"));
	CHECK_INT(nresults(&r), 1);
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: label team is required. rule r failed at path "
		     "/metadata/labels/team/");
	rr = result(&r, "p", "r");
	if (rr) {
		struct engine_decision d = engine_decide(r.rep.v[0].policy, rr, ENGINE_ADMISSION);
		CHECK(rr->action == ENGINE_ENFORCE, "action Enforce");
		CHECK(d.blocks, "an Enforce failure blocks");
		CHECK(!d.warns, "a denial has no warnings");
		CHECK(!rr->exception, "no exception");
	}
	run_release(&r);

	eval_create(&r, pol, POD_X(""));
	CHECK_RESULT(
	    &r, "r", ENGINE_FAIL,
	    "validation error: label team is required. rule r failed at path /metadata/labels/");
	run_release(&r);

	eval_create(&r, pol, POD_X(", labels: {team: red}"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
	run_release(&r);

	/* no message */
	eval_create(&r, E_HDR MATCH_POD ENFORCE LABEL_PATTERN, POD_X(", labels: {team: ''}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: rule r failed at path /metadata/labels/team/");
	run_release(&r);

	/* a rule that does not match gives no result, but the policy has a response */
	eval_create(
	    &r, E_HDR "    match: {any: [{resources: {kinds: [Service]}}]}\n" ENFORCE LABEL_PATTERN,
	    POD_X(""));
	CHECK_INT(nresults(&r), 0);
	CHECK_INT(r.rep.n, 1);
	run_release(&r);
	CHECK_DONE();
}

/*
 * A message that is exactly one variable giving a non-string is JSON as an
 * embedded variable's value is (keys sorted, Go's encoding/json), and as
 * bounded (MAX_SUBST_BYTES, tested in test_hostile_policies.c).
 */
static void test_message_whole_value(void **state)
{
	struct run r;
	(void)state;

	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      message: '{{ request.object.metadata.labels }}'\n"
		    "      pattern: {metadata: {labels: {team: '?*'}}}\n",
		    POD_X(", labels: {b: '<x>', app: web}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: {\"app\":\"web\",\"b\":\"\\u003cx\\u003e\"}. rule r "
		     "failed at path /metadata/labels/team/");
	run_release(&r);
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      message: 'labels {{ request.object.metadata.labels }}'\n"
		    "      pattern: {metadata: {labels: {team: '?*'}}}\n",
		    POD_X(", labels: {b: '<x>', app: web}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: labels {\"app\":\"web\",\"b\":\"\\u003cx\\u003e\"}. rule "
		     "r failed at path /metadata/labels/team/");
	run_release(&r);
	CHECK_DONE();
}

/* ---- reportProperties (section 8.6) ---- */

static const char *prop(const struct run *r, const char *rule, const char *key)
{
	const struct engine_rule_result *rr = result(r, NULL, rule);

	return rr ? json_string_value(json_object_get(rr->properties, key)) : NULL;
}

static void test_report_properties(void **state)
{
	static const char pol[] = E_HDR MATCH_POD
	    "    context: [{name: objName, variable: {jmesPath: request.object.metadata.name}}]\n"
	    "    reportProperties:\n"
	    "      operation: '{{ request.operation }}'\n"
	    "      objName: '{{ objName }}'\n"
	    "      labels: '{{ request.object.metadata.labels }}'\n"
	    "      fixed: plain\n" ENFORCE LABEL_PATTERN;
	struct run r;
	const struct engine_rule_result *rr;
	struct gv_err err = {0};
	json_t *doc;
	(void)state;

	eval_create(&r, pol, POD_X(", labels: {team: a, b: '<x>'}"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, NULL);
	CHECK_STR(prop(&r, "r", "operation"), "CREATE");
	CHECK_STR(prop(&r, "r", "objName"), "x");
	/* not a string: JSON, as in a message */
	CHECK_STR(prop(&r, "r", "labels"), "{\"b\":\"\\u003cx\\u003e\",\"team\":\"a\"}");
	CHECK_STR(prop(&r, "r", "fixed"), "plain");
	rr = result(&r, NULL, "r");
	CHECK(rr && json_object_size(rr->properties) == 4, "four properties");
	run_release(&r);

	/* failures carry them too */
	eval_create(&r, pol, POD_X(", labels: {app: web}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	CHECK_STR(prop(&r, "r", "objName"), "x");
	run_release(&r);

	/* no reportProperties, no properties */
	eval_create(&r, E_HDR MATCH_POD ENFORCE LABEL_PATTERN, POD_X(""));
	rr = result(&r, NULL, "r");
	CHECK(rr && !rr->properties, "no properties");
	run_release(&r);

	/* a substitution that fails makes the result an error, never a dropped property */
	eval_create(&r,
		    E_HDR MATCH_POD
		    "    reportProperties: {who: '{{ request.object.spec.nosuch }}'}\n" ENFORCE
			LABEL_PATTERN,
		    POD_X(", labels: {team: a}"));
	CHECK_RESULT(&r, "r", ENGINE_ERROR, NULL);
	rr = result(&r, NULL, "r");
	CHECK(rr && !rr->properties, "no properties on the error");
	CHECK(rr &&
		  !strncmp(rr->message, "failed to substitute variables in reportProperties: ", 52),
	      "message: %s", rr ? rr->message : "");
	CHECK(rr && strstr(rr->message, "request.object.spec.nosuch"), "names the variable: %s",
	      rr ? rr->message : "");
	run_release(&r);

	/* an error result keeps its own message */
	eval_create(&r,
		    E_HDR MATCH_POD
		    "    reportProperties: {who: '{{ request.object.spec.nosuch }}'}\n"
		    "    preconditions: {all: [{key: '{{ request.object.spec.other }}', "
		    "operator: Equals, value: a}]}\n" ENFORCE LABEL_PATTERN,
		    POD_X(", labels: {team: a}"));
	CHECK_RESULT(&r, "r", ENGINE_ERROR, NULL);
	rr = result(&r, NULL, "r");
	CHECK(rr && !strstr(rr->message, "reportProperties"), "own message: %s",
	      rr ? rr->message : "");
	run_release(&r);

	/* compile errors: a map of strings, with valid variables */
	{
		static const char *const bad[][2] = {
		    {"    reportProperties: [a]\n", "/spec/rules/0/reportProperties"},
		    {"    reportProperties: {num: 1}\n", "/spec/rules/0/reportProperties/num"},
		    {"    reportProperties: {num: '{{ a[ }}'}\n", "/spec/rules/0/reportProperties"},
		};
		for (size_t i = 0; i < GV_ARRAY_LEN(bad); i++) {
			char *y = gv_xasprintf("%s%s%s%s", E_HDR MATCH_POD, bad[i][0], ENFORCE,
					       LABEL_PATTERN);
			struct engine_policy *p;

			doc = Y(y);
			memset(&err, 0, sizeof(err));
			p = engine_policy_compile(doc, &err);
			CHECK(!p, "compiles: %s", y);
			CHECK(!strncmp(err.pointer, bad[i][1], strlen(bad[i][1])),
			      "pointer %s, want %s", err.pointer, bad[i][1]);
			engine_policy_unref(p);
			json_decref(doc);
			free(y);
		}
	}
	CHECK_DONE();
}

/* ---- reporting matrix (section 7.3, 8.2-8.4) ---- */

static struct engine_policy *matrix_policy(bool background, bool emit_warning, bool ignore)
{
	char *yaml = gv_xasprintf(CP "spec:\n  background: %s\n  emitWarning: %s\n"
				     "  failurePolicy: %s\n  rules:\n  - name: r\n"
				     "    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
				     "    validate:\n" LABEL_PATTERN,
				  background ? "true" : "false", emit_warning ? "true" : "false",
				  ignore ? "Ignore" : "Fail");
	struct engine_policy *p = compile(yaml);

	free(yaml);
	return p;
}

static struct engine_decision decide(const struct engine_policy *p, enum engine_status s,
				     enum engine_action a, enum engine_mode mode)
{
	struct engine_rule_result rr = {
	    .rule = (char *)"r", .status = s, .message = (char *)"m", .action = a};
	return engine_decide(p, &rr, mode);
}

#define CHECK_DECISION(p, s, a, mode, b, rep, w)                                                   \
	do {                                                                                       \
		struct engine_decision tu_d = decide((p), (s), (a), (mode));                       \
		CHECK(tu_d.blocks == (b) && tu_d.reported == (rep) && tu_d.warns == (w),           \
		      "%s %s %s: blocks/reported/warns %d/%d/%d, want %d/%d/%d", #p, #s, #a,       \
		      tu_d.blocks, tu_d.reported, tu_d.warns, (b), (rep), (w));                    \
	} while (0)

static void test_reporting_matrix(void **state)
{
	struct engine_policy *bg = matrix_policy(true, false, false);
	struct engine_policy *nobg = matrix_policy(false, false, false);
	struct engine_policy *warn = matrix_policy(true, true, false);
	struct engine_policy *ignore = matrix_policy(true, false, true);
	(void)state;

	/* Enforce, admission: failures block and are not reported */
	CHECK_DECISION(bg, ENGINE_FAIL, ENGINE_ENFORCE, ENGINE_ADMISSION, 1, 0, 0);
	CHECK_DECISION(nobg, ENGINE_FAIL, ENGINE_ENFORCE, ENGINE_ADMISSION, 1, 0, 0);
	/* errors block under failurePolicy Fail (section 8.2, 8.4) */
	CHECK_DECISION(bg, ENGINE_ERROR, ENGINE_ENFORCE, ENGINE_ADMISSION, 1, 0, 0);
	/* Audit, admission: reported, never blocks; warnings only with emitWarning */
	CHECK_DECISION(bg, ENGINE_FAIL, ENGINE_AUDIT, ENGINE_ADMISSION, 0, 1, 0);
	CHECK_DECISION(nobg, ENGINE_FAIL, ENGINE_AUDIT, ENGINE_ADMISSION, 0, 1, 0);
	CHECK_DECISION(bg, ENGINE_ERROR, ENGINE_AUDIT, ENGINE_ADMISSION, 0, 1, 0);
	CHECK_DECISION(bg, ENGINE_PASS, ENGINE_AUDIT, ENGINE_ADMISSION, 0, 1, 0);
	CHECK_DECISION(warn, ENGINE_FAIL, ENGINE_AUDIT, ENGINE_ADMISSION, 0, 1, 1);
	CHECK_DECISION(warn, ENGINE_ERROR, ENGINE_AUDIT, ENGINE_ADMISSION, 0, 1, 1);
	CHECK_DECISION(warn, ENGINE_PASS, ENGINE_AUDIT, ENGINE_ADMISSION, 0, 1, 0);
	/* Enforce failures block regardless of failurePolicy */
	CHECK_DECISION(ignore, ENGINE_FAIL, ENGINE_ENFORCE, ENGINE_ADMISSION, 1, 0, 0);
	/* background mode: reported when background is true, never blocks or warns */
	CHECK_DECISION(bg, ENGINE_FAIL, ENGINE_ENFORCE, ENGINE_BACKGROUND, 0, 1, 0);
	CHECK_DECISION(bg, ENGINE_PASS, ENGINE_ENFORCE, ENGINE_BACKGROUND, 0, 1, 0);
	CHECK_DECISION(bg, ENGINE_FAIL, ENGINE_AUDIT, ENGINE_BACKGROUND, 0, 1, 0);
	CHECK_DECISION(bg, ENGINE_ERROR, ENGINE_AUDIT, ENGINE_BACKGROUND, 0, 1, 0);
	CHECK_DECISION(warn, ENGINE_FAIL, ENGINE_AUDIT, ENGINE_BACKGROUND, 0, 1, 0);
	CHECK_DECISION(nobg, ENGINE_FAIL, ENGINE_ENFORCE, ENGINE_BACKGROUND, 0, 0, 0);
	CHECK_DECISION(nobg, ENGINE_PASS, ENGINE_AUDIT, ENGINE_BACKGROUND, 0, 0, 0);
	engine_policy_unref(bg);
	engine_policy_unref(nobg);
	engine_policy_unref(warn);
	engine_policy_unref(ignore);
	CHECK_DONE();
}

/*
 * Section 7.3 (background true, Enforce, admission): "only passing (and
 * non-blocking error/skip) results get reported"; section 8.3: an Enforce
 * error that does not block (failurePolicy Ignore) is returned as a warning.
 */
static void test_reporting_enforce_non_blocking(void **state)
{
	struct engine_policy *bg = matrix_policy(true, false, false);
	struct engine_policy *ignore = matrix_policy(true, false, true);
	(void)state;

	/*
	 * gavel's matrix (DESIGN.md "Reporting matrix", issue text): Enforce
	 * results of new resources are never reported, whatever their status;
	 * kyverno-semantics.md section 7.3 would report passing ones. An
	 * Enforce error that does not block is still a warning (section 8.3).
	 */
	CHECK_DECISION(bg, ENGINE_PASS, ENGINE_ENFORCE, ENGINE_ADMISSION, 0, 0, 0);
	CHECK_DECISION(bg, ENGINE_SKIP, ENGINE_ENFORCE, ENGINE_ADMISSION, 0, 0, 0);
	CHECK_DECISION(ignore, ENGINE_ERROR, ENGINE_ENFORCE, ENGINE_ADMISSION, 0, 0, 1);
	engine_policy_unref(bg);
	engine_policy_unref(ignore);
	CHECK_DONE();
}

/* ---- background mode (section 7, E23) ---- */

static void test_background_mode(void **state)
{
	json_t *cm =
	    Y("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n");
	json_t *old =
	    Y("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old, namespace: default}\n");
	struct engine_input in = {.object = cm, .operation = "CREATE"};
	struct engine_input upd = {.object = cm, .old_object = old, .operation = "UPDATE"};
	struct run r;
	(void)state;

	/* background: false -> not evaluated in background */
	run1(&r,
	     CP "spec:\n  background: false\n  rules:\n  - name: r\n"
		"    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
		"    validate:\n" LABEL_PATTERN,
	     &in, ENGINE_BACKGROUND);
	CHECK_INT(nresults(&r), 0);
	run_release(&r);

	/* background: true -> evaluated, like admission */
	run1(&r,
	     CP "spec:\n  rules:\n  - name: r\n"
		"    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
		"    validate:\n" LABEL_PATTERN,
	     &in, ENGINE_BACKGROUND);
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: rule r failed at path /metadata/labels/");
	run_release(&r);

	/* E23: operations [UPDATE] never appears in background (scans are CREATE) */
	{
		static const char pol[] = CP
		    "spec:\n  rules:\n  - name: r\n"
		    "    match: {any: [{resources: {kinds: [ConfigMap], operations: [UPDATE]}}]}\n"
		    "    validate:\n" LABEL_PATTERN;
		run1(&r, pol, &upd, ENGINE_BACKGROUND);
		CHECK_NO_RESULT(&r, "r");
		run_release(&r);
		run1(&r, pol, &upd, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
		run_release(&r);
	}
	/* request.operation is CREATE in a scan */
	{
		static const char pol[] =
		    CP "spec:\n  rules:\n  - name: r\n"
		       "    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
		       "    validate:\n      deny:\n        conditions:\n          all:\n"
		       "          - {key: '{{ request.operation }}', operator: Equals, value: "
		       "UPDATE}\n";
		run1(&r, pol, &upd, ENGINE_BACKGROUND);
		CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
		run_release(&r);
		run1(&r, pol, &upd, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation error: rule r failed");
		run_release(&r);
	}
	/* E23: request.oldObject is absent in background: error */
	{
		static const char pol[] = CP
		    "spec:\n  rules:\n  - name: r\n"
		    "    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
		    "    validate:\n      deny:\n        conditions:\n          all:\n"
		    "          - {key: '{{ request.oldObject.metadata.name }}', operator: Equals, "
		    "value: old}\n";
		run1(&r, pol, &in, ENGINE_BACKGROUND);
		CHECK_RESULT(
		    &r, "r", ENGINE_ERROR,
		    "failed to check deny conditions: failed to substitute variables in "
		    "condition key: failed to resolve request.oldObject.metadata.name at path "
		    ": JMESPath query failed: Unknown key \"oldObject\" in path");
		run_release(&r);
		run1(&r, pol, &upd, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
		run_release(&r);
	}
	/* admission: false -> evaluated in background only */
	{
		static const char pol[] =
		    CP "spec:\n  admission: false\n  rules:\n  - name: r\n"
		       "    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
		       "    validate:\n" LABEL_PATTERN;
		run1(&r, pol, &in, ENGINE_ADMISSION);
		CHECK_INT(nresults(&r), 0);
		run_release(&r);
		run1(&r, pol, &in, ENGINE_BACKGROUND);
		CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
		run_release(&r);
	}
	json_decref(cm);
	json_decref(old);
	CHECK_DONE();
}

static void test_background_skips_unsafe_rules(void **state)
{
	json_t *cm =
	    Y("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n");
	json_t *ui = J("{'username': 'alice', 'groups': []}");
	struct engine_input in = {.object = cm, .operation = "CREATE", .user_info = ui};
	struct engine_policy *p = compile(
	    CP
	    "spec:\n  background: false\n  rules:\n"
	    "  - name: safe\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	    "    validate:\n" LABEL_PATTERN
	    "  - name: unsafe\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	    "    validate:\n      message: 'by {{ request.userInfo.username }}'\n" LABEL_PATTERN);
	struct run r;
	(void)state;

	/* a policy that reached background mode anyway (section 7.1, "evaluated anyway") */
	p->background = true;
	run_set(&r, set_of(&p, 1, NULL, 0), &in, ENGINE_BACKGROUND);
	CHECK_RESULT(&r, "safe", ENGINE_FAIL, NULL);
	CHECK_NO_RESULT(&r, "unsafe");
	run_release(&r);

	p = compile(
	    CP
	    "spec:\n  background: false\n  rules:\n"
	    "  - name: unsafe\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	    "    validate:\n      message: 'by {{ request.userInfo.username }}'\n" LABEL_PATTERN);
	run_set(&r, set_of(&p, 1, NULL, 0), &in, ENGINE_ADMISSION);
	CHECK_RESULT(&r, "unsafe", ENGINE_FAIL,
		     "validation error: by alice. rule unsafe failed at path /metadata/labels/");
	run_release(&r);
	json_decref(cm);
	json_decref(ui);
	CHECK_DONE();
}

/* ---- UPDATE and DELETE (section 8.5, 6.6, E24) ---- */

static void run_update(struct run *r, const char *policy, const char *old_yaml,
		       const char *new_yaml)
{
	json_t *o = Y(old_yaml), *n = Y(new_yaml);
	struct engine_input in = {.object = n, .old_object = o, .operation = "UPDATE"};

	run1(r, policy, &in, ENGINE_ADMISSION);
	json_decref(o);
	json_decref(n);
}

static void test_update_existing_violations(void **state)
{
	static const char skip_msg[] =
	    "skipping the rule evaluation as pre-existing violations are allowed";
	struct run r;
	(void)state;

	/* Enforce, old and new violate: skip */
	run_update(&r, E_HDR MATCH_POD ENFORCE LABEL_PATTERN, POD_X(", labels: {a: b}"),
		   POD_X(", labels: {a: c}"));
	CHECK_RESULT(&r, "r", ENGINE_SKIP, skip_msg);
	run_release(&r);
	/* old compliant, new violating: fail */
	run_update(&r, E_HDR MATCH_POD ENFORCE LABEL_PATTERN, POD_X(", labels: {team: a}"),
		   POD_X(", labels: {a: c}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: rule r failed at path /metadata/labels/team/");
	run_release(&r);
	/* allowExistingViolations: false */
	run_update(&r,
		   E_HDR MATCH_POD ENFORCE "      allowExistingViolations: false\n" LABEL_PATTERN,
		   POD_X(", labels: {a: b}"), POD_X(", labels: {a: c}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	/* only for Enforce rules */
	run_update(&r, E_HDR MATCH_POD "    validate:\n      failureAction: Audit\n" LABEL_PATTERN,
		   POD_X(", labels: {a: b}"), POD_X(", labels: {a: c}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	/* a deny rule: the old object is evaluated as request.object of a CREATE */
	run_update(&r,
		   E_HDR MATCH_POD ENFORCE
		   "      deny:\n        conditions:\n          all:\n"
		   "          - {key: \"{{ request.object.metadata.labels.team || '' }}\", "
		   "operator: Equals, value: ''}\n",
		   POD_X(""), POD_X(", labels: {a: c}"));
	CHECK_RESULT(&r, "r", ENGINE_SKIP, skip_msg);
	run_release(&r);
	/* a passing update stays a pass */
	run_update(&r, E_HDR MATCH_POD ENFORCE LABEL_PATTERN, POD_X(""),
		   POD_X(", labels: {team: a}"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
	run_release(&r);
	/* a subresource: the old Scale is matched as a Scale, not Deployment/scale */
	{
		json_t *o = Y("{apiVersion: autoscaling/v1, kind: Scale, metadata: {name: d, "
			      "namespace: default}, spec: {replicas: 1}}");
		json_t *n = Y("{apiVersion: autoscaling/v1, kind: Scale, metadata: {name: d, "
			      "namespace: default}, spec: {replicas: 2}}");
		struct engine_input in = {.object = n,
					  .old_object = o,
					  .operation = "UPDATE",
					  .group = "apps",
					  .version = "v1",
					  .kind = "Deployment",
					  .subresource = "scale"};
		run1(&r,
		     E_HDR "    match: {any: [{resources: {kinds: [Deployment/scale]}}]}\n" ENFORCE
			   "      deny: {}\n",
		     &in, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
		run_release(&r);
		json_decref(o);
		json_decref(n);
	}
	/* validate.cel: Kyverno's CEL handler judges the new object alone */
	run_update(&r,
		   E_HDR MATCH_POD ENFORCE "      cel:\n        expressions:\n"
					   "        - {expression: 'false', message: never}\n",
		   POD_X(""), POD_X(", labels: {a: c}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	CHECK_DONE();
}

static void run_delete(struct run *r, const char *policy, const char *old_yaml)
{
	json_t *o = Y(old_yaml);
	struct engine_input in = {.object = NULL, .old_object = o, .operation = "DELETE"};

	run1(r, policy, &in, ENGINE_ADMISSION);
	json_decref(o);
}

static void test_delete(void **state)
{
	static const char deny_protected[] = E_HDR MATCH_POD ENFORCE
	    "      deny:\n        conditions:\n          any:\n"
	    "          - {key: \"{{ request.object.metadata.labels.protected || '' }}\", operator: "
	    "Equals, value: 'true'}\n";
	struct run r;
	(void)state;

	/* E24: pattern and anyPattern rules give no result on DELETE */
	run_delete(&r, E_HDR MATCH_POD ENFORCE LABEL_PATTERN, POD_X(""));
	CHECK_INT(nresults(&r), 0);
	run_release(&r);
	run_delete(
	    &r, E_HDR MATCH_POD ENFORCE "      anyPattern: [{metadata: {labels: {team: '?*'}}}]\n",
	    POD_X(""));
	CHECK_INT(nresults(&r), 0);
	run_release(&r);
	/* deny rules run against the old object */
	run_delete(&r, deny_protected, POD_X(", labels: {protected: 'true'}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation error: rule r failed");
	run_release(&r);
	run_delete(&r, deny_protected, POD_X(", labels: {protected: 'false'}"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
	run_release(&r);
	/* matching uses the old object */
	run_delete(&r,
		   E_HDR "    match: {any: [{resources: {kinds: [Pod], names: [x], namespaces: "
			 "[default]}}]}\n" ENFORCE "      deny: {}\n",
		   POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation error: rule r failed");
	run_release(&r);
	/* preconditions see the old object too */
	run_delete(&r,
		   E_HDR MATCH_POD
		   "    preconditions: {all: [{key: '{{ request.object.metadata.name }}', "
		   "operator: Equals, value: y}]}\n" ENFORCE "      deny: {}\n",
		   POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_SKIP, "preconditions not met");
	run_release(&r);
	CHECK_DONE();
}

/* ---- applyRules, namespaced policies, exceptions (sections 1.2, 1.6, 8.1) ---- */

static void test_apply_rules_one(void **state)
{
	static const char pol[] =
	    CP "spec:\n  background: false\n  applyRules: One\n  rules:\n"
	       "  - name: r1\n" MATCH_POD
	       "    preconditions: {all: [{key: a, operator: Equals, value: b}]}\n"
	       "    validate:\n" LABEL_PATTERN "  - name: r2\n" MATCH_POD
	       "    validate:\n" LABEL_PATTERN "  - name: r3\n" MATCH_POD
	       "    validate:\n" LABEL_PATTERN;
	static const char pol_pass[] =
	    CP "spec:\n  background: false\n  applyRules: One\n  rules:\n"
	       "  - name: r1\n" MATCH_POD "    validate:\n      pattern: {metadata: {name: x}}\n"
	       "  - name: r2\n" MATCH_POD "    validate:\n" LABEL_PATTERN;
	struct run r;
	(void)state;

	eval_create(&r, pol, POD_X(""));
	CHECK_RESULT(&r, "r1", ENGINE_SKIP, "preconditions not met");
	CHECK_RESULT(&r, "r2", ENGINE_FAIL, NULL);
	CHECK_NO_RESULT(&r, "r3");
	run_release(&r);
	eval_create(&r, pol_pass, POD_X(""));
	CHECK_RESULT(&r, "r1", ENGINE_PASS, NULL);
	CHECK_NO_RESULT(&r, "r2");
	run_release(&r);
	CHECK_DONE();
}

static void test_namespaced_policy(void **state)
{
	static const char pol[] =
	    "apiVersion: kyverno.io/v1\nkind: Policy\nmetadata: {name: p, namespace: dev}\n"
	    "spec:\n  background: false\n  rules:\n  - name: r\n"
	    "    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	    "    validate:\n" LABEL_PATTERN;
	struct run r;
	(void)state;

	/* E22: a ConfigMap in prod gets no result from a Policy in dev */
	eval_create(&r, pol,
		    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: prod}\n");
	CHECK_INT(nresults(&r), 0);
	run_release(&r);
	eval_create(&r, pol,
		    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: dev}\n");
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	/* a cluster-scoped object never matches */
	{
		static const char any[] =
		    "apiVersion: kyverno.io/v1\nkind: Policy\nmetadata: {name: p, namespace: dev}\n"
		    "spec:\n  background: false\n  rules:\n  - name: r\n"
		    "    match: {any: [{resources: {kinds: ['*']}}]}\n"
		    "    validate:\n      deny: {}\n";
		eval_create(&r, any,
			    "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n");
		CHECK_INT(nresults(&r), 0);
		run_release(&r);
	}
	CHECK_DONE();
}

static void test_policy_exception(void **state)
{
	static const char pol[] = E_HDR MATCH_POD ENFORCE LABEL_PATTERN;
	static const char exc[] = "apiVersion: kyverno.io/v2\nkind: PolicyException\n"
				  "metadata: {name: exc, namespace: ex-ns}\n"
				  "spec:\n  exceptions: [{policyName: p, ruleNames: [r]}]\n"
				  "  match: {any: [{resources: {kinds: [Pod], names: [x]}}]}\n";
	static const char exc2[] = "apiVersion: kyverno.io/v2\nkind: PolicyException\n"
				   "metadata: {name: other, namespace: ex-ns}\n"
				   "spec:\n  exceptions: [{policyName: p, ruleNames: [not-r]}]\n"
				   "  match: {any: [{resources: {kinds: [Pod]}}]}\n";
	struct run r;
	struct engine_policy *p;
	struct engine_exception *e[2];
	json_t *x = Y(POD_X("")),
	       *y = Y("apiVersion: v1\nkind: Pod\nmetadata: {name: y, namespace: default}\n");
	struct engine_input in = {.object = x, .operation = "CREATE"};
	const struct engine_rule_result *rr;
	(void)state;

	p = compile(pol);
	e[0] = compile_exception(exc);
	e[1] = compile_exception(exc2);
	run_set(&r, set_of(&p, 1, e, 2), &in, ENGINE_ADMISSION);
	CHECK_RESULT(&r, "r", ENGINE_SKIP, "rule is skipped due to policy exceptionsex-ns/exc");
	rr = result(&r, "p", "r");
	CHECK(rr && rr->exception, "exception flag");
	if (rr) {
		struct engine_decision d = engine_decide(r.rep.v[0].policy, rr, ENGINE_ADMISSION);
		CHECK(!d.blocks, "an exception does not block");
	}
	engine_report_release(&r.rep);
	/* the exception's match decides */
	in.object = y;
	r.rc = engine_evaluate(r.set, &in, ENGINE_ADMISSION, &r.rep, NULL);
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	rr = result(&r, "p", "r");
	CHECK(rr && !rr->exception, "no exception flag");
	run_release(&r);
	json_decref(x);
	json_decref(y);
	CHECK_DONE();
}

/* ---- foreach (section 1.7) ---- */

#define POD_C(containers)                                                                          \
	"apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default, labels: {app: web}}\n" \
	"spec: {containers: " containers "}\n"

static void test_foreach(void **state)
{
	static const char pol[] =
	    E_HDR MATCH_POD ENFORCE "      foreach:\n      - list: request.object.spec.containers\n"
				    "        pattern: {image: 'reg.io/*'}\n";
	struct run r;
	(void)state;

	eval_create(&r, pol, POD_C("[{name: a, image: reg.io/a}, {name: b, image: reg.io/b}]"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "rule passed");
	run_release(&r);
	eval_create(&r, pol, POD_C("[{name: a, image: reg.io/a}, {name: b, image: docker.io/b}]"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation failure: validation error: rule r failed at path /image/");
	run_release(&r);
	/* no element processed: no result at all */
	eval_create(&r, pol, POD_C("[]"));
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	/* an unknown key in the list skips the entry */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.initContainers\n"
		    "        pattern: {image: 'reg.io/*'}\n",
		    POD_C("[{name: a, image: docker.io/a}]"));
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	/* null elements are skipped */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE "      foreach:\n      - list: '`[null]`'\n"
					    "        deny: {}\n",
		    POD_C("[]"));
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	/* a list result that is not an array is one element */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.metadata\n"
		    "        pattern: {name: x}\n",
		    POD_C("[]"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "rule passed");
	run_release(&r);
	CHECK_DONE();
}

static void test_foreach_deny_and_preconditions(void **state)
{
	struct run r;
	(void)state;

	/* deny with element / elementIndex / element0 */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        deny:\n          conditions:\n            any:\n"
		    "            - {key: '{{ element.name }}', operator: Equals, value: bad}\n",
		    POD_C("[{name: ok, image: a}, {name: bad, image: b}]"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation failure: validation error: rule r failed");
	run_release(&r);
	eval_create(
	    &r,
	    E_HDR MATCH_POD ENFORCE
	    "      foreach:\n      - list: request.object.spec.containers\n"
	    "        deny:\n          conditions:\n            any:\n"
	    "            - {key: '{{ elementIndex }}', operator: Equals, value: 1, message: "
	    "'second is {{ element0.name }}'}\n",
	    POD_C("[{name: ok, image: a}, {name: two, image: b}]"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation failure: second is two");
	run_release(&r);
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        deny:\n          conditions:\n            any:\n"
		    "            - {key: '{{ elementIndex }}', operator: Equals, value: 1}\n",
		    POD_C("[{name: ok, image: a}]"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "rule passed");
	run_release(&r);
	/* per-element preconditions: false elements are ignored */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        preconditions: {all: [{key: '{{ element.name }}', operator: Equals, "
		    "value: a}]}\n"
		    "        pattern: {image: 'reg.io/*'}\n",
		    POD_C("[{name: a, image: reg.io/a}, {name: b, image: docker.io/b}]"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "rule passed");
	run_release(&r);
	/* no element passes the preconditions: no result */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        preconditions: {all: [{key: '{{ element.name }}', operator: Equals, "
		    "value: zzz}]}\n"
		    "        pattern: {image: 'reg.io/*'}\n",
		    POD_C("[{name: a, image: reg.io/a}, {name: b, image: docker.io/b}]"));
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	/* foreach context entries */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        context: [{name: img, variable: {value: '{{ element.image }}'}}]\n"
		    "        deny:\n          conditions:\n            any:\n"
		    "            - {key: '{{ img }}', operator: Equals, value: 'docker.io/*'}\n",
		    POD_C("[{name: a, image: reg.io/a}, {name: b, image: docker.io/b}]"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation failure: validation error: rule r failed");
	run_release(&r);
	CHECK_DONE();
}

static void test_foreach_element_scope(void **state)
{
	struct run r;
	(void)state;

	/* elementScope false: the pattern applies to the whole resource */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        elementScope: false\n"
		    "        pattern: {metadata: {labels: {team: '?*'}}}\n",
		    POD_C("[{name: a, image: reg.io/a}]"));
	CHECK_RESULT(
	    &r, "r", ENGINE_FAIL,
	    "validation failure: validation error: rule r failed at path /metadata/labels/team/");
	run_release(&r);
	/* non-map elements are not scoped either */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers[].name\n"
		    "        pattern: {metadata: {labels: {app: web}}}\n",
		    POD_C("[{name: a, image: reg.io/a}]"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "rule passed");
	run_release(&r);
	/* elementScope true with a non-map element: error */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers[].name\n"
		    "        elementScope: true\n"
		    "        pattern: {name: a}\n",
		    POD_C("[{name: a, image: reg.io/a}]"));
	CHECK_RESULT(&r, "r", ENGINE_ERROR, NULL);
	run_release(&r);
	CHECK_DONE();
}

static void test_foreach_errors_and_skips(void **state)
{
	struct run r;
	const struct engine_rule_result *rr;
	(void)state;

	/* a list error other than an unknown key, nothing processed: error */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: to_upper(request.object.spec.containers)\n"
		    "        deny: {}\n",
		    POD_C("[{name: a, image: reg.io/a}]"));
	CHECK_RESULT(&r, "r", ENGINE_ERROR, NULL);
	rr = result(&r, "p", "r");
	if (rr)
		CHECK_PREFIX(rr->message, "failed to evaluate list: ");
	run_release(&r);
	/* ... but another entry that processed elements decides */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: to_upper(request.object.spec.containers)\n"
		    "        deny: {}\n"
		    "      - list: request.object.spec.containers\n"
		    "        pattern: {image: 'reg.io/*'}\n",
		    POD_C("[{name: a, image: reg.io/a}]"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "rule passed");
	run_release(&r);
	/* an element error ends the loop */
	eval_create(
	    &r,
	    E_HDR MATCH_POD ENFORCE
	    "      foreach:\n      - list: request.object.spec.containers\n"
	    "        deny:\n          conditions:\n            any:\n"
	    "            - {key: '{{ element.securityContext.runAsUser }}', operator: Equals, "
	    "value: 0}\n",
	    POD_C("[{name: a, image: reg.io/a}]"));
	CHECK_RESULT(
	    &r, "r", ENGINE_ERROR,
	    "validation failure: failed to check deny conditions: failed to substitute "
	    "variables in condition key: failed to resolve element.securityContext.runAsUser "
	    "at path : JMESPath query failed: Unknown key \"securityContext\" in path");
	run_release(&r);
	/* skipped elements are ignored; all skipped: no result */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        pattern: {(name): 'istio-*', image: 'istio/*'}\n",
		    POD_C("[{name: a, image: reg.io/a}, {name: b, image: reg.io/b}]"));
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        pattern: {(name): 'istio-*', image: 'istio/*'}\n",
		    POD_C("[{name: a, image: reg.io/a}, {name: istio-proxy, image: reg.io/b}]"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation failure: validation error: rule r failed at path /image/");
	run_release(&r);
	/* a precondition evaluation error ignores the element */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        preconditions: {all: [{key: '{{ element.missing.x }}', operator: "
		    "Equals, value: a}]}\n"
		    "        deny: {}\n",
		    POD_C("[{name: a, image: reg.io/a}]"));
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	/* nested foreach: element0 / element1 */
	eval_create(
	    &r,
	    E_HDR MATCH_POD ENFORCE
	    "      foreach:\n      - list: request.object.spec.containers\n"
	    "        foreach:\n        - list: element.ports\n"
	    "          deny:\n            conditions:\n              any:\n"
	    "              - {key: '{{ element0.name }}-{{ element1.containerPort }}', "
	    "operator: Equals, value: b-80}\n",
	    POD_C("[{name: a, image: x, ports: [{containerPort: 80}]},"
		  " {name: b, image: y, ports: [{containerPort: 81}, {containerPort: 80}]}]"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      foreach:\n      - list: request.object.spec.containers\n"
		    "        foreach:\n        - list: element.ports\n"
		    "          deny:\n            conditions:\n              any:\n"
		    "              - {key: '{{ element0.name }}-{{ element1.containerPort }}', "
		    "operator: Equals, value: b-80}\n",
		    POD_C("[{name: a, image: x, ports: [{containerPort: 80}]},"
			  " {name: b, image: y, ports: [{containerPort: 81}]}]"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "rule passed");
	run_release(&r);
	CHECK_DONE();
}

static void test_deny_legacy_and_vacuous(void **state)
{
	struct run r;
	(void)state;

	/* deny conditions as a bare list: all must hold */
	eval_create(
	    &r,
	    E_HDR MATCH_POD ENFORCE
	    "      deny:\n        conditions:\n"
	    "        - {key: '{{ request.object.metadata.name }}', operator: Equals, value: x}\n"
	    "        - {key: '{{ request.object.metadata.namespace }}', operator: Equals, "
	    "value: default}\n",
	    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation error: rule r failed");
	run_release(&r);
	eval_create(
	    &r,
	    E_HDR MATCH_POD ENFORCE
	    "      deny:\n        conditions:\n"
	    "        - {key: '{{ request.object.metadata.name }}', operator: Equals, value: x}\n"
	    "        - {key: '{{ request.object.metadata.namespace }}', operator: Equals, "
	    "value: prod}\n",
	    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
	run_release(&r);
	/* E19: AllIn over an empty key list is true: the precondition lets the rule run */
	eval_create(
	    &r,
	    E_HDR MATCH_POD
	    "    preconditions: {all: [{key: '{{ request.object.spec.initContainers[].image "
	    "|| `[]` }}', operator: AllIn, value: ['reg.io/*']}]}\n" ENFORCE LABEL_PATTERN,
	    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	CHECK_DONE();
}

static void test_autogen_annotation_evaluation(void **state)
{
	static const char pol[] =
	    "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"
	    "metadata:\n  name: p\n  annotations: {pod-policies.kyverno.io/autogen-controllers: "
	    "Deployment}\n"
	    "spec:\n  background: false\n  rules:\n  - name: r\n" MATCH_POD ENFORCE
	    "      pattern: {spec: {containers: [{image: 'reg.io/*'}]}}\n";
	struct run r;
	(void)state;

	eval_create(&r, pol,
		    "apiVersion: apps/v1\nkind: Deployment\n"
		    "metadata: {name: d, namespace: default}\n"
		    "spec: {template: {spec: {containers: [{name: c, image: docker.io/x}]}}}\n");
	CHECK_RESULT(&r, "autogen-r", ENGINE_FAIL, NULL);
	run_release(&r);
	eval_create(&r, pol,
		    "apiVersion: apps/v1\nkind: StatefulSet\n"
		    "metadata: {name: s, namespace: default}\n"
		    "spec: {template: {spec: {containers: [{name: c, image: docker.io/x}]}}}\n");
	CHECK_INT(nresults(&r), 0);
	run_release(&r);
	eval_create(&r, pol,
		    "apiVersion: batch/v1\nkind: CronJob\n"
		    "metadata: {name: cj, namespace: default}\n"
		    "spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, "
		    "image: docker.io/x}]}}}}}\n");
	CHECK_INT(nresults(&r), 0);
	run_release(&r);
	CHECK_DONE();
}

/* ---- context entries (section 1.5) ---- */

static void check_context(const char *context, const char *key, const char *value_yaml,
			  enum engine_status want, const char *want_msg_part)
{
	char *pol =
	    gv_xasprintf(E_HDR MATCH_POD "    context: %s\n" ENFORCE
					 "      deny:\n        conditions:\n          all:\n"
					 "          - {key: '%s', operator: Equals, value: %s}\n",
			 context, key, value_yaml);
	struct run r;
	const struct engine_rule_result *rr;

	eval_create(&r, pol, POD_X(", labels: {app: web}") "spec: {priority: null}\n");
	rr = result(&r, "p", "r");
	CHECK(rr != NULL, "context %s: no result", context);
	if (rr) {
		CHECK(rr->status == want, "context %s: status %s, want %s ('%s')", context,
		      status_str(rr->status), status_str(want), rr->message);
		if (want_msg_part)
			CHECK(strstr(rr->message, want_msg_part), "context %s: '%s' lacks '%s'",
			      context, rr->message, want_msg_part);
	}
	run_release(&r);
	free(pol);
}

static void test_context_variables(void **state)
{
	(void)state;
	/* value, substituted; deny true -> fail */
	check_context("[{name: v, variable: {value: '{{ request.object.metadata.name }}'}}]",
		      "{{ v }}", "x", ENGINE_FAIL, NULL);
	check_context("[{name: v, variable: {value: '{{ request.object.metadata.name }}'}}]",
		      "{{ v }}", "y", ENGINE_PASS, NULL);
	/* value + jmesPath */
	check_context("[{name: v, variable: {value: {a: [1, 2]}, jmesPath: 'a[1]'}}]", "{{ v }}",
		      "2", ENGINE_FAIL, NULL);
	/* jmesPath alone: against the whole context */
	check_context("[{name: v, variable: {jmesPath: request.object.metadata.labels.app}}]",
		      "{{ v }}", "web", ENGINE_FAIL, NULL);
	/* default: lookup failure, and null for the form without value */
	check_context("[{name: v, variable: {jmesPath: request.object.metadata.labels.missing, "
		      "default: dflt}}]",
		      "{{ v }}", "dflt", ENGINE_FAIL, NULL);
	check_context("[{name: v, variable: {jmesPath: request.object.spec.priority, default: "
		      "dflt}}]",
		      "{{ v }}", "dflt", ENGINE_FAIL, NULL);
	check_context("[{name: v, variable: {value: {a: 1}, jmesPath: 'b.c', default: dflt}}]",
		      "{{ v }}", "dflt", ENGINE_FAIL, NULL);
	/* failures: error "failed to load context: ..." */
	check_context("[{name: v, variable: {jmesPath: request.object.metadata.labels.missing}}]",
		      "{{ v }}", "x", ENGINE_ERROR, "failed to load context: ");
	check_context("[{name: v, variable: {jmesPath: request.object.spec.priority}}]", "{{ v }}",
		      "x", ENGINE_ERROR, "failed to load context: ");
	check_context("[{name: v, variable: {value: null}}]", "{{ v }}", "x", ENGINE_ERROR,
		      "failed to load context: ");
	/* a jmesPath whose variables give something else than a string */
	check_context("[{name: v, variable: {jmesPath: '{{ request.object.metadata.labels }}'}}]",
		      "{{ v }}", "x", ENGINE_ERROR,
		      "jmespath value must be a string v {{ request.object.metadata.labels }}");
	/*
	 * later entries see earlier ones; a same-name entry replaces the value:
	 * the first query naming `a` loads both (deferred loading), before b
	 */
	check_context(
	    "[{name: a, variable: {value: one}}, {name: b, variable: {value: '{{ a }}-two'}},"
	    " {name: a, variable: {value: three}}]",
	    "{{ a }}/{{ b }}", "three/three-two", ENGINE_FAIL, NULL);
	CHECK_DONE();
}

/*
 * Deferred loading (section 1.5): an entry is loaded when a variable first
 * names it, so one that would fail errors only the rules that read it.
 */
static void test_context_deferred(void **state)
{
#define BAD "[{name: bad, variable: {jmesPath: request.object.nothing}}]"
	(void)state;

	/* never read: the rule passes (the deny condition is false) */
	check_context(BAD, "{{ request.object.metadata.name }}", "y", ENGINE_PASS, NULL);
	/* read: the rule errors */
	check_context(BAD, "{{ bad }}", "y", ENGINE_ERROR,
		      "failed to load context: failed to evaluate jmespath");
	/* Kyverno's matcher: "bad" in "bad.x" and "f(bad)", not after '.' or within a word */
	check_context(BAD, "{{ request.object.bad || ''x'' }}", "y", ENGINE_PASS, NULL);
	check_context(BAD, "{{ badly || ''x'' }}", "y", ENGINE_PASS, NULL);
	check_context(BAD, "{{ to_string(bad.x) }}", "y", ENGINE_ERROR, "failed to load context");
#undef BAD
	/* an entry may name one declared after it */
	check_context("[{name: b, variable: {value: '{{ a }}-two'}}, {name: a, variable: {value: "
		      "one}}]",
		      "{{ b }}", "one-two", ENGINE_FAIL, NULL);
	/* loaded once: a variable's jmesPath names the same entry twice */
	check_context("[{name: a, variable: {value: {k: 1}}}]", "{{ a.k }}-{{ a.k }}", "1-1",
		      ENGINE_FAIL, NULL);
	CHECK_DONE();
}

/* Deny conditions stop at the first deciding one: a later failing entry is not loaded. */
static void test_context_deferred_conditions(void **state)
{
	static const char pol[] = E_HDR MATCH_POD
	    "    context:\n"
	    "    - {name: nothere, variable: {jmesPath: request.object.nothing}}\n"
	    "    preconditions:\n      any:\n"
	    "      - {key: '{{ request.object.metadata.name }}', operator: Equals, value: x}\n"
	    "      - {key: '{{ nothere }}', operator: Equals, value: hello}\n" ENFORCE
	    "      deny:\n        conditions:\n          all:\n"
	    "          - {key: '{{ request.object.metadata.name }}', operator: Equals, value: y}\n"
	    "          - {key: '{{ nothere }}', operator: Equals, value: hello}\n";
	struct run r;
	const struct engine_rule_result *rr;
	(void)state;

	/* preconditions: x met by the first, deny: x stops at its first (false) */
	eval_create(&r, pol, POD_X(""));
	rr = result(&r, "p", "r");
	CHECK(rr && rr->status == ENGINE_PASS, "x: want pass, got %s",
	      rr ? rr->message : "nothing");
	run_release(&r);
	/* y: the preconditions read nothere */
	eval_create(&r, pol,
		    "{apiVersion: v1, kind: Pod, metadata: {name: y, namespace: default}, "
		    "spec: {containers: [{name: c, image: nginx}]}}");
	rr = result(&r, "p", "r");
	CHECK(rr && rr->status == ENGINE_ERROR, "y: want error, got %s",
	      rr ? rr->message : "nothing");
	if (rr)
		CHECK_PREFIX(rr->message, "failed to evaluate preconditions: ");
	run_release(&r);
	CHECK_DONE();
}

/* ---- preconditions (section 5.1, E21) ---- */

static void test_preconditions(void **state)
{
	static const char pol[] = E_HDR
	    "    match: {any: [{resources: {kinds: [Service]}}]}\n"
	    "    preconditions:\n      all:\n"
	    "      - {key: '{{ request.object.spec.type }}', operator: Equals, value: NodePort, "
	    "message: not a NodePort}\n" ENFORCE
	    "      pattern: {spec: {externalTrafficPolicy: Local}}\n";
	struct run r;
	(void)state;

	eval_create(&r, pol,
		    "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: default}\n"
		    "spec: {type: ClusterIP}\n");
	CHECK_RESULT(&r, "r", ENGINE_SKIP, "preconditions not met; not a NodePort");
	run_release(&r);
	eval_create(&r, pol,
		    "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: default}\n"
		    "spec: {type: NodePort, externalTrafficPolicy: Cluster}\n");
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: rule r failed at path /spec/externalTrafficPolicy/");
	run_release(&r);
	eval_create(&r,
		    E_HDR "    match: {any: [{resources: {kinds: [Service]}}]}\n"
			  "    preconditions:\n      all:\n"
			  "      - {key: '{{ request.object.metadata.labels.tier }}', operator: "
			  "Equals, value: web}\n" ENFORCE
			  "      pattern: {spec: {externalTrafficPolicy: Local}}\n",
		    "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: default}\n"
		    "spec: {type: NodePort}\n");
	CHECK_RESULT(
	    &r, "r", ENGINE_ERROR,
	    "failed to evaluate preconditions: failed to substitute variables in condition "
	    "key: failed to resolve request.object.metadata.labels.tier at path : JMESPath "
	    "query failed: Unknown key \"labels\" in path");
	run_release(&r);
	/* preconditions: {any: []} -> skip */
	eval_create(&r, E_HDR MATCH_POD "    preconditions: {any: []}\n" ENFORCE LABEL_PATTERN,
		    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_SKIP, "preconditions not met");
	run_release(&r);
	/* legacy list, several false messages */
	eval_create(
	    &r,
	    E_HDR MATCH_POD
	    "    preconditions:\n"
	    "    - {key: a, operator: Equals, value: a, message: m0}\n"
	    "    - {key: a, operator: Equals, value: b, message: m1}\n" ENFORCE LABEL_PATTERN,
	    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_SKIP, "preconditions not met; m1");
	run_release(&r);
	eval_create(
	    &r,
	    E_HDR MATCH_POD
	    "    preconditions:\n      any:\n"
	    "      - {key: a, operator: Equals, value: b, message: m1}\n"
	    "      - {key: a, operator: Equals, value: c, message: m2}\n" ENFORCE LABEL_PATTERN,
	    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_SKIP, "preconditions not met; m1; m2");
	run_release(&r);
	CHECK_DONE();
}

/* ---- deny (section 5.1, E18, E20) ---- */

static const char e20[] = E_HDR MATCH_POD ENFORCE
    "      message: 'team {{ request.object.metadata.labels.team }} is not allowed'\n"
    "      deny:\n        conditions:\n          all:\n"
    "          - key: '{{ request.object.metadata.labels.team }}'\n"
    "            operator: AnyIn\n            value: [red, blue]\n"
    "            message: blocked team\n";

static void test_deny_e20(void **state)
{
	struct run r;
	const struct engine_rule_result *rr;
	(void)state;

	eval_create(&r, e20, POD_X(", labels: {team: red}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "team red is not allowed; blocked team");
	run_release(&r);
	eval_create(&r, e20, POD_X(", labels: {team: green}"));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
	run_release(&r);
	eval_create(&r, e20, POD_X(""));
	CHECK_RESULT(
	    &r, "r", ENGINE_ERROR,
	    "failed to check deny conditions: failed to substitute variables in condition "
	    "key: failed to resolve request.object.metadata.labels.team at path : JMESPath "
	    "query failed: Unknown key \"labels\" in path");
	rr = result(&r, "p", "r");
	if (rr) {
		struct engine_decision d = engine_decide(r.rep.v[0].policy, rr, ENGINE_ADMISSION);
		CHECK(d.blocks, "an error blocks under failurePolicy Fail");
	}
	run_release(&r);
	/* failurePolicy Ignore: allowed with a warning */
	{
		char *pol = gv_xasprintf(CP "spec:\n  failurePolicy: Ignore\n%s",
					 e20 + strlen(CP "spec:\n"));
		eval_create(&r, pol, POD_X(""));
		rr = result(&r, "p", "r");
		CHECK(rr && rr->status == ENGINE_ERROR, "error with Ignore");
		if (rr) {
			struct engine_decision d =
			    engine_decide(r.rep.v[0].policy, rr, ENGINE_ADMISSION);
			CHECK(!d.blocks, "an error does not block under failurePolicy Ignore");
			CHECK(d.warns, "an error under Ignore is a warning");
		}
		run_release(&r);
		free(pol);
	}
	/* || '' defaults */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      deny:\n        conditions:\n          all:\n"
		    "          - {key: \"{{ request.object.metadata.labels.team || '' }}\", "
		    "operator: AnyIn, value: [red, blue]}\n",
		    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
	run_release(&r);
	/* deny: {} always fails */
	eval_create(&r, E_HDR MATCH_POD ENFORCE "      deny: {}\n", POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation error: rule r failed");
	run_release(&r);
	CHECK_DONE();
}

static void test_deny_messages(void **state)
{
	struct run r;
	(void)state;

	/* only the messages of true conditions */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      deny:\n        conditions:\n          any:\n"
		    "          - {key: a, operator: Equals, value: b, message: false one}\n"
		    "          - {key: a, operator: Equals, value: a, message: 'true one {{ "
		    "request.object.metadata.name }}'}\n",
		    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "true one x");
	run_release(&r);
	/* validate.message alone, substituted, no prefix */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      message: 'The animal {{ request.object.metadata.labels.animal }} is "
		    "not in the allowed list of animals.'\n"
		    "      deny:\n        conditions:\n          all:\n"
		    "          - {key: '{{ request.object.metadata.labels.animal }}', operator: "
		    "AnyNotIn, value: [dog, cat]}\n",
		    POD_X(", labels: {animal: cow}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "The animal cow is not in the allowed list of animals.");
	run_release(&r);
	/* a message that fails to substitute: the bare condition messages */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      message: 'owner {{ request.object.metadata.labels.owner }}'\n"
		    "      deny:\n        conditions:\n          all:\n"
		    "          - {key: a, operator: Equals, value: a, message: cond}\n",
		    POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "cond");
	run_release(&r);
	/* a message that is not a string */
	eval_create(&r,
		    E_HDR MATCH_POD ENFORCE
		    "      message: '{{ request.object.metadata.labels }}'\n"
		    "      deny: {}\n",
		    POD_X(", labels: {a: b}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "the produced message didn't resolve to a string, check your policy "
		     "definition.");
	run_release(&r);
	/* E18: operand typing */
	{
		static const char fmt[] =
		    E_HDR MATCH_POD ENFORCE "      deny:\n        conditions:\n          any:\n"
					    "          - {key: '%s', operator: %s, value: %s}\n";
		static const struct {
			const char *key, *op, *value;
			enum engine_status want;
		} cases[] = {
		    {"{{ request.object.metadata.annotations.replicas }}", "Equals", "3",
		     ENGINE_PASS},
		    {"{{ request.object.metadata.annotations.replicas }}", "Equals", "'3'",
		     ENGINE_FAIL},
		    {"{{ length(request.object.spec.containers) }}", "Equals", "'2'", ENGINE_FAIL},
		    {"{{ request.object.spec.hostNetwork || `false` }}", "NotEquals", "'false'",
		     ENGINE_FAIL},
		};
		for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
			char *pol = gv_xasprintf(fmt, cases[i].key, cases[i].op, cases[i].value);
			const struct engine_rule_result *rr;
			eval_create(
			    &r, pol,
			    "apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default, "
			    "annotations: {replicas: '3'}}\n"
			    "spec: {hostNetwork: false, containers: [{name: a}, {name: b}]}\n");
			rr = result(&r, "p", "r");
			CHECK(rr && rr->status == cases[i].want, "E18 %s %s %s: got %s (%s)",
			      cases[i].key, cases[i].op, cases[i].value,
			      rr ? status_str(rr->status) : "none", rr ? rr->message : "");
			run_release(&r);
			free(pol);
		}
	}
	CHECK_DONE();
}

/* ---- selection (E22) ---- */

static void test_selection(void **state)
{
	json_t *opts = Y("apiVersion: v1\nkind: PodExecOptions\ncommand: [sh]\n");
	json_t *pod = Y(POD_X(""));
	struct engine_input exec = {.object = opts,
				    .operation = "CONNECT",
				    .namespace = "default",
				    .group = "",
				    .version = "v1",
				    .kind = "Pod",
				    .subresource = "exec"};
	struct engine_input eph = {.object = pod,
				   .operation = "UPDATE",
				   .old_object = pod,
				   .group = "",
				   .version = "v1",
				   .kind = "Pod",
				   .subresource = "ephemeralcontainers"};
	struct run r;
	(void)state;

	run1(&r, E_HDR MATCH_POD ENFORCE "      deny: {}\n", &exec, ENGINE_ADMISSION);
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	run1(&r,
	     E_HDR "    match: {any: [{resources: {kinds: [Pod/exec]}}]}\n" ENFORCE
		   "      deny: {}\n",
	     &exec, ENGINE_ADMISSION);
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation error: rule r failed");
	run_release(&r);
	run1(&r,
	     E_HDR "    match: {any: [{resources: {kinds: [Pod.exec]}}]}\n" ENFORCE
		   "      deny: {}\n",
	     &exec, ENGINE_ADMISSION);
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	run1(&r, E_HDR MATCH_POD "    validate:\n      deny: {}\n", &eph, ENGINE_ADMISSION);
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);

	/* generateName */
	eval_create(
	    &r,
	    E_HDR "    match: {any: [{resources: {kinds: [Pod], names: ['web-*']}}]}\n" ENFORCE
		  "      deny: {}\n",
	    "apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-, namespace: default}\n");
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	/* Namespace kind with namespaces */
	eval_create(&r,
		    E_HDR "    match: {any: [{resources: {kinds: [Namespace], namespaces: "
			  "['team-*']}}]}\n" ENFORCE "      deny: {}\n",
		    "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n");
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	/* operations [CREATE] and an UPDATE */
	{
		struct engine_input upd = {.object = pod, .old_object = pod, .operation = "UPDATE"};
		run1(&r,
		     E_HDR "    match: {any: [{resources: {kinds: [Pod], operations: "
			   "[CREATE]}}]}\n" ENFORCE "      deny: {}\n",
		     &upd, ENGINE_ADMISSION);
		CHECK_NO_RESULT(&r, "r");
		run_release(&r);
	}
	/* exclude */
	eval_create(&r,
		    E_HDR MATCH_POD
		    "    exclude: {any: [{resources: {namespaces: [default]}}]}\n" ENFORCE
		    "      deny: {}\n",
		    POD_X(""));
	CHECK_NO_RESULT(&r, "r");
	run_release(&r);
	/* E22: exclude clusterRoles does not use wildcards */
	{
		json_t *ui = J("{'username': 'admin', 'groups': []}");
		json_t *cr = J("['cluster-admin']");
		struct engine_input in = {
		    .object = pod, .operation = "CREATE", .user_info = ui, .cluster_roles = cr};
		run1(&r,
		     E_HDR MATCH_POD "    exclude: {any: [{clusterRoles: ['cluster-*']}]}\n" ENFORCE
				     "      deny: {}\n",
		     &in, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
		run_release(&r);
		run1(&r,
		     E_HDR MATCH_POD
		     "    exclude: {any: [{clusterRoles: [cluster-admin]}]}\n" ENFORCE
		     "      deny: {}\n",
		     &in, ENGINE_ADMISSION);
		CHECK_NO_RESULT(&r, "r");
		run_release(&r);
		json_decref(ui);
		json_decref(cr);
	}
	json_decref(opts);
	json_decref(pod);
	CHECK_DONE();
}

/* ---- autogen at evaluation (E25) ---- */

static void test_autogen_evaluation(void **state)
{
	static const char pol[] =
	    E_HDR MATCH_POD ENFORCE "      message: images must come from reg.io\n"
				    "      pattern: {spec: {containers: [{image: 'reg.io/*'}]}}\n";
	struct run r;
	(void)state;

	eval_create(&r, pol,
		    "apiVersion: apps/v1\nkind: Deployment\n"
		    "metadata: {name: d, namespace: default}\n"
		    "spec: {template: {spec: {containers: [{name: c, image: docker.io/x}]}}}\n");
	CHECK_INT(nresults(&r), 1);
	CHECK_NO_RESULT(&r, "r");
	CHECK_RESULT(
	    &r, "autogen-r", ENGINE_FAIL,
	    "validation error: images must come from reg.io. rule autogen-r failed at path "
	    "/spec/template/spec/containers/0/image/");
	run_release(&r);
	eval_create(&r, pol,
		    "apiVersion: batch/v1\nkind: CronJob\n"
		    "metadata: {name: cj, namespace: default}\n"
		    "spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, "
		    "image: docker.io/x}]}}}}}\n");
	CHECK_INT(nresults(&r), 1);
	CHECK_RESULT(
	    &r, "autogen-cronjob-r", ENGINE_FAIL,
	    "validation error: images must come from reg.io. rule autogen-cronjob-r failed "
	    "at path /spec/jobTemplate/spec/template/spec/containers/0/image/");
	run_release(&r);
	eval_create(&r, pol,
		    "apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default}\n"
		    "spec: {containers: [{name: c, image: reg.io/x}]}\n");
	CHECK_INT(nresults(&r), 1);
	CHECK_RESULT(&r, "r", ENGINE_PASS, "validation rule 'r' passed.");
	run_release(&r);
	CHECK_DONE();
}

/* ---- built-in variables (section 6.5) ---- */

static void check_var(const struct engine_input *in, const char *key, const char *value_yaml,
		      enum engine_status want)
{
	char *pol =
	    gv_xasprintf(E_HDR "    match: {any: [{resources: {kinds: ['*']}}]}\n"
			       "    validate:\n      deny:\n        conditions:\n          all:\n"
			       "          - {key: '%s', operator: Equals, value: %s}\n",
			 key, value_yaml);
	struct run r;
	const struct engine_rule_result *rr;

	run1(&r, pol, in, ENGINE_ADMISSION);
	rr = result(&r, "p", "r");
	CHECK(rr && rr->status == want, "%s Equals %s: got %s (%s), want %s", key, value_yaml,
	      rr ? status_str(rr->status) : "none", rr ? rr->message : "", status_str(want));
	run_release(&r);
	free(pol);
}

static void test_request_variables(void **state)
{
	json_t *pod = Y("apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default}\n"
			"spec: {containers: [{name: c, image: 'ghcr.io/org/app:1.2'}],"
			" initContainers: [{name: i, image: busybox}]}\n");
	json_t *ns = Y("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n");
	json_t *sa =
	    J("{'username': 'system:serviceaccount:kube-system:builder', 'groups': ['g1']}");
	json_t *user = J("{'username': 'alice', 'groups': []}");
	json_t *roles = J("['default:dev']");
	struct engine_input in = {
	    .object = pod, .operation = "CREATE", .user_info = sa, .roles = roles};
	(void)state;

	check_var(&in, "{{ request.operation }}", "CREATE", ENGINE_FAIL);
	check_var(&in, "{{ request.namespace }}", "default", ENGINE_FAIL);
	check_var(&in, "{{ request.object.metadata.name }}", "x", ENGINE_FAIL);
	check_var(&in, "{{ request.oldObject }}", "null", ENGINE_PASS);
	check_var(&in, "{{ request.userInfo.username }}",
		  "'system:serviceaccount:kube-system:builder'", ENGINE_FAIL);
	check_var(&in, "{{ serviceAccountName }}", "builder", ENGINE_FAIL);
	check_var(&in, "{{ serviceAccountNamespace }}", "kube-system", ENGINE_FAIL);
	check_var(&in, "{{ request.roles[0] }}", "'default:dev'", ENGINE_FAIL);
	check_var(&in, "{{ images.containers.c.registry }}", "ghcr.io", ENGINE_FAIL);
	check_var(&in, "{{ images.containers.c.tag }}", "'1.2'", ENGINE_FAIL);
	check_var(&in, "{{ images.initContainers.i.reference }}", "'docker.io/busybox:latest'",
		  ENGINE_FAIL);
	in.user_info = user;
	check_var(&in, "{{ serviceAccountName }}", "''", ENGINE_FAIL);
	check_var(&in, "{{ serviceAccountNamespace }}", "''", ENGINE_FAIL);
	/* a cluster-scoped object: empty request.namespace */
	in.object = ns;
	check_var(&in, "{{ request.namespace }}", "''", ENGINE_FAIL);
	json_decref(pod);
	json_decref(ns);
	json_decref(sa);
	json_decref(user);
	json_decref(roles);
	CHECK_DONE();
}

/* Section 8.5: the old object is evaluated as a CREATE, and must match the rule. */
static void test_update_old_object_as_create(void **state)
{
	struct run r;
	(void)state;

	/* new: UPDATE -> deny true; old as CREATE -> deny false: the failure stands */
	run_update(
	    &r,
	    E_HDR MATCH_POD ENFORCE
	    "      deny:\n        conditions:\n          all:\n"
	    "          - {key: '{{ request.operation }}', operator: Equals, value: UPDATE}\n",
	    POD_X(""), POD_X(""));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, "validation error: rule r failed");
	run_release(&r);
	/* the old object does not match the rule: treated as a skip, the failure stands */
	run_update(&r,
		   E_HDR "    match: {any: [{resources: {kinds: [Pod], selector: {matchLabels: "
			 "{env: prod}}}}]}\n" ENFORCE LABEL_PATTERN,
		   POD_X(", labels: {env: dev}"), POD_X(", labels: {env: prod}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL,
		     "validation error: rule r failed at path /metadata/labels/team/");
	run_release(&r);
	CHECK_DONE();
}

/* Section 1.5: context entries are loaded before the preconditions. */
static void test_context_before_preconditions(void **state)
{
	struct run r;
	(void)state;

	eval_create(
	    &r,
	    E_HDR MATCH_POD
	    "    context: [{name: app, variable: {jmesPath: request.object.metadata.labels.app}}]\n"
	    "    preconditions: {all: [{key: '{{ app }}', operator: Equals, value: db, "
	    "message: not a db}]}\n" ENFORCE LABEL_PATTERN,
	    POD_X(", labels: {app: web}"));
	CHECK_RESULT(&r, "r", ENGINE_SKIP, "preconditions not met; not a db");
	run_release(&r);
	eval_create(
	    &r,
	    E_HDR MATCH_POD
	    "    context: [{name: app, variable: {jmesPath: request.object.metadata.labels.app}}]\n"
	    "    preconditions: {all: [{key: '{{ app }}', operator: Equals, value: db}]}\n" ENFORCE
		LABEL_PATTERN,
	    POD_X(", labels: {app: db}"));
	CHECK_RESULT(&r, "r", ENGINE_FAIL, NULL);
	run_release(&r);
	CHECK_DONE();
}

/* ---- effective action in results (section 1.4) ---- */

static void test_result_action(void **state)
{
	static const char pol[] =
	    CP "spec:\n  background: false\n  validationFailureAction: Audit\n"
	       "  validationFailureActionOverrides: [{action: Enforce, namespaces: ['prod-*']}]\n"
	       "  rules:\n  - name: r\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n"
	       "    validate:\n" LABEL_PATTERN;
	struct run r;
	const struct engine_rule_result *rr;
	(void)state;

	eval_create(&r, pol,
		    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: prod-1}\n");
	rr = result(&r, "p", "r");
	CHECK(rr && rr->action == ENGINE_ENFORCE, "prod-1 is enforced");
	run_release(&r);
	eval_create(&r, pol,
		    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: dev}\n");
	rr = result(&r, "p", "r");
	CHECK(rr && rr->action == ENGINE_AUDIT, "dev is audited");
	if (rr) {
		struct engine_decision d = engine_decide(r.rep.v[0].policy, rr, ENGINE_ADMISSION);
		CHECK(!d.blocks && d.reported, "audit failure reported, not blocking");
	}
	run_release(&r);
	CHECK_DONE();
}

/* ---- validate.cel (cel-semantics.md section 4) ---- */

static void test_validate_cel(void **state)
{
	static const struct {
		const char *body; /* after failureAction; the rule has validate.message m */
		enum engine_status status;
		const char *message;
	} cases[] = {
	    {"      cel: {expressions: [{expression: \"object.metadata.name == 'x'\"}]}\n",
	     ENGINE_PASS, "Validation rule 'r' passed."},
	    /* validate.message fills an expression without message */
	    {"      cel: {expressions: [{expression: \"object.metadata.name == 'y'\"}]}\n",
	     ENGINE_FAIL, "m"},
	    {"      cel: {expressions: [{expression: 'false', message: ' own '}]}\n", ENGINE_FAIL,
	     "own"},
	    {"      cel: {expressions: [{expression: 'false', messageExpression: "
	     "\"'name ' + object.metadata.name\"}]}\n",
	     ENGINE_FAIL, "name x"},
	    /* variables in order, one reading the one before */
	    {"      cel:\n        variables: [{name: a, expression: 'object.metadata.name'}, "
	     "{name: b, expression: \"variables.a + '!'\"}]\n        expressions: "
	     "[{expression: \"variables.b == 'x!'\"}]\n",
	     ENGINE_PASS, "Validation rule 'r' passed."},
	    /* an error is a Deny of the validator: fail */
	    {"      cel: {expressions: [{expression: 'object.spec.nope == 1'}]}\n", ENGINE_FAIL,
	     "expression 'object.spec.nope == 1' resulted in error: no such key: nope"},
	    /* a validate.cel that does not compile fails when evaluated */
	    {"      cel: {expressions: [{expression: 'object.(('}]}\n", ENGINE_FAIL, NULL},
	};
	json_t *o = Y(POD_X("") "spec: {}\n");
	struct engine_input in = {.object = o, .operation = "CREATE"};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *pol = gv_xasprintf(E_HDR MATCH_POD
					 "    validate:\n      failureAction: Enforce\n      "
					 "message: m\n%s",
					 cases[i].body);
		struct run r;
		const struct engine_rule_result *rr;

		run1(&r, pol, &in, ENGINE_ADMISSION);
		rr = result(&r, NULL, "r");
		CHECK(rr && rr->status == cases[i].status, "case %zu: status %d", i,
		      rr ? (int)rr->status : -1);
		if (rr && cases[i].message)
			CHECK_STR(rr->message, cases[i].message);
		if (rr && !cases[i].message)
			CHECK_PREFIX(rr->message, "compilation failed: ");
		run_release(&r);
		free(pol);
	}
	{
		/* celPreconditions not met: skip */
		struct run r;
		run1(&r,
		     E_HDR MATCH_POD
		     "    celPreconditions: [{name: n, expression: 'false'}]\n" ENFORCE
		     "      cel: {expressions: [{expression: 'false'}]}\n",
		     &in, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_SKIP, "cel preconditions not met");
		run_release(&r);
	}
	json_decref(o);
	CHECK_DONE();
}

/* ---- fail closed: what gavel does not evaluate is an explicit error ---- */

static void test_unsupported_is_error(void **state)
{
	static const struct {
		const char *validate; /* the validate body, after failureAction */
		const char *message;
	} cases[] = {
	    {"      cel: {expressions: [{expression: \"resource.Get('v1', 'configmaps', '', "
	     "'x') != null\"}]}\n",
	     "gavel does not evaluate validate.cel with the Kyverno CEL libraries rules"},
	    {"      manifests: {attestors: [{entries: [{keys: {publicKeys: k}}]}]}\n",
	     "gavel does not evaluate validate.manifests rules"},
	    {"      assert: {object: {metadata: {name: y}}}\n",
	     "gavel does not evaluate validate.assert rules"},
	};
	json_t *o = Y(POD_X(""));
	struct engine_input in = {.object = o, .operation = "CREATE"};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *pol = gv_xasprintf(E_HDR MATCH_POD ENFORCE "%s", cases[i].validate);
		struct run r;
		const struct engine_rule_result *rr;
		struct engine_decision d;

		run1(&r, pol, &in, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_ERROR, cases[i].message);
		rr = result(&r, NULL, "r");
		if (rr) {
			CHECK(rr->unsupported, "case %zu: not marked unsupported", i);
			/* failurePolicy Fail (the default) + Enforce: the request is denied */
			d = engine_decide(r.rep.v[0].policy, rr, ENGINE_ADMISSION);
			CHECK(d.blocks, "case %zu: an unsupported Enforce rule must block", i);
		}
		run_release(&r);
		/* In background the same rule is an error result, never no result. */
		free(pol);
		pol = gv_xasprintf(CP "spec:\n  rules:\n  - name: r\n" MATCH_POD ENFORCE "%s",
				   cases[i].validate);
		run1(&r, pol, &in, ENGINE_BACKGROUND);
		CHECK_RESULT(&r, "r", ENGINE_ERROR, cases[i].message);
		run_release(&r);
		free(pol);
	}
	{
		struct run r;
		run1(
		    &r,
		    E_HDR MATCH_POD
		    "    celPreconditions: [{name: n, expression: 'true'}]\n" ENFORCE LABEL_PATTERN,
		    &in, ENGINE_ADMISSION);
		CHECK_RESULT(&r, "r", ENGINE_ERROR, "gavel does not evaluate celPreconditions");
		run_release(&r);
	}
	{
		/* failurePolicy Ignore: an unsupported rule reports an error and allows */
		struct run r;
		const struct engine_rule_result *rr;
		run1(&r,
		     CP "spec:\n  background: false\n  failurePolicy: Ignore\n  rules:\n  - name: "
			"r\n" MATCH_POD ENFORCE "      assert: {object: {metadata: {name: y}}}\n",
		     &in, ENGINE_ADMISSION);
		rr = result(&r, NULL, "r");
		CHECK(rr && rr->status == ENGINE_ERROR,
		      "no error result with failurePolicy Ignore");
		if (rr)
			CHECK(!engine_decide(r.rep.v[0].policy, rr, ENGINE_ADMISSION).blocks,
			      "failurePolicy Ignore must not block");
		run_release(&r);
	}
	{
		/* A mutate rule gives no result and is named for the load-time note. */
		struct engine_policy *p =
		    compile(E_HDR MATCH_POD "    mutate: {patchStrategicMerge: {metadata: {labels: "
					    "{a: b}}}}\n");
		char *note = engine_policy_unsupported_note(p);
		CHECK_STR(engine_policy_rule_unsupported(p, 0), "mutate");
		CHECK_STR(note, "policy p: gavel is a validate engine and does not evaluate its "
				"mutate rule r");
		free(note);
		engine_policy_unref(p);
	}
	json_decref(o);
	CHECK_DONE();
}

/*
 * Without a loader (no hooks), a context entry that reads the cluster is an
 * error once a variable reads it.
 */
static void test_context_without_loader(void **state)
{
	static const char *const entries[] = {
	    "[{name: e, configMap: {name: c, namespace: default}}]",
	    "[{name: e, apiCall: {urlPath: /api/v1/namespaces}}]",
	    "[{name: e, globalReference: {name: e}}]",
	    "[{name: e, imageRegistry: {reference: nginx}}]",
	};
	json_t *o = Y(POD_X(""));
	struct engine_input in = {.object = o, .operation = "CREATE"};

	(void)state;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		char *pol =
		    gv_xasprintf(E_HDR MATCH_POD "    context: %s\n" ENFORCE
						 "      deny: {conditions: {any: [{key: '{{ e }}', "
						 "operator: Equals, value: b}]}}\n",
				 entries[i]);
		struct run r;
		const struct engine_rule_result *rr;

		run1(&r, pol, &in, ENGINE_ADMISSION);
		rr = result(&r, NULL, "r");
		CHECK(rr && rr->status == ENGINE_ERROR, "entry %zu: want an error result", i);
		if (rr)
			CHECK_PREFIX(rr->message,
				     "failed to check deny conditions: failed to substitute "
				     "variables in condition key: failed to resolve e at path : "
				     "failed to load context: gavel does not load ");
		run_release(&r);
		free(pol);
	}
	json_decref(o);
	CHECK_DONE();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_e1_pattern_failure),
	    cmocka_unit_test(test_message_whole_value),
	    cmocka_unit_test(test_report_properties),
	    cmocka_unit_test(test_reporting_matrix),
	    cmocka_unit_test(test_reporting_enforce_non_blocking),
	    cmocka_unit_test(test_background_mode),
	    cmocka_unit_test(test_background_skips_unsafe_rules),
	    cmocka_unit_test(test_update_existing_violations),
	    cmocka_unit_test(test_delete),
	    cmocka_unit_test(test_apply_rules_one),
	    cmocka_unit_test(test_namespaced_policy),
	    cmocka_unit_test(test_policy_exception),
	    cmocka_unit_test(test_foreach),
	    cmocka_unit_test(test_foreach_deny_and_preconditions),
	    cmocka_unit_test(test_foreach_element_scope),
	    cmocka_unit_test(test_foreach_errors_and_skips),
	    cmocka_unit_test(test_deny_legacy_and_vacuous),
	    cmocka_unit_test(test_autogen_annotation_evaluation),
	    cmocka_unit_test(test_context_variables),
	    cmocka_unit_test(test_context_deferred),
	    cmocka_unit_test(test_context_deferred_conditions),
	    cmocka_unit_test(test_preconditions),
	    cmocka_unit_test(test_deny_e20),
	    cmocka_unit_test(test_deny_messages),
	    cmocka_unit_test(test_selection),
	    cmocka_unit_test(test_autogen_evaluation),
	    cmocka_unit_test(test_result_action),
	    cmocka_unit_test(test_request_variables),
	    cmocka_unit_test(test_update_old_object_as_create),
	    cmocka_unit_test(test_context_before_preconditions),
	    cmocka_unit_test(test_unsupported_is_error),
	    cmocka_unit_test(test_validate_cel),
	    cmocka_unit_test(test_context_without_loader),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
