/*
 * celhost.c - Kyverno's CEL libraries from the cluster (celhost.h).
 */
#include "view/celhost.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kube/kube.h"
#include "common/banned.h"

static const char *arg_str(const json_t *args, size_t i)
{
	const char *s = json_string_value(json_array_get(args, i));

	return s ? s : "";
}

/* GET urlPath through the hooks: GV_OK with *out, else err (n bytes) filled. */
static enum gv_code vhost_get(struct view_cel_host *h, const char *path, json_t **out,
			      struct gv_err *e)
{
	json_t *entry, *ctx;
	enum gv_code rc;

	*out = NULL;
	if (!h->hooks || !h->hooks->load_context)
		return gv_err_set(e, GV_EINVAL, "no cluster connection");
	ctx = json_object();
	entry = json_pack("{s:s, s:{s:s, s:s}}", "name", "cel", "apiCall", "urlPath", path,
			  "method", "GET");
	rc = h->hooks->load_context(h->hooks->ud, entry, ctx, out, e);
	json_decref(entry);
	json_decref(ctx);
	return rc;
}

/* /api/v1 or /apis/<group>/<version>, then the namespace part when ns is not "". */
static void collection(struct gv_buf *b, const char *av, const char *ns, const char *res)
{
	char *r = gv_xstrdup(res), *sub = strchr(r, '/');

	if (sub)
		*sub = '\0';
	gv_buf_addf(b, strchr(av, '/') ? "/apis/%s" : "/api/%s", av);
	if (*ns) {
		char *e = kube_escape(ns);
		gv_buf_addf(b, "/namespaces/%s", e);
		free(e);
	}
	gv_buf_addf(b, "/%s", r);
	free(r);
}

static const json_t *keep(struct view_cel_host *h, json_t *v)
{
	json_array_append_new(h->keep, v);
	return v;
}

/*
 * Kyverno's image data (cel-semantics.md section 6, image.GetMetadata) from
 * the imageRegistry loader's ImageData (kube/registry.h): the same fields,
 * with the image's config file as "config" (not "configData"), the index
 * a tag or digest named as "imageIndex" (absent otherwise), and "tag" (absent
 * for a reference by digest) and "digest" (of the manifest or index the
 * reference resolved to) beside "identifier". New reference.
 */
static json_t *image_data(const json_t *d)
{
	json_t *o = json_object();
	const char *resolved = json_string_value(json_object_get(d, "resolvedImage"));
	const char *id = json_string_value(json_object_get(d, "identifier"));
	const char *at = resolved ? strrchr(resolved, '@') : NULL;
	static const char *const same[] = {"image",	 "resolvedImage", "registry",
					   "repository", "identifier",	  "manifest"};

	for (size_t i = 0; i < GV_ARRAY_LEN(same); i++) {
		json_t *v = json_object_get(d, same[i]);
		if (v)
			json_object_set(o, same[i], v);
	}
	if (id && *id && !strchr(id, ':'))
		json_object_set_new(o, "tag", json_string(id));
	if (at)
		json_object_set_new(o, "digest", json_string(at + 1));
	if (json_object_get(d, "manifestList") && !json_is_null(json_object_get(d, "manifestList")))
		json_object_set(o, "imageIndex", json_object_get(d, "manifestList"));
	if (json_object_get(d, "configData"))
		json_object_set(o, "config", json_object_get(d, "configData"));
	return o;
}

/*
 * image.GetMetadata(ref): the image's data from its registry through the
 * loader's imageRegistry entry (the same fetch, credentials, cache and
 * deadline as the legacy context entry), answers and failures kept per
 * reference for the life of h. A failure is the call's error, with
 * Kyverno's prefix.
 */
static const json_t *image_metadata(struct view_cel_host *h, const char *ref, char *err, size_t n)
{
	json_t *entry, *ctx, *out = NULL, *data;
	const json_t *hit = json_object_get(h->images, ref);
	struct gv_err e = {0};
	enum gv_code rc;

	if (json_is_string(hit)) {
		snprintf(err, n, "%s", json_string_value(hit));
		return NULL;
	}
	if (hit)
		return hit;
	if (!h->hooks || !h->hooks->load_context) {
		snprintf(err, n, "failed to get image data: no cluster connection");
		return NULL;
	}
	/* the loader substitutes {{ }} in its entry: a reference is taken as written */
	if (!*ref || strstr(ref, "{{")) {
		snprintf(err, n, "failed to get image data: invalid image reference \"%s\"", ref);
		return NULL;
	}
	ctx = json_object();
	entry = json_pack("{s:s, s:{s:s}}", "name", "image", "imageRegistry", "reference", ref);
	rc = h->hooks->load_context(h->hooks->ud, entry, ctx, &out, &e);
	json_decref(entry);
	json_decref(ctx);
	if (rc) {
		snprintf(err, n, "failed to get image data: %s", e.msg);
		/* not asked again by this host: a scan waits on a dead registry once */
		json_object_set_new(h->images, ref, json_string(err));
		return NULL;
	}
	data = image_data(out);
	json_decref(out);
	json_object_set_new(h->images, ref, data);
	return data;
}

static const json_t *vhost_call(void *ud, const char *fn, const json_t *args, char *err, size_t n)
{
	struct view_cel_host *h = ud;
	size_t na = json_array_size(args);
	struct gv_err e = {0};
	struct gv_buf path = {0};
	json_t *out = NULL;
	const json_t *ret = NULL;

	if (!json_is_string(json_array_get(args, 0)) &&
	    (!strcasecmp(fn, "resource.Get") || !strcasecmp(fn, "resource.List"))) {
		snprintf(err, n,
			 "%s: gavel serve answers the (apiVersion, resource, ...) form only", fn);
		return NULL;
	}
	if (!strcasecmp(fn, "resource.Get")) {
		const char *ns = na >= 4 ? arg_str(args, 2) : h->policy_ns;
		const char *res = arg_str(args, 1), *sub = strchr(res, '/');
		char *name = kube_escape(arg_str(args, na - 1));
		collection(&path, arg_str(args, 0), ns, res);
		gv_buf_addf(&path, "/%s%s", name, sub ? sub : "");
		free(name);
		if (vhost_get(h, gv_buf_str(&path), &out, &e)) {
			/* the API server's NotFound: `<resource> "<name>" not found` */
			if (strstr(e.msg, "\" not found"))
				ret = json_null();
			else
				snprintf(err, n, "failed to get resource: %s", e.msg);
		} else {
			ret = keep(h, out);
		}
	} else if (!strcasecmp(fn, "resource.List")) {
		const char *ns = na >= 3 ? arg_str(args, 2) : h->policy_ns;
		const json_t *labels = na >= 4 ? json_array_get(args, 3) : NULL;
		collection(&path, arg_str(args, 0), ns, arg_str(args, 1));
		if (json_object_size(labels)) {
			struct gv_buf sel = {0};
			const char *k;
			const json_t *v;
			char *esc;
			json_object_foreach((json_t *)labels, k, v)
			{
				gv_buf_addf(&sel, "%s%s=%s", sel.len ? "," : "", k,
					    json_string_value(v) ? json_string_value(v) : "");
			}
			esc = kube_escape(gv_buf_str(&sel));
			gv_buf_addf(&path, "?labelSelector=%s", esc);
			free(esc);
			gv_buf_release(&sel);
		}
		if (vhost_get(h, gv_buf_str(&path), &out, &e)) {
			snprintf(err, n, "failed to list resource: %s", e.msg);
		} else {
			json_t *items = json_object_get(out, "items");
			ret = keep(h, json_pack("{s:O}", "items",
						json_is_array(items) ? items : json_array()));
			json_decref(out);
		}
	} else if (!strcasecmp(fn, "globalContext.Get")) {
		json_t *entry, *ctx = json_object();
		if (na >= 2 && *arg_str(args, 1)) {
			snprintf(err, n,
				 "failed to get global reference: gavel does not evaluate "
				 "globalContext projections (%s)",
				 arg_str(args, 1));
			json_decref(ctx);
			return NULL;
		}
		entry = json_pack("{s:s, s:{s:s}}", "name", "cel", "globalReference", "name",
				  arg_str(args, 0));
		if (!h->hooks || !h->hooks->load_context) {
			snprintf(err, n, "failed to get global reference: no cluster connection");
		} else if (h->hooks->load_context(h->hooks->ud, entry, ctx, &out, &e)) {
			/* Kyverno: an unknown entry is null */
			if (!strncmp(e.msg, "failed to find globalcontext entry", 34))
				ret = json_null();
			else
				snprintf(err, n, "failed to get global reference: %s", e.msg);
		} else {
			ret = keep(h, out);
		}
		json_decref(entry);
		json_decref(ctx);
	} else if (!strcasecmp(fn, "http.Get") || !strcasecmp(fn, "http.Post")) {
		bool post = !strcasecmp(fn, "http.Post");
		const json_t *hdrs = json_array_get(args, post ? 2 : 1);
		if (!h->hooks || !h->hooks->http)
			snprintf(err, n, "request failed: no HTTP client");
		else if (h->hooks->http(h->hooks->ud, post ? "POST" : "GET", arg_str(args, 0),
					json_is_null(hdrs) ? NULL : hdrs,
					post ? json_array_get(args, 1) : NULL, h->policy_ns, &out,
					&e))
			snprintf(err, n, "%s", e.msg);
		else
			ret = keep(h, out);
	} else if (!strcasecmp(fn, "image.GetMetadata")) {
		if (!json_is_string(json_array_get(args, 0)))
			snprintf(err, n, "failed to get image data: the reference is not a string");
		else
			ret = image_metadata(h, arg_str(args, 0), err, n);
	} else {
		snprintf(err, n, "%s is not evaluated by %s", fn, h->where ? h->where : "gavel");
	}
	gv_buf_release(&path);
	return ret;
}

void view_cel_host_init(struct view_cel_host *h, const struct engine_hooks *hooks,
			const char *where)
{
	memset(h, 0, sizeof(*h));
	h->host.call = vhost_call;
	h->host.ud = h;
	h->hooks = hooks;
	h->policy_ns = "";
	h->where = where;
	h->keep = json_array();
	h->images = json_object();
}

void view_cel_host_release(struct view_cel_host *h)
{
	json_decref(h->keep);
	json_decref(h->images);
	h->keep = NULL;
	h->images = NULL;
}
