/*
 * test.c - `gavel test DIR... [-v]`: runs Kyverno CLI test suites
 * (kyverno-test.yaml) and scores them exactly as `kyverno test` does
 * ("kyverno mode", ../shared/conformance/TEST-FORMAT.md section 5).
 *
 * Output, one block per test document:
 *
 *   == <test file> (<test name>)
 *     PASS     <policy>/<rule> <Kind>/<namespace>/<name> want=pass got=pass
 *     FAIL     ... want=fail got=pass
 *              message: <rule message>
 *     EXCLUDED ... want=fail (no rule response; counted as passed)
 *     NOTFOUND ... want=pass (no response from the policy)
 *     INVALID  ... want=pass (the policy is invalid; counted as passed)
 *   RESULT PASS passed=N failed=N expected=E reproduced=R file=<test file>
 *
 * One row per rule response checked. An *outcome* is one (result entry,
 * selected resource) pair; it passes when all its rows pass. `passed` and
 * `failed` count outcomes. `expected`/`reproduced` count expectations the
 * way the corpus INDEX does: one per (result entry, listed resource name).
 * A listed name that selects several resources (kind is not compared)
 * counts once and is reproduced when all of them pass; when no listed name
 * matches, every name stands for the whole widened entry.
 *
 * The last line is "N passed, N failed" (outcomes over all tests). Exit
 * status: 0 when nothing failed, 1 when an outcome failed, 2 when a test
 * file could not be loaded (the other tests still run and count).
 */
#include "cmd/cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fnmatch.h>

#include "cmd/celctx.h"
#include "cmd/load.h"
#include "cmd/table.h"
#include "cmd/values.h"
#include "common/yaml.h"
#include "engine/engine.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

#define TEST_FILE_NAME "kyverno-test.yaml"

/* One expected result (results[] entry). */
struct test_entry {
	char *policy;	 /* owned: part after the last '/' */
	char *rule;	 /* owned: "" = every rule */
	char *result;	 /* owned: expected result */
	char *operation; /* owned or NULL */
	char **names;	 /* owned: resources[] (+ legacy resource) */
	size_t nnames;
	bool has_resources;  /* `resources` (or legacy `resource`) given */
	const json_t *specs; /* borrowed from the test doc: resourceSpecs or NULL */
	int line;
};

/* One rule response as the scorer sees it. */
struct test_rule {
	char *name;		   /* owned */
	char *message;		   /* owned */
	enum engine_status status; /* after fail -> warn for scored: "false" */
	bool unsupported;	   /* an error because gavel does not evaluate the rule */
};

/* Engine response of one policy for one resource under one operation. */
struct test_cell {
	bool done;
	bool responded; /* the engine returned a response for the policy */
	char *error;	/* owned: evaluation error, or NULL */
	struct test_rule *rules;
	size_t n;
};

struct test_case {
	const char *file;  /* borrowed */
	char *dir;	   /* owned */
	char *name;	   /* owned */
	const json_t *doc; /* borrowed */
	const struct gv_srcmap *map;
	struct load_policies pols;
	struct engine_policyset **sets; /* owned: one per policy (NULL when invalid) */
	struct load_resources res;
	struct load_resources params; /* paramResources (ValidatingAdmissionPolicy bindings) */
	/* jsonPayloads: res.v[payload_base...] are payloads named payload_names[i] */
	size_t payload_base;
	char **payload_names;
	struct celctx cel; /* Kyverno CEL library answers (context, clusterResources, mocks) */
	struct values values;
	bool has_values;
	struct values_userinfo ui;
	bool has_ui;
	struct test_entry *entries;
	size_t nentries;
	char **ops; /* owned: distinct entry operations; index 0 = NULL (from values) */
	size_t nops;
	struct test_cell *cells; /* owned: nops * res.n * pols.n */
};

static const char *test_file_name = TEST_FILE_NAME;

/* --test-case-selector: wildcard patterns (owned), "*" by default. */
static char *sel_policy, *sel_rule, *sel_resource;

static bool selector_parse(const char *v)
{
	char *dup = gv_xstrdup(v), *s = dup;
	bool ok = true;

	while (ok && *s) {
		char *comma = strchr(s, ','), *eq;
		if (comma)
			*comma = '\0';
		while (*s == ' ')
			s++;
		eq = strchr(s, '=');
		if (!eq) {
			ok = false;
			break;
		}
		*eq = '\0';
		if (!strcmp(s, "policy")) {
			free(sel_policy);
			sel_policy = gv_xstrdup(eq + 1);
		} else if (!strcmp(s, "rule")) {
			free(sel_rule);
			sel_rule = gv_xstrdup(eq + 1);
		} else if (!strcmp(s, "resource")) {
			free(sel_resource);
			sel_resource = gv_xstrdup(eq + 1);
		} else {
			ok = false;
		}
		s = comma ? comma + 1 : s + strlen(s);
	}
	free(dup);
	return ok;
}

static bool sel_match(const char *pattern, const char *s)
{
	return !pattern || !fnmatch(pattern, s, 0);
}

/* Whether result entry e is selected by --test-case-selector. */
static bool selector_selects(const struct test_entry *e)
{
	bool any = !sel_resource || !e->nnames;

	if (!sel_match(sel_policy, e->policy) || !sel_match(sel_rule, e->rule))
		return false;
	for (size_t i = 0; !any && i < e->nnames; i++) {
		const char *slash = strrchr(e->names[i], '/');
		any = sel_match(sel_resource, slash ? slash + 1 : e->names[i]);
	}
	return any;
}

struct test_totals {
	size_t passed, failed, skipped;
	int load_errors;
	bool verbose;
};

/* ---- loading a test document ---- */

static char *join_path(const char *dir, const char *rel)
{
	if (rel[0] == '/' || !strcmp(rel, "-") || !*dir)
		return gv_xstrdup(rel);
	return gv_xasprintf("%s/%s", dir, rel);
}

static char *dir_of(const char *file)
{
	const char *slash = strrchr(file, '/');

	if (!slash)
		return gv_xstrdup(".");
	if (slash == file)
		return gv_xstrdup("/");
	return gv_xstrndup(file, (size_t)(slash - file));
}

/* Case-insensitive key lookup, as Go's JSON decoding matches field names. */
static const json_t *get_ci(const json_t *obj, const char *key)
{
	const char *k;
	json_t *v;
	const json_t *exact = json_object_get(obj, key);

	if (exact)
		return exact;
	json_object_foreach(load_unconst(obj), k, v)
	{
		if (!strcasecmp(k, key))
			return v;
	}
	return NULL;
}

static bool key_known(const char *k, const char *const *known, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(k, known[i]))
			return true;
	return false;
}

static const char *const test_keys[] = {
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "policies",
    "resources",
    "variables",
    "values",
    "userinfo",
    "results",
    "exceptions",
    "targetResources",
    "paramResources",
    "clusterResources",
    "context",
    "apiCallResponses",
    "globalContextEntries",
    "jsonPayloads",
    "httpPayloads",
    "envoyPayloads",
    "jsonPayload",
    "checks",
};

/* Test keys that need a cluster, CEL policies or payloads: ignored offline. */
static const char *const test_unsupported[] = {
    "targetResources", "httpPayloads", "envoyPayloads", "jsonPayload", "checks",
};

/* Test keys naming payloads that result entries may name like resources. */
static const char *const payload_keys[] = {"jsonPayloads", "httpPayloads", "envoyPayloads",
					   "jsonPayload"};

static const char *const result_keys[] = {
    "policy",
    "rule",
    "resources",
    "resourceSpecs",
    "kind",
    "result",
    "operation",
    "patchedResources",
    "generatedResource",
    "generatedResources",
    "cloneSourceResource",
    "failOnMissingResources",
    "isValidatingAdmissionPolicy",
    "isMutatingAdmissionPolicy",
    "isValidatingPolicy",
    "isMutatingPolicy",
    "isGeneratingPolicy",
    "isDeletingPolicy",
    "isImageValidatingPolicy",
    /* legacy (kyverno <= 1.14) */
    "resource",
    "status",
    "namespace",
    "patchedResource",
};

static void warn_at(const struct test_case *tc, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void warn_at(const struct test_case *tc, const char *pointer, const char *fmt, ...)
{
	int line = 0, col = 0;
	va_list ap;

	gv_srcmap_find(tc->map, pointer, &line, &col);
	fprintf(stderr, "%s:%d:%d: warning: ", tc->file, line, col);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static enum gv_code str_list(const json_t *v, const char *ptr, const char *what, struct gv_err *err)
{
	size_t i;
	json_t *e;

	if (!v || json_is_null(v))
		return GV_OK;
	if (!json_is_array(v))
		return gv_err_setp(err, GV_EINVAL, ptr, "%s must be a list of strings", what);
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e)) {
			char p[600];
			snprintf(p, sizeof(p), "%s/%zu", ptr, i);
			return gv_err_setp(err, GV_EINVAL, p, "%s must be a list of strings", what);
		}
	}
	return GV_OK;
}

/* String field (case-insensitive key), NULL when absent; *bad when not a string. */
static const char *opt_str(const json_t *o, const char *key, bool *bad)
{
	const json_t *v = get_ci(o, key);

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		*bad = true;
		return NULL;
	}
	return json_string_value(v);
}

static void entry_add_name(struct test_entry *e, const char *name)
{
	e->names = gv_xrealloc(e->names, (e->nnames + 1) * sizeof(*e->names));
	e->names[e->nnames++] = gv_xstrdup(name);
}

static enum gv_code parse_entry(struct test_case *tc, const json_t *r, size_t idx,
				struct test_entry *e, struct gv_err *err)
{
	char ptr[64];
	char sub[128];
	const char *k;
	json_t *val;
	bool bad = false;
	const char *policy, *rule, *result, *status, *op, *legacy_res, *slash;
	const json_t *res;
	int col = 0;
	enum gv_code rc;

	snprintf(ptr, sizeof(ptr), "/results/%zu", idx);
	gv_srcmap_find(tc->map, ptr, &e->line, &col);
	if (!json_is_object(r))
		return gv_err_setp(err, GV_EINVAL, ptr, "a result must be an object");
	json_object_foreach(load_unconst(r), k, val)
	{
		if (!key_known(k, result_keys, GV_ARRAY_LEN(result_keys))) {
			snprintf(sub, sizeof(sub), "%s/%s", ptr, k);
			warn_at(tc, sub, "unknown result field %s ignored", k);
		}
	}
	policy = opt_str(r, "policy", &bad);
	rule = opt_str(r, "rule", &bad);
	result = opt_str(r, "result", &bad);
	status = opt_str(r, "status", &bad);
	op = opt_str(r, "operation", &bad);
	legacy_res = opt_str(r, "resource", &bad);
	if (bad)
		return gv_err_setp(err, GV_EINVAL, ptr,
				   "policy, rule, result, status, operation and resource must be "
				   "strings");
	if (!policy || !*policy)
		return gv_err_setp(err, GV_EINVAL, ptr, "result without a policy");
	if (result && status)
		return gv_err_setp(err, GV_EINVAL, ptr, "result and status are both set");
	if (!result)
		result = status;
	if (!result || !*result)
		return gv_err_setp(err, GV_EINVAL, ptr, "result without an expected result");
	if (op && strcmp(op, "CREATE") && strcmp(op, "UPDATE") && strcmp(op, "DELETE") &&
	    strcmp(op, "CONNECT")) {
		snprintf(sub, sizeof(sub), "%s/operation", ptr);
		return gv_err_setp(err, GV_EINVAL, sub,
				   "operation must be CREATE, UPDATE, DELETE or CONNECT");
	}
	if (op && json_is_true(get_ci(r, "isDeletingPolicy"))) {
		snprintf(sub, sizeof(sub), "%s/operation", ptr);
		return gv_err_setp(err, GV_EINVAL, sub,
				   "operation cannot be used with isDeletingPolicy");
	}
	res = get_ci(r, "resources");
	snprintf(sub, sizeof(sub), "%s/resources", ptr);
	if ((rc = str_list(res, sub, "resources", err)))
		return rc;
	if (get_ci(r, "resourceSpecs") && !json_is_array(get_ci(r, "resourceSpecs")) &&
	    !json_is_null(get_ci(r, "resourceSpecs"))) {
		snprintf(sub, sizeof(sub), "%s/resourceSpecs", ptr);
		return gv_err_setp(err, GV_EINVAL, sub, "resourceSpecs must be a list");
	}
	if (get_ci(r, "patchedResources") || get_ci(r, "patchedResource") ||
	    get_ci(r, "generatedResource") || get_ci(r, "generatedResources"))
		warn_at(tc, ptr,
			"patched/generated resource comparison is not supported (validate rules "
			"only); the result is checked alone");

	slash = strrchr(policy, '/');
	e->policy = gv_xstrdup(slash ? slash + 1 : policy);
	e->rule = gv_xstrdup(rule ? rule : "");
	e->result = gv_xstrdup(result);
	e->operation = op ? gv_xstrdup(op) : NULL;
	if (res && json_is_array(res)) {
		size_t i;
		json_array_foreach(res, i, val)
		{
			entry_add_name(e, json_string_value(val));
		}
		e->has_resources = true;
	}
	if (legacy_res) {
		bool dup = false;
		for (size_t i = 0; i < e->nnames; i++)
			dup = dup || !strcmp(e->names[i], legacy_res);
		if (!dup)
			entry_add_name(e, legacy_res);
		e->has_resources = true;
	}
	if (e->has_resources && json_is_array(get_ci(r, "resourceSpecs")))
		e->specs = get_ci(r, "resourceSpecs");
	return GV_OK;
}

static void entry_release(struct test_entry *e)
{
	free(e->policy);
	free(e->rule);
	free(e->result);
	free(e->operation);
	for (size_t i = 0; i < e->nnames; i++)
		free(e->names[i]);
	free(e->names);
}

static void add_op(struct test_case *tc, const char *op)
{
	for (size_t i = 1; i < tc->nops; i++)
		if (!strcmp(tc->ops[i], op))
			return;
	tc->ops = gv_xrealloc(tc->ops, (tc->nops + 1) * sizeof(*tc->ops));
	tc->ops[tc->nops++] = gv_xstrdup(op);
}

static size_t op_index(const struct test_case *tc, const char *op)
{
	if (!op)
		return 0;
	for (size_t i = 1; i < tc->nops; i++)
		if (!strcmp(tc->ops[i], op))
			return i;
	return 0;
}

/* Loads the files a path list names; `kind` selects the loader. */
enum file_kind { FK_POLICY, FK_RESOURCE, FK_EXCEPTION, FK_PARAM };

static enum gv_code load_list(struct test_case *tc, const char *key, enum file_kind fk,
			      struct gv_err *err)
{
	const json_t *list = get_ci(tc->doc, key);
	struct load_paths files = {0};
	enum gv_code rc;
	char ptr[64];
	size_t i;
	json_t *e;

	snprintf(ptr, sizeof(ptr), "/%s", key);
	if ((rc = str_list(list, ptr, key, err)))
		return rc;
	json_array_foreach(list, i, e)
	{
		char *path = join_path(tc->dir, json_string_value(e));
		rc = load_expand(path, &files, err);
		free(path);
		if (rc) {
			snprintf(ptr, sizeof(ptr), "/%s/%zu", key, i);
			snprintf(err->pointer, sizeof(err->pointer), "%s", ptr);
			goto out;
		}
	}
	for (i = 0; i < files.n && !rc; i++) {
		switch (fk) {
		case FK_POLICY:
			rc = load_policies_file(&tc->pols, files.v[i], false, stderr, err);
			break;
		case FK_EXCEPTION:
			rc = load_exceptions_file(&tc->pols, files.v[i], stderr, err);
			break;
		case FK_RESOURCE:
			rc = load_resources_file(&tc->res, files.v[i], stderr, err);
			break;
		case FK_PARAM:
			rc = load_resources_file(&tc->params, files.v[i], stderr, err);
			break;
		}
	}
out:
	load_paths_release(&files);
	return rc;
}

/*
 * jsonPayloads (TEST-FORMAT.md 7.1): each file one JSON object, appended to
 * the resources after payload_base and named by its path as written.
 */
static enum gv_code load_payloads(struct test_case *tc, struct gv_err *err)
{
	const json_t *list = get_ci(tc->doc, "jsonPayloads");
	enum gv_code rc;
	size_t i;
	json_t *e;

	tc->payload_base = tc->res.n;
	if ((rc = str_list(list, "/jsonPayloads", "jsonPayloads", err)))
		return rc;
	json_array_foreach(list, i, e)
	{
		char *path = join_path(tc->dir, json_string_value(e));
		struct gv_docs docs;
		char ptr[64];

		rc = load_docs(path, &docs, err);
		free(path);
		snprintf(ptr, sizeof(ptr), "/jsonPayloads/%zu", i);
		if (rc)
			return rc;
		if (docs.n != 1 || !json_is_object(docs.v[0].value)) {
			gv_docs_release(&docs);
			return gv_err_setp(err, GV_EINVAL, ptr,
					   "a JSON payload must be one object");
		}
		tc->res.v = gv_xrealloc(tc->res.v, (tc->res.n + 1) * sizeof(*tc->res.v));
		tc->res.v[tc->res.n].obj = json_incref(docs.v[0].value);
		tc->res.v[tc->res.n].file = gv_xstrdup(json_string_value(e));
		tc->res.v[tc->res.n].line = 0;
		tc->res.n++;
		tc->payload_names =
		    gv_xrealloc(tc->payload_names, (i + 1) * sizeof(*tc->payload_names));
		tc->payload_names[i] = gv_xstrdup(json_string_value(e));
		gv_docs_release(&docs);
	}
	return GV_OK;
}

/*
 * The inputs of the Kyverno CEL libraries (TEST-FORMAT.md 7.6): the
 * `context` file, `clusterResources`, globalContextEntries and
 * apiCallResponses.
 */
static enum gv_code load_cel_inputs(struct test_case *tc, struct gv_err *err)
{
	const json_t *v = get_ci(tc->doc, "context");
	const json_t *cr = get_ci(tc->doc, "clusterResources");
	enum gv_code rc;
	size_t i;
	json_t *e;

	tc->cel.gctx = get_ci(tc->doc, "globalContextEntries");
	tc->cel.api = get_ci(tc->doc, "apiCallResponses");
	if (json_is_string(v)) {
		char *path = join_path(tc->dir, json_string_value(v));
		rc = celctx_load_context(&tc->cel, path, err);
		free(path);
		if (rc)
			return rc;
	}
	if ((rc = str_list(cr, "/clusterResources", "clusterResources", err)))
		return rc;
	json_array_foreach(cr, i, e)
	{
		char *path = join_path(tc->dir, json_string_value(e));
		rc = celctx_load_cluster(&tc->cel, path, err);
		free(path);
		if (rc)
			return rc;
	}
	return GV_OK;
}

static bool is_payload(const struct test_case *tc, size_t r)
{
	return tc->payload_names && r >= tc->payload_base;
}

static enum gv_code load_case(struct test_case *tc, struct gv_err *err)
{
	const json_t *doc = tc->doc;
	const char *k;
	json_t *val;
	const json_t *v;
	enum gv_code rc;
	size_t i;

	if (!json_is_object(doc))
		return gv_err_setp(err, GV_EINVAL, "", "a test must be an object");
	json_object_foreach(load_unconst(doc), k, val)
	{
		char p[600];
		snprintf(p, sizeof(p), "/%s", k);
		if (!key_known(k, test_keys, GV_ARRAY_LEN(test_keys)))
			warn_at(tc, p, "unknown test field %s ignored", k);
		else if (key_known(k, test_unsupported, GV_ARRAY_LEN(test_unsupported)) &&
			 !json_is_null(val))
			warn_at(tc, p, "%s is not supported offline; ignored", k);
	}
	/* Name: metadata.name, or the legacy top-level name. */
	v = get_ci(doc, "name");
	if (json_is_string(v))
		tc->name = gv_xstrdup(json_string_value(v));
	else
		tc->name = gv_xstrdup(load_str(doc, "metadata", "name", NULL));

	if ((rc = load_list(tc, "policies", FK_POLICY, err)))
		return rc;
	if ((rc = load_list(tc, "exceptions", FK_EXCEPTION, err)))
		return rc;
	if ((rc = load_list(tc, "resources", FK_RESOURCE, err)))
		return rc;
	if ((rc = load_list(tc, "paramResources", FK_PARAM, err)))
		return rc;
	if ((rc = load_payloads(tc, err)))
		return rc;
	if ((rc = load_cel_inputs(tc, err)))
		return rc;

	/* Inline values win over a values file. */
	v = get_ci(doc, "values");
	if (v && !json_is_null(v)) {
		if ((rc = values_load_json(&tc->values, v, err))) {
			gv_err_prefix(err, "values: ");
			if (err) {
				size_t l = strlen(err->pointer);
				if (l + 8 <= sizeof(err->pointer)) {
					memmove(err->pointer + 7, err->pointer, l + 1);
					memcpy(err->pointer, "/values", 7);
				}
			}
			return rc;
		}
		tc->has_values = true;
	} else if ((v = get_ci(doc, "variables")) && !json_is_null(v)) {
		char *path;
		if (!json_is_string(v))
			return gv_err_setp(err, GV_EINVAL, "/variables",
					   "variables must be a path");
		path = join_path(tc->dir, json_string_value(v));
		rc = values_load_file(&tc->values, path, err);
		free(path);
		if (rc)
			return rc;
		tc->has_values = true;
	}
	if ((v = get_ci(doc, "userinfo")) && !json_is_null(v)) {
		char *path;
		if (!json_is_string(v))
			return gv_err_setp(err, GV_EINVAL, "/userinfo", "userinfo must be a path");
		path = join_path(tc->dir, json_string_value(v));
		rc = values_userinfo_load_file(&tc->ui, path, err);
		free(path);
		if (rc)
			return rc;
		tc->has_ui = true;
	}

	v = get_ci(doc, "results");
	if (v && !json_is_null(v) && !json_is_array(v))
		return gv_err_setp(err, GV_EINVAL, "/results", "results must be a list");
	tc->ops = gv_xcalloc(1, sizeof(*tc->ops));
	tc->nops = 1;
	if (json_is_array(v) && json_array_size(v)) {
		tc->entries = gv_xcalloc(json_array_size(v), sizeof(*tc->entries));
		json_array_foreach(v, i, val)
		{
			rc = parse_entry(tc, val, i, &tc->entries[tc->nentries++], err);
			if (rc)
				return rc;
			if (tc->entries[i].operation)
				add_op(tc, tc->entries[i].operation);
		}
	}
	return GV_OK;
}

static void case_release(struct test_case *tc)
{
	size_t ncells = tc->nops * tc->res.n * tc->pols.n;

	if (tc->cells) {
		for (size_t i = 0; i < ncells; i++) {
			struct test_cell *c = &tc->cells[i];
			for (size_t j = 0; j < c->n; j++) {
				free(c->rules[j].name);
				free(c->rules[j].message);
			}
			free(c->rules);
			free(c->error);
		}
		free(tc->cells);
	}
	if (tc->sets) {
		for (size_t i = 0; i < tc->pols.n; i++)
			if (tc->sets[i])
				engine_policyset_unref(tc->sets[i]);
		free(tc->sets);
	}
	for (size_t i = 0; i < tc->nentries; i++)
		entry_release(&tc->entries[i]);
	free(tc->entries);
	for (size_t i = 1; i < tc->nops; i++)
		free(tc->ops[i]);
	free(tc->ops);
	load_policies_release(&tc->pols);
	for (size_t i = 0; tc->payload_names && i < tc->res.n - tc->payload_base; i++)
		free(tc->payload_names[i]);
	free(tc->payload_names);
	load_resources_release(&tc->res);
	load_resources_release(&tc->params);
	celctx_release(&tc->cel);
	values_release(&tc->values);
	values_userinfo_release(&tc->ui);
	free(tc->dir);
	free(tc->name);
}

/* ---- evaluation ---- */

static bool scored_false(const struct engine_policy *p)
{
	const char *s = engine_policy_annotation(p, "policies.kyverno.io/scored");

	return s && !strcmp(s, "false");
}

/*
 * The values' Namespace of ns (TEST-FORMAT.md 7.2): the namespaces[] object,
 * else one built from namespaceSelector[] labels, else NULL. New reference.
 */
static json_t *values_namespace_object(const struct test_case *tc, const char *ns)
{
	const json_t *labels;
	size_t i;
	json_t *e;

	if (!tc->has_values || !*ns)
		return NULL;
	json_array_foreach(json_object_get(tc->values.doc, "namespaces"), i, e)
	{
		if (!strcmp(load_str(e, "metadata", "name", NULL), ns))
			return json_incref(e);
	}
	labels = values_namespace_labels(&tc->values, ns);
	if (!labels)
		return NULL;
	return json_pack("{s:s,s:s,s:{s:s,s:O}}", "apiVersion", "v1", "kind", "Namespace",
			 "metadata", "name", ns, "labels", labels);
}

/* The rule responses of a CEL policy's report, as the scorer sees them. */
static void cel_cell_rules(struct test_cell *c, const struct load_policy *lp,
			   const struct vpol_report *rep)
{
	const char *scored = vpol_annotation(lp->vpol, "policies.kyverno.io/scored");

	c->responded = rep->n > 0;
	for (size_t i = 0; i < rep->n; i++) {
		c->rules = gv_xrealloc(c->rules, (c->n + rep->v[i].n) * sizeof(*c->rules));
		for (size_t j = 0; j < rep->v[i].n; j++) {
			const struct vpol_rule_result *rr = &rep->v[i].rules[j];
			struct test_rule *t = &c->rules[c->n++];
			t->name = gv_xstrdup(rr->rule);
			t->message = gv_xstrdup(rr->message);
			t->status = rr->status;
			t->unsupported = false;
			if (t->status == ENGINE_FAIL && scored && !strcmp(scored, "false"))
				t->status = ENGINE_WARN;
		}
	}
}

/* Evaluates a CEL policy (engine/vpolicy.h) for one cell. */
static struct test_cell *cel_cell(struct test_case *tc, struct test_cell *c, size_t o, size_t r,
				  size_t p)
{
	const struct load_policy *lp = &tc->pols.v[p];
	struct values_eval ev;
	struct vpol_input in = {0};
	struct vpol_report rep = {0};
	struct gv_err e = {0};
	json_t *nso = NULL;
	const json_t **params = NULL;
	char buf[2200];

	if (is_payload(tc, r)) {
		in.host = &tc->cel.host;
		in.object = tc->res.v[r].obj;
		in.json_payload = true;
		if (vpol_evaluate(lp->vpol, &in, &rep, &e))
			c->error = gv_xstrdup(gv_err_str(&e, buf, sizeof(buf)));
		else
			cel_cell_rules(c, lp, &rep);
		vpol_report_release(&rep);
		return c;
	}
	if (values_eval_init(&ev, tc->has_values ? &tc->values : NULL, tc->has_ui ? &tc->ui : NULL,
			     lp->name, tc->res.v[r].obj, o ? tc->ops[o] : NULL, &e)) {
		c->error = gv_xstrdup(gv_err_str(&e, buf, sizeof(buf)));
		return c;
	}
	nso = values_namespace_object(tc, load_res_namespace(tc->res.v[r].obj));
	in.object = ev.in.object;
	in.old_object = ev.in.old_object;
	in.operation = ev.in.operation;
	in.user_info = ev.in.user_info;
	in.namespace_object = nso;
	in.exceptions = tc->pols.cel_exceptions;
	in.nexceptions = tc->pols.ncel_exceptions;
	in.host = &tc->cel.host;
	in.bindings = (const json_t *const *)tc->pols.bindings;
	in.nbindings = tc->pols.nbindings;
	if (tc->params.n) {
		params = gv_xcalloc(tc->params.n, sizeof(*params));
		for (size_t i = 0; i < tc->params.n; i++)
			params[i] = tc->params.v[i].obj;
	}
	in.params = params;
	in.nparams = tc->params.n;
	if (vpol_evaluate(lp->vpol, &in, &rep, &e)) {
		c->error = gv_xstrdup(gv_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	cel_cell_rules(c, lp, &rep);
out:
	free(params);
	json_decref(nso);
	vpol_report_release(&rep);
	values_eval_release(&ev);
	return c;
}

/* Evaluates resource r against policy p under operation o, once. */
static struct test_cell *cell_get(struct test_case *tc, size_t o, size_t r, size_t p)
{
	struct test_cell *c = &tc->cells[(o * tc->res.n + r) * tc->pols.n + p];
	struct engine_policy *pol = tc->pols.v[p].policy;
	struct values_eval ev;
	struct engine_report rep = {0};
	struct gv_err e = {0};
	char buf[2200];

	if (c->done)
		return c;
	c->done = true;
	if (tc->pols.v[p].vpol)
		return cel_cell(tc, c, o, r, p);
	if (!pol || is_payload(tc, r))
		return c;
	if (!tc->sets[p])
		tc->sets[p] = load_policyset_new(&tc->pols, &pol, 1);
	if (values_eval_init(&ev, tc->has_values ? &tc->values : NULL, tc->has_ui ? &tc->ui : NULL,
			     engine_policy_name(pol), tc->res.v[r].obj, o ? tc->ops[o] : NULL,
			     &e)) {
		c->error = gv_xstrdup(gv_err_str(&e, buf, sizeof(buf)));
		return c;
	}
	ev.global_entries = get_ci(tc->doc, "globalContextEntries");
	ev.param_sources[0] = &tc->res;
	ev.param_sources[1] = &tc->params;
	if (engine_evaluate(tc->sets[p], &ev.in, ENGINE_ADMISSION, &rep, &e)) {
		c->error = gv_xstrdup(gv_err_str(&e, buf, sizeof(buf)));
		goto out;
	}
	for (size_t i = 0; i < rep.n; i++) {
		const struct engine_response *resp = &rep.v[i];
		if (resp->policy != pol)
			continue;
		c->responded = true;
		c->rules = gv_xrealloc(c->rules, (c->n + resp->nrules) * sizeof(*c->rules));
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *rr = &resp->rules[j];
			struct test_rule *t = &c->rules[c->n++];
			t->name = gv_xstrdup(rr->rule ? rr->rule : "");
			t->message = gv_xstrdup(rr->message ? rr->message : "");
			t->status = rr->status;
			t->unsupported = rr->unsupported;
			if (t->status == ENGINE_FAIL && scored_false(pol))
				t->status = ENGINE_WARN;
		}
	}
out:
	engine_report_release(&rep);
	values_eval_release(&ev);
	return c;
}

/* ---- scoring ---- */

static bool name_selects(const char *want, const json_t *obj)
{
	const char *slash = strchr(want, '/');

	if (!slash)
		return !strcmp(want, load_res_name(obj));
	{
		const char *last = strrchr(want, '/');
		size_t nsl = (size_t)(slash - want);
		const char *ns = load_res_namespace(obj);
		return !strcmp(last + 1, load_res_name(obj)) && strlen(ns) == nsl &&
		       !strncmp(ns, want, nsl);
	}
}

/* Whether a listed name selects resource (or JSON payload) r. */
static bool entry_selects(const struct test_case *tc, const char *want, size_t r)
{
	if (is_payload(tc, r))
		return !strcmp(want, tc->payload_names[r - tc->payload_base]);
	return name_selects(want, tc->res.v[r].obj);
}

static bool spec_selects(const json_t *spec, const json_t *obj)
{
	const char *g = load_str(spec, "group", NULL), *v = load_str(spec, "version", NULL);
	char av[256];

	snprintf(av, sizeof(av), "%s%s%s", g, *g ? "/" : "", v);
	return !strcmp(av, load_res_api_version(obj)) &&
	       !strcmp(load_str(spec, "namespace", NULL), load_res_namespace(obj)) &&
	       !strcmp(load_str(spec, "name", NULL), load_res_name(obj));
}

static void res_id(const json_t *obj, char *buf, size_t n)
{
	const char *ns = load_res_namespace(obj);

	snprintf(buf, n, "%s/%s%s%s", load_res_kind(obj), ns, *ns ? "/" : "", load_res_name(obj));
}

static bool rule_candidate(const char *want, const char *got)
{
	if (!*want)
		return true;
	if (!strcmp(want, got))
		return true;
	if (!strncmp(got, "autogen-cronjob-", 16) && !strcmp(got + 16, want))
		return true;
	return !strncmp(got, "autogen-", 8) && !strcmp(got + 8, want);
}

/*
 * The rows of Kyverno's table for the test being run (one per print_row),
 * printed by run_case. Only this file's single-threaded runner uses it.
 */
static struct {
	char **cells; /* owned: KROW_COLS strings per row */
	size_t n, cap;
	size_t passed, failed; /* Kyverno's "Test Summary" counts over every test */
	bool fail_only, detailed, verbose;
} krows;

#define KROW_COLS 7 /* ID POLICY RULE RESOURCE RESULT REASON MESSAGE */

static void krow_add(const char *policy, const char *rule, const json_t *obj, bool pass,
		     const char *result, const char *reason, const char *message)
{
	char **row;
	const char *ns = load_res_namespace(obj);

	if (pass)
		krows.passed++;
	else
		krows.failed++;
	if (krows.fail_only && pass)
		return;
	if (krows.n == krows.cap) {
		krows.cap = krows.cap ? 2 * krows.cap : 16;
		krows.cells = gv_xrealloc(krows.cells, krows.cap * KROW_COLS * sizeof(char *));
	}
	row = &krows.cells[krows.n++ * KROW_COLS];
	row[0] = NULL; /* numbered when printed */
	row[1] = gv_xstrdup(policy);
	row[2] = gv_xstrdup(rule);
	if (*load_res_kind(obj))
		row[3] = gv_xasprintf("%s/%s/%s/%s", load_res_api_version(obj), load_res_kind(obj),
				      ns, load_res_name(obj));
	else /* a resource named by a result entry that was not loaded */
		row[3] = gv_xstrdup(load_res_name(obj));
	row[4] = gv_xstrdup(result);
	row[5] = gv_xstrdup(reason);
	row[6] = table_one_line(message ? message : "");
}

/* Prints Kyverno's table of the rows collected and forgets them. */
static void krows_flush(void)
{
	size_t ncols = krows.detailed ? KROW_COLS : KROW_COLS - 1;
	char **cells = gv_xcalloc((krows.n + 1) * ncols, sizeof(char *));
	static const char *const head[] = {"ID",     "POLICY", "RULE",	 "RESOURCE",
					   "RESULT", "REASON", "MESSAGE"};

	for (size_t c = 0; c < ncols; c++)
		cells[c] = gv_xstrdup(head[c]);
	for (size_t r = 0; r < krows.n; r++) {
		krows.cells[r * KROW_COLS] = gv_xasprintf("%zu", r + 1);
		for (size_t c = 0; c < ncols; c++)
			cells[(r + 1) * ncols + c] = krows.cells[r * KROW_COLS + c];
	}
	if (krows.n)
		table_print(stdout, cells, krows.n + 1, ncols);
	for (size_t i = 0; i < krows.n * KROW_COLS; i++)
		free(krows.cells[i]);
	for (size_t c = 0; c < ncols; c++)
		free(cells[c]);
	free(cells);
	krows.n = 0;
}

static void print_row(const char *tag, const char *policy, const char *rule, const char *res,
		      const json_t *obj, const struct test_entry *e, const char *got,
		      const char *note, const char *message)
{
	{
		bool pass =
		    !strcmp(tag, "PASS") || !strcmp(tag, "EXCLUDED") || !strcmp(tag, "INVALID");
		char *reason;
		if (!strcmp(tag, "PASS"))
			reason = gv_xstrdup("Ok");
		else if (!strcmp(tag, "EXCLUDED"))
			reason = gv_xstrdup("Excluded");
		else if (!strcmp(tag, "INVALID"))
			reason = gv_xstrdup("Invalid policy");
		else if (!strcmp(tag, "NOTFOUND"))
			reason = gv_xstrdup("Not found");
		else if (!strcmp(tag, "UNSUPPORTED"))
			reason = gv_xasprintf("Unsupported: %s", note ? note : "");
		else
			reason = gv_xasprintf("Want %s, got %s", e->result, got ? got : "none");
		krow_add(policy, *rule ? rule : e->rule, obj, pass,
			 pass			       ? "Pass"
			 : !strcmp(tag, "UNSUPPORTED") ? "Skip"
						       : "Fail",
			 reason, message);
		free(reason);
	}
	if (!krows.verbose)
		return;
	printf("  %-8s %s/%s %s want=%s", tag, policy, *rule ? rule : "*", res, e->result);
	if (got)
		printf(" got=%s", got);
	if (e->operation)
		printf(" op=%s", e->operation);
	if (note)
		printf(" (%s)", note);
	putchar('\n');
}

static void print_message(const char *label, const char *msg)
{
	if (!krows.verbose)
		return;
	printf("           %s: ", label);
	for (const char *p = msg; *p; p++) {
		putchar(*p);
		if (*p == '\n' && p[1])
			fputs("             ", stdout);
	}
	putchar('\n');
}

/* The outcome of one (result entry, selected resource) pair. */
/* Ordered: the worst of several is the largest. */
enum check { CHECK_PASS, CHECK_UNSUPPORTED, CHECK_FAIL };

/*
 * The rule of policy lp named by a result entry, when gavel does not
 * evaluate it: "mutate", "generate", "verifyImages" (no rule response) or
 * NULL.
 */
static const char *rule_outside(const struct load_policy *lp, const char *rule)
{
	const struct engine_policy *p = lp->policy;

	if (!p || !*rule)
		return NULL;
	for (size_t i = 0; i < engine_policy_rule_count(p); i++) {
		const char *what = engine_policy_rule_unsupported(p, i);
		const char *name = engine_policy_rule_name(p, i);
		if (what &&
		    (!strcmp(what, "mutate") || !strcmp(what, "generate") ||
		     !strcmp(what, "verifyImages")) &&
		    (!strcmp(name, rule) ||
		     (!strncmp(name, "autogen-", 8) && !strcmp(name + 8, rule))))
			return what;
	}
	return NULL;
}

/*
 * Checks one selected resource for entry e; prints its rows and returns
 * whether every row passed (section 5.2 steps 2-6). A row for a rule or a
 * policy gavel does not evaluate is UNSUPPORTED, never passed: the outcome
 * is then CHECK_UNSUPPORTED unless another row failed.
 */
static enum check check_resource(struct test_case *tc, const struct test_entry *e, size_t r,
				 bool verbose)
{
	size_t o = op_index(tc, e->operation);
	char id[1024];
	bool ok = true, any_response = false, invalid = false, unsupported = false;
	const char *invalid_msg = NULL;

	const json_t *obj = tc->res.v[r].obj;

	if (is_payload(tc, r))
		snprintf(id, sizeof(id), "JSON/%s", tc->payload_names[r - tc->payload_base]);
	else
		res_id(obj, id, sizeof(id));
	for (size_t p = 0; p < tc->pols.n; p++) {
		const struct load_policy *lp = &tc->pols.v[p];
		struct test_cell *c;
		size_t matched = 0;

		if (strcmp(lp->name, e->policy))
			continue;
		if (lp->unsupported) {
			any_response = true;
			unsupported = true;
			print_row("UNSUPPORTED", e->policy, e->rule, id, obj, e, NULL,
				  lp->unsupported, NULL);
			continue;
		}
		if (!lp->policy && !lp->vpol) {
			invalid = true;
			invalid_msg = lp->error;
			continue;
		}
		c = cell_get(tc, o, r, p);
		if (c->error) {
			any_response = true;
			ok = false;
			print_row("FAIL", e->policy, e->rule, id, obj, e, "error",
				  "evaluation failed", c->error);
			print_message("error", c->error);
			continue;
		}
		{
			const char *what = rule_outside(lp, e->rule);
			if (what) {
				char *why = gv_xasprintf(
				    "gavel is a validate engine and does not evaluate %s rules",
				    what);
				any_response = true;
				unsupported = true;
				print_row("UNSUPPORTED", e->policy, e->rule, id, obj, e, NULL, why,
					  NULL);
				free(why);
				continue;
			}
		}
		/* Kyverno answers for every policy with validate rules, matched or not. */
		if (!lp->has_validate && !c->responded)
			continue;
		any_response = true;
		for (size_t j = 0; j < c->n; j++) {
			const struct test_rule *t = &c->rules[j];
			const char *got = engine_status_name(t->status);
			bool pass;

			if (!lp->vpol && !rule_candidate(e->rule, t->name))
				continue;
			matched++;
			if (t->unsupported) {
				unsupported = true;
				print_row("UNSUPPORTED", e->policy, t->name, id, obj, e, NULL,
					  t->message, NULL);
				continue;
			}
			pass = !strcmp(got, e->result);
			print_row(pass ? "PASS" : "FAIL", e->policy, t->name, id, obj, e, got, NULL,
				  t->message);
			if (!pass || verbose)
				print_message("message", t->message);
			ok = ok && pass;
		}
		if (!matched)
			print_row("EXCLUDED", e->policy, e->rule, id, obj, e, NULL,
				  "no rule response; counted as passed", NULL);
	}
	if (!any_response) {
		if (invalid) {
			print_row("INVALID", e->policy, e->rule, id, obj, e, NULL,
				  "the policy is invalid; counted as passed", NULL);
			if (verbose && invalid_msg)
				print_message("error", invalid_msg);
		} else {
			print_row("NOTFOUND", e->policy, e->rule, id, obj, e, NULL,
				  "no response from this policy", NULL);
			ok = false;
		}
	}
	return !ok ? CHECK_FAIL : unsupported ? CHECK_UNSUPPORTED : CHECK_PASS;
}

/*
 * Outcomes passed, failed and skipped (unsupported); expectations, those
 * reproduced and those not reproduced because gavel does not evaluate them.
 */
struct case_score {
	size_t passed, failed, skipped, expected, reproduced, unsupported;
};

static void score_entry(struct test_case *tc, const struct test_entry *e, bool verbose,
			struct case_score *s)
{
	size_t nres = tc->res.n, nunits, nspecs = e->specs ? json_array_size(e->specs) : 0;
	bool *sel = gv_xcalloc(nres ? nres : 1, sizeof(bool));
	enum check *ok = gv_xcalloc(nres ? nres : 1, sizeof(*ok));
	bool widened = true;

	/* Step 1: which resources. */
	if (e->has_resources) {
		for (size_t i = 0; i < e->nnames; i++) {
			size_t hits = 0;
			for (size_t r = 0; r < nres; r++)
				if (entry_selects(tc, e->names[i], r)) {
					sel[r] = true;
					hits++;
				}
			if (verbose && hits > 1)
				printf("  note: %s selects %zu resources (kind is not compared)\n",
				       e->names[i], hits);
			if (verbose && !hits)
				printf("  note: no loaded resource is named %s\n", e->names[i]);
		}
		for (size_t i = 0; i < nspecs; i++)
			for (size_t r = 0; r < nres; r++)
				if (spec_selects(json_array_get(e->specs, i), tc->res.v[r].obj))
					sel[r] = true;
		for (size_t r = 0; r < nres; r++)
			widened = widened && !sel[r];
	}
	if (widened && e->has_resources && (e->nnames || nspecs)) {
		/*
		 * Kyverno fails a result entry whose resources were not loaded
		 * ("Not found"): it never applies to some other resource. A
		 * test whose payloads gavel does not load (jsonPayloads...)
		 * may name them: unsupported, neither passed nor failed.
		 */
		bool payloads = false;
		for (size_t k = 0; k < GV_ARRAY_LEN(payload_keys); k++)
			payloads = payloads || get_ci(tc->doc, payload_keys[k]);
		for (size_t i = 0; i < e->nnames + nspecs; i++) {
			const char *name =
			    i < e->nnames
				? e->names[i]
				: load_str(json_array_get(e->specs, i - e->nnames), "name", NULL);
			json_t *ghost = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "", "kind",
						  "", "metadata", "name", name);
			if (payloads) {
				krow_add(e->policy, e->rule, ghost, false, "Skip",
					 "Unsupported: the test's payloads are not loaded", NULL);
				s->skipped++;
				s->unsupported++;
			} else {
				krow_add(e->policy, e->rule, ghost, false, "Fail", "Not found",
					 NULL);
				s->failed++;
			}
			json_decref(ghost);
			if (verbose)
				printf("  NOTFOUND %s/%s %s (line %d: no loaded resource is named "
				       "so)\n",
				       e->policy, *e->rule ? e->rule : "*", name, e->line);
			s->expected++;
		}
		free(sel);
		free(ok);
		return;
	}
	if (widened) {
		for (size_t r = 0; r < nres; r++)
			sel[r] = true;
	}
	for (size_t r = 0; r < nres; r++) {
		if (!sel[r])
			continue;
		ok[r] = check_resource(tc, e, r, verbose);
		if (ok[r] == CHECK_PASS)
			s->passed++;
		else if (ok[r] == CHECK_UNSUPPORTED)
			s->skipped++;
		else
			s->failed++;
	}

	/* Expectations: one per listed name (or one for an entry without names). */
	nunits = e->has_resources ? e->nnames + nspecs : 0;
	if (!nunits) {
		enum check all = CHECK_PASS;
		for (size_t r = 0; r < nres; r++)
			if (sel[r] && ok[r] > all)
				all = ok[r];
		s->expected++;
		s->reproduced += all == CHECK_PASS;
		s->unsupported += all == CHECK_UNSUPPORTED;
	} else {
		for (size_t u = 0; u < nunits; u++) {
			enum check all = CHECK_PASS;
			for (size_t r = 0; r < nres; r++) {
				bool mine;
				if (!sel[r])
					continue;
				if (widened)
					mine = true;
				else if (u < e->nnames)
					mine = entry_selects(tc, e->names[u], r);
				else
					mine = spec_selects(json_array_get(e->specs, u - e->nnames),
							    tc->res.v[r].obj);
				if (mine && ok[r] > all)
					all = ok[r];
			}
			s->expected++;
			s->reproduced += all == CHECK_PASS;
			s->unsupported += all == CHECK_UNSUPPORTED;
		}
	}
	free(sel);
	free(ok);
}

/* Runs one test document; returns 0 when it passed, 1 when an outcome failed, 2 on load error. */
static int run_case(const char *file, const struct gv_docs *docs, size_t di,
		    struct test_totals *tot)
{
	struct test_case tc;
	struct gv_err err = {0};
	struct case_score s = {0};
	char buf[2200];
	int rc = 0;

	memset(&tc, 0, sizeof(tc));
	celctx_init(&tc.cel);
	tc.file = file;
	tc.dir = dir_of(file);
	tc.doc = docs->v[di].value;
	tc.map = docs->v[di].map;
	if (load_case(&tc, &err)) {
		if (!err.file[0])
			gv_err_locate(&err, file, tc.map);
		printf("== %s (%s)\n", file, tc.name ? tc.name : "");
		printf("  ERROR    %s\n", gv_err_str(&err, buf, sizeof(buf)));
		fprintf(stderr, "%s\n", gv_err_str(&err, buf, sizeof(buf)));
		printf("RESULT ERROR passed=0 failed=0 expected=0 reproduced=0 file=%s\n", file);
		tot->load_errors++;
		rc = 2;
		goto out;
	}
	printf("== %s (%s)\n", file, tc.name);
	if (tc.pols.n && tc.res.n) {
		tc.sets = gv_xcalloc(tc.pols.n, sizeof(*tc.sets));
		tc.cells = gv_xcalloc(tc.nops * tc.res.n * tc.pols.n, sizeof(*tc.cells));
	} else if (tc.pols.n) {
		tc.sets = gv_xcalloc(tc.pols.n, sizeof(*tc.sets));
	}
	if (!tc.nentries)
		printf("  (no results to check)\n");
	for (size_t i = 0; i < tc.nentries; i++)
		if (selector_selects(&tc.entries[i]))
			score_entry(&tc, &tc.entries[i], tot->verbose, &s);
	rc = s.failed || s.skipped ? 1 : 0;
	krows_flush();
	printf("RESULT %s passed=%zu failed=%zu skipped=%zu expected=%zu reproduced=%zu "
	       "unsupported=%zu file=%s\n",
	       s.failed	   ? "FAIL"
	       : s.skipped ? "UNSUPPORTED"
			   : "PASS",
	       s.passed, s.failed, s.skipped, s.expected, s.reproduced, s.unsupported, file);
	tot->passed += s.passed;
	tot->failed += s.failed;
	tot->skipped += s.skipped;
out:
	case_release(&tc);
	return rc;
}

static int run_file(const char *file, struct test_totals *tot)
{
	struct gv_docs docs;
	struct gv_err err = {0};
	char buf[2200];
	int worst = 0;

	if (load_docs(file, &docs, &err)) {
		printf("== %s\n", file);
		printf("  ERROR    %s\n", gv_err_str(&err, buf, sizeof(buf)));
		fprintf(stderr, "%s\n", gv_err_str(&err, buf, sizeof(buf)));
		printf("RESULT ERROR passed=0 failed=0 expected=0 reproduced=0 file=%s\n", file);
		tot->load_errors++;
		gv_docs_release(&docs);
		return 2;
	}
	for (size_t i = 0; i < docs.n; i++) {
		int rc = run_case(file, &docs, i, tot);
		if (rc > worst)
			worst = rc;
	}
	gv_docs_release(&docs);
	return worst;
}

static void test_usage(FILE *f)
{
	fputs("usage: gavel test DIR... [-v] [--fail-only] [--detailed-results]\n"
	      "                  [--test-case-selector S] [--file-name F]\n"
	      "\n"
	      "Runs every " TEST_FILE_NAME " found below each DIR (or the named file) and\n"
	      "scores it as `kyverno test` does. Prints one row per rule response checked,\n"
	      "a RESULT line per test and \"N passed, N failed\" (outcomes) at the end.\n"
	      "Exit status: 0 all passed, 1 some outcome failed, 2 a test could not be loaded.\n"
	      "\n"
	      "  -v, --verbose                gavel's rows: messages and selection notes\n"
	      "      --fail-only              only the rows that failed in the table\n"
	      "      --detailed-results       the table with each rule's message\n"
	      "  -t, --test-case-selector S   \"policy=P,rule=R,resource=N\" (wildcards)\n"
	      "  -f, --file-name F            test file name (default " TEST_FILE_NAME ")\n"
	      "      --remove-color           accepted: gavel never colours its output\n",
	      f);
}

int cmd_test(int argc, char **argv)
{
	struct test_totals tot = {0};
	struct load_paths files = {0};
	struct gv_err err = {0};
	char buf[2200];
	int worst = 0, ndirs = 0;

	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false;

		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			tot.verbose = true;
			krows.verbose = true;
		} else if (!strcmp(argv[i], "--fail-only")) {
			krows.fail_only = true;
		} else if (!strcmp(argv[i], "--detailed-results")) {
			krows.detailed = true;
		} else if (!strcmp(argv[i], "--remove-color") ||
			   !strcmp(argv[i], "--require-tests")) {
			; /* no colour in gavel's output; a folder without tests is always an error
			   */
		} else if (cmd_take(argc, argv, &i, "--test-case-selector", "-t", &v, &missing)) {
			if (missing || !selector_parse(v)) {
				fprintf(stderr,
					"gavel test: --test-case-selector takes "
					"\"policy=P,rule=R,resource=N\" (wildcards * and ?)\n");
				return 2;
			}
		} else if (cmd_take(argc, argv, &i, "--file-name", "-f", &v, &missing)) {
			if (missing) {
				fprintf(stderr, "gavel test: --file-name needs a value\n");
				return 2;
			}
			test_file_name = v;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			test_usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "gavel test: unknown option %s\n", argv[i]);
			test_usage(stderr);
			return 2;
		} else {
			size_t before = files.n;
			ndirs++;
			gv_err_clear(&err);
			if (load_find(argv[i], test_file_name, &files, &err)) {
				fprintf(stderr, "gavel test: %s\n",
					gv_err_str(&err, buf, sizeof(buf)));
				worst = 2;
			} else if (files.n == before) {
				fprintf(stderr, "gavel test: no %s below %s\n", test_file_name,
					argv[i]);
				worst = 2;
			}
		}
	}
	if (!ndirs) {
		test_usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < files.n; i++) {
		int rc = run_file(files.v[i], &tot);
		if (rc > worst)
			worst = rc;
	}
	load_paths_release(&files);
	printf("\nTest Summary: %zu tests passed and %zu tests failed\n\n", krows.passed,
	       krows.failed);
	free(krows.cells);
	if (tot.load_errors)
		printf("%d test file(s) could not be loaded\n", tot.load_errors);
	printf("%zu passed, %zu failed, %zu skipped\n", tot.passed, tot.failed, tot.skipped);
	return worst;
}
