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
#include "view/celhost.h"
#include "kube/kube.h"
#include "common/log.h"
#include "common/banned.h"

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

/* Appends rr of p to it, unless p already gave a result of that rule (autogen copies). */
static void audit_add(struct view_audit_item *it, size_t first, struct view_vpolset *set,
		      const struct vpol_policy *p, const struct vpol_rule_result *rr)
{
	struct view_audit_result *o;

	for (size_t k = first; k < it->nresults; k++)
		if (!strcmp(it->results[k].rule, rr->rule))
			return;
	it->results = gv_xrealloc(it->results, (it->nresults + 1) * sizeof(*it->results));
	o = &it->results[it->nresults++];
	memset(o, 0, sizeof(*o));
	o->rule = gv_xstrdup(rr->rule);
	o->status = rr->status;
	o->message = gv_xstrdup(rr->message ? rr->message : "");
	/* a copy: the properties may hold values of the review's arena (handler.c) */
	o->properties = rr->properties ? json_deep_copy(rr->properties) : NULL;
	o->vpols = view_vpolset_ref(set);
	o->vpol = p;
}

/* Drops the results of it from index n on. */
static void audit_truncate(struct view_audit_item *it, size_t n)
{
	while (it->nresults > n) {
		struct view_audit_result *o = &it->results[--it->nresults];
		free(o->rule);
		free(o->message);
		json_decref(o->properties);
		view_vpolset_unref(o->vpols);
	}
}

bool admission_vpol_judge(const struct view_state *state, const struct admission_vpol_request *rq,
			  struct admission_warnings *warnings, struct gv_buf *deny)
{
	struct view_vpolset *set = view_state_vpols(state);
	size_t nx = 0;
	struct vpol_exception **xs;
	json_t *nso = NULL;
	bool blocked = false, deny_matched = false;
	size_t audit_base = rq->audit ? rq->audit->nresults : 0;
	struct vpol_input in = {0};
	const json_t *res = json_object_get(rq->request, "resource");
	struct view_cel_host vh;
	struct vpol_batch *batch;

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
	view_cel_host_init(&vh, rq->hooks, "gavel serve");
	in.host = &vh.host;
	/* one request document and CEL context for every policy routed */
	batch = vpol_batch_new(&in);
	for (size_t i = 0; i < view_vpolset_count(set); i++) {
		const struct vpol_policy *p = view_vpolset_policy(set, i);
		unsigned acts = view_vpol_actions(p);
		struct vpol_report rep = {0};
		struct gv_err err = {0};
		if (!routed(p, rq))
			continue;
		vh.policy_ns = vpol_namespace(p);
		if (vpol_batch_evaluate(batch, p, &rep, &err)) {
			gv_warn("admission: %s %s: %s", vpol_kind_name(p), vpol_name(p), err.msg);
			continue;
		}
		size_t first = rq->audit ? rq->audit->nresults : 0;
		for (size_t r = 0; r < rep.n; r++) {
			for (size_t j = 0; j < rep.v[r].n; j++) {
				const struct vpol_rule_result *rr = &rep.v[r].rules[j];
				bool bad = rr->status == ENGINE_FAIL || rr->status == ENGINE_ERROR;
				char *text;
				/*
				 * A Deny policy routed to the request: no admission
				 * report (section 2.6). One whose match conditions are
				 * not met is not: the webhook's would not call it.
				 */
				deny_matched |= (acts & VIEW_VPOL_DENY) &&
						!(rr->status == ENGINE_SKIP && !*rr->rule);
				if (rq->audit && !deny_matched)
					audit_add(rq->audit, first, set, p, rr);
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
	if (rq->audit && deny_matched)
		audit_truncate(rq->audit, audit_base);
	json_decref(nso);
	vpol_batch_free(batch);
	view_cel_host_release(&vh);
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
