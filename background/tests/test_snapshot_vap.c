/*
 * test_snapshot_vap.c - the snapshot's watch of ValidatingAdmissionPolicies
 * and their bindings (background/snapshot.h) against a fake API server
 * (kube/tests/transport.h) that serves them at one admissionregistration.k8s.io
 * version only: found by discovery at that version, read as v1 into the
 * published state; a server that serves none publishes none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "background/snapshot.h"
#include "common/gv.h"
#include "common/log.h"
#include "engine/vpolicy.h"
#include "kube/tests/transport.h"

struct fake {
	const char *version; /* the version that serves the VAP kinds; NULL: none */
	int vap_lists;	     /* VAP or binding lists (not watches) at that version */
};

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (!j)
		fail_msg("bad JSON in the test: %s: %s", e.text, text);
	return j;
}

static bool starts(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '?');
}

static json_t *list_of(const char *api, const char *kind, json_t *items)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", api, "kind", kind, "metadata",
			 "resourceVersion", "7", "items", items);
}

static enum gv_code fake_request(void *ud, const char *method, const char *path, const json_t *body,
				 json_t **out, struct kube_status *st, struct gv_err *err)
{
	struct fake *f = ud;
	char gv[96], pol[160], bind[160];

	(void)body;
	if (strcmp(method, "GET")) {
		/* the snapshot reads only */
		st->http = 405;
		return gv_err_set(err, GV_ENET, "method not allowed");
	}
	if (strstr(path, "watch=1"))
		return GV_OK; /* a watch the server ends at once: the informer waits and retries */
	if (!strcmp(path, "/api")) {
		*out = J("{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
		return GV_OK;
	}
	if (!strcmp(path, "/api/v1")) {
		*out = J("{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
			 "{\"name\":\"namespaces\",\"namespaced\":false,\"kind\":\"Namespace\","
			 "\"verbs\":[\"list\",\"watch\"]},{\"name\":\"configmaps\",\"namespaced\":"
			 "true,\"kind\":\"ConfigMap\",\"verbs\":[\"list\",\"watch\"]}]}");
		return GV_OK;
	}
	if (!strcmp(path, "/apis")) {
		/* the group serves v1 (webhook configurations) and, here, the VAPs' version */
		*out = json_pack("{s:s, s:[{s:s, s:[{s:s}, {s:s?}], s:{s:s}}]}", "kind",
				 "APIGroupList", "groups", "name", "admissionregistration.k8s.io",
				 "versions", "version", "v1", "version",
				 f->version && strcmp(f->version, "v1") ? f->version : NULL,
				 "preferredVersion", "version", "v1");
		return GV_OK;
	}
	if (!strcmp(path, "/apis/admissionregistration.k8s.io/v1") &&
	    (!f->version || strcmp(f->version, "v1"))) {
		*out = J("{\"kind\":\"APIResourceList\",\"resources\":[{\"name\":"
			 "\"validatingwebhookconfigurations\",\"namespaced\":false,\"kind\":"
			 "\"ValidatingWebhookConfiguration\",\"verbs\":[\"list\",\"watch\"]}]}");
		return GV_OK;
	}
	if (f->version) {
		snprintf(gv, sizeof(gv), "/apis/admissionregistration.k8s.io/%s", f->version);
		snprintf(pol, sizeof(pol), "%s/validatingadmissionpolicies", gv);
		snprintf(bind, sizeof(bind), "%s/validatingadmissionpolicybindings", gv);
		if (!strcmp(path, gv)) {
			*out =
			    J("{\"kind\":\"APIResourceList\",\"resources\":["
			      "{\"name\":\"validatingadmissionpolicies\",\"namespaced\":false,"
			      "\"kind\":\"ValidatingAdmissionPolicy\",\"verbs\":[\"list\","
			      "\"watch\"]},{\"name\":\"validatingadmissionpolicybindings\","
			      "\"namespaced\":false,\"kind\":\"ValidatingAdmissionPolicyBinding\","
			      "\"verbs\":[\"list\",\"watch\"]}]}");
			return GV_OK;
		}
		if (starts(path, pol) || starts(path, bind)) {
			char *api = gv_xasprintf("admissionregistration.k8s.io/%s", f->version);
			f->vap_lists++;
			*out = starts(path, pol)
				   ? list_of(api, "ValidatingAdmissionPolicyList",
					     json_pack("[{s:{s:s, s:s, s:s}, s:{s:{s:[{s:[s], "
						       "s:[s], s:[s], s:[s]}]}, s:[{s:s}]}}]",
						       "metadata", "name", "vap-labels", "uid",
						       "u1", "resourceVersion", "3", "spec",
						       "matchConstraints", "resourceRules",
						       "apiGroups", "", "apiVersions", "v1",
						       "operations", "CREATE", "resources", "pods",
						       "validations", "expression",
						       "has(object.metadata.labels)"))
				   : list_of(api, "ValidatingAdmissionPolicyBindingList",
					     json_pack("[{s:{s:s, s:s, s:s}, s:{s:s}}]", "metadata",
						       "name", "vap-labels-binding", "uid", "u2",
						       "resourceVersion", "4", "spec", "policyName",
						       "vap-labels"));
			free(api);
			return GV_OK;
		}
	}
	if (starts(path, "/api/v1/namespaces") ||
	    starts(path, "/api/v1/namespaces/gavel/configmaps")) {
		*out = list_of("v1", "List", json_array());
		return GV_OK;
	}
	st->http = 404;
	snprintf(st->reason, sizeof(st->reason), "NotFound");
	return gv_err_set(err, GV_ENET, "the server could not find the requested resource");
}

/* The first published state (NULL after 20 s: the test fails). */
static struct view_state *first_state(struct snapshot *s)
{
	for (int i = 0; i < 2000; i++) {
		struct view_state *st = snapshot_state(s);
		struct timespec ts = {0, 10 * 1000 * 1000};

		if (st)
			return st;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void watched_at(const char *version)
{
	struct fake f = {.version = version};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct snapshot_config cfg = {.client = c};
	struct snapshot *s = NULL;
	struct gv_err err = {0};
	struct view_state *st;
	const struct view_vpolset *vs;
	const struct vpol_policy *p;
	const json_t *const *bv;
	size_t nb = 0;

	assert_int_equal(snapshot_start(&cfg, &s, &err), GV_OK);
	st = first_state(s);
	assert_non_null(st);
	vs = view_state_vpols(st);
	assert_int_equal(view_vpolset_count(vs), 1);
	p = view_vpolset_policy(vs, 0);
	assert_int_equal(vpol_kind(p), VPOL_VAP);
	assert_string_equal(vpol_name(p), "vap-labels");
	assert_string_equal(json_string_value(json_object_get(vpol_doc(p), "apiVersion")),
			    "admissionregistration.k8s.io/v1");
	bv = view_vpolset_bindings(vs, &nb);
	assert_int_equal(nb, 1);
	assert_string_equal(json_string_value(json_object_get(bv[0], "apiVersion")),
			    "admissionregistration.k8s.io/v1");
	assert_true(f.vap_lists >= 2);
	view_state_unref(st);
	snapshot_stop(s);
	kube_client_free(c);
}

static void test_v1(void **state)
{
	(void)state;
	watched_at("v1");
}

static void test_v1beta1(void **state)
{
	(void)state;
	watched_at("v1beta1");
}

static void test_v1alpha1(void **state)
{
	(void)state;
	watched_at("v1alpha1");
}

static void test_none(void **state)
{
	struct fake f = {0};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct snapshot_config cfg = {.client = c};
	struct snapshot *s = NULL;
	struct gv_err err = {0};
	struct view_state *st;

	(void)state;
	assert_int_equal(snapshot_start(&cfg, &s, &err), GV_OK);
	st = first_state(s);
	assert_non_null(st);
	assert_int_equal(view_vpolset_count(view_state_vpols(st)), 0);
	assert_int_equal(f.vap_lists, 0);
	view_state_unref(st);
	snapshot_stop(s);
	kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v1),
	    cmocka_unit_test(test_v1beta1),
	    cmocka_unit_test(test_v1alpha1),
	    cmocka_unit_test(test_none),
	};

	json_object_seed(0);
	gv_log_setup(GV_LOG_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
