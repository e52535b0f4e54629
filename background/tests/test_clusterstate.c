/*
 * test_clusterstate.c - the one-shot read of the cluster
 * (background/clusterstate.h) against a fake API server
 * (kube/tests/transport.h): ValidatingAdmissionPolicies and their bindings
 * at whichever admissionregistration.k8s.io version the server serves
 * (v1 from Kubernetes 1.30, v1beta1 on 1.28-1.29, v1alpha1 on 1.26-1.27),
 * read as v1; a server that serves none has none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "background/clusterstate.h"
#include "common/gv.h"
#include "common/log.h"
#include "engine/vpolicy.h"
#include "kube/tests/transport.h"

#define GROUP "/apis/admissionregistration.k8s.io/"

struct fake {
	const char *served[3]; /* the versions that serve the kinds (NULL-ended) */
	int http;	       /* an error status for every VAP list (0 = none) */
	int asked[3];	       /* VAP lists asked at v1, v1beta1, v1alpha1 */
	bool v1alpha1_126;     /* v1alpha1 documents as Kubernetes 1.26 stored them */
};

static const char *const versions[] = {"v1", "v1beta1", "v1alpha1"};

static bool is(const char *path, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(path, want, n) && (path[n] == '\0' || path[n] == '?');
}

static enum gv_code not_found(struct kube_status *st, struct gv_err *err)
{
	st->http = 404;
	snprintf(st->reason, sizeof(st->reason), "NotFound");
	return gv_err_set(err, GV_ENET, "the server could not find the requested resource");
}

static json_t *list_of(const char *api, const char *kind, json_t *items)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", api, "kind", kind, "metadata",
			 "resourceVersion", "7", "items", items);
}

/*
 * A policy as listed at `version` (items of a list carry no apiVersion or
 * kind: the pager fills them in from the list). The 1.26 shape has no
 * matchConditions, variables or messageExpression (added in 1.27-1.28).
 */
static json_t *vap_item(bool shape_126)
{
	json_t *spec = json_pack("{s:{s:[{s:[s], s:[s], s:[s], s:[s]}]}, s:[{s:s, s:s}], s:s}",
				 "matchConstraints", "resourceRules", "apiGroups", "",
				 "apiVersions", "v1", "operations", "CREATE", "resources", "pods",
				 "validations", "expression", "has(object.metadata.labels)",
				 "message", "labels required", "failurePolicy", "Fail");

	if (!shape_126) {
		json_object_set_new(spec, "matchConditions",
				    json_pack("[{s:s, s:s}]", "name", "all", "expression", "true"));
		json_object_set_new(
		    spec, "variables",
		    json_pack("[{s:s, s:s}]", "name", "n", "expression", "object.metadata.name"));
	}
	return json_pack("{s:{s:s, s:s, s:s}, s:o}", "metadata", "name", "vap-labels", "uid", "u1",
			 "resourceVersion", "3", "spec", spec);
}

static json_t *binding_item(bool shape_126)
{
	json_t *spec = json_pack("{s:s}", "policyName", "vap-labels");

	if (!shape_126)
		json_object_set_new(spec, "validationActions", json_pack("[s]", "Deny"));
	return json_pack("{s:{s:s, s:s, s:s}, s:o}", "metadata", "name", "vap-labels-binding",
			 "uid", "u2", "resourceVersion", "4", "spec", spec);
}

static enum gv_code fake_request(void *ud, const char *method, const char *path, const json_t *body,
				 json_t **out, struct kube_status *st, struct gv_err *err)
{
	struct fake *f = ud;

	(void)body;
	if (strcmp(method, "GET"))
		fail_msg("clusterstate wrote to the API: %s %s", method, path);
	for (size_t v = 0; v < GV_ARRAY_LEN(versions); v++) {
		char pol[128], bind[128];
		bool served = false, shape_126;
		char *api;

		snprintf(pol, sizeof(pol), GROUP "%s/validatingadmissionpolicies", versions[v]);
		snprintf(bind, sizeof(bind), GROUP "%s/validatingadmissionpolicybindings",
			 versions[v]);
		if (!is(path, pol) && !is(path, bind))
			continue;
		if (is(path, pol))
			f->asked[v]++;
		if (f->http) {
			st->http = f->http;
			snprintf(st->reason, sizeof(st->reason), "Forbidden");
			return gv_err_set(err, GV_ENET, "validatingadmissionpolicies is forbidden");
		}
		for (size_t i = 0; i < GV_ARRAY_LEN(f->served) && f->served[i]; i++)
			served = served || !strcmp(f->served[i], versions[v]);
		if (!served)
			return not_found(st, err);
		shape_126 = f->v1alpha1_126 && !strcmp(versions[v], "v1alpha1");
		api = gv_xasprintf("admissionregistration.k8s.io/%s", versions[v]);
		*out = is(path, pol) ? list_of(api, "ValidatingAdmissionPolicyList",
					       json_pack("[o]", vap_item(shape_126)))
				     : list_of(api, "ValidatingAdmissionPolicyBindingList",
					       json_pack("[o]", binding_item(shape_126)));
		free(api);
		return GV_OK;
	}
	if (is(path, "/api/v1/namespaces")) {
		*out = list_of("v1", "NamespaceList",
			       json_pack("[{s:{s:s}}]", "metadata", "name", "team-a"));
		return GV_OK;
	}
	/* no Kyverno CRDs, no ConfigMap */
	return not_found(st, err);
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* Fetches from f's server and checks the one VAP and its binding, read as v1. */
static void check_served(struct fake *f)
{
	struct fake_api fa = {.request = fake_request, .ud = f};
	struct kube_client *c = fake_api_client(&fa);
	struct clusterstate cs;
	struct gv_err err = {0};
	const struct view_vpolset *vs;
	const struct vpol_policy *p;
	const json_t *const *bv;
	size_t nb = 0;

	assert_int_equal(clusterstate_fetch(c, "gavel", "gavel", &cs, &err), GV_OK);
	assert_string_equal(err.msg, "");
	vs = view_state_vpols(cs.state);
	assert_int_equal(json_array_size(view_vpolset_errors(vs)), 0);
	assert_int_equal(view_vpolset_count(vs), 1);
	p = view_vpolset_policy(vs, 0);
	assert_int_equal(vpol_kind(p), VPOL_VAP);
	assert_string_equal(vpol_name(p), "vap-labels");
	assert_string_equal(str(vpol_doc(p), "apiVersion"), "admissionregistration.k8s.io/v1");
	assert_string_equal(str(vpol_doc(p), "kind"), "ValidatingAdmissionPolicy");
	bv = view_vpolset_bindings(vs, &nb);
	assert_int_equal(nb, 1);
	assert_string_equal(str(bv[0], "apiVersion"), "admissionregistration.k8s.io/v1");
	assert_string_equal(str(bv[0], "kind"), "ValidatingAdmissionPolicyBinding");
	assert_string_equal(str(json_object_get(bv[0], "spec"), "policyName"), "vap-labels");
	/* the fields the version had are kept, none is made up */
	assert_int_equal(json_object_get(json_object_get(vpol_doc(p), "spec"), "variables") != NULL,
			 !f->v1alpha1_126);
	assert_int_equal(json_object_get(json_object_get(bv[0], "spec"), "validationActions") !=
			     NULL,
			 !f->v1alpha1_126);
	clusterstate_release(&cs);
	kube_client_free(c);
}

static void test_v1(void **state)
{
	struct fake f = {.served = {"v1", "v1beta1"}};

	(void)state;
	check_served(&f);
	/* v1 first: the older versions of the same objects are not asked */
	assert_int_equal(f.asked[0], 1);
	assert_int_equal(f.asked[1], 0);
	assert_int_equal(f.asked[2], 0);
}

static void test_v1beta1_only(void **state)
{
	struct fake f = {.served = {"v1beta1"}};

	(void)state;
	check_served(&f);
	assert_int_equal(f.asked[0], 1);
	assert_int_equal(f.asked[1], 1);
	assert_int_equal(f.asked[2], 0);
}

static void test_v1alpha1(void **state)
{
	struct fake f = {.served = {"v1alpha1"}};

	(void)state;
	check_served(&f);
	assert_int_equal(f.asked[2], 1);
}

/* Kubernetes 1.26: no matchConditions, variables or binding validationActions yet */
static void test_v1alpha1_126(void **state)
{
	struct fake f = {.served = {"v1alpha1"}, .v1alpha1_126 = true};

	(void)state;
	check_served(&f);
}

/* Before 1.26 (or with neither beta nor alpha on): no VAPs, no error. */
static void test_none(void **state)
{
	struct fake f = {0};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct clusterstate cs;
	struct gv_err err = {0};
	const struct view_vpolset *vs;
	size_t nb = 1;

	(void)state;
	assert_int_equal(clusterstate_fetch(c, "gavel", "gavel", &cs, &err), GV_OK);
	assert_string_equal(err.msg, "");
	vs = view_state_vpols(cs.state);
	assert_int_equal(view_vpolset_count(vs), 0);
	view_vpolset_bindings(vs, &nb);
	assert_int_equal(nb, 0);
	/* every version was asked */
	assert_int_equal(f.asked[0] + f.asked[1] + f.asked[2], 3);
	assert_int_equal(json_array_size(cs.namespaces), 1);
	clusterstate_release(&cs);
	kube_client_free(c);
}

/* Another failure than 404 is an error, not a reason to try an older version. */
static void test_forbidden(void **state)
{
	struct fake f = {.served = {"v1"}, .http = 403};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct gv_err err = {0};
	json_t *items = NULL;

	(void)state;
	assert_int_equal(clusterstate_list_vap(c, "validatingadmissionpolicies",
					       "ValidatingAdmissionPolicy", &items, &err),
			 GV_ENET);
	assert_null(items);
	assert_non_null(strstr(err.msg, "forbidden"));
	assert_int_equal(f.asked[1] + f.asked[2], 0);
	kube_client_free(c);
}

static void test_to_v1(void **state)
{
	json_t *d;

	(void)state;
	/* no apiVersion (the list's version): v1, kind filled in */
	d = json_object();
	clusterstate_vap_to_v1(d, "ValidatingAdmissionPolicy");
	assert_string_equal(str(d, "apiVersion"), "admissionregistration.k8s.io/v1");
	assert_string_equal(str(d, "kind"), "ValidatingAdmissionPolicy");
	json_decref(d);
	/* a version Kubernetes never served, another group: left as they are, not compiled */
	d = json_pack("{s:s, s:s}", "apiVersion", "admissionregistration.k8s.io/v2", "kind",
		      "ValidatingAdmissionPolicy");
	clusterstate_vap_to_v1(d, "ValidatingAdmissionPolicy");
	assert_string_equal(str(d, "apiVersion"), "admissionregistration.k8s.io/v2");
	assert_false(vpol_is_policy_doc(d));
	json_decref(d);
	d = json_pack("{s:s}", "apiVersion", "example.com/v1beta1");
	clusterstate_vap_to_v1(d, "ValidatingAdmissionPolicy");
	assert_string_equal(str(d, "apiVersion"), "example.com/v1beta1");
	json_decref(d);
	d = json_pack("{s:s, s:s}", "apiVersion", "admissionregistration.k8s.io/v1beta1", "kind",
		      "ValidatingAdmissionPolicy");
	clusterstate_vap_to_v1(d, "ValidatingAdmissionPolicy");
	assert_string_equal(str(d, "apiVersion"), "admissionregistration.k8s.io/v1");
	assert_true(vpol_is_policy_doc(d));
	json_decref(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v1),	     cmocka_unit_test(test_v1beta1_only),
	    cmocka_unit_test(test_v1alpha1), cmocka_unit_test(test_v1alpha1_126),
	    cmocka_unit_test(test_none),     cmocka_unit_test(test_forbidden),
	    cmocka_unit_test(test_to_v1),
	};

	json_object_seed(0);
	gv_log_setup(GV_LOG_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
