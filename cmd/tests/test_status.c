/*
 * test_status.c - `gavel status` (cmd/status.h) against a fake API server
 * (kube/tests/transport.h): the Kubernetes ValidatingAdmissionPolicies'
 * rows (bindings, global schedule, last scan from the scan state, result
 * counts of their own source), and an API server that does not serve the
 * kind at any version (before Kubernetes 1.26), which is no error, and one
 * that serves it at v1beta1 or v1alpha1 only.
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

#include "cmd/status.h"
#include "common/gv.h"
#include "common/log.h"
#include "kube/tests/transport.h"

#define VAP_GROUP "/apis/admissionregistration.k8s.io/"

/* 2026-01-01T00:00:00Z */
#define T0 ((time_t)1767225600)

struct fake {
	bool vap_served;	 /* false: a v1.20 API server (no such resource) */
	int vap_http;		 /* an error status for the VAP list (0 = none) */
	int vap_lists;		 /* VAP and binding lists asked */
	const char *vap_version; /* the version that serves them (NULL: v1) */
};

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (!j)
		fail_msg("bad JSON in the test: %s: %s", e.text, text);
	return j;
}

static json_t *list_of(const char *kind, json_t *items)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "v1", "kind", kind, "metadata",
			 "resourceVersion", "7", "items", items);
}

static json_t *vap(const char *name, const char *expr)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:[{s:[s], s:[s], s:[s], s:[s]}]}, "
			 "s:[{s:s}]}}",
			 "apiVersion", "admissionregistration.k8s.io/v1", "kind",
			 "ValidatingAdmissionPolicy", "metadata", "name", name, "uid", name, "spec",
			 "matchConstraints", "resourceRules", "apiGroups", "", "apiVersions", "v1",
			 "operations", "CREATE", "resources", "pods", "validations", "expression",
			 expr);
}

static json_t *binding(const char *name, const char *policy)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[s]}}", "apiVersion",
			 "admissionregistration.k8s.io/v1", "kind",
			 "ValidatingAdmissionPolicyBinding", "metadata", "name", name, "spec",
			 "policyName", policy, "validationActions", "Deny");
}

static json_t *result(const char *policy, const char *source, const char *res)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "policy", policy, "rule", policy, "source", source,
			 "result", res);
}

static enum gv_code not_found(struct kube_status *st, struct gv_err *err)
{
	st->http = 404;
	snprintf(st->reason, sizeof(st->reason), "NotFound");
	return gv_err_set(err, GV_ENET, "the server could not find the requested resource");
}

static bool is(const char *path, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(path, want, n) && (path[n] == '\0' || path[n] == '?');
}

/* Whether path lists admissionregistration.k8s.io `resource` (at any version: *version). */
static bool is_vap(const char *path, const char *resource, char *version, size_t n)
{
	const char *v = path + strlen(VAP_GROUP), *slash;

	if (strncmp(path, VAP_GROUP, strlen(VAP_GROUP)))
		return false;
	slash = strchr(v, '/');
	if (!slash || (size_t)(slash - v) >= n || !is(slash + 1, resource))
		return false;
	snprintf(version, n, "%.*s", (int)(slash - v), v);
	return true;
}

static enum gv_code fake_request(void *ud, const char *method, const char *path, const json_t *body,
				 json_t **out, struct kube_status *st, struct gv_err *err)
{
	struct fake *f = ud;
	char ver[16];

	(void)body;
	if (strcmp(method, "GET"))
		fail_msg("status wrote to the API: %s %s", method, path);
	if (is_vap(path, "validatingadmissionpolicies", ver, sizeof(ver)) ||
	    is_vap(path, "validatingadmissionpolicybindings", ver, sizeof(ver))) {
		f->vap_lists++;
		if (!f->vap_served || strcmp(ver, f->vap_version ? f->vap_version : "v1"))
			return not_found(st, err);
		if (f->vap_http) {
			st->http = f->vap_http;
			snprintf(st->reason, sizeof(st->reason), "Forbidden");
			return gv_err_set(err, GV_ENET, "validatingadmissionpolicies is forbidden");
		}
		if (strstr(path, "bindings")) {
			json_t *items = json_array();
			json_array_append_new(items, binding("bind-a1", "vap-a"));
			json_array_append_new(items, binding("bind-a2", "vap-a"));
			json_array_append_new(items, binding("bind-other", "vap-gone"));
			*out = list_of("ValidatingAdmissionPolicyBindingList", items);
		} else {
			json_t *items = json_array();
			/* not in name order: the rows are */
			json_array_append_new(items, vap("vap-c", "object.metadata.("));
			json_array_append_new(items, vap("vap-b", "true"));
			json_array_append_new(items, vap("vap-a", "has(object.metadata.labels)"));
			*out = list_of("ValidatingAdmissionPolicyList", items);
		}
		if (f->vap_version) {
			/* listed at that version, as such a server lists them */
			json_t *items = json_object_get(*out, "items"), *d;
			size_t i;
			json_array_foreach(items, i, d) json_object_set_new(
			    d, "apiVersion",
			    json_sprintf("admissionregistration.k8s.io/%s", f->vap_version));
		}
		return GV_OK;
	}
	if (is(path, "/api/v1/namespaces")) {
		*out = list_of("NamespaceList",
			       json_pack("[{s:{s:s}}]", "metadata", "name", "team-a"));
		return GV_OK;
	}
	if (is(path, "/api/v1/namespaces/gavel/configmaps/gavel")) {
		*out = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
			 "\"gavel\"},\"data\":{\"backgroundScanInterval\":\"2h\"}}");
		return GV_OK;
	}
	if (is(path, "/api/v1/namespaces/gavel/configmaps/gavel-scan-state")) {
		/* vap-a was scanned at T0; a ClusterPolicy of the same name never */
		*out = J("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
			 "\"gavel-scan-state\"},\"data\":{\"ValidatingAdmissionPolicy.vap-a\":"
			 "\"{\\\"lastScan\\\":\\\"2026-01-01T00:00:00Z\\\"}\"}}");
		return GV_OK;
	}
	if (is(path, "/apis/wgpolicyk8s.io/v1alpha2/policyreports")) {
		json_t *res = json_array();
		json_array_append_new(res, result("vap-a", "ValidatingAdmissionPolicy", "fail"));
		json_array_append_new(res, result("vap-a", "ValidatingAdmissionPolicy", "fail"));
		json_array_append_new(res, result("vap-a", "ValidatingAdmissionPolicy", "pass"));
		/* another kind's results under the same name are not the VAP's */
		json_array_append_new(res, result("vap-a", "kyverno", "error"));
		json_array_append_new(res, result("vap-a", "KyvernoValidatingPolicy", "warn"));
		*out = list_of("PolicyReportList",
			       json_pack("[{s:{s:s, s:s}, s:o}]", "metadata", "name",
					 "polr-ns-team-a", "namespace", "team-a", "results", res));
		return GV_OK;
	}
	if (is(path, "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports")) {
		json_t *res = json_array();
		json_array_append_new(res, result("vap-b", "ValidatingAdmissionPolicy", "skip"));
		*out = list_of("ClusterPolicyReportList",
			       json_pack("[{s:{s:s}, s:o}]", "metadata", "name",
					 "clusterpolicyreport", "results", res));
		return GV_OK;
	}
	/* CRDs not installed (kyverno.io, policies.kyverno.io) */
	return not_found(st, err);
}

static const json_t *row_of(const json_t *rows, const char *kind, const char *policy)
{
	size_t i;
	const json_t *r;

	json_array_foreach(rows, i, r)
	{
		if (!strcmp(json_string_value(json_object_get(r, "kind")), kind) &&
		    !strcmp(json_string_value(json_object_get(r, "policy")), policy))
			return r;
	}
	return NULL;
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static long long count(const json_t *row, const char *res)
{
	return (long long)json_integer_value(json_object_get(json_object_get(row, "results"), res));
}

static char *dump(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* The rows of a server that serves the kinds at `version` only (NULL: v1). */
static void vap_rows_at(const char *version)
{
	struct fake f = {.vap_served = true, .vap_version = version};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct gv_err err = {0};
	json_t *rows = NULL;
	const json_t *a, *b, *cr;
	char *s;

	/* ten minutes after vap-a's last scan */
	assert_int_equal(cmd_status_rows(c, NULL, NULL, T0 + 600, &rows, &err), GV_OK);
	assert_int_equal(json_array_size(rows), 3);
	/* in name order */
	assert_string_equal(str(json_array_get(rows, 0), "policy"), "vap-a");
	assert_string_equal(str(json_array_get(rows, 1), "policy"), "vap-b");
	assert_string_equal(str(json_array_get(rows, 2), "policy"), "vap-c");
	a = row_of(rows, "ValidatingAdmissionPolicy", "vap-a");
	b = row_of(rows, "ValidatingAdmissionPolicy", "vap-b");
	cr = row_of(rows, "ValidatingAdmissionPolicy", "vap-c");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(cr);

	/* vap-a: two bindings, the ConfigMap's global interval, scanned at T0 */
	s = dump(json_object_get(a, "bindings"));
	assert_string_equal(s, "[\"bind-a1\",\"bind-a2\"]");
	free(s);
	assert_true(json_is_true(json_object_get(a, "background")));
	assert_string_equal(str(a, "schedule"), "2h");
	assert_string_equal(str(a, "source"), "global");
	assert_string_equal(str(a, "state"), "waiting");
	assert_string_equal(str(a, "lastScan"), "2026-01-01T00:00:00Z");
	assert_non_null(str(a, "nextScan"));
	assert_true(strcmp(str(a, "nextScan"), "2026-01-01T00:10:00Z") > 0);
	assert_true(json_is_false(json_object_get(a, "suspended")));
	assert_null(json_object_get(a, "error"));
	assert_int_equal(count(a, "fail"), 2);
	assert_int_equal(count(a, "pass"), 1);
	assert_int_equal(count(a, "error"), 0);
	assert_int_equal(count(a, "warn"), 0);

	/* vap-b: no binding (scanned against its matchConstraints), never scanned */
	assert_int_equal(json_array_size(json_object_get(b, "bindings")), 0);
	assert_string_equal(str(b, "state"), "due");
	assert_true(json_is_null(json_object_get(b, "lastScan")));
	assert_int_equal(count(b, "skip"), 1);
	assert_int_equal(count(b, "fail"), 0);

	/* vap-c does not compile: invalid, with the compiler's message */
	assert_string_equal(str(cr, "state"), "invalid");
	assert_non_null(str(cr, "error"));
	assert_true(strlen(str(cr, "error")) > 0);
	assert_true(json_is_null(json_object_get(cr, "nextScan")));

	/* the table */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);

		assert_non_null(m);
		cmd_status_table(m, rows);
		fclose(m);
		assert_non_null(strstr(buf, "POLICY"));
		assert_non_null(strstr(buf, "ValidatingAdmissionPolicy/vap-a"));
		assert_non_null(strstr(buf, "2h (global)"));
		assert_non_null(strstr(buf, "waiting (bindings: bind-a1, bind-a2)"));
		assert_non_null(strstr(buf, "due (no binding: matchConstraints)"));
		assert_non_null(strstr(buf, "ValidatingAdmissionPolicy/vap-c"));
		assert_non_null(strstr(buf, "invalid: "));
		free(buf);
	}
	json_decref(rows);
	kube_client_free(c);
}

static void test_vap_rows(void **state)
{
	(void)state;
	vap_rows_at(NULL);
}

/* Kubernetes 1.28-1.29 with the beta API on: listed at v1beta1 (v1 is 404), read as v1 */
static void test_vap_rows_v1beta1(void **state)
{
	(void)state;
	vap_rows_at("v1beta1");
}

/* Kubernetes 1.26-1.27 with the alpha API on */
static void test_vap_rows_v1alpha1(void **state)
{
	(void)state;
	vap_rows_at("v1alpha1");
}

static void test_vap_not_served(void **state)
{
	struct fake f = {.vap_served = false};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct gv_err err = {0};
	json_t *rows = NULL;

	(void)state;
	assert_int_equal(cmd_status_rows(c, "gavel", NULL, T0, &rows, &err), GV_OK);
	assert_true(json_is_array(rows));
	assert_null(row_of(rows, "ValidatingAdmissionPolicy", "vap-a"));
	assert_int_equal(json_array_size(rows), 0);
	assert_string_equal(err.msg, "");
	assert_true(f.vap_lists > 0);
	json_decref(rows);
	kube_client_free(c);
}

static void test_vap_list_error(void **state)
{
	struct fake f = {.vap_served = true, .vap_http = 403};
	struct fake_api fa = {.request = fake_request, .ud = &f};
	struct kube_client *c = fake_api_client(&fa);
	struct gv_err err = {0};
	json_t *rows = NULL;

	(void)state;
	/* another failure than 404 is an error, not an empty list */
	assert_int_equal(cmd_status_rows(c, "gavel", NULL, T0, &rows, &err), GV_ENET);
	assert_null(rows);
	assert_non_null(strstr(err.msg, "validatingadmissionpolicies is forbidden"));
	kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vap_rows),	      cmocka_unit_test(test_vap_rows_v1beta1),
	    cmocka_unit_test(test_vap_rows_v1alpha1), cmocka_unit_test(test_vap_not_served),
	    cmocka_unit_test(test_vap_list_error),
	};

	json_object_seed(0);
	gv_log_setup(GV_LOG_ERROR, 0); /* vap-c's compile error is logged at warn */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
