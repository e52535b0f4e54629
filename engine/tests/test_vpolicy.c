/*
 * test_vpolicy - engine/vpolicy.h: evaluating several policies against one
 * input (vpol_batch) gives what vpol_evaluate gives, and bad input
 * (cel-semantics.md 1.10, 1.11, 2.4, 2.5): result types, variables used
 * before their definition or by themselves, undeclared params, a failing
 * messageExpression, missing VAP params, hostile CEL bounded by the cost
 * budget; each an error on that policy or result, the others unaffected.
 */
#include "testutil.h"

#include "engine/cel/cel.h"
#include "engine/vpolicy.h"

static const char pod_text[] =
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: web-123456789012345678901234567890, namespace: shop,"
    " labels: {app: web}}\n"
    "spec:\n"
    "  hostNetwork: true\n"
    "  containers: [{name: c, image: nginx}, {name: d, image: busybox}]\n";

/* A ValidatingPolicy on Pods (and its autogen copies) with the given spec lines. */
static json_t *vpol_doc_of(const char *name, const char *spec)
{
	char *text = gv_xasprintf(
	    "apiVersion: policies.kyverno.io/v1\n"
	    "kind: ValidatingPolicy\n"
	    "metadata: {name: %s}\n"
	    "spec:\n"
	    "  validationActions: [Audit]\n"
	    "  matchConstraints:\n"
	    "    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE, "
	    "UPDATE], resources: [pods]}]\n"
	    "%s",
	    name, spec);
	json_t *doc = Y(text);

	free(text);
	return doc;
}

static struct vpol_policy *compile_ok(const char *name, const char *spec)
{
	json_t *doc = vpol_doc_of(name, spec);
	struct gv_err err = {0};
	struct vpol_policy *p = vpol_compile(doc, &err);

	CHECK(p != NULL, "%s: %s", name, err.msg);
	json_decref(doc);
	return p;
}

/* vpol_compile fails with GV_EINVAL at pointer, the message holding part. */
static void compile_fails(const char *spec, const char *pointer, const char *part)
{
	json_t *doc = vpol_doc_of("bad", spec);
	struct gv_err err = {0};
	struct vpol_policy *p = vpol_compile(doc, &err);

	CHECK(p == NULL, "compiled: %s", spec);
	CHECK_INT(err.code, GV_EINVAL);
	CHECK_STR(err.pointer, pointer);
	CHECK(strstr(err.msg, part) != NULL, "message '%s' lacks '%s'", err.msg, part);
	vpol_free(p);
	json_decref(doc);
}

/* The one result of a report (the Pod body), or NULL. */
static const struct vpol_rule_result *only(const struct vpol_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].n)
			return &r->v[i].rules[0];
	return NULL;
}

static void test_batch_same_as_evaluate(void **state)
{
	static const char *const specs[] = {
	    /* reads request */
	    "  validations: [{expression: \"request.operation == 'CREATE' && "
	    "request.namespace == 'shop' && request.kind.kind == 'Pod'\"}]\n",
	    /* does not */
	    "  validations: [{expression: \"!object.spec.?hostNetwork.orValue(false)\","
	    " message: host network}]\n",
	    /* variables, messageExpression */
	    "  variables: [{name: count, expression: 'object.spec.containers.size()'}]\n"
	    "  validations: [{expression: 'variables.count < 3', messageExpression: "
	    "\"'containers: ' + string(variables.count)\"}]\n",
	    /* match conditions reading request: not met */
	    "  matchConditions: [{name: upd, expression: \"request.operation == 'UPDATE'\"}]\n"
	    "  validations: [{expression: 'false'}]\n",
	    /* exceptions */
	    "  validations: [{expression: \"object.spec.containers.all(c, c.image in "
	    "exceptions.allowedImages || c.image == 'nginx')\"}]\n",
	};
	json_t *pod = Y(pod_text);
	json_t *xdoc =
	    Y("apiVersion: policies.kyverno.io/v1\n"
	      "kind: PolicyException\n"
	      "metadata: {name: x, namespace: shop}\n"
	      "spec:\n"
	      "  policyRefs: [{name: p4, kind: ValidatingPolicy}]\n"
	      "  images: [busybox]\n"
	      "  matchConditions: [{name: c, expression: \"request.namespace == 'shop'\"}]\n");
	struct gv_err err = {0};
	struct vpol_exception *x = vpol_exception_compile(xdoc, &err);
	struct vpol_policy *ps[GV_ARRAY_LEN(specs)];
	static const enum engine_status want[] = {ENGINE_PASS, ENGINE_FAIL, ENGINE_PASS,
						  ENGINE_SKIP, ENGINE_PASS};
	static const char *const want_msg[] = {"success", "host network", "success", "skip",
					       "success"};
	struct vpol_input in = {.object = pod,
				.operation = "CREATE",
				.resource = "pods",
				.exceptions = &x,
				.nexceptions = 1};
	struct vpol_batch *b;

	(void)state;
	CHECK(x != NULL, "exception: %s", err.msg);
	for (size_t i = 0; i < GV_ARRAY_LEN(specs); i++) {
		char name[8];
		snprintf(name, sizeof(name), "p%zu", i);
		ps[i] = compile_ok(name, specs[i]);
	}
	/* Twice through one batch, in both orders, against vpol_evaluate. */
	b = vpol_batch_new(&in);
	for (int round = 0; round < 2; round++) {
		for (size_t k = 0; k < GV_ARRAY_LEN(specs); k++) {
			size_t i = round ? GV_ARRAY_LEN(specs) - 1 - k : k;
			struct vpol_report r1, r2;
			const struct vpol_rule_result *a, *c;
			CHECK_INT(vpol_evaluate(ps[i], &in, &r1, NULL), GV_OK);
			CHECK_INT(vpol_batch_evaluate(b, ps[i], &r2, NULL), GV_OK);
			CHECK_INT(r1.n, r2.n);
			a = only(&r1);
			c = only(&r2);
			CHECK(a && c, "policy %zu: no result", i);
			if (a && c) {
				CHECK_INT(a->status, want[i]);
				CHECK_INT(c->status, want[i]);
				CHECK_STR(a->rule, c->rule);
				CHECK_STR(a->message, want_msg[i]);
				CHECK_STR(c->message, want_msg[i]);
			}
			vpol_report_release(&r1);
			vpol_report_release(&r2);
		}
	}
	vpol_batch_free(b);
	/* The messageExpression of a failing policy, through a batch. */
	{
		struct vpol_input two = in;
		json_t *pod3 = Y("apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: shop}\n"
				 "spec: {containers: [{name: a}, {name: b}, {name: c}]}\n");
		struct vpol_report r;
		two.object = pod3;
		b = vpol_batch_new(&two);
		CHECK_INT(vpol_batch_evaluate(b, ps[2], &r, NULL), GV_OK);
		CHECK(only(&r) && only(&r)->status == ENGINE_FAIL, "p2 on 3 containers");
		if (only(&r))
			CHECK_STR(only(&r)->message, "containers: 3");
		vpol_report_release(&r);
		vpol_batch_free(b);
		json_decref(pod3);
	}
	/* No object: the input error, as vpol_evaluate gives it. */
	{
		struct vpol_input none = {.operation = "DELETE"};
		struct vpol_report r;
		struct gv_err e = {0};
		b = vpol_batch_new(&none);
		CHECK_INT(vpol_batch_evaluate(b, ps[0], &r, &e), GV_EINVAL);
		CHECK_INT(r.n, 0);
		vpol_batch_free(b);
	}
	for (size_t i = 0; i < GV_ARRAY_LEN(specs); i++)
		vpol_free(ps[i]);
	vpol_exception_free(x);
	json_decref(xdoc);
	json_decref(pod);
	CHECK_DONE();
}

/* cel-semantics.md 1.10: result types. */
static void test_result_types(void **state)
{
	struct vpol_policy *p;

	(void)state;
	compile_fails("  validations: [{expression: object.spec.hostNetwork}]\n",
		      "/spec/validations/0/expression", "output is expected to be of type bool");
	compile_fails("  validations: [{expression: \"object.spec.containers[0]\"}]\n",
		      "/spec/validations/0/expression", "of type dyn");
	compile_fails("  validations: [{expression: 'true', messageExpression: "
		      "object.metadata.name}]\n",
		      "/spec/validations/0/messageExpression",
		      "output is expected to be of type string");
	compile_fails("  matchConditions: [{name: a, expression: object.spec.hostNetwork}]\n"
		      "  validations: [{expression: 'true'}]\n",
		      "/spec/matchConditions/0/expression", "of type bool");
	compile_fails("  validations: [{expression: 'true'}]\n"
		      "  auditAnnotations: [{key: k, valueExpression: '1'}]\n",
		      "/spec/auditAnnotations/0/valueExpression", "of type string");
	/* What Kubernetes accepts. */
	p = compile_ok("ok",
		       "  variables: [{name: host, expression: 'object.spec.hostNetwork == true'},"
		       " {name: two, expression: 'variables.host'}]\n"
		       "  validations: [{expression: 'object.spec.hostNetwork == true'},"
		       " {expression: variables.host}, {expression: '!variables.two'},"
		       " {expression: 'has(variables.host)'}, {expression: \"isSemver('1.0.0')\"},"
		       " {expression: 'true', messageExpression: \"'a' + "
		       "string(object.metadata.name)\"}]\n"
		       "  auditAnnotations: [{key: k, valueExpression: 'null'},"
		       " {key: l, valueExpression: \"'v'\"}]\n");
	vpol_free(p);
	CHECK_DONE();
}

/* A variable reads only the variables before it (cel-semantics.md 1.10, 2.4). */
static void test_variable_order(void **state)
{
	(void)state;
	compile_fails("  variables: [{name: a, expression: 'variables.a'}]\n"
		      "  validations: [{expression: 'variables.a == 1'}]\n",
		      "/spec/variables/0/expression", "undefined field 'a'");
	compile_fails("  variables: [{name: a, expression: 'variables.b'}, {name: b, "
		      "expression: '1'}]\n"
		      "  validations: [{expression: 'variables.a == 1'}]\n",
		      "/spec/variables/0/expression", "undefined field 'b'");
	compile_fails("  variables: [{name: a, expression: '1'}]\n"
		      "  validations: [{expression: 'variables.nope == 1'}]\n",
		      "/spec/validations/0/expression", "undefined field 'nope'");
	compile_fails("  variables: [{name: a, expression: '1'}]\n"
		      "  validations: [{expression: \"variables.a == 'x'\"}]\n",
		      "/spec/validations/0/expression", "no matching overload");
	/* A macro variable named variables is not the policy's. */
	vpol_free(compile_ok("shadow", "  validations: [{expression: "
				       "'[{\"x\": 1}].all(variables, variables.x == 1)'}]\n"));
	CHECK_DONE();
}

static void test_undeclared(void **state)
{
	(void)state;
	compile_fails("  validations: [{expression: 'params.x == 1'}]\n",
		      "/spec/validations/0/expression",
		      "undeclared reference to 'params' (in container '')");
	compile_fails("  variables: [{name: a, expression: 'authorizer'}]\n"
		      "  validations: [{expression: 'true'}]\n",
		      "/spec/variables/0/expression", "undeclared reference to 'authorizer'");
	CHECK_DONE();
}

/*
 * Runtime failures are results of that policy only: a messageExpression
 * error (section 2.5), hostile CEL stopped by the cost budget (1.11).
 */
static void test_runtime_failures(void **state)
{
	json_t *pod = Y(pod_text);
	struct vpol_policy *msg =
	    compile_ok("msg", "  validations: [{expression: 'false', messageExpression: "
			      "\"object.spec.nope + 'x'\"}]\n");
	/* 30x30 name characters x 50,000: 45 million steps, over the budget of 1,000,000 */
	struct vpol_policy *hostile =
	    compile_ok("hostile", "  validations: [{expression: \"object.metadata.name.split('')"
				  ".all(a, object.metadata.name.split('').all(b, "
				  "lists.range(50000).all(c, c >= 0)))\"}]\n");
	struct vpol_policy *good =
	    compile_ok("good", "  validations: [{expression: \"object.metadata.name != ''\"}]\n");
	struct vpol_input in = {.object = pod, .operation = "CREATE", .resource = "pods"};
	struct vpol_batch *b = vpol_batch_new(&in);
	const struct vpol_policy *order[] = {hostile, msg, good};
	struct vpol_report r;

	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(order); i++) {
		const struct vpol_rule_result *x;
		CHECK_INT(vpol_batch_evaluate(b, order[i], &r, NULL), GV_OK);
		x = only(&r);
		CHECK(x != NULL, "policy %zu: no result", i);
		if (!x) {
			vpol_report_release(&r);
			continue;
		}
		if (order[i] == hostile) {
			CHECK_INT(x->status, ENGINE_ERROR);
			CHECK_STR(x->message,
				  "error: operation cancelled: actual cost limit exceeded");
		} else if (order[i] == msg) {
			CHECK_INT(x->status, ENGINE_FAIL);
			CHECK_STR(x->message,
				  "failed to evaluate message expression: no such key: nope");
		} else {
			CHECK_INT(x->status, ENGINE_PASS);
		}
		vpol_report_release(&r);
	}
	vpol_batch_free(b);
	vpol_free(msg);
	vpol_free(hostile);
	vpol_free(good);
	json_decref(pod);
	CHECK_DONE();
}

/* A VAP whose binding names params that are not there: params is null (section 5). */
static void test_vap_missing_params(void **state)
{
	json_t *pod = Y(pod_text);
	json_t *doc =
	    Y("apiVersion: admissionregistration.k8s.io/v1\n"
	      "kind: ValidatingAdmissionPolicy\n"
	      "metadata: {name: vap}\n"
	      "spec:\n"
	      "  paramKind: {apiVersion: v1, kind: ConfigMap}\n"
	      "  matchConstraints:\n"
	      "    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: "
	      "[CREATE], resources: [pods]}]\n"
	      "  validations: [{expression: \"object.metadata.name != params.data.name\"}]\n");
	json_t *binding = Y("apiVersion: admissionregistration.k8s.io/v1\n"
			    "kind: ValidatingAdmissionPolicyBinding\n"
			    "metadata: {name: vap-binding}\n"
			    "spec: {policyName: vap, validationActions: [Deny],"
			    " paramRef: {name: missing, namespace: shop}}\n");
	struct gv_err err = {0};
	struct vpol_policy *p = vpol_compile(doc, &err);
	const json_t *bindings[] = {binding};
	struct vpol_input in = {.object = pod,
				.operation = "CREATE",
				.resource = "pods",
				.bindings = bindings,
				.nbindings = 1};
	struct vpol_report r;

	(void)state;
	CHECK(p != NULL, "vap: %s", err.msg);
	if (p) {
		const struct vpol_rule_result *x;
		CHECK_INT(vpol_evaluate(p, &in, &r, NULL), GV_OK);
		x = only(&r);
		CHECK(x != NULL, "no result");
		if (x) {
			CHECK_INT(x->status, ENGINE_ERROR);
			CHECK_PREFIX(x->message,
				     "expression 'object.metadata.name != params.data.name' "
				     "resulted in error: ");
			CHECK_STR(json_string_value(json_object_get(x->properties, "binding")),
				  "vap-binding");
		}
		vpol_report_release(&r);
	}
	vpol_free(p);
	json_decref(doc);
	json_decref(binding);
	json_decref(pod);
	CHECK_DONE();
}

/*
 * A fake cluster for the params hooks: ConfigMaps (namespaced) and
 * ClusterLimits (cluster-scoped); counts the calls.
 */
struct fake_cluster {
	json_t *objs; /* array */
	int scope_calls, calls;
	bool fail_list;
};

static enum gv_code fake_scope(void *ud, const char *av, const char *kind, bool *namespaced,
			       struct gv_err *err)
{
	struct fake_cluster *f = ud;

	(void)av;
	f->scope_calls++;
	if (strcmp(kind, "ConfigMap") && strcmp(kind, "ClusterLimit"))
		return gv_err_set(err, GV_ENOENT, "no kind %s", kind);
	*namespaced = !strcmp(kind, "ConfigMap");
	return GV_OK;
}

static enum gv_code fake_params(void *ud, const char *av, const char *kind, const char *ns,
				const char *name, const json_t *selector, json_t **out,
				struct gv_err *err)
{
	struct fake_cluster *f = ud;
	json_t *all = json_array(), *o;
	size_t i;

	(void)av;
	(void)selector;
	f->calls++;
	if (!name && f->fail_list) {
		json_decref(all);
		return gv_err_set(err, GV_ENET, "connection refused");
	}
	json_array_foreach(f->objs, i, o)
	{
		const json_t *md = json_object_get(o, "metadata");
		const char *ons = json_string_value(json_object_get(md, "namespace"));
		if (strcmp(json_string_value(json_object_get(o, "kind")), kind) ||
		    strcmp(ons ? ons : "", ns))
			continue;
		if (name && strcmp(json_string_value(json_object_get(md, "name")), name))
			continue;
		if (name) {
			json_decref(all);
			*out = json_incref(o);
			return GV_OK;
		}
		json_array_append(all, o);
	}
	if (name) {
		json_decref(all);
		return gv_err_set(err, GV_ENOENT, "configmaps \"%s\" not found", name);
	}
	*out = all;
	return GV_OK;
}

static struct fake_cluster fake_new(void)
{
	struct fake_cluster f = {0};

	f.objs = Y("- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: shop,"
		   " labels: {team: x}}, data: {max: '3'}}\n"
		   "- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: shop,"
		   " labels: {team: x}}, data: {max: '1'}}\n"
		   "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: shop,"
		   " labels: {team: y}}, data: {max: '9'}}\n"
		   "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: other,"
		   " labels: {team: x}}, data: {max: '7'}}\n"
		   "- {apiVersion: limits.example.com/v1, kind: ClusterLimit,"
		   " metadata: {name: global}, data: {max: '5'}}\n");
	return f;
}

/* Kyverno's CollectParams (cel-semantics.md section 4 step 4) through the hooks. */
static void test_params_collect(void **state)
{
	static const struct {
		const char *kind, *ref, *ns;
		bool missing_is_none;
		int n;		  /* objects, or -1: an error */
		const char *want; /* the first object's data.max, or the error */
	} cases[] = {
	    /* a namespaced kind: paramRef.namespace, else the request's */
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: a}", "shop", false, 1, "3"},
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: a}", "other", false, 1, "7"},
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: a, namespace: other}", "shop", false, 1,
	     "7"},
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: a}", "", false, -1,
	     "can't use namespaced paramRef to match cluster-scoped resources"},
	    /* a cluster-scoped kind: no namespace */
	    {"{apiVersion: limits.example.com/v1, kind: ClusterLimit}", "{name: global}", "shop",
	     false, 1, "5"},
	    {"{apiVersion: limits.example.com/v1, kind: ClusterLimit}",
	     "{name: global, namespace: shop}", "shop", false, -1,
	     "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"},
	    /* missing: an error (Kyverno), or none and then the action (Kubernetes) */
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: zz}", "shop", false, -1,
	     "configmaps \"zz\" not found"},
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: zz}", "shop", true, -1,
	     "no params found"},
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: zz, parameterNotFoundAction: Allow}",
	     "shop", true, 0, NULL},
	    /* a selector: every match in the namespace, in order */
	    {"{apiVersion: v1, kind: ConfigMap}", "{selector: {matchLabels: {team: x}}}", "shop",
	     false, 2, "3"},
	    {"{apiVersion: v1, kind: ConfigMap}",
	     "{selector: {matchExpressions: [{key: team, operator: NotIn, values: [x]}]}}", "shop",
	     false, 1, "9"},
	    {"{apiVersion: v1, kind: ConfigMap}", "{selector: {matchLabels: {team: q}}}", "shop",
	     false, -1, "no params found"},
	    {"{apiVersion: v1, kind: ConfigMap}",
	     "{selector: {matchLabels: {team: q}}, parameterNotFoundAction: Allow}", "shop", false,
	     0, NULL},
	    {"{apiVersion: v1, kind: Secret}", "{name: a}", "shop", false, -1,
	     "failed to check if resource is namespaced or not (no kind Secret)"},
	    {"{apiVersion: v1, kind: ConfigMap}", "{name: a, selector: {matchLabels: {team: x}}}",
	     "shop", false, -1, "one of name or selector must be set, not both"},
	};
	struct fake_cluster f = fake_new();
	struct engine_hooks h = {.ud = &f, .param_scope = fake_scope, .params = fake_params};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *kind = Y(cases[i].kind), *ref = Y(cases[i].ref), *out = NULL;
		struct gv_err err = {0};
		enum gv_code rc = vpol_params_collect(kind, ref, cases[i].ns, &h,
						      cases[i].missing_is_none, &out, &err);
		if (cases[i].n < 0) {
			CHECK(rc != GV_OK, "case %zu: no error", i);
			CHECK(strstr(err.msg, cases[i].want) != NULL, "case %zu: '%s'", i, err.msg);
			CHECK(out == NULL, "case %zu: out set", i);
		} else {
			CHECK_INT(rc, GV_OK);
			CHECK_INT((int)json_array_size(out), cases[i].n);
			if (cases[i].want)
				CHECK_STR(
				    json_string_value(json_object_get(
					json_object_get(json_array_get(out, 0), "data"), "max")),
				    cases[i].want);
		}
		json_decref(out);
		json_decref(kind);
		json_decref(ref);
	}
	{
		/* no hooks: an error, never params */
		json_t *kind = Y("{apiVersion: v1, kind: ConfigMap}"), *ref = Y("{name: a}");
		json_t *out = NULL;
		struct gv_err err = {0};
		CHECK(vpol_params_collect(kind, ref, "shop", NULL, false, &out, &err) != GV_OK,
		      "no hooks");
		json_decref(kind);
		json_decref(ref);
	}
	{
		/* a failed list is an error, whatever the action */
		json_t *kind = Y("{apiVersion: v1, kind: ConfigMap}");
		json_t *ref =
		    Y("{selector: {matchLabels: {team: x}}, parameterNotFoundAction: Allow}");
		json_t *out = NULL;
		struct gv_err err = {0};
		f.fail_list = true;
		CHECK(vpol_params_collect(kind, ref, "shop", &h, false, &out, &err) != GV_OK,
		      "failed list");
		CHECK(strstr(err.msg, "connection refused") != NULL, "'%s'", err.msg);
		json_decref(kind);
		json_decref(ref);
	}
	json_decref(f.objs);
	CHECK_DONE();
}

/* validate.cel with params: one evaluation per object, the first failure wins. */
static void test_cel_params(void **state)
{
	static const struct {
		const char *ref;
		enum engine_status status;
		const char *message;
	} cases[] = {
	    {"{name: a}", ENGINE_PASS, "Validation rule 'r' passed."},
	    {"{name: b}", ENGINE_FAIL, "at most 1 containers"},
	    {"{selector: {matchLabels: {team: x}}}", ENGINE_FAIL, "at most 1 containers"},
	    {"{selector: {matchLabels: {team: q}}, parameterNotFoundAction: Allow}", ENGINE_PASS,
	     "Validation rule 'r' passed."},
	    {"{selector: {matchLabels: {team: q}}}", ENGINE_ERROR,
	     "error in parameterized resource: no params found"},
	    {"{name: zz, parameterNotFoundAction: Allow}", ENGINE_ERROR,
	     "error in parameterized resource: configmaps \"zz\" not found"},
	};
	struct fake_cluster f = fake_new();
	struct engine_hooks h = {.ud = &f, .param_scope = fake_scope, .params = fake_params};
	json_t *pod = Y(pod_text);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = gv_xasprintf(
		    "paramKind: {apiVersion: v1, kind: ConfigMap}\n"
		    "paramRef: %s\n"
		    "expressions:\n"
		    "- expression: \"size(object.spec.containers) <= int(params.data.max)\"\n"
		    "  messageExpression: \"'at most ' + params.data.max + ' containers'\"\n",
		    cases[i].ref);
		json_t *cel = Y(text);
		struct gv_err err = {0};
		struct vpol_cel *c = vpol_cel_compile(cel, NULL, NULL, "r", &err);
		enum engine_status s = ENGINE_SKIP;
		char *msg = NULL;

		CHECK(c != NULL, "case %zu: %s", i, err.msg);
		if (c) {
			vpol_cel_evaluate(c, pod, NULL, NULL, "shop", &h, &s, &msg);
			CHECK_INT(s, cases[i].status);
			CHECK_STR(msg, cases[i].message);
			free(msg);
			/* without hooks: an error result, never a pass */
			vpol_cel_evaluate(c, pod, NULL, NULL, "shop", NULL, &s, &msg);
			CHECK_INT(s, ENGINE_ERROR);
			free(msg);
		}
		vpol_cel_free(c);
		json_decref(cel);
		free(text);
	}
	json_decref(pod);
	json_decref(f.objs);
	CHECK_DONE();
}

/*
 * A VAP with bindings (section 5): in the cluster the policy's
 * matchConstraints and the binding's matchResources must both match;
 * offline only the binding's are checked, as Kyverno's CLI.
 */
static void test_vap_binding_policy_match(void **state)
{
	static const struct {
		const char *resources;	/* the policy's matchConstraints resources */
		const char *binding_ns; /* the binding's matchResources namespaceSelector */
		bool cluster;
		bool result; /* a result, else none */
	} cases[] = {
	    {"[pods]", NULL, true, true},
	    {"[deployments]", NULL, true, false},
	    {"[deployments]", NULL, false, true},
	    {"[pods]", "{matchLabels: {team: x}}", true, false},
	    {"[pods]", "{matchLabels: {team: x}}", false, false},
	    {"[pods]", "{}", true, true},
	};
	struct fake_cluster f = fake_new();
	struct engine_hooks h = {.ud = &f, .param_scope = fake_scope, .params = fake_params};
	json_t *pod = Y(pod_text);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *pt = gv_xasprintf(
		    "apiVersion: admissionregistration.k8s.io/v1\n"
		    "kind: ValidatingAdmissionPolicy\n"
		    "metadata: {name: vap}\n"
		    "spec:\n"
		    "  matchConstraints:\n"
		    "    resourceRules: [{apiGroups: ['', apps], apiVersions: "
		    "[v1], operations: [CREATE], resources: %s}]\n"
		    "  validations: [{expression: \"!has(object.spec.hostNetwork)\"}]\n",
		    cases[i].resources);
		char *bt = gv_xasprintf(
		    "apiVersion: admissionregistration.k8s.io/v1\n"
		    "kind: ValidatingAdmissionPolicyBinding\n"
		    "metadata: {name: b}\n"
		    "spec:\n"
		    "  policyName: vap\n"
		    "  validationActions: [Deny]\n"
		    "%s%s%s",
		    cases[i].binding_ns ? "  matchResources: {namespaceSelector: " : "",
		    cases[i].binding_ns ? cases[i].binding_ns : "",
		    cases[i].binding_ns ? "}\n" : "");
		json_t *doc = Y(pt), *binding = Y(bt);
		const json_t *bindings[] = {binding};
		json_t *ns = Y("apiVersion: v1\nkind: Namespace\n"
			       "metadata: {name: shop, labels: {team: y}}\n");
		struct vpol_input in = {.object = pod,
					.operation = "CREATE",
					.resource = "pods",
					.namespace_object = ns,
					.bindings = bindings,
					.nbindings = 1,
					.hooks = cases[i].cluster ? &h : NULL};
		struct gv_err err = {0};
		struct vpol_policy *p = vpol_compile(doc, &err);
		struct vpol_report r;
		const struct vpol_rule_result *x;

		CHECK(p != NULL, "case %zu: %s", i, err.msg);
		if (p) {
			CHECK_INT(vpol_evaluate(p, &in, &r, NULL), GV_OK);
			x = only(&r);
			CHECK((x != NULL) == cases[i].result, "case %zu: result %s", i,
			      x ? engine_status_name(x->status) : "none");
			if (x && cases[i].result)
				CHECK_INT(x->status, ENGINE_FAIL);
			vpol_report_release(&r);
		}
		vpol_free(p);
		json_decref(ns);
		json_decref(doc);
		json_decref(binding);
		free(pt);
		free(bt);
	}
	json_decref(pod);
	json_decref(f.objs);
	CHECK_DONE();
}

/* A VAP binding's params from the cluster (section 5): per object; the action. */
static void test_vap_cluster_params(void **state)
{
	static const struct {
		const char *ref;
		enum engine_status status;
		const char *message;
	} cases[] = {
	    {"{name: a}", ENGINE_PASS, ""},
	    {"{selector: {matchLabels: {team: x}}}", ENGINE_FAIL, "at most 1"},
	    {"{name: zz}", ENGINE_ERROR, "error in parameterized resource: no params found"},
	    {"{name: zz, parameterNotFoundAction: Allow}", ENGINE_SKIP,
	     "no params found (parameterNotFoundAction: Allow)"},
	};
	struct fake_cluster f = fake_new();
	struct engine_hooks h = {.ud = &f, .param_scope = fake_scope, .params = fake_params};
	json_t *pod = Y(pod_text);
	json_t *doc =
	    Y("apiVersion: admissionregistration.k8s.io/v1\n"
	      "kind: ValidatingAdmissionPolicy\n"
	      "metadata: {name: vap}\n"
	      "spec:\n"
	      "  paramKind: {apiVersion: v1, kind: ConfigMap}\n"
	      "  matchConstraints:\n"
	      "    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: "
	      "[CREATE], resources: [pods]}]\n"
	      "  validations: [{expression: \"size(object.spec.containers) <= "
	      "int(params.data.max)\", messageExpression: \"'at most ' + params.data.max\"}]\n");
	struct gv_err err = {0};
	struct vpol_policy *p = vpol_compile(doc, &err);

	(void)state;
	CHECK(p != NULL, "vap: %s", err.msg);
	for (size_t i = 0; p && i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = gv_xasprintf("apiVersion: admissionregistration.k8s.io/v1\n"
					  "kind: ValidatingAdmissionPolicyBinding\n"
					  "metadata: {name: b}\n"
					  "spec: {policyName: vap, validationActions: [Deny],"
					  " paramRef: %s}\n",
					  cases[i].ref);
		json_t *binding = Y(text);
		const json_t *bindings[] = {binding};
		struct vpol_input in = {.object = pod,
					.operation = "CREATE",
					.resource = "pods",
					.bindings = bindings,
					.nbindings = 1,
					.hooks = &h};
		struct vpol_report r;
		const struct vpol_rule_result *x;

		CHECK_INT(vpol_evaluate(p, &in, &r, NULL), GV_OK);
		x = only(&r);
		CHECK(x != NULL, "case %zu: no result", i);
		if (x) {
			CHECK_INT(x->status, cases[i].status);
			CHECK_STR(x->message, cases[i].message);
		}
		vpol_report_release(&r);
		json_decref(binding);
		free(text);
	}
	vpol_free(p);
	json_decref(doc);
	json_decref(pod);
	json_decref(f.objs);
	CHECK_DONE();
}

/* A fake authorizer: allows what its last review asked when the verb is "get". */
struct fake_authz {
	json_t *last; /* the last review */
	bool fail;
};

static enum gv_code fake_authorize(void *ud, const json_t *review, json_t **out, struct gv_err *err)
{
	struct fake_authz *f = ud;
	const char *verb = json_string_value(
	    json_object_get(json_object_get(review, "resourceAttributes")
				? json_object_get(review, "resourceAttributes")
				: json_object_get(review, "nonResourceAttributes"),
			    "verb"));
	bool allowed = verb && !strcmp(verb, "get");

	json_decref(f->last);
	f->last = json_deep_copy(review);
	if (f->fail)
		return gv_err_set(err, GV_ENET, "connection refused");
	*out = json_pack("{s:b, s:s}", "allowed", allowed, "reason", allowed ? "granted" : "");
	return GV_OK;
}

/* validate.cel's `authorizer` (cel-semantics.md 1.9, 4): SubjectAccessReviews through the hook. */
static void test_cel_authorizer(void **state)
{
	static const struct {
		const char *expr;
		enum engine_status status;
		const char *user;  /* the review's user */
		const char *attrs; /* its attributes, as JSON */
	} cases[] = {
	    {"authorizer.serviceAccount('shop', 'bot').group('apps').resource('deployments')"
	     ".namespace('shop').check('get').allowed()",
	     ENGINE_PASS, "system:serviceaccount:shop:bot",
	     "{\"group\":\"apps\",\"namespace\":\"shop\",\"resource\":\"deployments\","
	     "\"verb\":\"get\"}"},
	    {"authorizer.group('').resource('pods').subresource('exec').name('p').check('create')"
	     ".allowed()",
	     ENGINE_FAIL, "alice",
	     "{\"group\":\"\",\"name\":\"p\",\"resource\":\"pods\",\"subresource\":\"exec\","
	     "\"verb\":\"create\"}"},
	    {"authorizer.path('/healthz').check('get').reason() == 'granted'", ENGINE_PASS, "alice",
	     "{\"path\":\"/healthz\",\"verb\":\"get\"}"},
	    {"!authorizer.path('/healthz').check('get').errored() && "
	     "authorizer.path('/healthz').check('get').error() == ''",
	     ENGINE_PASS, "alice", "{\"path\":\"/healthz\",\"verb\":\"get\"}"},
	};
	struct fake_authz f = {0};
	struct engine_hooks h = {.ud = &f, .authorize = fake_authorize};
	json_t *pod = Y(pod_text);
	json_t *req = Y("{operation: CREATE, userInfo: {username: alice, groups: [dev]}}");

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *cel = json_pack("{s:[{s:s}]}", "expressions", "expression", cases[i].expr);
		struct gv_err err = {0};
		struct vpol_cel *c = vpol_cel_compile(cel, NULL, NULL, "r", &err);
		enum engine_status s = ENGINE_SKIP;
		char *msg = NULL, *attrs;

		CHECK(c != NULL, "case %zu: %s", i, err.msg);
		if (!c) {
			json_decref(cel);
			continue;
		}
		f.fail = false;
		vpol_cel_evaluate(c, pod, NULL, req, "shop", &h, &s, &msg);
		CHECK_INT(s, cases[i].status);
		free(msg);
		CHECK_STR(json_string_value(json_object_get(f.last, "user")), cases[i].user);
		attrs = json_dumps(json_object_get(f.last, "resourceAttributes")
				       ? json_object_get(f.last, "resourceAttributes")
				       : json_object_get(f.last, "nonResourceAttributes"),
				   JSON_COMPACT | JSON_SORT_KEYS);
		CHECK_STR(attrs, cases[i].attrs);
		free(attrs);
		if (i == 0)
			/* the service account's groups, as Kubernetes' serviceaccount.UserInfo */
			CHECK_STR(
			    json_string_value(json_array_get(json_object_get(f.last, "groups"), 1)),
			    "system:serviceaccounts:shop");
		/* a failed review and no authorizer at all: fail, with the reason */
		f.fail = true;
		vpol_cel_evaluate(c, pod, NULL, req, "shop", &h, &s, &msg);
		CHECK_INT(s, ENGINE_FAIL);
		CHECK(strstr(msg, "connection refused") != NULL, "case %zu: '%s'", i, msg);
		free(msg);
		vpol_cel_evaluate(c, pod, NULL, req, "shop", NULL, &s, &msg);
		CHECK_INT(s, ENGINE_FAIL);
		CHECK(strstr(msg, "authorizer: ") != NULL, "case %zu: '%s'", i, msg);
		free(msg);
		vpol_cel_free(c);
		json_decref(cel);
	}
	/* the request's user otherwise */
	CHECK_STR(json_string_value(json_array_get(json_object_get(f.last, "groups"), 0)), "dev");
	json_decref(f.last);
	json_decref(req);
	json_decref(pod);
	CHECK_DONE();
}

/* The declarations of cel_compile_decls (engine/cel/cel.h). */
static void test_cel_decls(void **state)
{
	static const char *const names[] = {"a", "b", "c"};
	static const char *const types[] = {"list(map(string, int))", "?", "net.IP"};
	static const char *const undeclared[] = {"params"};
	struct cel_decls d = {.typed_variables = true,
			      .var_names = names,
			      .var_types = types,
			      .nvars = 3,
			      .undeclared = undeclared,
			      .nundeclared = 1};
	static const struct {
		const char *src;
		const char *type; /* NULL: a compile error holding err */
		bool known;
		const char *err;
	} cases[] = {
	    {"variables.a", "list(map(string, int))", true, NULL},
	    {"variables.a[0]['x']", "int", true, NULL},
	    {"variables.a[0]['x'] + 1.0", NULL, false, "no matching overload"},
	    {"variables.b", "dyn", false, NULL},
	    {"variables.c", "net.IP", true, NULL},
	    {"variables.?a", "optional_type(list(map(string, int)))", true, NULL},
	    {"has(variables.a)", "bool", true, NULL},
	    {"variables.d", NULL, false, "undefined field 'd'"},
	    {"params", NULL, false, "undeclared reference to 'params'"},
	    {"[1].map(params, params + 1)", "list(int)", true, NULL},
	    {"object.x", "dyn", true, NULL},
	    {"isSemver('1.0.0')", "dyn", false, NULL},
	};

	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct cel_parse_error pe;
		struct cel_program *p =
		    cel_compile_decls(cases[i].src, strlen(cases[i].src), 0, &d, &pe);
		if (!cases[i].type) {
			CHECK(p == NULL, "%s compiled", cases[i].src);
			CHECK(strstr(pe.msg, cases[i].err) != NULL, "%s: '%s' lacks '%s'",
			      cases[i].src, pe.msg, cases[i].err);
		} else {
			CHECK(p != NULL, "%s: %s", cases[i].src, pe.msg);
			if (p) {
				CHECK_STR(cel_program_type(p), cases[i].type);
				CHECK(cel_program_type_known(p) == cases[i].known, "%s: known",
				      cases[i].src);
			}
		}
		cel_program_free(p);
	}
	/* Without declarations: everything dyn, nothing undefined (cel_compile). */
	{
		struct cel_parse_error pe;
		struct cel_program *p = cel_compile("variables.d + params", 20, 0, &pe);
		CHECK(p != NULL, "%s", pe.msg);
		cel_program_free(p);
	}
	CHECK_DONE();
}

/* The report properties of results (cel-semantics.md 2.5, 3, 7). */
static const char *prop(const struct vpol_rule_result *x, const char *key)
{
	return x ? json_string_value(json_object_get(x->properties, key)) : NULL;
}

static void test_result_properties(void **state)
{
	json_t *pod = Y(pod_text);
	struct vpol_policy *two = compile_ok(
	    "two", "  validations: [{expression: 'true'}, {expression: 'false', message: m}]\n"
		   "  auditAnnotations: [{key: who, valueExpression: \"'web'\"},"
		   " {key: none, valueExpression: \"''\"}]\n");
	struct vpol_policy *pass = compile_ok("pass", "  validations: [{expression: 'true'}]\n");
	json_t *xdoc = Y("apiVersion: policies.kyverno.io/v1\n"
			 "kind: PolicyException\n"
			 "metadata: {name: let-web, namespace: shop}\n"
			 "spec: {policyRefs: [{name: pass, kind: ValidatingPolicy}],"
			 " matchConditions: [{name: c, expression: 'true'}]}\n");
	struct gv_err err = {0};
	struct vpol_exception *x = vpol_exception_compile(xdoc, &err);
	struct vpol_exception *const xs[] = {x};
	struct vpol_input in = {.object = pod, .operation = "CREATE", .resource = "pods"};
	struct vpol_report r;
	const struct vpol_rule_result *res;

	(void)state;
	CHECK(x != NULL, "exception: %s", err.msg);
	CHECK_INT(vpol_evaluate(two, &in, &r, NULL), GV_OK);
	res = only(&r);
	CHECK_INT(res ? (int)res->status : -1, ENGINE_FAIL);
	CHECK_STR(prop(res, "cel.validationIndex"), "1");
	CHECK_STR(prop(res, "who"), "web");
	CHECK(prop(res, "none") == NULL, "an empty annotation is no property");
	vpol_report_release(&r);
	CHECK_INT(vpol_evaluate(pass, &in, &r, NULL), GV_OK);
	res = only(&r);
	CHECK(res && !res->properties, "a plain pass has no properties");
	vpol_report_release(&r);
	in.exceptions = xs;
	in.nexceptions = 1;
	CHECK_INT(vpol_evaluate(pass, &in, &r, NULL), GV_OK);
	res = only(&r);
	CHECK_INT(res ? (int)res->status : -1, ENGINE_SKIP);
	CHECK_STR(prop(res, "exceptions"), "let-web");
	vpol_report_release(&r);
	vpol_exception_free(x);
	json_decref(xdoc);
	vpol_free(two);
	vpol_free(pass);
	json_decref(pod);
	CHECK_DONE();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_batch_same_as_evaluate),
	    cmocka_unit_test(test_result_types),
	    cmocka_unit_test(test_variable_order),
	    cmocka_unit_test(test_undeclared),
	    cmocka_unit_test(test_runtime_failures),
	    cmocka_unit_test(test_vap_missing_params),
	    cmocka_unit_test(test_params_collect),
	    cmocka_unit_test(test_cel_params),
	    cmocka_unit_test(test_vap_cluster_params),
	    cmocka_unit_test(test_vap_binding_policy_match),
	    cmocka_unit_test(test_cel_authorizer),
	    cmocka_unit_test(test_cel_decls),
	    cmocka_unit_test(test_result_properties),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
