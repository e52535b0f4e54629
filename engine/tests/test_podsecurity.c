/*
 * Unit tests for engine/podsecurity.c and the podSecurity parts of
 * policy.c and evaluate.c (pod-security-semantics.md): the check table,
 * compiling level/version/exclusions, the checks and exclusions through
 * pss_evaluate, and the rule through engine_evaluate (exceptions, DELETE,
 * UPDATE with Enforce).
 */
#include "engine/tests/testutil.h"

#include "engine/engine_int.h"

#include "common/banned.h"

/* ---- helpers ---- */

/* Compiles a podSecurity object (YAML); NULL on error, with err set. */
static struct pss_spec *spec_of(const char *yaml, struct pss_spec *s, struct gv_err *err)
{
	json_t *j = Y(yaml);
	struct gv_buf ptr = {0};
	enum gv_code rc;

	gv_buf_adds(&ptr, "/ps");
	rc = pss_spec_compile(j, s, &ptr, err);
	gv_buf_release(&ptr);
	json_decref(j);
	return rc ? NULL : s;
}

/* Evaluates spec (YAML) against object (YAML); returns the outcome and sets *msg. */
static enum pss_outcome eval_spec(const char *spec, const char *object, char **msg)
{
	struct pss_spec s;
	struct gv_err err = {0};
	json_t *o = Y(object);
	enum pss_outcome out;

	if (!spec_of(spec, &s, &err))
		fail_msg("spec does not compile: %s: %s", err.pointer, err.msg);
	out = pss_evaluate(&s, "r", o, NULL, 0, NULL, NULL, msg, NULL);
	pss_spec_release(&s);
	json_decref(o);
	return out;
}

#define CHECK_EVAL(spec, object, want_out, want_msg)                                               \
	do {                                                                                       \
		char *tu_m = NULL;                                                                 \
		enum pss_outcome tu_o = eval_spec((spec), (object), &tu_m);                        \
		CHECK_INT(tu_o, (want_out));                                                       \
		if ((want_msg) != NULL)                                                            \
			CHECK_STR(tu_m, (const char *)(want_msg));                                 \
		free(tu_m);                                                                        \
	} while (0)

#define FAIL_PREFIX(level_version)                                                                 \
	"Validation rule 'r' failed. It violates PodSecurity \"" level_version "\": "

/* ---- the table (section 1.2, 3.1) ---- */

static void test_table(void **state)
{
	static const char *const ids[PSS_NCHECKS] = {"allowPrivilegeEscalation",
						     "appArmorProfile",
						     "capabilities_baseline",
						     "capabilities_restricted",
						     "hostNamespaces",
						     "hostPathVolumes",
						     "hostPorts",
						     "hostProbesAndHostLifecycle",
						     "privileged",
						     "procMount",
						     "restrictedVolumes",
						     "runAsNonRoot",
						     "runAsUser",
						     "seLinuxOptions",
						     "seccompProfile_baseline",
						     "seccompProfile_restricted",
						     "sysctls",
						     "windowsHostProcess"};
	static const char *const controls[PSS_NCHECKS] = {"Privilege Escalation",
							  "AppArmor",
							  "Capabilities",
							  "Capabilities",
							  "Host Namespaces",
							  "HostPath Volumes",
							  "Host Ports",
							  NULL,
							  "Privileged Containers",
							  "/proc Mount Type",
							  "Volume Types",
							  "Running as Non-root",
							  "Running as Non-root user",
							  "SELinux",
							  "Seccomp",
							  "Seccomp",
							  "Sysctls",
							  "HostProcess"};
	(void)state;

	for (int i = 0; i < PSS_NCHECKS; i++) {
		CHECK_STR(pss_check_id(i), ids[i]);
		if (controls[i])
			CHECK_STR(pss_check_control(i), controls[i]);
		else
			CHECK(pss_check_control(i) == NULL, "check %d has no control", i);
	}
	CHECK(pss_check_id(PSS_NCHECKS) == NULL, "out of range");
	CHECK_INT(pss_control_count(), 15);
	/* every control names at least one check */
	for (size_t c = 0; c < pss_control_count(); c++) {
		bool found = false;
		for (int i = 0; i < PSS_NCHECKS; i++)
			found |= pss_check_control(i) &&
				 !strcmp(pss_check_control(i), pss_control_name(c));
		CHECK(found, "control %s has no check", pss_control_name(c));
	}
	CHECK_DONE();
}

/* ---- compiling (section 1, 1.1) ---- */

static void check_compile_error(const char *yaml, const char *pointer, const char *msg)
{
	struct pss_spec s;
	struct gv_err err = {0};

	if (spec_of(yaml, &s, &err)) {
		pss_spec_release(&s);
		CHECK(0, "compiles: %s", yaml);
		return;
	}
	CHECK_STR(err.pointer, pointer);
	CHECK_STR(err.msg, msg);
}

static void test_compile_level_version(void **state)
{
	static const char *const ok[] = {"{level: privileged}",
					 "{level: baseline, version: latest}",
					 "{level: restricted, version: v1.19}",
					 "{level: restricted, version: v1.25}",
					 "{level: baseline, version: v1.32}",
					 "{level: baseline, version: null}"};
	struct pss_spec s;
	struct gv_err err = {0};
	(void)state;

	for (size_t i = 0; i < GV_ARRAY_LEN(ok); i++) {
		CHECK(spec_of(ok[i], &s, &err) != NULL, "%s: %s", ok[i], err.msg);
		pss_spec_release(&s);
	}
	CHECK(spec_of("{level: restricted, version: v1.25}", &s, &err) != NULL, "compiles");
	CHECK_INT(s.minor, 25);
	CHECK_STR(s.version, "v1.25");
	CHECK(!s.baseline, "restricted");
	pss_spec_release(&s);
	CHECK(spec_of("{level: baseline}", &s, &err) != NULL, "compiles");
	CHECK_INT(s.minor, PSS_LATEST);
	CHECK_STR(s.version, "");
	CHECK(s.baseline, "baseline");
	pss_spec_release(&s);

	check_compile_error("{level: Baseline}", "/ps/level",
			    "Unsupported value: \"Baseline\": supported values: \"privileged\", "
			    "\"baseline\", \"restricted\"");
	check_compile_error("{version: latest}", "/ps/level", "podSecurity level is required");
	check_compile_error("{level: 1}", "/ps/level",
			    "Unsupported value: 1: supported values: \"privileged\", "
			    "\"baseline\", \"restricted\"");
	static const char *const bad_versions[] = {"v1.18", "v1.33", "1.25",   "v1.025", "v2.1",
						   "v1.",   "",	     "Latest", "v1.2x"};
	for (size_t i = 0; i < GV_ARRAY_LEN(bad_versions); i++) {
		char *y = gv_xasprintf("{level: baseline, version: '%s'}", bad_versions[i]);
		struct gv_err e2 = {0};
		CHECK(spec_of(y, &s, &e2) == NULL, "%s compiles", y);
		CHECK_STR(e2.pointer, "/ps/version");
		CHECK_PREFIX(e2.msg, "Unsupported value: \"");
		free(y);
	}
	CHECK_DONE();
}

static void test_compile_exclusions(void **state)
{
	struct pss_spec s;
	struct gv_err err = {0};
	(void)state;

	/* controls allowed with or without images */
	static const char *const either[] = {"HostProcess",
					     "AppArmor",
					     "SELinux",
					     "Seccomp",
					     "Running as Non-root",
					     "Running as Non-root user"};
	for (size_t i = 0; i < GV_ARRAY_LEN(either); i++) {
		char *y = gv_xasprintf("{level: restricted, exclude: [{controlName: '%s'}, "
				       "{controlName: '%s', images: ['*']}]}",
				       either[i], either[i]);
		CHECK(spec_of(y, &s, &err) != NULL, "%s: %s", y, err.msg);
		CHECK_INT(s.nexclude, 2);
		pss_spec_release(&s);
		free(y);
	}
	static const char *const container[] = {"Capabilities", "Privileged Containers",
						"Host Ports", "/proc Mount Type",
						"Privilege Escalation"};
	for (size_t i = 0; i < GV_ARRAY_LEN(container); i++) {
		char *y = gv_xasprintf("{level: restricted, exclude: [{controlName: '%s'}]}",
				       container[i]);
		check_compile_error(
		    y, "/ps/exclude/0/images",
		    "exclude.images must be specified for the container level control");
		free(y);
	}
	static const char *const pod[] = {"Host Namespaces", "HostPath Volumes", "Sysctls",
					  "Volume Types"};
	for (size_t i = 0; i < GV_ARRAY_LEN(pod); i++) {
		char *y = gv_xasprintf(
		    "{level: restricted, exclude: [{controlName: '%s', images: [a]}]}", pod[i]);
		check_compile_error(
		    y, "/ps/exclude/0/images",
		    "exclude.images must not be specified for the pod level control");
		free(y);
	}
	check_compile_error("{level: baseline, exclude: [{controlName: Sysctls, restrictedField: "
			    "'spec.securityContext.sysctls[*].name'}]}",
			    "/ps/exclude/0/values", "values is required");
	check_compile_error("{level: baseline, exclude: [{controlName: Sysctls, values: [a]}]}",
			    "/ps/exclude/0/restrictedField", "restrictedField is required");
	/* baseline: restricted-only controls are refused, Seccomp and Capabilities are not */
	static const char *const restricted_only[] = {"Volume Types", "Running as Non-root",
						      "Running as Non-root user"};
	for (size_t i = 0; i < GV_ARRAY_LEN(restricted_only); i++) {
		char *y = gv_xasprintf("{level: baseline, exclude: [{controlName: Seccomp}, "
				       "{controlName: '%s'}]}",
				       restricted_only[i]);
		check_compile_error(y, "/ps/exclude/1/controlName",
				    "Invalid control name defined at the given level");
		free(y);
	}
	check_compile_error("{level: baseline, exclude: [{controlName: Privilege Escalation, "
			    "images: ['*']}]}",
			    "/ps/exclude/0/controlName",
			    "Invalid control name defined at the given level");
	CHECK(spec_of("{level: baseline, exclude: [{controlName: Capabilities, images: ['*']}]}",
		      &s, &err) != NULL,
	      "%s", err.msg);
	pss_spec_release(&s);
	check_compile_error("{level: baseline, exclude: [{images: ['*']}]}",
			    "/ps/exclude/0/controlName", "controlName is required");
	check_compile_error("{level: baseline, exclude: [{controlName: Capabilities, images: a}]}",
			    "/ps/exclude/0/images", "images must be a list of strings");
	CHECK_DONE();
}

/* The policy and exception compilers report the pointer into the document. */
static void test_compile_documents(void **state)
{
	struct gv_err err = {0};
	json_t *doc =
	    Y("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n"
	      "spec:\n  rules:\n  - name: a\n    match: {any: [{resources: {kinds: [Pod]}}]}\n"
	      "    validate: {podSecurity: {level: baseline}}\n"
	      "  - name: b\n    match: {any: [{resources: {kinds: [Pod]}}]}\n"
	      "    validate: {podSecurity: {level: baseline, version: v1.9}}\n");
	struct engine_policy *p = engine_policy_compile(doc, &err);
	struct engine_exception *x;
	(void)state;

	CHECK(p == NULL, "v1.9 compiles");
	CHECK_STR(err.pointer, "/spec/rules/1/validate/podSecurity/version");
	engine_policy_unref(p);
	json_decref(doc);

	gv_err_clear(&err);
	doc = Y("apiVersion: kyverno.io/v2\nkind: PolicyException\n"
		"metadata: {name: e, namespace: n}\n"
		"spec:\n  exceptions: [{policyName: p, ruleNames: [r]}]\n"
		"  match: {any: [{resources: {kinds: [Pod]}}]}\n"
		"  podSecurity:\n  - {controlName: Sysctls}\n  - {controlName: Host Ports}\n");
	x = engine_exception_compile(doc, &err);
	CHECK(x == NULL, "exception compiles");
	CHECK_STR(err.pointer, "/spec/podSecurity/1/images");
	CHECK_STR(err.msg, "exclude.images must be specified for the container level control");
	engine_exception_free(x);
	json_decref(doc);

	/* no level check for exceptions */
	doc = Y("apiVersion: kyverno.io/v2beta1\nkind: PolicyException\n"
		"metadata: {name: e, namespace: n}\n"
		"spec:\n  exceptions: [{policyName: p, ruleNames: [r]}]\n"
		"  match: {any: [{resources: {kinds: [Pod]}}]}\n"
		"  podSecurity:\n  - {controlName: Volume Types}\n");
	x = engine_exception_compile(doc, &err);
	CHECK(x != NULL && x->npss == 1, "exception with Volume Types");
	engine_exception_free(x);
	json_decref(doc);
	CHECK_DONE();
}

/* ---- checks (section 3) ---- */

#define POD(spec) "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: " spec "\n"

static void test_level_selection(void **state)
{
	/* privileged runs every check (not an allow-all level) */
	static const char priv[] = POD("{containers: [{name: c, securityContext: {privileged: "
				       "true, allowPrivilegeEscalation: false, runAsNonRoot: true, "
				       "seccompProfile: {type: RuntimeDefault}, capabilities: "
				       "{drop: [ALL]}}}]}");
	(void)state;

	CHECK_EVAL("{level: privileged, version: latest}", priv, PSS_FAIL,
		   FAIL_PREFIX("privileged:latest") "(Forbidden reason: privileged, field error "
						    "list: [spec.containers[0].securityContext."
						    "privileged is forbidden, forbidden values "
						    "found: true])");
	CHECK_EVAL("{level: baseline}", POD("{containers: [{name: c}]}"), PSS_PASS,
		   "Validation rule 'r' passed.");
	/* restricted runs both capabilities checks on one violation */
	CHECK_EVAL(
	    "{level: restricted, version: v1.30}",
	    POD("{securityContext: {runAsNonRoot: true, seccompProfile: {type: "
		"RuntimeDefault}}, containers: [{name: c, securityContext: "
		"{allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: "
		"[NET_RAW]}}}]}"),
	    PSS_FAIL,
	    FAIL_PREFIX("restricted:v1.30") "(Forbidden reason: non-default capabilities, "
					    "field error list: "
					    "[spec.containers[0].securityContext.capabilities."
					    "add is forbidden, forbidden values found: "
					    "[NET_RAW]])(Forbidden reason: unrestricted "
					    "capabilities, field error list: "
					    "[spec.containers[0].securityContext.capabilities."
					    "add is forbidden, forbidden values found: "
					    "[NET_RAW]])");
	CHECK_DONE();
}

/* A version below v1.19 is refused by the compiler; the table still has seccomp's 1.0 form. */
static void test_seccomp_annotations_before_1_19(void **state)
{
	struct pss_spec s = {.level = gv_xstrdup("baseline"),
			     .version = gv_xstrdup("v1.18"),
			     .baseline = true,
			     .minor = 18};
	json_t *o = Y("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
		      "    seccomp.security.alpha.kubernetes.io/pod: unconfined\n"
		      "    container.seccomp.security.alpha.kubernetes.io/c: docker/default\n"
		      "    container.seccomp.security.alpha.kubernetes.io/d: localhost/x\n"
		      "    container.seccomp.security.alpha.kubernetes.io/e: other\n"
		      "spec:\n  securityContext: {seccompProfile: {type: Unconfined}}\n"
		      "  containers: [{name: c}, {name: d}, {name: e}]\n");
	char *msg = NULL;
	(void)state;

	CHECK_INT(pss_evaluate(&s, "r", o, NULL, 0, NULL, NULL, &msg, NULL), PSS_FAIL);
	/* the 1.0 version reads annotations only, not the seccompProfile field */
	CHECK_STR(msg, FAIL_PREFIX("baseline:v1.18") "(Forbidden reason: seccompProfile, field "
						     "error list: "
						     "[spec.template.metadata.annotations[seccomp."
						     "security.alpha.kubernetes.io/pod] is "
						     "forbidden, forbidden values found: "
						     "unconfined, "
						     "spec.template.metadata.annotations[container."
						     "seccomp.security.alpha.kubernetes.io/e] is "
						     "forbidden, forbidden values found: other])");
	free(msg);
	json_decref(o);
	pss_spec_release(&s);
	CHECK_DONE();
}

static void test_empty_forbidden_value(void **state)
{
	(void)state;
	/* a Forbidden error whose bad value is "" prints as "<field>: Forbidden" */
	CHECK_EVAL(
	    "{level: baseline}",
	    POD("{securityContext: {seccompProfile: {localhostProfile: x}}, containers: "
		"[{name: c, securityContext: {procMount: ''}}], volumes: [{name: v, "
		"hostPath: {type: Directory}}]}"),
	    PSS_FAIL,
	    FAIL_PREFIX("baseline:") "(Forbidden reason: hostPath volumes, field error list: "
				     "[spec.volumes[0].hostPath: Forbidden])(Forbidden "
				     "reason: procMount, field error list: "
				     "[spec.containers[0].securityContext.procMount: "
				     "Forbidden])(Forbidden reason: seccompProfile, field "
				     "error list: "
				     "[spec.securityContext.seccompProfile.type: Forbidden])");
	CHECK_DONE();
}

/* ---- exclusions (section 5) ---- */

static void test_container_level_by_name(void **state)
{
	/* the error removed is the matched container's, found by name, wherever it is */
	static const char pod[] = POD("{containers: [{name: b, image: nginx, securityContext: "
				      "{privileged: true}}, {name: a, image: 'ghcr.io/x/a:1', "
				      "securityContext: {privileged: true}}]}");
	(void)state;

	CHECK_EVAL("{level: baseline, exclude: [{controlName: Privileged Containers, images: "
		   "['ghcr.io/*']}]}",
		   pod, PSS_FAIL,
		   FAIL_PREFIX("baseline:") "(Forbidden reason: privileged, field error list: "
					    "[spec.containers[0].securityContext.privileged is "
					    "forbidden, forbidden values found: true])");
	/* '?' is one character */
	CHECK_EVAL("{level: baseline, exclude: [{controlName: Privileged Containers, images: "
		   "['ngin?', 'ghcr.io/x/?:1']}]}",
		   pod, PSS_PASS, "Validation rule 'r' passed.");
	/* no image matches: nothing is excluded */
	CHECK_EVAL("{level: baseline, exclude: [{controlName: Privileged Containers, images: "
		   "['nginx:*']}]}",
		   pod, PSS_FAIL, NULL);
	CHECK_DONE();
}

static void test_values_and_required(void **state)
{
	static const char pod[] =
	    POD("{securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}, "
		"containers: [{name: a, image: x, securityContext: {capabilities: {drop: [ALL]}}}, "
		"{name: b, image: x, securityContext: {allowPrivilegeEscalation: true, "
		"capabilities: {drop: [ALL]}}}, {name: c, image: x}]}");
	(void)state;

	/*
	 * values: "nil" and "true" are bad values that must match; a Required error
	 * has none and always passes the values test.
	 */
	CHECK_EVAL(
	    "{level: restricted, exclude: [{controlName: Privilege Escalation, images: "
	    "['*'], restrictedField: "
	    "'spec.containers[*].securityContext.allowPrivilegeEscalation', values: "
	    "['false']}, {controlName: Capabilities, images: ['*']}]}",
	    pod, PSS_FAIL,
	    FAIL_PREFIX("restricted:") "(Forbidden reason: allowPrivilegeEscalation != false, "
				       "field error list: "
				       "[spec.containers[0].securityContext."
				       "allowPrivilegeEscalation is forbidden, forbidden "
				       "values found: nil, "
				       "spec.containers[1].securityContext."
				       "allowPrivilegeEscalation is forbidden, forbidden "
				       "values found: true])");
	CHECK_EVAL("{level: restricted, exclude: [{controlName: Privilege Escalation, images: "
		   "['*'], restrictedField: "
		   "'spec.containers[*].securityContext.allowPrivilegeEscalation', values: "
		   "['nil', 't*']}, {controlName: Capabilities, images: ['*']}]}",
		   pod, PSS_PASS, "Validation rule 'r' passed.");
	/* a restrictedField of another list excludes nothing */
	CHECK_EVAL("{level: restricted, exclude: [{controlName: Privilege Escalation, images: "
		   "['*'], restrictedField: "
		   "'spec.initContainers[*].securityContext.allowPrivilegeEscalation', values: "
		   "['*']}, {controlName: Capabilities, images: ['*']}]}",
		   pod, PSS_FAIL, NULL);
	CHECK_DONE();
}

static void test_integer_and_annotation_values(void **state)
{
	(void)state;
	/* an integer bad value is matched as its decimal text; digits in keys become '*' */
	CHECK_EVAL("{level: baseline, exclude: [{controlName: Host Ports, images: ['*'], "
		   "restrictedField: 'spec.containers[*].ports[*].hostPort', values: ['80*']}]}",
		   POD("{containers: [{name: c, image: x, ports: [{containerPort: 1, hostPort: "
		       "8080}, {containerPort: 2, hostPort: 9090}]}]}"),
		   PSS_FAIL,
		   FAIL_PREFIX("baseline:") "(Forbidden reason: hostPort, field error list: "
					    "[spec.containers[0].ports[1].hostPort is forbidden, "
					    "forbidden values found: 9090])");
	CHECK_EVAL("{level: baseline, exclude: [{controlName: AppArmor, restrictedField: "
		   "'metadata.annotations[container.apparmor.security.beta.kubernetes.io/c*]', "
		   "values: [unconfined]}]}",
		   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
		   "    container.apparmor.security.beta.kubernetes.io/c12: unconfined\n"
		   "spec: {containers: [{name: c12}]}\n",
		   PSS_PASS, "Validation rule 'r' passed.");
	CHECK_DONE();
}

/* ---- pod extraction and limits (section 2) ---- */

static void test_extraction(void **state)
{
	(void)state;
	CHECK_EVAL("{level: baseline}", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		   PSS_ERROR,
		   "Error while getting new resource: could not find correct resource type");
	/* the kind is read from the object, exactly */
	CHECK_EVAL("{level: baseline}",
		   "apiVersion: apps/v1\nkind: deployment\nmetadata: {name: x}\nspec: {}\n",
		   PSS_ERROR,
		   "Error while getting new resource: could not find correct resource type");
	CHECK_EVAL("{level: baseline}", POD("{hostNetwork: 'yes'}"), PSS_ERROR,
		   "Error while getting new resource: json: cannot unmarshal string into Go "
		   "struct field PodSpec.spec.hostNetwork of type bool");
	CHECK_EVAL("{level: baseline}",
		   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: "
		   "{spec: {containers: [{name: c, securityContext: {capabilities: {add: "
		   "[1]}}}]}}}\n",
		   PSS_ERROR,
		   "Error while getting new resource: json: cannot unmarshal number into Go "
		   "struct field Capabilities.spec.template.spec.containers.securityContext."
		   "capabilities.add of type v1.Capability");
	CHECK_EVAL("{level: baseline}",
		   "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {a: 1}}\n",
		   PSS_ERROR,
		   "Error while getting new resource: json: cannot unmarshal number into Go "
		   "struct field ObjectMeta.metadata.annotations of type string");
	CHECK_EVAL("{level: restricted}", POD("{securityContext: {runAsUser: 1e30}}"), PSS_ERROR,
		   "Error while getting new resource: json: cannot unmarshal number 1e+30 into "
		   "Go struct field PodSecurityContext.spec.securityContext.runAsUser of type "
		   "int64");
	/* null elements of a list decode as zero values */
	CHECK_EVAL(
	    "{level: restricted}",
	    POD("{securityContext: {runAsNonRoot: true, seccompProfile: {type: "
		"RuntimeDefault}}, containers: [{name: c, securityContext: "
		"{allowPrivilegeEscalation: false, capabilities: {drop: [null, KILL], add: "
		"[null]}}}]}"),
	    PSS_FAIL,
	    FAIL_PREFIX("restricted:") "(Forbidden reason: non-default capabilities, field "
				       "error list: "
				       "[spec.containers[0].securityContext.capabilities.add "
				       "is forbidden, forbidden values found: []])(Forbidden "
				       "reason: unrestricted capabilities, field error list: "
				       "[spec.containers[0].securityContext.capabilities.drop "
				       "is forbidden, forbidden values found: [ KILL], "
				       "spec.containers[0].securityContext.capabilities.add "
				       "is forbidden, forbidden values found: []])");
	/* null fields are the zero value; unknown fields are ignored */
	CHECK_EVAL("{level: baseline}",
		   POD("{hostNetwork: null, volumes: null, containers: [{name: c, "
		       "securityContext: null, unknown: 1}]}"),
		   PSS_PASS, "Validation rule 'r' passed.");
	CHECK_DONE();
}

static void test_budget(void **state)
{
	struct gv_buf pod = {0};
	struct pss_spec s;
	struct gv_err err = {0};
	struct jp_budget b = {.max = 1000};
	json_t *o;
	char *msg = NULL;
	(void)state;

	gv_buf_adds(&pod, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n");
	for (int i = 0; i < 200; i++)
		gv_buf_addf(&pod, "  - {name: c%d, image: x}\n", i);
	o = Y(gv_buf_str(&pod));
	if (!spec_of("{level: restricted}", &s, &err))
		fail_msg("%s", err.msg);
	CHECK_INT(pss_evaluate(&s, "r", o, NULL, 0, &b, NULL, &msg, NULL), PSS_ERROR);
	CHECK_STR(msg, "rule evaluation step budget (1000000) exceeded");
	free(msg);
	/* with the rule's full budget it is evaluated */
	b.used = 0;
	b.max = RULE_MAX_STEPS;
	CHECK_INT(pss_evaluate(&s, "r", o, NULL, 0, &b, NULL, &msg, NULL), PSS_FAIL);
	CHECK(b.used > 0, "steps charged");
	free(msg);
	pss_spec_release(&s);
	json_decref(o);
	gv_buf_release(&pod);
	CHECK_DONE();
}

/* The memo: the same outcome, message, properties and budget as without it. */
static void test_memo(void **state)
{
	static const char *const specs[] = {
	    "{level: restricted, version: latest}",
	    "{level: baseline, version: latest}",
	    "{level: restricted, version: latest, exclude: [{controlName: Capabilities, "
	    "images: ['nginx*']}]}",
	    "{level: restricted, version: v1.24}",
	    "{level: baseline, version: latest, exclude: [{controlName: Privileged Containers, "
	    "images: ['*'], restrictedField: 'spec.containers[*].securityContext.privileged', "
	    "values: ['true']}]}",
	};
	static const char *const pods[] = {
	    "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a, "
	    "image: nginx, securityContext: {privileged: true}}, {name: b, image: busybox}]}}",
	    "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: "
	    "{spec: {hostNetwork: true, containers: [{name: a, image: nginx}]}}}}",
	    "{apiVersion: v1, kind: Pod, metadata: {name: bad}, spec: {containers: 1}}",
	};
	struct pss_memo memo = {0};
	(void)state;

	for (size_t o = 0; o < GV_ARRAY_LEN(pods); o++) {
		json_t *obj = Y(pods[o]);

		/* every spec twice: the second time entirely from the memo */
		for (size_t k = 0; k < 2 * GV_ARRAY_LEN(specs); k++) {
			struct pss_spec s;
			struct gv_err err = {0};
			struct jp_budget b1 = {.max = RULE_MAX_STEPS}, b2 = {.max = RULE_MAX_STEPS};
			char *m1 = NULL, *m2 = NULL;
			json_t *p1 = NULL, *p2 = NULL;
			enum pss_outcome o1, o2;

			if (!spec_of(specs[k % GV_ARRAY_LEN(specs)], &s, &err))
				fail_msg("%s", err.msg);
			o1 = pss_evaluate(&s, "r", obj, NULL, 0, &b1, NULL, &m1, &p1);
			o2 = pss_evaluate(&s, "r", obj, NULL, 0, &b2, &memo, &m2, &p2);
			CHECK_INT(o2, o1);
			CHECK_STR(m2, m1);
			CHECK(json_equal(p1, p2) || (!p1 && !p2), "properties of spec %zu, pod %zu",
			      k, o);
			CHECK(b1.used == b2.used, "budget of spec %zu, pod %zu: %lu vs %lu", k, o,
			      (unsigned long)b1.used, (unsigned long)b2.used);
			free(m1);
			free(m2);
			json_decref(p1);
			json_decref(p2);
			pss_spec_release(&s);
		}
		CHECK(o == 2 ? !memo.decoded : memo.decoded && memo.n > 0, "memo of pod %zu", o);
		json_decref(obj);
	}
	/* another object empties it */
	{
		json_t *obj = Y(pods[0]);
		struct pss_spec s;
		struct gv_err err = {0};
		char *m = NULL;

		if (!spec_of(specs[1], &s, &err))
			fail_msg("%s", err.msg);
		CHECK_INT(pss_evaluate(&s, "r", obj, NULL, 0, NULL, &memo, &m, NULL), PSS_FAIL);
		CHECK(memo.object == obj && memo.n == 1, "memo about the new object only");
		free(m);
		pss_spec_release(&s);
		json_decref(obj);
	}
	pss_memo_release(&memo);
	CHECK_DONE();
}

/* ---- through engine_evaluate ---- */

#define POLICY                                                                                     \
	"apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: psa}\nspec:\n"           \
	"  rules:\n  - name: baseline\n    match: {any: [{resources: {kinds: [Pod]}}]}\n"          \
	"    validate:\n      failureAction: Enforce\n      podSecurity: {level: baseline}\n"
#define HOSTNET_POD                                                                                \
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {hostNetwork: "      \
	"true, containers: [{name: c, image: nginx}]}\n"
#define CLEAN_POD                                                                                  \
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: "       \
	"[{name: c, image: nginx}]}\n"
#define EXC(name, extra)                                                                           \
	"apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata: {name: " name                 \
	", namespace: x}\nspec:\n  exceptions: [{policyName: psa, ruleNames: [baseline]}]\n"       \
	"  match: {any: [{resources: {kinds: [Pod]}}]}\n" extra

struct run {
	struct engine_policyset *set;
	struct engine_report rep;
};

static void run_policy(struct run *r, const char *policy, const char *const *exceptions,
		       size_t nexc, const struct engine_input *in)
{
	json_t *doc = Y(policy);
	struct gv_err err = {0};
	struct engine_policy *p = engine_policy_compile(doc, &err);
	struct engine_exception *exc[4];

	json_decref(doc);
	if (!p)
		fail_msg("policy: %s", err.msg);
	for (size_t i = 0; i < nexc; i++) {
		doc = Y(exceptions[i]);
		exc[i] = engine_exception_compile(doc, &err);
		json_decref(doc);
		if (!exc[i])
			fail_msg("exception: %s", err.msg);
	}
	r->set = engine_policyset_new(&p, 1, exc, nexc);
	engine_policy_unref(p);
	if (engine_evaluate(r->set, in, ENGINE_ADMISSION, &r->rep, &err))
		fail_msg("evaluate: %s", err.msg);
}

static void run(struct run *r, const char *const *exceptions, size_t nexc,
		const struct engine_input *in)
{
	run_policy(r, POLICY, exceptions, nexc, in);
}

static void run_release(struct run *r)
{
	engine_report_release(&r->rep);
	engine_policyset_unref(r->set);
}

static const struct engine_rule_result *only_result(const struct run *r)
{
	if (r->rep.n != 1 || r->rep.v[0].nrules != 1)
		return NULL;
	return &r->rep.v[0].rules[0];
}

#define CHECK_ONE(r, want_status, want_msg, want_exc)                                              \
	do {                                                                                       \
		const struct engine_rule_result *tu_x = only_result(r);                            \
		CHECK(tu_x != NULL, "one result");                                                 \
		if (tu_x) {                                                                        \
			CHECK_STR(engine_status_name(tu_x->status),                                \
				  engine_status_name(want_status));                                \
			CHECK_STR(tu_x->message, (want_msg));                                      \
			CHECK(tu_x->exception == (want_exc), "exception flag");                    \
		}                                                                                  \
	} while (0)

static void test_exceptions(void **state)
{
	static const char *const hostnet[] = {
	    EXC("a", "  podSecurity: [{controlName: Host Namespaces}]\n"),
	    EXC("b", "  podSecurity: [{controlName: Sysctls}]\n")};
	static const char *const mixed[] = {EXC("a", "  podSecurity: [{controlName: Sysctls}]\n"),
					    EXC("plain", ""), EXC("plain2", "")};
	static const char *const unrelated[] = {
	    EXC("a", "  podSecurity: [{controlName: Sysctls}]\n")};
	json_t *o = Y(HOSTNET_POD), *clean = Y(CLEAN_POD);
	struct engine_input in = {.object = o};
	struct run r;
	(void)state;

	run(&r, hostnet, 2, &in);
	CHECK_ONE(&r, ENGINE_SKIP, "rule is skipped due to policy exceptions x/a, x/b", true);
	run_release(&r);
	/* an exception without podSecurity skips the rule, naming the first such one */
	run(&r, mixed, 3, &in);
	CHECK_ONE(&r, ENGINE_SKIP, "rule is skipped due to policy exception x/plain", true);
	run_release(&r);
	/* exclusions that leave a failing check: fail, the exceptions are not named */
	run(&r, unrelated, 1, &in);
	CHECK_ONE(&r, ENGINE_FAIL,
		  "Validation rule 'baseline' failed. It violates PodSecurity \"baseline:\": "
		  "(Forbidden reason: host namespaces, field error list: [spec.hostNetwork is "
		  "forbidden, forbidden values found: true])",
		  false);
	run_release(&r);
	/* a passing pod stays pass */
	in.object = clean;
	run(&r, hostnet, 2, &in);
	CHECK_ONE(&r, ENGINE_PASS, "Validation rule 'baseline' passed.", false);
	run_release(&r);
	json_decref(o);
	json_decref(clean);
	CHECK_DONE();
}

static void test_delete_and_update(void **state)
{
	json_t *bad = Y(HOSTNET_POD), *clean = Y(CLEAN_POD);
	struct engine_input in = {.old_object = bad, .operation = "DELETE"};
	struct run r;
	(void)state;

	/* DELETE: no result at all */
	run(&r, NULL, 0, &in);
	CHECK_INT(r.rep.n, 1);
	CHECK_INT(r.rep.v[0].nrules, 0);
	run_release(&r);
	/* UPDATE, Enforce, the old object fails too: pre-existing violation */
	in = (struct engine_input){.object = bad, .old_object = bad, .operation = "UPDATE"};
	run(&r, NULL, 0, &in);
	CHECK_ONE(&r, ENGINE_SKIP,
		  "skipping the rule evaluation as pre-existing violations are allowed", false);
	run_release(&r);
	/* the old object passed: the fail stands */
	in.old_object = clean;
	run(&r, NULL, 0, &in);
	CHECK_ONE(&r, ENGINE_FAIL,
		  "Validation rule 'baseline' failed. It violates PodSecurity \"baseline:\": "
		  "(Forbidden reason: host namespaces, field error list: [spec.hostNetwork is "
		  "forbidden, forbidden values found: true])",
		  false);
	run_release(&r);
	json_decref(bad);
	json_decref(clean);
	CHECK_DONE();
}

/* A rule that matches a controller kind directly (no autogen) reads its pod template. */
static void test_controller_update(void **state)
{
	static const char policy[] =
	    "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: psa}\nspec:\n"
	    "  validationFailureAction: Enforce\n  rules:\n  - name: r\n"
	    "    match: {any: [{resources: {kinds: [Pod, Deployment]}}]}\n"
	    "    validate:\n      podSecurity: {level: restricted, version: latest}\n";
#define DEPLOY(sc)                                                                                 \
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec:\n"       \
	"  template:\n    spec:\n      securityContext: {runAsNonRoot: true, seccompProfile: "     \
	"{type: RuntimeDefault}}\n      containers:\n      - name: c\n        image: nginx\n"      \
	"        securityContext: " sc "\n"
	json_t *bad = Y(DEPLOY("{allowPrivilegeEscalation: true, capabilities: {drop: [ALL]}}"));
	json_t *bad2 = Y(DEPLOY("{allowPrivilegeEscalation: true}"));
	json_t *good = Y(DEPLOY("{allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}"));
	struct engine_input in = {.object = bad2, .old_object = bad, .operation = "UPDATE"};
	struct run r;
	(void)state;

	/* bad -> worse: the old object fails too, the change goes through */
	run_policy(&r, policy, NULL, 0, &in);
	CHECK_ONE(&r, ENGINE_SKIP,
		  "skipping the rule evaluation as pre-existing violations are allowed", false);
	run_release(&r);
	/* compliant -> bad: fail, paths of the pod template */
	in.old_object = good;
	in.object = bad;
	run_policy(&r, policy, NULL, 0, &in);
	CHECK_ONE(&r, ENGINE_FAIL,
		  "Validation rule 'r' failed. It violates PodSecurity \"restricted:latest\": "
		  "(Forbidden reason: allowPrivilegeEscalation != false, field error list: "
		  "[spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation is "
		  "forbidden, forbidden values found: true])",
		  false);
	run_release(&r);
	json_decref(bad);
	json_decref(bad2);
	json_decref(good);
#undef DEPLOY
	CHECK_DONE();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_compile_level_version),
	    cmocka_unit_test(test_compile_exclusions),
	    cmocka_unit_test(test_compile_documents),
	    cmocka_unit_test(test_level_selection),
	    cmocka_unit_test(test_seccomp_annotations_before_1_19),
	    cmocka_unit_test(test_empty_forbidden_value),
	    cmocka_unit_test(test_container_level_by_name),
	    cmocka_unit_test(test_values_and_required),
	    cmocka_unit_test(test_integer_and_annotation_values),
	    cmocka_unit_test(test_extraction),
	    cmocka_unit_test(test_budget),
	    cmocka_unit_test(test_memo),
	    cmocka_unit_test(test_exceptions),
	    cmocka_unit_test(test_delete_and_update),
	    cmocka_unit_test(test_controller_update),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
