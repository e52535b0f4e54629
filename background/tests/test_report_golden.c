/*
 * Golden cases for rendered PolicyReports: each folder of
 * background/testdata/reports/ (NNN-name) holds
 *
 *   policy.yaml      kyverno.io ClusterPolicy / Policy documents, and
 *                    PolicyExceptions (kyverno.io/v2, v2beta1)
 *   resources.yaml   the objects a background scan evaluates (each with
 *                    metadata.uid), in order
 *   options.json     optional: {"layout": "namespace" | "policy" |
 *                    "resource", "source": "gavel" | "kyverno",
 *                    "allowed": "fail,error"} as `gavel serve`'s
 *                    --report-layout, --report-source, --allowed-results
 *   expected.json    report_render_all() of the scan's results: the
 *                    PolicyReport / ClusterPolicyReport objects gavel
 *                    writes (every timestamp is GOLDEN_TIME)
 *
 * Each object is evaluated in background mode (engine_evaluate) and every
 * policy response goes through report_put_response(), as the reconciler's
 * scans do. The rendering is compared with expected.json as JSON (key
 * order and spacing do not matter). GOLDEN_UPDATE=1 rewrites
 * expected.json from the rendering, for review.
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

#include "background/report.h"
#include "common/yaml.h"

#include "common/banned.h"

#define TESTDATA    "background/testdata/reports"
#define GOLDEN_TIME 1767225600

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

static void load_docs(const char *dir, const char *name, struct gv_docs *docs)
{
	char *yaml = read_file(dir, name, true);
	struct gv_err err = {0};

	if (gv_yaml_load(yaml, strlen(yaml), name, docs, &err))
		fail_msg("%s/%s: %s", dir, name, err.msg);
	free(yaml);
}

static struct engine_policyset *compile_policies(const char *dir)
{
	struct gv_docs docs = {0};
	struct engine_policy **pv;
	struct engine_exception **xv;
	struct engine_policyset *set;
	size_t n = 0, nx = 0;

	load_docs(dir, "policy.yaml", &docs);
	pv = gv_xcalloc(docs.n + 1, sizeof(*pv));
	xv = gv_xcalloc(docs.n + 1, sizeof(*xv));
	for (size_t i = 0; i < docs.n; i++) {
		const char *kind = json_string_value(json_object_get(docs.v[i].value, "kind"));
		struct gv_err e = {0};

		if (kind && !strcmp(kind, "PolicyException")) {
			xv[nx] = engine_exception_compile(docs.v[i].value, &e);
			if (!xv[nx++])
				fail_msg("%s/policy.yaml document %zu: %s", dir, i, e.msg);
			continue;
		}
		pv[n] = engine_policy_compile(docs.v[i].value, &e);
		if (!pv[n++])
			fail_msg("%s/policy.yaml document %zu: %s: %s", dir, i, e.pointer, e.msg);
	}
	set = engine_policyset_new(pv, n, xv, nx);
	for (size_t i = 0; i < n; i++)
		engine_policy_unref(pv[i]);
	free(pv);
	free(xv);
	gv_docs_release(&docs);
	return set;
}

static struct report_options options_of(const char *dir)
{
	char *text = read_file(dir, "options.json", false);
	struct report_options ro = {0};
	const char *layout, *source, *allowed;
	json_error_t je;
	json_t *o;

	if (!text)
		return ro;
	o = json_loads(text, 0, &je);
	if (!o)
		fail_msg("%s/options.json: %s", dir, je.text);
	layout = json_string_value(json_object_get(o, "layout"));
	source = json_string_value(json_object_get(o, "source"));
	allowed = json_string_value(json_object_get(o, "allowed"));
	ro.split = layout && !strcmp(layout, "policy");
	ro.resource = layout && !strcmp(layout, "resource");
	if (source && !strcmp(source, REPORT_SOURCE_KYVERNO))
		ro.source = REPORT_SOURCE_KYVERNO;
	if (allowed) {
		struct gv_err err = {0};

		if (report_allowed_parse(allowed, &ro.allowed, &err))
			fail_msg("%s/options.json: %s", dir, err.msg);
	}
	json_decref(o);
	free(text);
	return ro;
}

static void run_case(const char *dir, bool update)
{
	struct engine_policyset *set = compile_policies(dir);
	struct report_options ro = options_of(dir);
	struct report_set *rs = report_set_new(&ro);
	struct gv_docs objs = {0};
	json_t *got, *want;
	char *text;

	load_docs(dir, "resources.yaml", &objs);
	for (size_t i = 0; i < objs.n; i++) {
		struct engine_input in = {.object = objs.v[i].value};
		struct engine_report rep = {0};
		struct report_resource res;
		struct gv_err err = {0};

		if (report_resource_from_object(objs.v[i].value, &res, &err))
			fail_msg("%s/resources.yaml document %zu: %s", dir, i, err.msg);
		if (engine_evaluate(set, &in, ENGINE_BACKGROUND, &rep, &err))
			fail_msg("%s: document %zu: %s", dir, i, err.msg);
		for (size_t j = 0; j < rep.n; j++)
			if (report_put_response(rs, &res, &rep.v[j], ENGINE_BACKGROUND, GOLDEN_TIME,
						0, &err))
				fail_msg("%s: document %zu: %s", dir, i, err.msg);
		engine_report_release(&rep);
	}
	got = report_render_all(rs);
	if (update) {
		char *path = gv_xasprintf("%s/expected.json", dir);
		FILE *f = fopen(path, "w");

		if (!f)
			fail_msg("%s: cannot write", path);
		text = json_dumps(got, JSON_INDENT(2) | JSON_SORT_KEYS);
		fprintf(f, "%s\n", text);
		fclose(f);
		free(text);
		free(path);
	} else {
		text = read_file(dir, "expected.json", true);
		want = json_loads(text, 0, NULL);
		free(text);
		if (!want)
			fail_msg("%s/expected.json: not JSON", dir);
		if (!json_equal(got, want)) {
			char *g = json_dumps(got, JSON_INDENT(2) | JSON_SORT_KEYS);

			print_error("%s: rendered reports differ from expected.json:\n%s\n", dir,
				    g);
			free(g);
			json_decref(want);
			fail();
		}
		json_decref(want);
	}
	json_decref(got);
	gv_docs_release(&objs);
	report_set_free(rs);
	engine_policyset_unref(set);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_golden(void **state)
{
	const char *upd = getenv("GOLDEN_UPDATE");
	bool update = upd && !strcmp(upd, "1");
	DIR *d = opendir(TESTDATA);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;

	(void)state;
	if (!d)
		fail_msg("%s: cannot open (run from the source tree)", TESTDATA);
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		names = gv_xrealloc(names, (n + 1) * sizeof(*names));
		names[n++] = gv_xstrdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	assert_true(n >= 5);
	for (size_t i = 0; i < n; i++) {
		char *dir = gv_xasprintf("%s/%s", TESTDATA, names[i]);

		run_case(dir, update);
		free(dir);
		free(names[i]);
	}
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden),
	};

	json_object_seed(0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
