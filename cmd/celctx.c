/*
 * celctx.c - offline answers of the Kyverno CEL libraries (celctx.h).
 */
#include "cmd/celctx.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmd/load.h"
#include "common/yaml.h"
#include "engine/jmespath.h"
#include "engine/vpolicy.h"
#include "common/banned.h"

static const char *arg_str(const json_t *args, size_t i)
{
	const char *s = json_string_value(json_array_get(args, i));
	return s ? s : "";
}

/* Whether obj is of apiVersion av and plural resource res (a "res/sub" is read as res). */
static bool of_resource(const json_t *obj, const char *av, const char *res)
{
	char plural[160];
	size_t rl = strcspn(res, "/");

	if (strcmp(load_res_api_version(obj), av))
		return false;
	vpol_kind_resource(load_res_kind(obj), plural, sizeof(plural));
	return strlen(plural) == rl && !strncmp(plural, res, rl);
}

static const json_t *keep(struct celctx *c, json_t *v)
{
	json_array_append_new(c->keep, v);
	return v;
}

static bool labels_match(const json_t *obj, const json_t *want)
{
	const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
	const char *k;
	json_t *v;

	json_object_foreach(load_unconst(want), k, v)
	{
		const json_t *have = json_object_get(labels, k);
		if (!json_is_string(have) || !json_equal(have, v))
			return false;
	}
	return true;
}

static const json_t *resource_get(struct celctx *c, const json_t *args, char *err, size_t n)
{
	size_t na = json_array_size(args);
	const char *av = arg_str(args, 0), *res = arg_str(args, 1);
	const char *ns = na == 4 ? arg_str(args, 2) : NULL;
	const char *name = arg_str(args, na - 1);
	const json_t *stores[2] = {c->cluster, c->context};

	for (int s = 0; s < 2; s++) {
		size_t i;
		json_t *o;
		json_array_foreach(stores[s], i, o)
		{
			if (of_resource(o, av, res) && !strcmp(load_res_name(o), name) &&
			    (!ns || !strcmp(load_res_namespace(o), ns)))
				return o;
		}
	}
	if (json_array_size(c->cluster) && !json_array_size(c->context))
		return json_null();
	snprintf(err, n, "failed to get resource: %s \"%s\" not found", res, name);
	return NULL;
}

static const json_t *resource_list(struct celctx *c, const json_t *args, char *err, size_t n)
{
	size_t na = json_array_size(args);
	const char *av = arg_str(args, 0), *res = arg_str(args, 1);
	const char *ns = na >= 3 ? arg_str(args, 2) : "";
	const json_t *labels = na == 4 ? json_array_get(args, 3) : NULL;
	json_t *items = json_array();
	bool any = false;
	size_t i;
	json_t *o;

	json_array_foreach(c->cluster, i, o)
	{
		if (!of_resource(o, av, res))
			continue;
		any = true;
		if ((!*ns || !strcmp(load_res_namespace(o), ns)) &&
		    (!json_is_object(labels) || labels_match(o, labels)))
			json_array_append(items, o);
	}
	/* The context file's provider ignores labels and compares the namespace exactly. */
	json_array_foreach(c->context, i, o)
	{
		if (!of_resource(o, av, res))
			continue;
		any = true;
		if (!strcmp(load_res_namespace(o), ns))
			json_array_append(items, o);
	}
	if (!any && !json_array_size(c->cluster)) {
		const char *slash = strchr(av, '/');
		json_decref(items);
		snprintf(err, n, "failed to list resource: %s%s%.*s resource not found", res,
			 slash ? "." : "", slash ? (int)(slash - av) : 0, av);
		return NULL;
	}
	return keep(c, json_pack("{s:o}", "items", items));
}

static const json_t *image_metadata(struct celctx *c, const json_t *args, char *err, size_t n)
{
	const char *ref = arg_str(args, 0);
	size_t i;
	json_t *e;

	json_array_foreach(c->images, i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "image")) ?: "", ref))
			return e;
	}
	snprintf(err, n, "failed to get image data: image data for %s not found in the context",
		 ref);
	return NULL;
}

static const json_t *global_get(struct celctx *c, const json_t *args, char *err, size_t n)
{
	const char *name = arg_str(args, 0);
	const char *proj = json_array_size(args) > 1 ? arg_str(args, 1) : "";
	const json_t *e = NULL, *x, *data;
	size_t i;

	json_array_foreach(c->gctx, i, x)
	{
		if (!strcmp(json_string_value(json_object_get(x, "name")) ?: "", name))
			e = x;
	}
	if (!e)
		return json_null();
	data = json_object_get(e, "data");
	if (!data)
		data = json_object_get(e, "resources");
	if (!data) {
		snprintf(err, n,
			 "failed to get global reference: entry %s has no data or resources "
			 "(gavel test does not read resourceFiles)",
			 name);
		return NULL;
	}
	/* Each projection {name, path} adds `name` to the entry's data. */
	{
		json_t *d = json_deep_copy(data);
		json_array_foreach(json_object_get(e, "projections"), i, x)
		{
			const char *pn = json_string_value(json_object_get(x, "name"));
			const char *path = json_string_value(json_object_get(x, "path"));
			struct jp_error je = {0};
			struct jp_options opt = {.kyverno = true};
			json_t *v;
			if (!pn || !path || !json_is_object(d))
				continue;
			v = jp_search(path, d, &opt, &je);
			if (!v) {
				json_decref(d);
				snprintf(err, n,
					 "failed to get global reference: projection %s: %s", pn,
					 je.msg);
				return NULL;
			}
			json_object_set_new(d, pn, v);
		}
		keep(c, d);
		if (!*proj)
			return d;
		if (json_object_get(d, proj))
			return json_object_get(d, proj);
	}
	snprintf(err, n, "failed to get global reference: projection %s not found", proj);
	return NULL;
}

static const json_t *http_call(struct celctx *c, const char *method, const json_t *args, char *err,
			       size_t n)
{
	const char *url = arg_str(args, 0);
	const json_t *hit = NULL, *e;
	size_t i;

	/* METHOD:url first, then url alone. */
	for (int pass = 0; pass < 2 && !hit; pass++) {
		json_array_foreach(c->api, i, e)
		{
			const char *u = json_string_value(json_object_get(e, "url"));
			const char *m = json_string_value(json_object_get(e, "method"));
			if (!u)
				u = json_string_value(json_object_get(e, "urlPath"));
			if (!u || strcmp(u, url))
				continue;
			if (pass == 0 ? (m && !strcasecmp(m, method)) : !m) {
				hit = e;
				break;
			}
		}
	}
	if (!hit) {
		snprintf(err, n,
			 "request failed: no apiCallResponses entry for %s %s (gavel test makes "
			 "no network calls)",
			 method, url);
		return NULL;
	}
	{
		const json_t *resp = json_object_get(hit, "response");
		const json_t *code = json_object_get(resp, "statusCode");
		const json_t *body = json_object_get(resp, "body");
		return keep(
		    c,
		    json_pack("{s:O,s:I}", "body", body ? body : json_null(), "statusCode",
			      (json_int_t)(json_is_number(code) ? json_number_value(code) : 200)));
	}
}

static const json_t *celctx_call(void *ud, const char *fn, const json_t *args, char *err, size_t n)
{
	struct celctx *c = ud;

	if (!strcasecmp(fn, "resource.Get"))
		return resource_get(c, args, err, n);
	if (!strcasecmp(fn, "resource.List"))
		return resource_list(c, args, err, n);
	if (!strcasecmp(fn, "image.GetMetadata"))
		return image_metadata(c, args, err, n);
	if (!strcasecmp(fn, "globalContext.Get"))
		return global_get(c, args, err, n);
	if (!strcasecmp(fn, "http.Get"))
		return http_call(c, "GET", args, err, n);
	if (!strcasecmp(fn, "http.Post"))
		return http_call(c, "POST", args, err, n);
	snprintf(err, n, "%s is not answered offline", fn);
	return NULL;
}

void celctx_init(struct celctx *c)
{
	memset(c, 0, sizeof(*c));
	c->host.call = celctx_call;
	c->host.ud = c;
	c->context = json_array();
	c->cluster = json_array();
	c->images = json_array();
	c->keep = json_array();
}

void celctx_release(struct celctx *c)
{
	json_decref(c->context);
	json_decref(c->cluster);
	json_decref(c->images);
	json_decref(c->keep);
	memset(c, 0, sizeof(*c));
}

enum gv_code celctx_load_context(struct celctx *c, const char *path, struct gv_err *err)
{
	struct gv_docs docs;
	enum gv_code rc = load_docs(path, &docs, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < docs.n; i++) {
		const json_t *spec = json_object_get(docs.v[i].value, "spec");
		if (json_is_array(json_object_get(spec, "resources")))
			json_array_extend(c->context, json_object_get(spec, "resources"));
		if (json_is_array(json_object_get(spec, "images")))
			json_array_extend(c->images, json_object_get(spec, "images"));
	}
	gv_docs_release(&docs);
	return GV_OK;
}

enum gv_code celctx_load_cluster(struct celctx *c, const char *path, struct gv_err *err)
{
	struct gv_docs docs;
	enum gv_code rc = load_docs(path, &docs, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < docs.n; i++) {
		const json_t *d = docs.v[i].value;
		if (!strcmp(load_res_kind(d), "ClusterResource")) {
			const json_t *r = json_object_get(json_object_get(d, "spec"), "resources");
			if (json_is_array(r))
				json_array_extend(c->cluster, load_unconst(r));
		} else if (json_is_object(d)) {
			json_array_append(c->cluster, load_unconst(d));
		}
	}
	gv_docs_release(&docs);
	return GV_OK;
}
