/*
 * Golden cases for admission answers: each folder of admission/testdata/
 * (NNN-name) holds
 *
 *   policy.yaml      the policies the case needs (ClusterPolicy / Policy;
 *                    policies.kyverno.io ValidatingPolicy,
 *                    NamespacedValidatingPolicy and PolicyException go to
 *                    the state's view_vpolset)
 *   request.json     an AdmissionReview as the API server sends it
 *   response.json    the AdmissionReview gavel answers (HTTP 200)
 *   config.json      optional: gavel's ConfigMap data (resourceFilters, ...)
 *   namespaces.json  optional: {namespace: labels}
 *
 * The request goes through admission_handle() and the answer is compared
 * with response.json as JSON (key order and spacing do not matter).
 * GOLDEN_UPDATE=1 rewrites response.json from the answer, for review.
 */
#include <dirent.h>
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

#define TESTDATA "admission/testdata"

static char *read_file(const char *dir, const char *name, bool required)
{
	char *path = gv_xasprintf("%s/%s", dir, name);
	struct gv_buf b = {0};
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f) {
		if (required)
			fail_msg("%s: cannot open", path);
		free(path);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		gv_buf_add(&b, chunk, n);
	fclose(f);
	free(path);
	return gv_buf_detach(&b);
}

static json_t *load_json(const char *dir, const char *name, bool required)
{
	char *text = read_file(dir, name, required);
	json_error_t je;
	json_t *j;

	if (!text)
		return NULL;
	j = json_loads(text, 0, &je);
	if (!j)
		fail_msg("%s/%s: %s at line %d", dir, name, je.text, je.line);
	free(text);
	return j;
}

/* Whether a document is a policies.kyverno.io kind (a CEL policy or exception). */
static bool is_cel_doc(const json_t *doc, const char *kind)
{
	const char *av = json_string_value(json_object_get(doc, "apiVersion"));
	const char *k = json_string_value(json_object_get(doc, "kind"));

	if (!av || !k || strncmp(av, "policies.kyverno.io/", strlen("policies.kyverno.io/")) != 0)
		return false;
	if (kind)
		return !strcmp(k, kind);
	return !strcmp(k, "ValidatingPolicy") || !strcmp(k, "NamespacedValidatingPolicy");
}

/*
 * The CEL policies and exceptions of policy.yaml as a view_vpolset (NULL
 * when there are none); a document that does not compile fails the case.
 */
static struct view_vpolset *compile_vpols(const char *dir)
{
	char *yaml = read_file(dir, "policy.yaml", true);
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	json_t *pols = json_array(), *xs = json_array();
	struct view_vpolset *vs = NULL;

	if (gv_yaml_load(yaml, strlen(yaml), "policy.yaml", &docs, &err))
		fail_msg("%s/policy.yaml: %s", dir, err.msg);
	for (size_t i = 0; i < docs.n; i++) {
		if (is_cel_doc(docs.v[i].value, NULL))
			json_array_append(pols, docs.v[i].value);
		else if (is_cel_doc(docs.v[i].value, "PolicyException"))
			json_array_append(xs, docs.v[i].value);
	}
	if (json_array_size(pols) || json_array_size(xs)) {
		const json_t *errs;

		vs = view_vpolset_new(pols, xs);
		errs = view_vpolset_errors(vs);
		if (json_array_size(errs)) {
			char *e = json_dumps(errs, JSON_COMPACT);

			fail_msg("%s/policy.yaml: %s", dir, e);
		}
	}
	json_decref(pols);
	json_decref(xs);
	gv_docs_release(&docs);
	free(yaml);
	return vs;
}

static struct engine_policyset *compile_policies(const char *dir)
{
	char *yaml = read_file(dir, "policy.yaml", true);
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	struct engine_policy **pv;
	struct engine_policyset *set;
	size_t n = 0;

	if (gv_yaml_load(yaml, strlen(yaml), "policy.yaml", &docs, &err))
		fail_msg("%s/policy.yaml: %s", dir, err.msg);
	pv = gv_xcalloc(docs.n ? docs.n : 1, sizeof(*pv));
	for (size_t i = 0; i < docs.n; i++) {
		struct gv_err e = {0};

		if (is_cel_doc(docs.v[i].value, NULL) ||
		    is_cel_doc(docs.v[i].value, "PolicyException"))
			continue;
		pv[n] = engine_policy_compile(docs.v[i].value, &e);
		if (!pv[n])
			fail_msg("%s/policy.yaml document %zu: %s: %s", dir, i, e.pointer, e.msg);
		n++;
	}
	set = engine_policyset_new(pv, n, NULL, 0);
	for (size_t i = 0; i < n; i++)
		engine_policy_unref(pv[i]);
	free(pv);
	gv_docs_release(&docs);
	free(yaml);
	return set;
}

static void write_json(const char *dir, const char *name, const json_t *j)
{
	char *path = gv_xasprintf("%s/%s", dir, name);

	if (json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
		fail_msg("%s: cannot write", path);
	/* json_dump_file ends without a newline */
	FILE *f = fopen(path, "ab");
	if (f) {
		fputc('\n', f);
		fclose(f);
	}
	free(path);
}

/* Runs one case; false (with the difference printed) when the answer differs. */
static bool run_case(const char *dir, bool update)
{
	struct engine_policyset *set = compile_policies(dir);
	json_t *cfg_data = load_json(dir, "config.json", false);
	json_t *ns = load_json(dir, "namespaces.json", false);
	char *request = read_file(dir, "request.json", true);
	struct view_config *cfg = view_config_new(cfg_data);
	struct view_state *state = view_state_new(set, ns, cfg);
	struct view_vpolset *vs = compile_vpols(dir);
	struct admission_fixed_source src;
	struct admission_handler_config hc = {0};
	struct admission_handler *h;
	struct admission_reply r;
	json_t *got, *want = NULL;
	bool ok = true;

	if (vs)
		view_state_set_vpols(state, vs);
	admission_fixed_source_init(&src, state);
	hc.source = &src.source;
	hc.namespace = "gavel";
	h = admission_handler_new(&hc);
	admission_handle(h, request, strlen(request), &r);
	if (r.http != 200) {
		printf("FAIL %s: HTTP %d: %s\n", dir, r.http, r.body);
		ok = false;
		goto out;
	}
	got = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(got);
	if (update) {
		write_json(dir, "response.json", got);
	} else {
		want = load_json(dir, "response.json", true);
		if (!json_equal(got, want)) {
			char *g = json_dumps(got, JSON_INDENT(2) | JSON_SORT_KEYS);
			char *w = json_dumps(want, JSON_INDENT(2) | JSON_SORT_KEYS);

			printf("FAIL %s\n--- want\n%s\n--- got\n%s\n", dir, w, g);
			free(g);
			free(w);
			ok = false;
		}
	}
	json_decref(got);
	json_decref(want);
out:
	admission_reply_release(&r);
	admission_handler_free(h);
	admission_fixed_source_release(&src);
	view_state_unref(state);
	if (vs)
		view_vpolset_unref(vs);
	view_config_unref(cfg);
	engine_policyset_unref(set);
	json_decref(cfg_data);
	json_decref(ns);
	free(request);
	return ok;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_admission_golden(void **state)
{
	const char *upd = getenv("GOLDEN_UPDATE");
	bool update = upd && !strcmp(upd, "1");
	DIR *d = opendir(TESTDATA);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0, failed = 0;

	(void)state;
	if (!d)
		fail_msg("%s: cannot open (run from the top of the tree)", TESTDATA);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			names = gv_xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = gv_xasprintf("%s/%s", TESTDATA, e->d_name);
	}
	closedir(d);
	if (n == 0)
		fail_msg("%s: no cases", TESTDATA);
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (!run_case(names[i], update))
			failed++;
		free(names[i]);
	}
	free(names);
	printf("admission golden: %zu passed, %zu failed\n", n - failed, failed);
	if (failed)
		fail_msg("%zu admission golden case(s) differ", failed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_admission_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
