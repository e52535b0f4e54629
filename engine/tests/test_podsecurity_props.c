/*
 * Unit tests of the report properties of `validate.podSecurity` results
 * (pod-security-semantics.md section 4.2): standard, version, controls and
 * controlsJSON from pss_evaluate, and their merge with reportProperties in
 * the rule result of engine_evaluate.
 */
#include "engine/tests/testutil.h"

#include "engine/engine_int.h"

#include "common/banned.h"

/*
 * Evaluates podSecurity `spec` (YAML) against `object` (YAML); returns the
 * outcome and sets *props (new reference or NULL).
 */
static enum pss_outcome props_of(const char *spec, const char *object, json_t **props)
{
	struct pss_spec s;
	struct gv_err err = {0};
	struct gv_buf ptr = {0};
	json_t *j = Y(spec), *o = Y(object);
	enum pss_outcome out;
	char *msg = NULL;

	gv_buf_adds(&ptr, "/ps");
	if (pss_spec_compile(j, &s, &ptr, &err))
		fail_msg("spec does not compile: %s: %s", err.pointer, err.msg);
	out = pss_evaluate(&s, "r", o, NULL, 0, NULL, NULL, &msg, props);
	pss_spec_release(&s);
	gv_buf_release(&ptr);
	json_decref(j);
	json_decref(o);
	free(msg);
	return out;
}

static const char *pget(const json_t *props, const char *key)
{
	return json_string_value(json_object_get(props, key));
}

/* A fail's four properties: want_version "" for an absent version. */
#define CHECK_PROPS(props, level, want_version, want_controls, want_json)                          \
	do {                                                                                       \
		CHECK(json_object_size(props) == 4, "four properties");                            \
		CHECK_STR(pget((props), "standard"), (level));                                     \
		CHECK_STR(pget((props), "version"), (want_version));                               \
		CHECK_STR(pget((props), "controls"), (want_controls));                             \
		CHECK_STR(pget((props), "controlsJSON"), (want_json));                             \
	} while (0)

/* The containers of every list; a restricted securityContext with a hole. */
static void test_containers_and_init_containers(void **state)
{
	static const char pod[] =
	    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"
	    "  initContainers:\n"
	    "  - name: init\n    image: busybox:1.36\n"
	    "    securityContext: {allowPrivilegeEscalation: true, runAsNonRoot: true, "
	    "seccompProfile: {type: RuntimeDefault}}\n"
	    "  containers:\n"
	    "  - name: app\n    image: ghcr.io/org/app:v2\n"
	    "    securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, "
	    "seccompProfile: {type: RuntimeDefault}, capabilities: {drop: [ALL], add: [NET_RAW]}}\n"
	    "  - name: side\n    image: dummyimagename\n"
	    "    securityContext: {allowPrivilegeEscalation: true, runAsNonRoot: true, "
	    "seccompProfile: {type: RuntimeDefault}, capabilities: {drop: [ALL]}}\n";
	json_t *props = NULL;
	(void)state;

	CHECK_INT(props_of("{level: restricted, version: latest}", pod, &props), PSS_FAIL);
	/*
	 * capabilities_restricted's detail is `container "init" must set
	 * ...drop=["ALL"]; container "app" must not include ...`: the first
	 * match names init only.
	 */
	CHECK_PROPS(props, "restricted", "latest",
		    "allowPrivilegeEscalation,capabilities_baseline,capabilities_restricted",
		    "[{\"ID\":\"allowPrivilegeEscalation\",\"Name\":\"Privilege Escalation\","
		    "\"Images\":[\"docker.io/busybox:1.36\",\"docker.io/dummyimagename:latest\"]},"
		    "{\"ID\":\"capabilities_baseline\",\"Name\":\"Capabilities\","
		    "\"Images\":[\"ghcr.io/org/app:v2\"]},"
		    "{\"ID\":\"capabilities_restricted\",\"Name\":\"Capabilities\","
		    "\"Images\":[\"docker.io/busybox:1.36\"]}]");
	json_decref(props);
	CHECK_DONE();
}

/* Pod-level checks have Images null; the version as written, "" when absent. */
static void test_pod_level_and_names(void **state)
{
	static const char pod[] =
	    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"
	    "  hostNetwork: true\n  containers:\n"
	    "  - {name: c, image: nginx, securityContext: {privileged: true}}\n"
	    "  - {name: noimage, securityContext: {privileged: true}}\n"
	    "  - {name: 'a&b', securityContext: {privileged: true}}\n";
	static const char mustang[] =
	    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"
	    "  containers: [{name: mustang, image: nginx, securityContext: {privileged: true}}]\n";
	static const char apparmor[] =
	    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
	    "    container.apparmor.security.beta.kubernetes.io/a: unconfined\nspec:\n"
	    "  containers: [{name: a, image: nginx, securityContext: {appArmorProfile: {type: "
	    "Unconfined}}}]\n";
	json_t *props = NULL;
	(void)state;

	CHECK_INT(props_of("{level: baseline}", pod, &props), PSS_FAIL);
	/* a name no container's image stands for is kept, escaped as Go's encoding/json */
	CHECK_PROPS(props, "baseline", "", "hostNamespaces,privileged",
		    "[{\"ID\":\"hostNamespaces\",\"Name\":\"Host Namespaces\",\"Images\":null},"
		    "{\"ID\":\"privileged\",\"Name\":\"Privileged Containers\","
		    "\"Images\":[\"docker.io/nginx:latest\",\"noimage\",\"a\\u0026b\"]}]");
	json_decref(props);

	/* Kyverno's regex stops at the first "must", here inside the quoted name */
	CHECK_INT(props_of("{level: baseline, version: v1.29}", mustang, &props), PSS_FAIL);
	CHECK_PROPS(props, "baseline", "v1.29", "privileged",
		    "[{\"ID\":\"privileged\",\"Name\":\"Privileged Containers\","
		    "\"Images\":[\"\"]}]");
	json_decref(props);

	/* `container "a" and annotations must not ...` gives the name "aandannotations" */
	CHECK_INT(props_of("{level: baseline}", apparmor, &props), PSS_FAIL);
	CHECK_PROPS(props, "baseline", "", "appArmorProfile",
		    "[{\"ID\":\"appArmorProfile\",\"Name\":\"AppArmor\","
		    "\"Images\":[\"aandannotations\"]}]");
	json_decref(props);
	CHECK_DONE();
}

/* Images of a controller come from its pod template; a digest stays a digest. */
static void test_controller_kinds(void **state)
{
	static const char deploy[] =
	    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec:\n"
	    "  template:\n    spec:\n      containers:\n"
	    "      - {name: web, image: 'example.com/web@sha256:0123', securityContext: "
	    "{privileged: true}}\n";
	static const char cronjob[] =
	    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: j, namespace: ns}\nspec:\n"
	    "  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n"
	    "          - {name: job, image: 'localhost:5000/job:1', securityContext: {runAsUser: "
	    "0}}\n";
	json_t *props = NULL;
	(void)state;

	CHECK_INT(props_of("{level: baseline}", deploy, &props), PSS_FAIL);
	CHECK_PROPS(props, "baseline", "", "privileged",
		    "[{\"ID\":\"privileged\",\"Name\":\"Privileged Containers\","
		    "\"Images\":[\"example.com/web@sha256:0123\"]}]");
	json_decref(props);

	/*
	 * runAsNonRoot: `pod or container "job" must set ...=true`; runAsUser:
	 * `container "job" must not set runAsUser=0`.
	 */
	CHECK_INT(props_of("{level: restricted, version: v1.25, exclude: [{controlName: "
			   "Privilege Escalation, images: ['*']}, {controlName: Capabilities, "
			   "images: ['*']}, {controlName: Seccomp, images: ['*']}]}",
			   cronjob, &props),
		  PSS_FAIL);
	CHECK_PROPS(props, "restricted", "v1.25", "runAsNonRoot,runAsUser",
		    "[{\"ID\":\"runAsNonRoot\",\"Name\":\"Running as Non-root\","
		    "\"Images\":[\"localhost:5000/job:1\"]},"
		    "{\"ID\":\"runAsUser\",\"Name\":\"Running as Non-root user\","
		    "\"Images\":[\"localhost:5000/job:1\"]}]");
	json_decref(props);
	CHECK_DONE();
}

/* Exclusions remove checks; the Images of what is left come from the detail before them. */
static void test_exclusions(void **state)
{
	static const char pod[] =
	    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"
	    "  hostNetwork: true\n  containers:\n"
	    "  - {name: a, image: nginx, securityContext: {capabilities: {add: [NET_RAW]}}}\n"
	    "  - {name: b, image: busybox, securityContext: {privileged: true}}\n";
	static const char two[] =
	    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n"
	    "  - {name: a, image: nginx, securityContext: {privileged: true}}\n"
	    "  - {name: b, image: busybox, securityContext: {privileged: true}}\n";
	json_t *props = NULL, *sentinel = json_object();
	(void)state;

	CHECK_INT(props_of("{level: baseline, exclude: [{controlName: Capabilities, images: "
			   "[nginx]}, {controlName: Privileged Containers, images: [busybox]}]}",
			   pod, &props),
		  PSS_FAIL);
	CHECK_PROPS(props, "baseline", "", "hostNamespaces",
		    "[{\"ID\":\"hostNamespaces\",\"Name\":\"Host Namespaces\",\"Images\":null}]");
	json_decref(props);

	/* b's error is excluded, a's is left: the detail still names both */
	CHECK_INT(props_of("{level: baseline, exclude: [{controlName: Privileged Containers, "
			   "images: [busybox]}]}",
			   two, &props),
		  PSS_FAIL);
	CHECK_PROPS(props, "baseline", "", "privileged",
		    "[{\"ID\":\"privileged\",\"Name\":\"Privileged Containers\","
		    "\"Images\":[\"docker.io/nginx:latest\",\"docker.io/busybox:latest\"]}]");
	json_decref(props);

	/* everything excluded: pass, no properties */
	props = sentinel;
	CHECK_INT(props_of("{level: baseline, exclude: [{controlName: Privileged Containers, "
			   "images: ['*']}]}",
			   two, &props),
		  PSS_PASS);
	CHECK(props == NULL, "no properties on a pass");
	json_decref(sentinel);
	CHECK_DONE();
}

/* Pass, error and properties NULL: nothing is produced. */
static void test_no_properties(void **state)
{
	static const char clean[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
				    "  containers: [{name: c, image: nginx}]\n";
	static const char svc[] = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n";
	json_t *sentinel = json_object(), *props = sentinel;
	(void)state;

	CHECK_INT(props_of("{level: baseline}", clean, &props), PSS_PASS);
	CHECK(props == NULL, "no properties on a pass");
	props = sentinel;
	CHECK_INT(props_of("{level: baseline}", svc, &props), PSS_ERROR);
	CHECK(props == NULL, "no properties on an error");
	json_decref(sentinel);
	CHECK_DONE();
}

/* ---- through engine_evaluate: the rule result's properties ---- */

struct run {
	struct engine_policyset *set;
	struct engine_report rep;
};

static const struct engine_rule_result *run1(struct run *r, const char *policy,
					     const char *exception, const struct engine_input *in)
{
	json_t *doc = Y(policy);
	struct gv_err err = {0};
	struct engine_policy *p = engine_policy_compile(doc, &err);
	struct engine_exception *x = NULL;

	json_decref(doc);
	if (!p)
		fail_msg("policy: %s", err.msg);
	if (exception) {
		doc = Y(exception);
		x = engine_exception_compile(doc, &err);
		json_decref(doc);
		if (!x)
			fail_msg("exception: %s", err.msg);
	}
	r->set = engine_policyset_new(&p, 1, x ? &x : NULL, x ? 1 : 0);
	engine_policy_unref(p);
	if (engine_evaluate(r->set, in, ENGINE_BACKGROUND, &r->rep, &err))
		fail_msg("evaluate: %s", err.msg);
	if (r->rep.n != 1 || r->rep.v[0].nrules != 1)
		return NULL;
	return &r->rep.v[0].rules[0];
}

static void run_release(struct run *r)
{
	engine_report_release(&r->rep);
	engine_policyset_unref(r->set);
}

#define POLICY(props)                                                                              \
	"apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: psa}\nspec:\n"           \
	"  background: true\n  rules:\n  - name: baseline\n"                                       \
	"    match: {any: [{resources: {kinds: [Pod]}}]}\n" props                                  \
	"    validate:\n      failureAction: Audit\n      podSecurity: {level: baseline, "         \
	"version: v1.30}\n"

static void test_with_report_properties(void **state)
{
	static const char bad[] =
	    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"
	    "spec:\n  hostPID: true\n  containers: [{name: c, image: nginx}]\n";
	static const char good[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"
				   "spec:\n  containers: [{name: c, image: nginx}]\n";
	static const char exc[] =
	    "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata: {name: e, namespace: x}\n"
	    "spec:\n  exceptions: [{policyName: psa, ruleNames: [baseline]}]\n"
	    "  match: {any: [{resources: {kinds: [Pod]}}]}\n"
	    "  podSecurity: [{controlName: Host Namespaces}]\n";
	json_t *b = Y(bad), *g = Y(good);
	struct engine_input in = {.object = b};
	const struct engine_rule_result *rr;
	struct run r;
	(void)state;

	/* both kinds of properties; podSecurity's win a clash */
	rr = run1(&r,
		  POLICY("    reportProperties: {team: '{{ request.object.metadata.name }}', "
			 "standard: mine}\n"),
		  NULL, &in);
	CHECK(rr != NULL, "one result");
	if (rr) {
		CHECK_STR(engine_status_name(rr->status), "fail");
		CHECK(json_object_size(rr->properties) == 5, "five properties");
		CHECK_STR(pget(rr->properties, "team"), "p");
		CHECK_STR(pget(rr->properties, "standard"), "baseline");
		CHECK_STR(pget(rr->properties, "version"), "v1.30");
		CHECK_STR(pget(rr->properties, "controls"), "hostNamespaces");
		CHECK_STR(pget(rr->properties, "controlsJSON"),
			  "[{\"ID\":\"hostNamespaces\",\"Name\":\"Host Namespaces\","
			  "\"Images\":null}]");
	}
	run_release(&r);

	/* without reportProperties: only podSecurity's */
	rr = run1(&r, POLICY(""), NULL, &in);
	CHECK(rr && json_object_size(rr->properties) == 4, "four properties");
	CHECK_STR(rr ? pget(rr->properties, "controls") : NULL, "hostNamespaces");
	run_release(&r);

	/* a pass keeps its reportProperties and gets nothing else */
	in.object = g;
	rr = run1(&r, POLICY("    reportProperties: {team: x}\n"), NULL, &in);
	CHECK(rr && rr->status == ENGINE_PASS, "pass");
	CHECK(rr && json_object_size(rr->properties) == 1, "one property");
	CHECK_STR(rr ? pget(rr->properties, "team") : NULL, "x");
	run_release(&r);

	/* a skip by an exception's exclusions carries none either */
	in.object = b;
	rr = run1(&r, POLICY(""), exc, &in);
	CHECK(rr && rr->status == ENGINE_SKIP, "skip");
	CHECK(rr && !rr->properties, "no properties on the skip");
	run_release(&r);
	json_decref(b);
	json_decref(g);
	CHECK_DONE();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_containers_and_init_containers),
	    cmocka_unit_test(test_pod_level_and_names),
	    cmocka_unit_test(test_controller_kinds),
	    cmocka_unit_test(test_exclusions),
	    cmocka_unit_test(test_no_properties),
	    cmocka_unit_test(test_with_report_properties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
