/*
 * vpolicy_admit.c - ValidatingPolicy and NamespacedValidatingPolicy in the
 * admission answer (admission_int.h "CEL policies"; cel-semantics.md 2.6).
 */
#include "admission/admission_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine/cel/cel.h"
#include "kube/kube.h"
#include "common/log.h"
#include "common/banned.h"

/* ---- Kyverno's CEL libraries from the cluster ---- */

/*
 * The host of one request: resource.Get/List and globalContext.Get through
 * the context loader's hooks (the calls the legacy apiCall and
 * globalReference entries make, with their deadline and cache), http.Get/Post
 * through its http hook; the rest (image.GetMetadata) an explicit error.
 */
struct vhost {
	struct cel_host host;
	const struct engine_hooks *hooks; /* or NULL */
	const char *policy_ns;		  /* the NamespacedValidatingPolicy's namespace, or "" */
	json_t *keep;			  /* owned: results handed out */
};

static const char *arg_str(const json_t *args, size_t i)
{
	const char *s = json_string_value(json_array_get(args, i));

	return s ? s : "";
}

/* GET urlPath through the hooks: GV_OK with *out, else err (n bytes) filled. */
static enum gv_code vhost_get(struct vhost *h, const char *path, json_t **out, struct gv_err *e)
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

static const json_t *keep(struct vhost *h, json_t *v)
{
	json_array_append_new(h->keep, v);
	return v;
}

static const json_t *vhost_call(void *ud, const char *fn, const json_t *args, char *err, size_t n)
{
	struct vhost *h = ud;
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
	} else {
		snprintf(err, n, "%s is not evaluated by gavel serve", fn);
	}
	gv_buf_release(&path);
	return ret;
}

/* {apiVersion: v1, kind: Namespace, metadata: {name, labels}}, or NULL when cluster-scoped. */
static json_t *namespace_object(const struct view_state *state, const char *ns)
{
	const json_t *labels;

	if (!ns || !*ns)
		return NULL;
	labels = view_state_namespace_labels(state, ns);
	return json_pack("{s:s, s:s, s:{s:s, s:o}}", "apiVersion", "v1", "kind", "Namespace",
			 "metadata", "name", ns, "labels",
			 json_is_object(labels) ? json_incref((json_t *)labels) : json_object());
}

/* Whether p judges this request (section 2.1 scope, 2.6, failure policy webhook). */
static bool routed(const struct vpol_policy *p, const struct admission_vpol_request *rq)
{
	if (vpol_kind(p) == VPOL_VAP || vpol_json_mode(p) || !view_vpol_admission(p))
		return false;
	if (vpol_kind(p) == VPOL_NAMESPACED && strcmp(vpol_namespace(p), rq->namespace))
		return false;
	return rq->only < 0 || (int)view_vpol_failure_policy(p) == rq->only;
}

bool admission_vpol_judge(const struct view_state *state, const struct admission_vpol_request *rq,
			  struct admission_warnings *warnings, struct gv_buf *deny)
{
	struct view_vpolset *set = view_state_vpols(state);
	size_t nx = 0;
	struct vpol_exception **xs;
	json_t *nso = NULL;
	bool blocked = false;
	struct vpol_input in = {0};
	const json_t *res = json_object_get(rq->request, "resource");
	struct vhost vh = {0};

	if (!view_vpolset_count(set))
		return false;
	view_vpolset_exceptions(set, &nx);
	xs = gv_xcalloc(nx + 1, sizeof(*xs));
	nx = view_vpolset_exceptions_at(set, (int64_t)time(NULL), xs);
	nso = namespace_object(state, rq->namespace);
	in.object = rq->object;
	in.old_object = rq->old_object;
	in.operation = rq->operation;
	in.resource = json_string_value(json_object_get(res, "resource"));
	in.subresource = json_string_value(json_object_get(rq->request, "subResource"));
	if (in.subresource && !*in.subresource)
		in.subresource = NULL;
	in.user_info = json_object_get(rq->request, "userInfo");
	in.namespace_object = nso;
	in.exceptions = xs;
	in.nexceptions = nx;
	vh.host.call = vhost_call;
	vh.host.ud = &vh;
	vh.hooks = rq->hooks;
	vh.keep = json_array();
	in.host = &vh.host;
	for (size_t i = 0; i < view_vpolset_count(set); i++) {
		const struct vpol_policy *p = view_vpolset_policy(set, i);
		unsigned acts = view_vpol_actions(p);
		struct vpol_report rep = {0};
		struct gv_err err = {0};
		if (!routed(p, rq))
			continue;
		vh.policy_ns = vpol_namespace(p);
		if (vpol_evaluate(p, &in, &rep, &err)) {
			gv_warn("admission: %s %s: %s", vpol_kind_name(p), vpol_name(p), err.msg);
			continue;
		}
		for (size_t r = 0; r < rep.n; r++) {
			for (size_t j = 0; j < rep.v[r].n; j++) {
				const struct vpol_rule_result *rr = &rep.v[r].rules[j];
				bool bad = rr->status == ENGINE_FAIL || rr->status == ENGINE_ERROR;
				char *text;
				if (rq->results) {
					struct view_result_labels ml = {
					    .resource_kind = rq->kind,
					    .resource_namespace = rq->namespace,
					    .resource_request_operation = rq->op_label,
					    .rule_name = rr->rule,
					    .rule_result = engine_status_name(rr->status),
					    .rule_execution_cause = "admission_request",
					    .dry_run =
						json_is_true(json_object_get(rq->request, "dryRun"))
						    ? "true"
						    : "false"};
					view_result_labels_vpol(&ml, p);
					view_result_count(rq->results, &ml);
				}
				if (rq->events)
					admission_vpol_events(rq->events, rq->event_object,
							      vpol_doc(p), rr->rule, rr->status,
							      rr->message, acts & VIEW_VPOL_DENY);
				if (!bad)
					continue;
				/* Kyverno's vpol handler: "Policy <name> failed|error: <message>"
				 */
				text = gv_xasprintf("Policy %s %s: %s", vpol_name(p),
						    rr->status == ENGINE_FAIL ? "failed" : "error",
						    rr->message);
				if (acts & VIEW_VPOL_DENY) {
					if (deny->len)
						gv_buf_adds(deny, "; ");
					gv_buf_adds(deny, text);
					blocked = true;
				}
				if (acts & VIEW_VPOL_WARN)
					admission_warnings_add(warnings, text);
				free(text);
			}
		}
		vpol_report_release(&rep);
	}
	json_decref(nso);
	json_decref(vh.keep);
	free(xs);
	return blocked;
}

bool admission_vpol_valid(const json_t *doc, struct gv_err *err)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const json_t *spec = json_object_get(doc, "spec");

	if (!kind)
		return true;
	if (!strcmp(kind, "PolicyException")) {
		struct vpol_exception *x = vpol_exception_compile(doc, err);
		vpol_exception_free(x);
		return x != NULL;
	}
	if (vpol_is_policy_doc(doc)) {
		struct vpol_policy *p;
		const json_t *mc = json_object_get(spec, "matchConstraints");
		bool json_mode = !strcmp(
		    json_string_value(json_object_get(json_object_get(spec, "evaluation"), "mode"))
			? json_string_value(
			      json_object_get(json_object_get(spec, "evaluation"), "mode"))
			: "",
		    "JSON");
		p = vpol_compile(doc, err);
		if (!p) {
			gv_err_prefix(err,
				      "validating policy compiler 1.0 error: failed to compile "
				      "policy: ");
			return false;
		}
		vpol_free(p);
		if (!json_mode && !json_array_size(json_object_get(mc, "resourceRules"))) {
			gv_err_setp(err, GV_EINVAL, "/spec/matchConstraints",
				    "matchConstraints with at least one resourceRules entry is "
				    "required");
			return false;
		}
	}
	return true;
}
