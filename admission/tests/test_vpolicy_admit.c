/*
 * Unit tests for admission/vpolicy_admit.c: ValidatingPolicy and
 * NamespacedValidatingPolicy in the admission answer (cel-semantics.md 2.6):
 * Deny / Warn / Audit, evaluation errors deny, the namespace scope of a
 * NamespacedValidatingPolicy, evaluation.admission.enabled, the failure
 * policy webhook, CEL PolicyExceptions, legacy and CEL denials together,
 * and /validate-policy for policies.kyverno.io documents.
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
#include "common/yaml.h"

#include "common/banned.h"

/* A Pod rule and an expression; NAME ACTIONS EXTRA-SPEC substituted by vp(). */
static char *vp(const char *kind, const char *ns, const char *name, const char *actions,
		const char *expr, const char *extra)
{
	return gv_xasprintf(
	    "{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"%s\",\"metadata\":{\"name\":"
	    "\"%s\"%s%s%s},\"spec\":{\"validationActions\":%s,\"matchConstraints\":{"
	    "\"resourceRules\":[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":["
	    "\"CREATE\",\"UPDATE\"],\"resources\":[\"pods\"]}]},\"validations\":[{\"expression\":"
	    "\"%s\",\"message\":\"%s must hold\"}]%s}}",
	    kind, name, ns ? ",\"namespace\":\"" : "", ns ? ns : "", ns ? "\"" : "", actions, expr,
	    name, extra ? extra : "");
}

static const char POD_BAD[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\","
    "\"namespace\":\"team-a\",\"uid\":\"u1\",\"labels\":{\"app\":\"x\"}},"
    "\"spec\":{\"hostNetwork\":true,\"containers\":[{\"name\":\"c\","
    "\"image\":\"nginx\"}]}}";
static const char POD_GOOD[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
			       "\"y\",\"namespace\":\"team-a\",\"uid\":\"u2\",\"labels\":{\"team\":"
			       "\"a\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
			       "\"nginx\"}]}}";

struct fixture {
	struct engine_policyset *set;
	struct view_state *state;
	struct admission_fixed_source src;
	struct admission_handler *h;
	struct view_audit_item *items[8]; /* emitted for the reports (owned) */
	size_t nitems;
};

static void collect(void *ud, struct view_audit_item *it)
{
	struct fixture *f = ud;

	if (f->nitems < GV_ARRAY_LEN(f->items))
		f->items[f->nitems++] = it;
	else
		view_audit_item_free(it);
}

/* policies, exceptions: JSON arrays of documents (text). legacy: YAML of ClusterPolicies or NULL.
 */
static void fixture_init(struct fixture *f, const char *policies, const char *exceptions,
			 const char *legacy)
{
	json_t *pols = json_loads(policies, 0, NULL), *xs = json_loads(exceptions, 0, NULL);
	struct admission_handler_config hc = {0};
	struct view_vpolset *vs;
	struct engine_policy *pv[4];
	size_t n = 0;

	memset(f, 0, sizeof(*f));
	assert_non_null(pols);
	assert_non_null(xs);
	if (legacy) {
		struct gv_docs docs = {0};
		struct gv_err err = {0};
		assert_int_equal(gv_yaml_load(legacy, strlen(legacy), "t", &docs, &err), GV_OK);
		for (size_t i = 0; i < docs.n && n < 4; i++) {
			pv[n] = engine_policy_compile(docs.v[i].value, &err);
			assert_non_null(pv[n]);
			n++;
		}
		gv_docs_release(&docs);
	}
	f->set = engine_policyset_new(pv, n, NULL, 0);
	for (size_t i = 0; i < n; i++)
		engine_policy_unref(pv[i]);
	f->state = view_state_new(f->set, NULL, NULL);
	vs = view_vpolset_new(pols, xs);
	view_state_set_vpols(f->state, vs);
	view_vpolset_unref(vs);
	admission_fixed_source_init(&f->src, f->state);
	hc.source = &f->src.source;
	hc.emit = collect;
	hc.emit_ud = f;
	f->h = admission_handler_new(&hc);
	json_decref(pols);
	json_decref(xs);
}

/* ---- a cluster behind the context loader's hooks ---- */

static enum gv_code fake_load(void *ud, const json_t *entry, const json_t *ctx, json_t **out,
			      struct gv_err *err)
{
	const char *path =
	    json_string_value(json_object_get(json_object_get(entry, "apiCall"), "urlPath"));
	const char *global =
	    json_string_value(json_object_get(json_object_get(entry, "globalReference"), "name"));
	const char *image = json_string_value(
	    json_object_get(json_object_get(entry, "imageRegistry"), "reference"));

	(void)ud;
	(void)ctx;
	/* the imageRegistry loader's ImageData (kube/registry.h) */
	if (image && !strcmp(image, "nginx")) {
		*out =
		    json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:[]}, s:{s:s, s:{s:s}}, s:n}", "image",
			      "nginx", "resolvedImage", "index.docker.io/library/nginx@sha256:ab",
			      "registry", "index.docker.io", "repository", "library/nginx",
			      "identifier", "latest", "manifest", "layers", "configData",
			      "architecture", "amd64", "config", "User", "1000", "manifestList");
		return GV_OK;
	}
	if (image)
		return gv_err_set(err, GV_ENET,
				  "failed to fetch image descriptor: %s, error: registry %s "
				  "unreachable",
				  image, image);
	if (path && !strcmp(path, "/api/v1/namespaces/team-a/configmaps/allowed")) {
		*out = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "name", "allowed", "data",
				 "hostNetwork", "yes");
		return GV_OK;
	}
	if (path &&
	    !strcmp(path, "/apis/apps/v1/namespaces/team-a/deployments?labelSelector=app%3Dx")) {
		*out = json_pack("{s:[{s:{s:s}}]}", "items", "metadata", "name", "d1");
		return GV_OK;
	}
	if (global && !strcmp(global, "limits")) {
		*out = json_pack("{s:i}", "max", 3);
		return GV_OK;
	}
	if (global)
		return gv_err_set(err, GV_ENET, "failed to find globalcontext entry %s", global);
	return gv_err_set(err, GV_EEVAL, "failed to fetch data for APICall cel: %s \"x\" not found",
			  path ? path : "?");
}

/* http.Get/Post: /allow answers {allowed: true}, /echo what was posted with the headers. */
static enum gv_code fake_http(void *ud, const char *method, const char *url, const json_t *headers,
			      const json_t *body, const char *policy_namespace, json_t **out,
			      struct gv_err *err)
{
	(void)ud;
	if (*policy_namespace)
		return gv_err_set(err, GV_EINVAL, "request failed: namespaced %s",
				  policy_namespace);
	if (!strcmp(method, "GET") && !strcmp(url, "https://svc.example/allow")) {
		*out = json_pack("{s:b, s:i}", "allowed", 1, "statusCode", 200);
		return GV_OK;
	}
	if (!strcmp(method, "POST") && !strcmp(url, "https://svc.example/echo")) {
		*out = json_pack("{s:O, s:O, s:i}", "got", body ? body : json_null(), "headers",
				 headers ? headers : json_null(), "statusCode", 200);
		return GV_OK;
	}
	return gv_err_set(err, GV_ENET, "request failed: %s %s: connection refused", method, url);
}

static const struct engine_hooks fake_hooks = {.load_context = fake_load, .http = fake_http};

static const struct engine_hooks *fake_open(void *ud, const struct engine_policyset *set,
					    long deadline_ms)
{
	(void)ud;
	(void)set;
	(void)deadline_ms;
	return &fake_hooks;
}

static void fake_close(void *ud, const struct engine_hooks *hooks)
{
	(void)ud;
	(void)hooks;
}

static const struct view_context fake_context = {fake_open, fake_close, NULL};

static void fixture_release(struct fixture *f)
{
	admission_handler_free(f->h);
	for (size_t i = 0; i < f->nitems; i++)
		view_audit_item_free(f->items[i]);
	admission_fixed_source_release(&f->src);
	view_state_unref(f->state);
	engine_policyset_unref(f->set);
}

static char *review(const char *ns, const char *object)
{
	return gv_xasprintf(
	    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
	    "\"uid\":\"r1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"name\":\"x\","
	    "\"namespace\":\"%s\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice\"},"
	    "\"object\":%s,\"oldObject\":null}}",
	    ns, object);
}

static json_t *judge_only(struct fixture *f, const char *ns, const char *object, int only)
{
	char *body = review(ns, object);
	struct admission_reply r;
	json_t *j;

	admission_handle_only(f->h, body, strlen(body), only, &r);
	assert_int_equal(r.http, 200);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(j);
	admission_reply_release(&r);
	free(body);
	return j;
}

static json_t *judge(struct fixture *f, const char *ns, const char *object)
{
	return judge_only(f, ns, object, -1);
}

static bool allowed(const json_t *j)
{
	return json_is_true(json_object_get(json_object_get(j, "response"), "allowed"));
}

static const char *message(const json_t *j)
{
	return json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "response"), "status"), "message"));
}

static const json_t *warnings(const json_t *j)
{
	return json_object_get(json_object_get(j, "response"), "warnings");
}

/* "[a,b]" of the policies given as strings (each freed). */
static char *array_of(size_t n, ...)
{
	struct gv_buf b = {0};
	va_list ap;

	gv_buf_addc(&b, '[');
	va_start(ap, n);
	for (size_t i = 0; i < n; i++) {
		char *s = va_arg(ap, char *);
		if (i)
			gv_buf_addc(&b, ',');
		gv_buf_adds(&b, s);
		free(s);
	}
	va_end(ap);
	gv_buf_addc(&b, ']');
	return gv_buf_detach(&b);
}

#define NO_HOST_NET "!has(object.spec.hostNetwork) || object.spec.hostNetwork == false"

static void test_deny_warn_audit(void **state)
{
	struct fixture f;
	char *pols = array_of(
	    3, vp("ValidatingPolicy", NULL, "deny-hostnet", "[\"Deny\"]", NO_HOST_NET, NULL),
	    vp("ValidatingPolicy", NULL, "warn-team", "[\"Warn\"]",
	       "has(object.metadata.labels.team)", NULL),
	    vp("ValidatingPolicy", NULL, "audit-team", "[\"Audit\"]",
	       "has(object.metadata.labels.team)", NULL));
	json_t *j;

	(void)state;
	fixture_init(&f, pols, "[]", NULL);
	j = judge(&f, "team-a", POD_BAD);
	assert_false(allowed(j));
	assert_string_equal(message(j), "Policy deny-hostnet failed: deny-hostnet must hold");
	/* Warn: the same text as a warning, also on a denial */
	assert_int_equal(json_array_size(warnings(j)), 1);
	assert_string_equal(json_string_value(json_array_get(warnings(j), 0)),
			    "Policy warn-team failed: warn-team must hold");
	json_decref(j);
	j = judge(&f, "team-a", POD_GOOD);
	assert_true(allowed(j));
	assert_null(warnings(j));
	json_decref(j);
	fixture_release(&f);
	free(pols);
}

static void test_audit_only_allows(void **state)
{
	struct fixture f;
	char *pols = array_of(1, vp("ValidatingPolicy", NULL, "audit-team", "[\"Audit\"]",
				    "has(object.metadata.labels.team)", NULL));
	json_t *j;

	(void)state;
	fixture_init(&f, pols, "[]", NULL);
	j = judge(&f, "team-a", POD_BAD);
	assert_true(allowed(j));
	assert_null(warnings(j));
	json_decref(j);
	fixture_release(&f);
	free(pols);
}

static void test_error_denies(void **state)
{
	struct fixture f;
	/* a missing key is an evaluation error: Deny blocks on it whatever failurePolicy says */
	char *pols = array_of(1, vp("ValidatingPolicy", NULL, "needs-prio", "[\"Deny\"]",
				    "object.spec.priorityClassName == 'x'",
				    ",\"failurePolicy\":\"Ignore\""));
	json_t *j;

	(void)state;
	fixture_init(&f, pols, "[]", NULL);
	j = judge(&f, "team-a", POD_GOOD);
	assert_false(allowed(j));
	assert_non_null(strstr(message(j), "Policy needs-prio error: "));
	assert_non_null(strstr(message(j), "no such key: priorityClassName"));
	json_decref(j);
	/* the Ignore webhook judges it, the Fail webhook does not */
	j = judge_only(&f, "team-a", POD_GOOD, ENGINE_FAILURE_FAIL);
	assert_true(allowed(j));
	json_decref(j);
	j = judge_only(&f, "team-a", POD_GOOD, ENGINE_FAILURE_IGNORE);
	assert_false(allowed(j));
	json_decref(j);
	fixture_release(&f);
	free(pols);
}

static void test_namespaced_and_admission_disabled(void **state)
{
	struct fixture f;
	char *pols = array_of(2,
			      vp("NamespacedValidatingPolicy", "team-a", "ns-team", "[\"Deny\"]",
				 "has(object.metadata.labels.team)", NULL),
			      vp("ValidatingPolicy", NULL, "bg-only", "[\"Deny\"]", NO_HOST_NET,
				 ",\"evaluation\":{\"admission\":{\"enabled\":false}}"));
	char *other = gv_xstrdup(POD_BAD);
	json_t *j;

	(void)state;
	fixture_init(&f, pols, "[]", NULL);
	j = judge(&f, "team-a", POD_BAD);
	assert_false(allowed(j));
	assert_string_equal(message(j), "Policy ns-team failed: ns-team must hold");
	json_decref(j);
	j = judge(&f, "team-b", other);
	assert_true(allowed(j));
	json_decref(j);
	fixture_release(&f);
	free(pols);
	free(other);
}

static void test_exception(void **state)
{
	struct fixture f;
	char *pols = array_of(
	    1, vp("ValidatingPolicy", NULL, "deny-hostnet", "[\"Deny\"]", NO_HOST_NET, NULL));
	const char *xs =
	    "[{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"PolicyException\","
	    "\"metadata\":{\"name\":\"allow-x\",\"namespace\":\"team-a\"},\"spec\":{\"policyRefs\":"
	    "[{\"name\":\"deny-hostnet\",\"kind\":\"ValidatingPolicy\"}],\"matchConditions\":[{"
	    "\"name\":\"x\",\"expression\":\"object.metadata.name == 'x'\"}]}}]";
	json_t *j;

	(void)state;
	fixture_init(&f, pols, xs, NULL);
	j = judge(&f, "team-a", POD_BAD);
	assert_true(allowed(j));
	json_decref(j);
	fixture_release(&f);
	free(pols);
}

/* An exception that expired (or whose expiresAt cannot be read) is not applied. */
static void test_exception_expiry(void **state)
{
	static const char *const cases[][2] = {
	    {"2001-01-01T00:00:00Z", "denied"},
	    {"2999-01-01T00:00:00.5+02:00", "allowed"},
	    {"tomorrow", "denied"},
	};
	char *pols = array_of(
	    1, vp("ValidatingPolicy", NULL, "deny-hostnet", "[\"Deny\"]", NO_HOST_NET, NULL));

	(void)state;
	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		struct fixture f;
		char *xs = gv_xasprintf(
		    "[{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"PolicyException\","
		    "\"metadata\":{\"name\":\"x\",\"namespace\":\"team-a\"},\"spec\":{"
		    "\"expiresAt\":\"%s\",\"policyRefs\":[{\"name\":\"deny-hostnet\",\"kind\":"
		    "\"ValidatingPolicy\"}]}}]",
		    cases[i][0]);
		json_t *j;
		fixture_init(&f, pols, xs, NULL);
		j = judge(&f, "team-a", POD_BAD);
		if (allowed(j) != !strcmp(cases[i][1], "allowed"))
			fail_msg("expiresAt %s: want %s", cases[i][0], cases[i][1]);
		json_decref(j);
		fixture_release(&f);
		free(xs);
	}
	free(pols);
}

static void test_with_legacy_denial(void **state)
{
	struct fixture f;
	char *pols = array_of(
	    1, vp("ValidatingPolicy", NULL, "deny-hostnet", "[\"Deny\"]", NO_HOST_NET, NULL));
	static const char legacy[] =
	    "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: team}\nspec:\n"
	    "  validationFailureAction: Enforce\n  rules:\n  - name: t\n"
	    "    match: {any: [{resources: {kinds: [Pod]}}]}\n"
	    "    validate: {message: need team, pattern: {metadata: {labels: {team: '?*'}}}}\n";
	json_t *j;

	(void)state;
	fixture_init(&f, pols, "[]", legacy);
	j = judge(&f, "team-a", POD_BAD);
	assert_false(allowed(j));
	assert_non_null(strstr(message(j), "Policy deny-hostnet failed: deny-hostnet must hold\n"));
	assert_non_null(strstr(message(j), "resource Pod/team-a/x was blocked"));
	json_decref(j);
	fixture_release(&f);
	free(pols);
}

static char *policy_answer(struct fixture *f, const char *object, bool *ok)
{
	char *body = gv_xasprintf(
	    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
	    "\"uid\":\"p1\",\"kind\":{\"group\":\"policies.kyverno.io\",\"version\":\"v1\","
	    "\"kind\":"
	    "\"ValidatingPolicy\"},\"name\":\"p\",\"operation\":\"CREATE\",\"object\":%s}}",
	    object);
	struct admission_reply r;
	json_t *j;
	char *msg;

	admission_handle_policy(f->h, body, strlen(body), &r);
	assert_int_equal(r.http, 200);
	j = json_loadb(r.body, r.len, 0, NULL);
	*ok = allowed(j);
	msg = message(j) ? gv_xstrdup(message(j)) : NULL;
	json_decref(j);
	admission_reply_release(&r);
	free(body);
	return msg;
}

static void test_libraries_from_cluster(void **state)
{
	struct fixture f;
	char *pols = array_of(
	    4,
	    vp("ValidatingPolicy", NULL, "cm-allows", "[\"Deny\"]",
	       "resource.Get('v1', 'configmaps', object.metadata.namespace, 'allowed') != null",
	       NULL),
	    vp("ValidatingPolicy", NULL, "cm-missing-null", "[\"Deny\"]",
	       "resource.Get('v1', 'configmaps', 'team-a', 'gone') == null", NULL),
	    vp("ValidatingPolicy", NULL, "list", "[\"Deny\"]",
	       "size(resource.List('apps/v1', 'deployments', 'team-a', {'app': 'x'}).items) == 1",
	       NULL),
	    vp("ValidatingPolicy", NULL, "global", "[\"Deny\"]",
	       "globalContext.Get('limits').max == 3 && globalContext.Get('nope') == null", NULL));
	char *img = array_of(2,
			     vp("ValidatingPolicy", NULL, "img", "[\"Deny\"]",
				"image.GetMetadata('nginx').config.config.User == '1000' && "
				"image.getMetadata('nginx').config.architecture == 'amd64' && "
				"image.GetMetadata('nginx').tag == 'latest' && "
				"image.GetMetadata('nginx').digest == 'sha256:ab' && "
				"!has(image.GetMetadata('nginx').configData) && "
				"!has(image.GetMetadata('nginx').imageIndex)",
				NULL),
			     vp("ValidatingPolicy", NULL, "img-down", "[\"Deny\"]",
				"image.GetMetadata('reg.example/app:1') != null", NULL));
	struct admission_handler_config hc = {0};
	json_t *j;

	(void)state;
	fixture_init(&f, pols, "[]", NULL);
	/* without the loader: every call is an error, and Deny blocks on it */
	j = judge(&f, "team-a", POD_GOOD);
	assert_false(allowed(j));
	assert_non_null(strstr(message(j), "Policy cm-allows error: "));
	json_decref(j);
	admission_handler_free(f.h);
	hc.source = &f.src.source;
	hc.context = &fake_context;
	f.h = admission_handler_new(&hc);
	j = judge(&f, "team-a", POD_GOOD);
	assert_true(allowed(j));
	json_decref(j);
	fixture_release(&f);
	/*
	 * image.GetMetadata through the imageRegistry loader, in Kyverno's
	 * shape; a registry failure is an error of that policy, never a pass
	 */
	fixture_init(&f, img, "[]", NULL);
	j = judge(&f, "team-a", POD_GOOD); /* no loader: an error too */
	assert_false(allowed(j));
	assert_non_null(strstr(message(j), "Policy img error: "));
	assert_non_null(strstr(message(j), "failed to get image data: no cluster connection"));
	json_decref(j);
	admission_handler_free(f.h);
	f.h = admission_handler_new(&hc);
	j = judge(&f, "team-a", POD_GOOD);
	assert_false(allowed(j));
	assert_null(strstr(message(j), "Policy img "));
	assert_non_null(strstr(message(j), "Policy img-down error: "));
	assert_non_null(strstr(message(j), "failed to get image data: failed to fetch image "
					   "descriptor: reg.example/app:1, error: registry "));
	json_decref(j);
	fixture_release(&f);
	free(pols);
	free(img);
}

static void test_http_library(void **state)
{
	struct fixture f;
	char *pols =
	    array_of(2,
		     vp("ValidatingPolicy", NULL, "get", "[\"Deny\"]",
			"http.Get('https://svc.example/allow').allowed && "
			"http.get('https://svc.example/allow').statusCode == 200",
			NULL),
		     vp("ValidatingPolicy", NULL, "post", "[\"Deny\"]",
			"http.Post('https://svc.example/echo', {'name': object.metadata.name}, "
			"{'X-Team': 'a'}).got.name == object.metadata.name && "
			"http.post('https://svc.example/echo', 1).headers == null",
			NULL));
	char *down = array_of(1, vp("ValidatingPolicy", NULL, "down", "[\"Deny\"]",
				    "http.Get('https://down.example/').allowed == true", NULL));
	char *nvp = array_of(1, vp("NamespacedValidatingPolicy", "team-a", "ns", "[\"Deny\"]",
				   "http.Get('https://svc.example/allow').allowed == true", NULL));
	struct admission_handler_config hc = {0};
	json_t *j;

	(void)state;
	hc.context = &fake_context;
	fixture_init(&f, pols, "[]", NULL);
	admission_handler_free(f.h);
	hc.source = &f.src.source;
	f.h = admission_handler_new(&hc);
	j = judge(&f, "team-a", POD_GOOD);
	assert_true(allowed(j));
	json_decref(j);
	fixture_release(&f);
	/* a failed request is an error, and Deny blocks on it */
	fixture_init(&f, down, "[]", NULL);
	admission_handler_free(f.h);
	hc.source = &f.src.source;
	f.h = admission_handler_new(&hc);
	j = judge(&f, "team-a", POD_GOOD);
	assert_false(allowed(j));
	assert_non_null(strstr(message(j), "Policy down error: "));
	assert_non_null(strstr(message(j), "request failed: GET https://down.example/"));
	json_decref(j);
	fixture_release(&f);
	/* the loader learns the namespace of a NamespacedValidatingPolicy */
	fixture_init(&f, nvp, "[]", NULL);
	admission_handler_free(f.h);
	hc.source = &f.src.source;
	f.h = admission_handler_new(&hc);
	j = judge(&f, "team-a", POD_GOOD);
	assert_false(allowed(j));
	assert_non_null(strstr(message(j), "request failed: namespaced team-a"));
	json_decref(j);
	fixture_release(&f);
	free(pols);
	free(down);
	free(nvp);
}

static void test_validate_policy(void **state)
{
	struct fixture f;
	char *good = vp("ValidatingPolicy", NULL, "good", "[\"Deny\"]", NO_HOST_NET, NULL);
	char *bad = vp("ValidatingPolicy", NULL, "bad", "[\"Deny\"]", "object.spec.(", NULL);
	char *msg;
	bool ok;

	(void)state;
	fixture_init(&f, "[]", "[]", NULL);
	msg = policy_answer(&f, good, &ok);
	assert_true(ok);
	free(msg);
	msg = policy_answer(&f, bad, &ok);
	assert_false(ok);
	assert_non_null(
	    strstr(msg, "validating policy compiler 1.0 error: failed to compile policy"));
	assert_non_null(strstr(msg, "/spec/validations/0/expression"));
	assert_non_null(strstr(msg, "Syntax error"));
	free(msg);
	msg = policy_answer(
	    &f,
	    "{\"apiVersion\":\"policies.kyverno.io/v1\",\"kind\":\"ValidatingPolicy\","
	    "\"metadata\":{\"name\":\"nomatch\"},\"spec\":{\"validations\":[{"
	    "\"expression\":\"true\"}]}}",
	    &ok);
	assert_false(ok);
	assert_non_null(strstr(msg, "matchConstraints"));
	free(msg);
	fixture_release(&f);
	free(good);
	free(bad);
}

static void test_compile_error_left_out(void **state)
{
	struct fixture f;
	char *pols =
	    array_of(2, vp("ValidatingPolicy", NULL, "bad", "[\"Deny\"]", "object.(", NULL),
		     vp("ValidatingPolicy", NULL, "deny-hostnet", "[\"Deny\"]", NO_HOST_NET, NULL));
	struct view_vpolset *vs;
	json_t *pv, *j;

	(void)state;
	pv = json_loads(pols, 0, NULL);
	vs = view_vpolset_new(pv, NULL);
	assert_int_equal(view_vpolset_count(vs), 1);
	assert_int_equal(json_array_size(view_vpolset_errors(vs)), 1);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(view_vpolset_errors(vs), 0), "name")),
	    "bad");
	view_vpolset_unref(vs);
	json_decref(pv);
	fixture_init(&f, pols, "[]", NULL);
	j = judge(&f, "team-a", POD_BAD);
	assert_false(allowed(j));
	assert_string_equal(message(j), "Policy deny-hostnet failed: deny-hostnet must hold");
	json_decref(j);
	fixture_release(&f);
	free(pols);
}

/* The review of object in team-a with request field `extra` ("" = none) added. */
static json_t *judge_with(struct fixture *f, const char *object, const char *operation,
			  const char *extra)
{
	char *body = gv_xasprintf(
	    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
	    "\"uid\":\"r1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"name\":\"x\","
	    "\"namespace\":\"team-a\",\"operation\":\"%s\",\"userInfo\":{\"username\":\"alice\"},"
	    "\"object\":%s,\"oldObject\":%s%s}}",
	    operation, object, strcmp(operation, "CREATE") ? object : "null", extra);
	struct admission_reply r;
	json_t *j;

	admission_handle(f->h, body, strlen(body), &r);
	assert_int_equal(r.http, 200);
	j = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(j);
	admission_reply_release(&r);
	free(body);
	return j;
}

/* The emitted result of policy name (asserted there), with rule "" and no legacy policy. */
static const struct view_audit_result *vp_result(const struct view_audit_item *it, const char *name)
{
	for (size_t i = 0; i < it->nresults; i++) {
		const struct view_audit_result *r = &it->results[i];
		if (r->vpol && !strcmp(vpol_name(r->vpol), name)) {
			assert_null(r->policy);
			assert_non_null(r->vpols);
			assert_string_equal(r->rule, "");
			return r;
		}
	}
	fail_msg("no result of %s", name);
	return NULL;
}

/*
 * Allowed requests carry the ValidatingPolicies' results for the reports
 * (cel-semantics.md 2.6): Audit and Warn policies, pass and fail, a
 * NamespacedValidatingPolicy in its namespace; nothing when a Deny policy
 * judged the request, for dry-run, DELETE or an object without uid.
 */
static void test_audit_results_emitted(void **state)
{
	struct fixture f;
	char *pols =
	    array_of(4,
		     vp("ValidatingPolicy", NULL, "audit-team", "[\"Audit\"]",
			"has(object.metadata.labels.team)",
			",\"evaluation\":{\"background\":{\"enabled\":false}}"),
		     vp("ValidatingPolicy", NULL, "warn-hostnet", "[\"Warn\"]", NO_HOST_NET, NULL),
		     vp("NamespacedValidatingPolicy", "team-a", "ns-audit", "[\"Audit\"]",
			"object.metadata.name != 'z'", NULL),
		     vp("ValidatingPolicy", NULL, "deny-name", "[\"Deny\", \"Audit\"]",
			"object.metadata.name != 'z'",
			",\"matchConditions\":[{\"name\":\"y\",\"expression\":"
			"\"object.metadata.name == 'y'\"}]"));
	const struct view_audit_result *r;
	json_t *j;

	(void)state;
	fixture_init(&f, pols, "[]", NULL);
	j = judge(&f, "team-a", POD_BAD);
	assert_true(allowed(j));
	json_decref(j);
	assert_int_equal(f.nitems, 1);
	assert_string_equal(f.items[0]->uid, "u1");
	assert_string_equal(f.items[0]->namespace, "team-a");
	assert_string_equal(f.items[0]->operation, "CREATE");
	r = vp_result(f.items[0], "audit-team");
	assert_int_equal(r->status, ENGINE_FAIL);
	assert_string_equal(r->message, "audit-team must hold");
	assert_false(view_vpol_background(r->vpol));
	r = vp_result(f.items[0], "warn-hostnet");
	assert_int_equal(r->status, ENGINE_FAIL);
	r = vp_result(f.items[0], "ns-audit");
	assert_int_equal(r->status, ENGINE_PASS);
	assert_string_equal(vpol_namespace(r->vpol), "team-a");
	/* deny-name's match condition is false: a skip, the Deny policy is not involved */
	r = vp_result(f.items[0], "deny-name");
	assert_int_equal(r->status, ENGINE_SKIP);
	assert_int_equal(f.items[0]->nresults, 4);

	/* deny-name judges POD_GOOD (named y) and passes: allowed, no CEL report */
	j = judge(&f, "team-a", POD_GOOD);
	assert_true(allowed(j));
	json_decref(j);
	assert_int_equal(f.nitems, 1);

	j = judge_with(&f, POD_BAD, "CREATE", ",\"dryRun\":true");
	assert_true(allowed(j));
	json_decref(j);
	j = judge_with(&f, POD_BAD, "DELETE", "");
	assert_true(allowed(j));
	json_decref(j);
	assert_int_equal(f.nitems, 1);
	j = judge_with(&f, POD_BAD, "UPDATE", "");
	assert_true(allowed(j));
	json_decref(j);
	assert_int_equal(f.nitems, 2);
	assert_string_equal(f.items[1]->operation, "UPDATE");
	assert_int_equal(vp_result(f.items[1], "audit-team")->status, ENGINE_FAIL);
	fixture_release(&f);
	free(pols);

	/* an object without metadata.uid: evaluated, not reported */
	pols = array_of(1, vp("ValidatingPolicy", NULL, "audit-team", "[\"Audit\"]",
			      "has(object.metadata.labels.team)", NULL));
	fixture_init(&f, pols, "[]", NULL);
	j = judge(&f, "team-a",
		  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\","
		  "\"namespace\":\"team-a\"},\"spec\":{\"containers\":[]}}");
	assert_true(allowed(j));
	json_decref(j);
	assert_int_equal(f.nitems, 0);
	fixture_release(&f);
	free(pols);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deny_warn_audit),
	    cmocka_unit_test(test_audit_only_allows),
	    cmocka_unit_test(test_error_denies),
	    cmocka_unit_test(test_namespaced_and_admission_disabled),
	    cmocka_unit_test(test_exception),
	    cmocka_unit_test(test_exception_expiry),
	    cmocka_unit_test(test_with_legacy_denial),
	    cmocka_unit_test(test_libraries_from_cluster),
	    cmocka_unit_test(test_http_library),
	    cmocka_unit_test(test_validate_policy),
	    cmocka_unit_test(test_compile_error_left_out),
	    cmocka_unit_test(test_audit_results_emitted),
	};

	gv_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
