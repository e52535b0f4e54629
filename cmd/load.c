#include "cmd/load.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "background/clusterstate.h"
#include "common/json.h"
#include "common/banned.h"

/* Bound on directory nesting while expanding paths. */
#define MAX_WALK_DEPTH 64

bool load_kind_cluster_scoped(const char *kind)
{
	return engine_kind_cluster_scoped(kind);
}

/* ---- paths ---- */

void load_paths_add(struct load_paths *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], name))
			return;
	p->v = gv_xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
	p->v[p->n++] = gv_xstrdup(name);
}

bool load_paths_has(const struct load_paths *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], name))
			return true;
	return false;
}

void load_paths_release(struct load_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

static bool has_manifest_ext(const char *name)
{
	size_t n = strlen(name);
	static const char *const exts[] = {".yaml", ".yml", ".json"};

	for (size_t i = 0; i < GV_ARRAY_LEN(exts); i++) {
		size_t e = strlen(exts[i]);
		if (n > e && !strcmp(name + n - e, exts[i]))
			return true;
	}
	return false;
}

/*
 * Walks dir and adds the regular files accepted by `want` (called with the
 * base name). Entries are visited in name order so output is stable.
 */
static enum gv_code walk(const char *dir, bool (*want)(const char *base, const void *arg),
			 const void *arg, bool hidden, struct load_paths *out, int depth,
			 struct gv_err *err)
{
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	enum gv_code rc = GV_OK;

	if (depth > MAX_WALK_DEPTH)
		return gv_err_set(err, GV_ELIMIT, "%s: directories nested deeper than %d levels",
				  dir, MAX_WALK_DEPTH);
	d = opendir(dir);
	if (!d)
		return gv_err_set(err, errno == ENOENT ? GV_ENOENT : GV_EIO, "%s: %s", dir,
				  strerror(errno));
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!hidden && de->d_name[0] == '.')
			continue;
		names = gv_xrealloc(names, (n + 1) * sizeof(*names));
		names[n++] = gv_xstrdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), gv_strptr_cmp);
	for (size_t i = 0; i < n && !rc; i++) {
		size_t dl = strlen(dir);
		char *full =
		    gv_xasprintf("%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", names[i]);
		struct stat lst, st;

		if (lstat(full, &lst) == 0) {
			if (S_ISDIR(lst.st_mode)) {
				rc = walk(full, want, arg, hidden, out, depth + 1, err);
			} else if (stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
				   want(names[i], arg)) {
				load_paths_add(out, full);
			}
		}
		free(full);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

static bool want_manifest(const char *base, const void *arg)
{
	(void)arg;
	return has_manifest_ext(base);
}

static bool want_named(const char *base, const void *arg)
{
	return !strcmp(base, (const char *)arg);
}

static enum gv_code expand_with(const char *path, bool (*want)(const char *base, const void *arg),
				const void *arg, bool hidden, struct load_paths *out,
				struct gv_err *err)
{
	struct stat st;

	if (!strcmp(path, "-")) {
		load_paths_add(out, "-");
		return GV_OK;
	}
	if (stat(path, &st) != 0)
		return gv_err_set(err, errno == ENOENT ? GV_ENOENT : GV_EIO, "%s: %s", path,
				  strerror(errno));
	if (S_ISDIR(st.st_mode))
		return walk(path, want, arg, hidden, out, 0, err);
	load_paths_add(out, path);
	return GV_OK;
}

enum gv_code load_expand(const char *path, struct load_paths *out, struct gv_err *err)
{
	return expand_with(path, want_manifest, NULL, false, out, err);
}

enum gv_code load_find(const char *dir, const char *basename, struct load_paths *out,
		       struct gv_err *err)
{
	return expand_with(dir, want_named, basename, true, out, err);
}

/* ---- documents ---- */

static const char *skip_space(const char *s, const char *end)
{
	while (s < end && isspace((unsigned char)*s))
		s++;
	return s;
}

/*
 * JSON that YAML cannot read (tabs used for indentation, for example):
 * one or more JSON values in a row.
 */
static enum gv_code load_json_stream(const char *buf, size_t len, const char *name,
				     struct gv_docs *docs, struct gv_err *err)
{
	const char *p = buf, *end = buf + len;

	memset(docs, 0, sizeof(*docs));
	docs->file = gv_xstrdup(name);
	for (;;) {
		json_error_t je;
		json_t *v;

		p = skip_space(p, end);
		if (p >= end)
			break;
		v = json_loadb(p, (size_t)(end - p), JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &je);
		if (!v) {
			if (err && !err->code) {
				snprintf(err->file, sizeof(err->file), "%s", name);
				err->line = je.line;
				err->col = je.column;
			}
			return gv_err_set(err, GV_EINVAL, "JSON: %s", je.text);
		}
		if (json_is_null(v)) {
			json_decref(v);
		} else {
			docs->v = gv_xrealloc(docs->v, (docs->n + 1) * sizeof(*docs->v));
			docs->v[docs->n].value = v;
			docs->v[docs->n].map = NULL;
			docs->v[docs->n].line = 0;
			docs->n++;
		}
		p += je.position;
	}
	return GV_OK;
}

static enum gv_code load_docs_depth(const char *path, int map_depth, struct gv_docs *docs,
				    struct gv_err *err);

enum gv_code load_docs(const char *path, struct gv_docs *docs, struct gv_err *err)
{
	return load_docs_depth(path, -1, docs, err);
}

enum gv_code load_docs_shallow(const char *path, struct gv_docs *docs, struct gv_err *err)
{
	return load_docs_depth(path, 2, docs, err);
}

/* Parses buf as YAML documents, or as a JSON stream when that fails and it looks like JSON. */
static enum gv_code load_docs_buf(const char *buf, size_t len, const char *name, int map_depth,
				  bool reals, struct gv_docs *docs, struct gv_err *err)
{
	struct gv_err yerr = {0};
	enum gv_code rc;
	const char *first;

	rc = reals ? gv_yaml_load_reals(buf, len, name, map_depth, docs, &yerr)
		   : gv_yaml_load_ex(buf, len, name, map_depth, docs, &yerr);
	first = skip_space(buf, buf + len);
	if (rc && first < buf + len && (*first == '{' || *first == '[')) {
		struct gv_docs jdocs;
		struct gv_err jerr = {0};

		if (load_json_stream(buf, len, name, &jdocs, &jerr) == GV_OK) {
			gv_docs_release(docs);
			*docs = jdocs;
			rc = GV_OK;
		} else {
			gv_docs_release(&jdocs);
		}
	}
	if (rc && err && !err->code)
		*err = yerr;
	return rc;
}

static enum gv_code load_docs_depth(const char *path, int map_depth, struct gv_docs *docs,
				    struct gv_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
	enum gv_code rc;

	memset(docs, 0, sizeof(*docs));
	rc = gv_read_file(path, &buf, &len, err);
	if (rc)
		return rc;
	/* the shallow load is the resources': numbers as reals (load_resource_prepare) */
	rc = load_docs_buf(buf, len, name, map_depth, map_depth == 2, docs, err);
	free(buf);
	return rc;
}

/* ---- small accessors ---- */

json_t *load_unconst(const json_t *v)
{
	union {
		const json_t *c;
		json_t *m;
	} u = {.c = v};
	return u.m;
}

const char *load_str(const json_t *v, ...)
{
	va_list ap;
	const char *k;

	va_start(ap, v);
	while ((k = va_arg(ap, const char *))) {
		v = json_is_object(v) ? json_object_get(v, k) : NULL;
		if (!v)
			break;
	}
	va_end(ap);
	return json_is_string(v) ? json_string_value(v) : "";
}

const char *load_res_kind(const json_t *obj)
{
	return load_str(obj, "kind", NULL);
}

const char *load_res_api_version(const json_t *obj)
{
	return load_str(obj, "apiVersion", NULL);
}

const char *load_res_name(const json_t *obj)
{
	return load_str(obj, "metadata", "name", NULL);
}

const char *load_res_namespace(const json_t *obj)
{
	return load_str(obj, "metadata", "namespace", NULL);
}

static void report_err(FILE *errs, const struct gv_err *e)
{
	char buf[2200];

	if (errs)
		fprintf(errs, "%s\n", gv_err_str(e, buf, sizeof(buf)));
}

/* ---- policies ---- */

static bool is_kyverno_api(const json_t *doc)
{
	const char *av = load_str(doc, "apiVersion", NULL);

	return !strncmp(av, "kyverno.io/", 11);
}

/*
 * The policy kinds of the CEL languages: policies.kyverno.io ValidatingPolicy
 * and its siblings, Kubernetes' ValidatingAdmissionPolicy. gavel does not
 * evaluate them yet: such a policy is loaded as unsupported, never ignored.
 * Returns a description ("policies.kyverno.io/v1 ValidatingPolicy"), owned
 * by the caller, or NULL.
 */
static char *cel_policy_kind(const json_t *doc)
{
	static const char *const kyverno[] = {"ValidatingPolicy",
					      "NamespacedValidatingPolicy",
					      "ImageValidatingPolicy",
					      "NamespacedImageValidatingPolicy",
					      "MutatingPolicy",
					      "NamespacedMutatingPolicy",
					      "GeneratingPolicy",
					      "NamespacedGeneratingPolicy",
					      "DeletingPolicy",
					      "NamespacedDeletingPolicy",
					      NULL};
	const char *av = load_str(doc, "apiVersion", NULL);
	const char *kind = load_str(doc, "kind", NULL);

	if (!strncmp(av, "policies.kyverno.io/", 20)) {
		for (const char *const *k = kyverno; *k; k++)
			if (!strcmp(kind, *k))
				return gv_xasprintf("%s %s", av, kind);
	} else if (!strncmp(av, "admissionregistration.k8s.io/", 29) &&
		   (!strcmp(kind, "ValidatingAdmissionPolicy") ||
		    !strcmp(kind, "MutatingAdmissionPolicy"))) {
		return gv_xasprintf("%s %s", av, kind);
	}
	return NULL;
}

/* Documents that only accompany CEL policies (bindings, CEL PolicyExceptions). */
static bool cel_companion(const json_t *doc)
{
	const char *av = load_str(doc, "apiVersion", NULL);
	const char *kind = load_str(doc, "kind", NULL);

	return (!strncmp(av, "policies.kyverno.io/", 20) && !strcmp(kind, "PolicyException")) ||
	       (!strncmp(av, "admissionregistration.k8s.io/", 29) &&
		(!strcmp(kind, "ValidatingAdmissionPolicyBinding") ||
		 !strcmp(kind, "MutatingAdmissionPolicyBinding")));
}

static bool policy_has_validate(const json_t *doc)
{
	const json_t *rules = json_object_get(json_object_get(doc, "spec"), "rules");
	size_t i;
	json_t *r;

	json_array_foreach(rules, i, r)
	{
		const json_t *v = json_object_get(r, "validate");
		if (v && !json_is_null(v))
			return true;
	}
	return false;
}

static void add_policy(struct load_policies *lp, const json_t *doc, struct engine_policy *p,
		       char *error)
{
	struct load_policy *e;

	lp->v = gv_xrealloc(lp->v, (lp->n + 1) * sizeof(*lp->v));
	e = &lp->v[lp->n++];
	e->name = gv_xstrdup(load_str(doc, "metadata", "name", NULL));
	e->namespace = gv_xstrdup(load_str(doc, "metadata", "namespace", NULL));
	e->kind = gv_xstrdup(load_str(doc, "kind", NULL));
	e->has_validate = policy_has_validate(doc);
	e->policy = p;
	e->error = error;
	e->unsupported = NULL;
	e->vpol = NULL;
	e->file = gv_xstrdup(lp->loading ? lp->loading : "");
}

/* Compiles a PolicyException to check it; keeps the document. */
static void add_exception(struct load_policies *lp, const struct gv_docs *docs, size_t i,
			  FILE *errs)
{
	struct gv_err e = {0};
	struct engine_exception *x = engine_exception_compile(docs->v[i].value, &e);

	if (!x) {
		if (!e.code)
			gv_err_set(&e, GV_EINVAL, "invalid PolicyException");
		gv_err_prefix(&e, "PolicyException %s: ",
			      load_str(docs->v[i].value, "metadata", "name", NULL));
		gv_err_locate(&e, docs->file, docs->v[i].map);
		report_err(errs, &e);
		lp->nerrors++;
		return;
	}
	engine_exception_free(x);
	lp->exceptions = gv_xrealloc(lp->exceptions, (lp->nexceptions + 1) * sizeof(json_t *));
	lp->exceptions[lp->nexceptions++] = json_incref(docs->v[i].value);
}

/*
 * Compiles a CEL policy (engine/vpolicy.h). One that uses what gavel does
 * not evaluate is kept as unsupported; one that does not compile is invalid.
 */
static void add_cel_policy(struct load_policies *lp, const struct gv_docs *docs, size_t i,
			   FILE *errs)
{
	const json_t *doc = docs->v[i].value;
	struct gv_err e = {0};
	struct vpol_policy *vp = vpol_compile(doc, &e);
	char buf[2200];

	if (vp) {
		add_policy(lp, doc, NULL, NULL);
		lp->v[lp->n - 1].vpol = vp;
		return;
	}
	if (!strncmp(e.msg, "gavel does not evaluate ", 24)) {
		add_policy(lp, doc, NULL, NULL);
		lp->v[lp->n - 1].unsupported = gv_xstrdup(e.msg);
		if (errs)
			fprintf(errs, "%s:%d: warning: %s %s: %s\n", docs->file, docs->v[i].line,
				load_str(doc, "kind", NULL),
				load_str(doc, "metadata", "name", NULL), e.msg);
		return;
	}
	gv_err_prefix(&e, "%s %s: ", load_str(doc, "kind", NULL),
		      load_str(doc, "metadata", "name", NULL));
	gv_err_locate(&e, docs->file, docs->v[i].map);
	add_policy(lp, doc, NULL, gv_xstrdup(gv_err_str(&e, buf, sizeof(buf))));
	report_err(errs, &e);
	lp->nerrors++;
}

/* A policies.kyverno.io PolicyException of an exceptions file. */
static void add_cel_exception(struct load_policies *lp, const struct gv_docs *docs, size_t i,
			      FILE *errs)
{
	struct gv_err e = {0};
	struct vpol_exception *x = vpol_exception_compile(docs->v[i].value, &e);

	if (!x) {
		gv_err_prefix(&e, "PolicyException %s: ",
			      load_str(docs->v[i].value, "metadata", "name", NULL));
		gv_err_locate(&e, docs->file, docs->v[i].map);
		report_err(errs, &e);
		lp->nerrors++;
		return;
	}
	lp->cel_exceptions = gv_xrealloc(lp->cel_exceptions,
					 (lp->ncel_exceptions + 1) * sizeof(*lp->cel_exceptions));
	lp->cel_exceptions[lp->ncel_exceptions++] = x;
}

/* A file named as a policy file that holds no policy: the engine says why its first document is not
 * one. */
static void not_a_policy(struct load_policies *lp, const struct gv_docs *docs, size_t i, FILE *errs)
{
	struct gv_err e = {0};
	struct engine_policy *p = engine_policy_compile(docs->v[i].value, &e);
	char buf[2200];

	if (p) {
		engine_policy_unref(p);
		gv_err_clear(&e);
	}
	if (!e.code)
		gv_err_setp(&e, GV_EINVAL, "/kind", "not a policy: kind is \"%s\"",
			    load_str(docs->v[i].value, "kind", NULL));
	gv_err_locate(&e, docs->file, docs->v[i].map);
	add_policy(lp, docs->v[i].value, NULL, gv_xstrdup(gv_err_str(&e, buf, sizeof(buf))));
	report_err(errs, &e);
	lp->nerrors++;
}

static enum gv_code load_policy_docs(struct load_policies *lp, const char *file, bool policies,
				     bool require_policy, FILE *errs, struct gv_err *err)
{
	struct gv_docs docs;
	struct gv_err lerr = {0};
	enum gv_code rc;
	size_t nother = 0, nfound = 0, first_other = 0, nnokind = 0;
	int other_line = 0;
	char *other_desc = NULL;

	rc = load_docs(file, &docs, &lerr);
	if (rc) {
		report_err(errs, &lerr);
		if (err && !err->code)
			*err = lerr;
	}
	for (size_t i = 0; i < docs.n; i++) {
		const json_t *doc = docs.v[i].value;
		const char *kind = load_str(doc, "kind", NULL);

		if (!json_is_object(doc)) {
			struct gv_err e = {0};
			nfound++;
			gv_err_setp(&e, GV_EINVAL, "", "document %zu is not an object", i + 1);
			gv_err_locate(&e, docs.file, docs.v[i].map);
			report_err(errs, &e);
			lp->nerrors++;
			continue;
		}
		if (policies && is_kyverno_api(doc) &&
		    (!strcmp(kind, "ClusterPolicy") || !strcmp(kind, "Policy"))) {
			struct gv_err e = {0};
			struct engine_policy *p = engine_policy_compile(doc, &e);
			char buf[2200];

			nfound++;
			if (p) {
				char *note = engine_policy_unsupported_note(p);
				if (note && errs) {
					int line = docs.v[i].line, col = 0;
					gv_srcmap_find(docs.v[i].map, "", &line, &col);
					fprintf(errs, "%s:%d: warning: %s\n", docs.file,
						line ? line : docs.v[i].line, note);
				}
				free(note);
				add_policy(lp, doc, p, NULL);
				continue;
			}
			if (!e.code)
				gv_err_set(&e, GV_EINVAL, "invalid policy");
			gv_err_locate(&e, docs.file, docs.v[i].map);
			add_policy(lp, doc, NULL, gv_xstrdup(gv_err_str(&e, buf, sizeof(buf))));
			report_err(errs, &e);
			lp->nerrors++;
			continue;
		}
		/*
		 * A ValidatingAdmissionPolicy of v1beta1 or v1alpha1 (Kubernetes
		 * 1.26-1.29) is read as v1, as the cluster's are
		 * (clusterstate_vap_to_v1: the versions differ only in fields
		 * added later)
		 */
		if (policies && kind && !strcmp(kind, "ValidatingAdmissionPolicy"))
			clusterstate_vap_to_v1(docs.v[i].value, kind);
		if (policies && vpol_is_policy_doc(doc)) {
			nfound++;
			add_cel_policy(lp, &docs, i, errs);
			continue;
		}
		if (policies && vpol_is_binding_doc(doc)) {
			nfound++;
			lp->bindings =
			    gv_xrealloc(lp->bindings, (lp->nbindings + 1) * sizeof(json_t *));
			lp->bindings[lp->nbindings++] = json_incref((json_t *)doc);
			continue;
		}
		if (!policies && vpol_is_exception_doc(doc)) {
			nfound++;
			add_cel_exception(lp, &docs, i, errs);
			continue;
		}
		if (policies) {
			char *what = cel_policy_kind(doc);
			if (what) {
				nfound++;
				add_policy(lp, doc, NULL, NULL);
				lp->v[lp->n - 1].unsupported =
				    gv_xasprintf("gavel does not evaluate %s policies yet", what);
				if (errs)
					fprintf(errs, "%s:%d: warning: %s %s: %s\n", docs.file,
						docs.v[i].line, kind,
						load_str(doc, "metadata", "name", NULL),
						lp->v[lp->n - 1].unsupported);
				free(what);
				continue;
			}
			if (cel_companion(doc)) {
				nfound++;
				continue;
			}
		}
		if (is_kyverno_api(doc) && !strcmp(kind, "PolicyException")) {
			nfound++;
			add_exception(lp, &docs, i, errs);
			continue;
		}
		/* Other kinds: remembered, then one warning per file. */
		nnokind += !*kind;
		if (!nother++) {
			first_other = i;
			int col = 0;
			gv_srcmap_find(docs.v[i].map, "", &other_line, &col);
			if (!other_line)
				other_line = docs.v[i].line;
			other_desc = gv_xasprintf("%s %s", *kind ? kind : "(no kind)",
						  load_str(doc, "metadata", "name", NULL));
		}
	}
	if (nother && !nfound && require_policy && policies) {
		not_a_policy(lp, &docs, first_other, errs);
	} else if (nother && nnokind == nother && !nfound && !require_policy) {
		/* Not Kubernetes YAML at all (artifacthub-pkg.yml...): counted, not warned. */
		if (!lp->nnonk8s++)
			lp->first_nonk8s = gv_xstrdup(docs.file);
	} else if (nother && errs) {
		if (nother == 1)
			fprintf(errs, "%s:%d: warning: ignoring %s (not a %s)\n", docs.file,
				other_line, other_desc,
				policies ? "ClusterPolicy, Policy or PolicyException"
					 : "PolicyException");
		else
			fprintf(
			    errs,
			    "%s:%d: warning: ignoring %zu documents that are not a %s (the first "
			    "is %s)\n",
			    docs.file, other_line, nother,
			    policies ? "ClusterPolicy, Policy or PolicyException"
				     : "PolicyException",
			    other_desc);
	}
	free(other_desc);
	gv_docs_release(&docs);
	return rc;
}

enum gv_code load_policies_file(struct load_policies *lp, const char *file, bool require_policy,
				FILE *errs, struct gv_err *err)
{
	enum gv_code rc;

	lp->loading = file;
	rc = load_policy_docs(lp, file, true, require_policy, errs, err);
	lp->loading = NULL;
	return rc;
}

enum gv_code load_exceptions_file(struct load_policies *lp, const char *file, FILE *errs,
				  struct gv_err *err)
{
	return load_policy_docs(lp, file, false, true, errs, err);
}

void load_policies_release(struct load_policies *lp)
{
	free(lp->first_nonk8s);
	for (size_t i = 0; i < lp->n; i++) {
		free(lp->v[i].file);
		free(lp->v[i].name);
		free(lp->v[i].namespace);
		free(lp->v[i].kind);
		free(lp->v[i].error);
		free(lp->v[i].unsupported);
		if (lp->v[i].policy)
			engine_policy_unref(lp->v[i].policy);
		vpol_free(lp->v[i].vpol);
	}
	free(lp->v);
	for (size_t i = 0; i < lp->nbindings; i++)
		json_decref(lp->bindings[i]);
	free(lp->bindings);
	for (size_t i = 0; i < lp->ncel_exceptions; i++)
		vpol_exception_free(lp->cel_exceptions[i]);
	free(lp->cel_exceptions);
	for (size_t i = 0; i < lp->nexceptions; i++)
		json_decref(lp->exceptions[i]);
	free(lp->exceptions);
	memset(lp, 0, sizeof(*lp));
}

struct engine_policyset *load_policyset_new(const struct load_policies *lp,
					    struct engine_policy *const *policies, size_t n)
{
	struct engine_exception **exc = NULL;
	size_t nexc = 0;
	struct engine_policyset *set;

	if (lp->nexceptions)
		exc = gv_xcalloc(lp->nexceptions, sizeof(*exc));
	for (size_t i = 0; i < lp->nexceptions; i++) {
		/* Compiled once already at load time, so this cannot fail. */
		struct engine_exception *x = engine_exception_compile(lp->exceptions[i], NULL);
		if (x)
			exc[nexc++] = x;
	}
	set = engine_policyset_new(policies, n, exc, nexc);
	free(exc);
	return set;
}

/* ---- resources ---- */

json_t *load_to_reals(const json_t *v)
{
	if (json_is_integer(v))
		return json_real((double)json_integer_value(v));
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *c;
		json_object_foreach(load_unconst(v), k, c)
		{
			json_object_set_new(o, k, load_to_reals(c));
		}
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c)
		{
			json_array_append_new(a, load_to_reals(c));
		}
		return a;
	}
	return json_incref(load_unconst(v));
}

static void prepare_loaded(json_t *obj);

/* In place, for trees the caller owns. */
static void reals_in_place(json_t *v)
{
	if (json_is_object(v)) {
		const char *k;
		json_t *c;
		json_object_foreach(v, k, c)
		{
			if (json_is_integer(c))
				json_object_set_new(v, k, json_real((double)json_integer_value(c)));
			else
				reals_in_place(c);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c)
		{
			if (json_is_integer(c))
				json_array_set_new(v, i, json_real((double)json_integer_value(c)));
			else
				reals_in_place(c);
		}
	}
}

void load_resource_prepare(json_t *obj)
{
	reals_in_place(obj);
	prepare_loaded(obj);
}

/* load_resource_prepare() but the numbers, already reals. */
static void prepare_loaded(json_t *obj)
{
	json_t *md;

	if (load_kind_cluster_scoped(load_res_kind(obj)))
		return;
	md = json_object_get(obj, "metadata");
	if (!json_is_object(md)) {
		md = json_object();
		json_object_set_new(obj, "metadata", md);
	}
	if (!*load_str(md, "namespace", NULL))
		json_object_set_new(md, "namespace", json_string("default"));
}

static void group_of(const char *api_version, char *out, size_t n)
{
	const char *slash = strchr(api_version, '/');
	size_t l = slash ? (size_t)(slash - api_version) : 0;

	if (l >= n)
		l = n - 1;
	memcpy(out, api_version, l);
	out[l] = '\0';
}

/* The de-duplication key: group/kind/namespace/name. Caller frees. */
char *load_resource_key(const json_t *obj)
{
	char g[256];

	group_of(load_res_api_version(obj), g, sizeof(g));
	return gv_xasprintf("%s/%s/%s/%s", g, load_res_kind(obj), load_res_namespace(obj),
			    load_res_name(obj));
}

static void add_resource(struct load_resources *lr, const json_t *src, bool reals, const char *file,
			 int line, FILE *errs)
{
	/* The documents are the loader's own and released after loading: take them over. */
	json_t *obj = json_incref((json_t *)src);
	char *key;
	const json_t *seen;

	if (reals)
		prepare_loaded(obj);
	else
		load_resource_prepare(obj);
	if (lr->no_dedup)
		goto add;
	if (!lr->index)
		lr->index = json_object();
	key = load_resource_key(obj);
	seen = json_object_get(lr->index, key);
	if (seen) {
		size_t i = (size_t)json_integer_value(seen);
		if (errs)
			fprintf(errs,
				"%s:%d: warning: duplicate %s %s/%s ignored (first loaded "
				"from %s:%d)\n",
				file, line, load_res_kind(obj), load_res_namespace(obj),
				load_res_name(obj), lr->v[i].file, lr->v[i].line);
		json_decref(obj);
		free(key);
		return;
	}
	json_object_set_new(lr->index, key, json_integer((json_int_t)lr->n));
	free(key);
add:
	if ((lr->n & (lr->n - 1)) == 0) /* grow geometrically: n is 0 or a power of two */
		lr->v = gv_xrealloc(lr->v, (lr->n ? 2 * lr->n : 1) * sizeof(*lr->v));
	lr->v[lr->n].obj = obj;
	lr->v[lr->n].file = gv_xstrdup(file);
	lr->v[lr->n].line = line;
	lr->n++;
}

static bool is_list_kind(const char *kind)
{
	size_t n = strlen(kind);

	return n >= 4 && !strcmp(kind + n - 4, "List");
}

/* Loads the documents (docs, rc from parsing them) into lr; lines are shifted by first_line - 1. */
static enum gv_code add_docs(struct load_resources *lr, struct gv_docs *docs, enum gv_code rc,
			     struct gv_err *lerr_in, int first_line, FILE *errs, struct gv_err *err)
{
	struct gv_docs d = *docs;
	struct gv_err lerr = *lerr_in;
	enum gv_code first = GV_OK;
	int shift = first_line > 1 ? first_line - 1 : 0;

	if (rc && lerr.line)
		lerr.line += shift;
	if (rc) {
		report_err(errs, &lerr);
		if (err && !err->code)
			*err = lerr;
	}
	for (size_t i = 0; i < d.n; i++) {
		const json_t *doc = d.v[i].value;
		const char *kind = load_str(doc, "kind", NULL);
		int line = 0, col = 0;
		struct gv_err e = {0};

		gv_srcmap_find(d.v[i].map, "", &line, &col);
		if (!line)
			line = d.v[i].line;
		if (line)
			line += shift;
		if (!json_is_object(doc) || !*kind) {
			gv_err_setp(&e, GV_EINVAL, "",
				    json_is_object(doc) ? "resource has no kind"
							: "resource is not an object");
		} else if (is_list_kind(kind) && json_is_array(json_object_get(doc, "items"))) {
			size_t j;
			json_t *item;
			json_array_foreach(json_object_get(doc, "items"), j, item)
			{
				char ptr[64];
				int il = 0, ic = 0;
				if (!json_is_object(item) || !*load_str(item, "kind", NULL)) {
					snprintf(ptr, sizeof(ptr), "/items/%zu", j);
					gv_err_setp(&e, GV_EINVAL, ptr, "list item has no kind");
					break;
				}
				snprintf(ptr, sizeof(ptr), "/items/%zu", j);
				gv_srcmap_find(d.v[i].map, ptr, &il, &ic);
				if (il)
					il += shift;
				add_resource(lr, item, d.reals, d.file, il ? il : line, errs);
			}
		} else {
			add_resource(lr, doc, d.reals, d.file, line, errs);
		}
		if (e.code) {
			gv_err_locate(&e, d.file, d.v[i].map);
			if (e.line)
				e.line += shift;
			report_err(errs, &e);
			if (!first) {
				first = e.code;
				if (err && !err->code)
					*err = e;
			}
		}
	}
	gv_docs_release(&d);
	memset(docs, 0, sizeof(*docs));
	return rc ? rc : first;
}

enum gv_code load_resources_file(struct load_resources *lr, const char *file, FILE *errs,
				 struct gv_err *err)
{
	struct gv_docs docs;
	struct gv_err lerr = {0};
	enum gv_code rc = load_docs_shallow(file, &docs, &lerr);

	return add_docs(lr, &docs, rc, &lerr, 1, errs, err);
}

/*
 * The common case of generated manifests, one JSON object as a YAML
 * document ("---" line, then {...}), read by the JSON parser: about three
 * times faster than libyaml, and the same value wherever YAML gives one
 * (gv_yaml_load() takes a JSON document as flow YAML: the same strings,
 * the last of duplicate keys, numbers the same once made real). Left to the
 * YAML path: anything else in the text (comments, tags, "..."), text that
 * is no valid JSON, a number written as negative zero (YAML reads -0.0 as
 * the integer 0), a document without a kind (its error names a line and
 * column) and lists (each item has its own line). Returns false when not
 * taken.
 */
static bool json_doc_fast(const char *buf, size_t len, const char *name, struct gv_docs *docs)
{
	const char *p = buf, *end = buf + len, *kind;
	json_t *v;
	int line = 1;

	if (len >= 3 && !memcmp(p, "---", 3) && (len == 3 || strchr(" \t\r\n", p[3])))
		p += 3;
	while (p < end && isspace((unsigned char)*p)) {
		if (*p == '\n')
			line++;
		p++;
	}
	if (p >= end || *p != '{')
		return false;
	for (const char *q = p; (q = memchr(q, '-', (size_t)(end - q))) && q + 2 < end; q++)
		if (q[1] == '0' && (q[2] == '.' || q[2] == 'e' || q[2] == 'E'))
			return false;
	v = gv_json_parse_reals(p, (size_t)(end - p), NULL);
	if (!v)
		return false;
	kind = load_str(v, "kind", NULL);
	if (!*kind || is_list_kind(kind)) {
		json_decref(v);
		return false;
	}
	memset(docs, 0, sizeof(*docs));
	docs->file = gv_xstrdup(name);
	docs->v = gv_xcalloc(1, sizeof(*docs->v));
	docs->v[0].value = v;
	docs->v[0].line = line;
	docs->n = 1;
	docs->reals = true;
	return true;
}

enum gv_code load_resources_buf(struct load_resources *lr, const char *buf, size_t len,
				const char *file, int first_line, FILE *errs, struct gv_err *err)
{
	struct gv_docs docs;
	struct gv_err lerr = {0};
	enum gv_code rc = GV_OK;
	const char *name = strcmp(file, "-") ? file : "<stdin>";

	memset(&docs, 0, sizeof(docs));
	if (!json_doc_fast(buf, len, name, &docs))
		rc = load_docs_buf(buf, len, name, 2, true, &docs, &lerr);
	return add_docs(lr, &docs, rc, &lerr, first_line, errs, err);
}

void load_resources_release(struct load_resources *lr)
{
	for (size_t i = 0; i < lr->n; i++) {
		json_decref(lr->v[i].obj);
		free(lr->v[i].file);
	}
	free(lr->v);
	json_decref(lr->index);
	memset(lr, 0, sizeof(*lr));
}
