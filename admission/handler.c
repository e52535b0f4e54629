/*
 * handler.c - AdmissionReview in, AdmissionReview out: decode, judge with
 * the engine, decide, encode (k8s-wire.md section 1, kyverno-semantics.md
 * sections 7.3 and 8). Pure apart from the metrics and the emit callback,
 * which are handed in.
 */
#include "admission/admission_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/banned.h"

#define JSON_TYPE "application/json"
#define TEXT_TYPE "text/plain; charset=utf-8"

struct admission_handler {
	const struct admission_source *source;		      /* borrowed */
	char *namespace;				      /* owned, or NULL */
	void (*emit)(void *ud, struct view_audit_item *item); /* or NULL */
	void *emit_ud;
	const struct view_context *context; /* borrowed, or NULL */
	struct metrics_family *requests;    /* kyverno_admission_requests_total */
	struct metrics_family *duration;    /* kyverno_admission_review_duration_seconds */
	struct metrics_family *results;	    /* kyverno_policy_results_total */
	struct metrics_family *rule_time;   /* kyverno_policy_execution_duration_seconds */

	const struct view_roles_source *roles;		/* borrowed, or NULL */
	struct kube_events *events;			/* borrowed, or NULL */
	bool (*kind_known)(void *ud, const char *kind); /* or NULL */
	void *kind_known_ud;
	char *(*resource_kind)(void *ud, const char *group, const char *version,
			       const char *resource); /* or NULL */
	void *resource_kind_ud;
};

static const char *const request_labels[] = {"resource_kind", "resource_namespace",
					     "resource_request_operation", "request_allowed", NULL};
static const double duration_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					  0.1,	  0.25,	 0.5,	 1,	2.5,  5,     10};

struct admission_handler *admission_handler_new(const struct admission_handler_config *cfg)
{
	struct admission_handler *h = gv_xcalloc(1, sizeof(*h));

	h->source = cfg->source;
	h->namespace = cfg->namespace && *cfg->namespace ? gv_xstrdup(cfg->namespace) : NULL;
	h->emit = cfg->emit;
	h->emit_ud = cfg->emit_ud;
	h->roles = cfg->roles;
	h->context = cfg->context;
	h->events = cfg->events;
	h->kind_known = cfg->kind_known;
	h->kind_known_ud = cfg->kind_known_ud;
	h->resource_kind = cfg->resource_kind;
	h->resource_kind_ud = cfg->resource_kind_ud;
	if (cfg->metrics) {
		h->requests = metrics_counter_new(cfg->metrics, "kyverno_admission_requests_total",
						  "Admission requests judged by the webhook.",
						  request_labels);
		h->duration = metrics_histogram_new(
		    cfg->metrics, "kyverno_admission_review_duration_seconds",
		    "Time to answer one admission review, in seconds.", request_labels,
		    duration_buckets, GV_ARRAY_LEN(duration_buckets));
		h->results = view_policy_results_new(cfg->metrics);
		h->rule_time = view_policy_duration_new(cfg->metrics);
	}
	return h;
}

void admission_handler_free(struct admission_handler *h)
{
	if (!h)
		return;
	free(h->namespace);
	free(h);
}

void admission_reply_release(struct admission_reply *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

bool admission_handler_ready(struct admission_handler *h)
{
	struct view_state *s = h->source->acquire(h->source->ud);

	view_state_unref(s);
	return s != NULL && (!h->roles || h->roles->ready(h->roles->ud));
}

/* ---- decoding ---- */

/* One decoded AdmissionReview; every pointer borrowed from root. */
struct review {
	json_t *root; /* owned */
	const char *api_version;
	const json_t *req;
	const char *uid, *operation, *namespace, *name, *subresource;
	const char *group, *version, *kind; /* request.kind */
	const json_t *object, *old_object;  /* NULL when absent or null */
	const json_t *user_info;
	bool dry_run;
};

static void reply_text(struct admission_reply *out, int http, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reply_text(struct admission_reply *out, int http, const char *fmt, ...)
{
	struct gv_buf b = {0};
	va_list ap;

	va_start(ap, fmt);
	gv_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	gv_buf_addc(&b, '\n');
	out->http = http;
	out->content_type = TEXT_TYPE;
	out->len = b.len;
	out->body = gv_buf_detach(&b);
}

static const char *str_field(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static const json_t *obj_field(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_object(v) ? v : NULL;
}

/*
 * Fills rv from body; on a malformed review fills out with HTTP 400 and
 * returns false. arena: the tree is parsed into the thread's arena
 * (gv_json_parse_arena), for a review none of whose values outlive the
 * request; rv->root is released with gv_json_arena_release() either way.
 */
static bool decode(const char *body, size_t len, bool arena, struct review *rv,
		   struct admission_reply *out)
{
	struct gv_err jerr = {0};
	const json_t *k, *dry;
	static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
	bool op_ok = false;

	memset(rv, 0, sizeof(*rv));
	rv->root = arena ? gv_json_parse_arena(body, len, &jerr) : gv_json_parse(body, len, &jerr);
	if (!rv->root) {
		reply_text(out, 400, "malformed JSON: %s", jerr.msg);
		return false;
	}
	if (!json_is_object(rv->root)) {
		reply_text(out, 400, "malformed AdmissionReview: not a JSON object");
		return false;
	}
	rv->api_version = str_field(rv->root, "apiVersion");
	if (!rv->api_version || (strcmp(rv->api_version, "admission.k8s.io/v1") &&
				 strcmp(rv->api_version, "admission.k8s.io/v1beta1"))) {
		reply_text(out, 400,
			   "malformed AdmissionReview: apiVersion must be admission.k8s.io/v1 or "
			   "admission.k8s.io/v1beta1");
		return false;
	}
	if (!str_field(rv->root, "kind") ||
	    strcmp(str_field(rv->root, "kind"), "AdmissionReview")) {
		reply_text(out, 400, "malformed AdmissionReview: kind must be AdmissionReview");
		return false;
	}
	rv->req = obj_field(rv->root, "request");
	if (!rv->req) {
		reply_text(out, 400, "malformed AdmissionReview: request is missing");
		return false;
	}
	rv->uid = str_field(rv->req, "uid");
	if (!rv->uid || !*rv->uid) {
		reply_text(out, 400, "malformed AdmissionReview: request.uid is missing");
		return false;
	}
	rv->operation = str_field(rv->req, "operation");
	for (size_t i = 0; rv->operation && i < GV_ARRAY_LEN(ops); i++)
		op_ok |= !strcmp(rv->operation, ops[i]);
	if (!op_ok) {
		reply_text(out, 400,
			   "malformed AdmissionReview: request.operation must be CREATE, UPDATE, "
			   "DELETE or CONNECT");
		return false;
	}
	k = obj_field(rv->req, "kind");
	rv->kind = str_field(k, "kind");
	if (!rv->kind || !*rv->kind) {
		reply_text(out, 400, "malformed AdmissionReview: request.kind.kind is missing");
		return false;
	}
	rv->group = str_field(k, "group");
	rv->version = str_field(k, "version");
	if (!rv->group)
		rv->group = "";
	if (!rv->version)
		rv->version = "";
	rv->namespace = str_field(rv->req, "namespace");
	if (!rv->namespace)
		rv->namespace = "";
	rv->subresource = str_field(rv->req, "subResource");
	rv->object = obj_field(rv->req, "object");
	rv->old_object = obj_field(rv->req, "oldObject");
	if ((json_object_get(rv->req, "object") &&
	     !json_is_null(json_object_get(rv->req, "object")) && !rv->object) ||
	    (json_object_get(rv->req, "oldObject") &&
	     !json_is_null(json_object_get(rv->req, "oldObject")) && !rv->old_object)) {
		reply_text(
		    out, 400,
		    "malformed AdmissionReview: request.object and request.oldObject must be "
		    "objects or null");
		return false;
	}
	rv->user_info = obj_field(rv->req, "userInfo");
	dry = json_object_get(rv->req, "dryRun");
	rv->dry_run = json_is_true(dry);
	rv->name = str_field(rv->req, "name");
	if (!rv->name || !*rv->name) {
		const json_t *o = rv->object ? rv->object : rv->old_object;
		rv->name = str_field(obj_field(o, "metadata"), "name");
	}
	if (!rv->name)
		rv->name = "";
	return true;
}

/* ---- encoding ---- */

static void response_start(struct gv_buf *b, const struct review *rv, bool allowed)
{
	gv_buf_adds(b, "{\"apiVersion\":");
	admission_json_str(b, rv->api_version);
	gv_buf_adds(b, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
	admission_json_str(b, rv->uid);
	gv_buf_adds(b, allowed ? ",\"allowed\":true" : ",\"allowed\":false");
}

static void reply_json(struct admission_reply *out, struct gv_buf *b, bool allowed)
{
	gv_buf_adds(b, "}}");
	out->http = 200;
	out->content_type = JSON_TYPE;
	out->allowed = allowed;
	out->len = b->len;
	out->body = gv_buf_detach(b);
}

static void add_warnings(struct gv_buf *b, const struct admission_warnings *w)
{
	if (w && w->n) {
		gv_buf_adds(b, ",\"warnings\":[");
		for (size_t i = 0; i < w->n; i++) {
			if (i)
				gv_buf_addc(b, ',');
			admission_json_str(b, w->v[i]);
		}
		gv_buf_addc(b, ']');
	}
}

static void reply_allowed(struct admission_reply *out, const struct review *rv,
			  const struct admission_warnings *w)
{
	struct gv_buf b = {0};

	response_start(&b, rv, true);
	add_warnings(&b, w);
	reply_json(out, &b, true);
}

/* w: the warnings a denial carries (those of CEL policies with Warn), or NULL. */
static void reply_denied_w(struct admission_reply *out, const struct review *rv, const char *msg,
			   const struct admission_warnings *w)
{
	struct gv_buf b = {0};

	response_start(&b, rv, false);
	add_warnings(&b, w);
	gv_buf_adds(&b, ",\"status\":{\"code\":403,\"message\":");
	admission_json_str(&b, msg);
	gv_buf_adds(&b, ",\"reason\":\"Forbidden\",\"status\":\"Failure\"}");
	reply_json(out, &b, false);
}

static void reply_denied(struct admission_reply *out, const struct review *rv, const char *msg)
{
	reply_denied_w(out, rv, msg, NULL);
}

/* ---- judging ---- */

static const char *op_label(const char *op)
{
	if (!strcmp(op, "CREATE"))
		return "create";
	if (!strcmp(op, "UPDATE"))
		return "update";
	if (!strcmp(op, "DELETE"))
		return "delete";
	return "connect";
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static char *dup_or_empty(const char *s)
{
	return gv_xstrdup(s ? s : "");
}

/*
 * The queue item of an allowed request, with the results the matrix reports,
 * then the CEL policies' results of vaudit, if any (moved: vaudit is left
 * empty).
 */
static struct view_audit_item *report_item(const struct review *rv, const json_t *object,
					   const struct engine_report *rep, size_t nreported,
					   struct view_audit_item *vaudit)
{
	struct view_audit_item *it = gv_xcalloc(1, sizeof(*it));
	const json_t *meta = obj_field(object, "metadata");
	size_t nalloc = 0;
	const char *ns = str_field(meta, "namespace");

	it->api_version = dup_or_empty(str_field(object, "apiVersion"));
	it->kind = dup_or_empty(str_field(object, "kind"));
	it->namespace = dup_or_empty(ns);
	it->name = dup_or_empty(rv->name);
	it->uid = dup_or_empty(str_field(meta, "uid"));
	it->resource_version = dup_or_empty(str_field(meta, "resourceVersion"));
	it->operation = dup_or_empty(rv->operation);
	it->request_uid = dup_or_empty(rv->uid);
	it->timestamp = (int64_t)time(NULL);
	(void)nreported; /* counted here: the caller's count leaves out the other webhook's */
	for (size_t i = 0; i < rep->n; i++)
		nalloc += rep->v[i].nrules;
	nalloc += vaudit ? vaudit->nresults : 0;
	it->results = gv_xcalloc(nalloc ? nalloc : 1, sizeof(*it->results));
	for (size_t i = 0; i < rep->n; i++) {
		const struct engine_response *resp = &rep->v[i];
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *r = &resp->rules[j];
			struct view_audit_result *o;
			bool enforce = r->action == ENGINE_ENFORCE;
			if (!engine_decide(resp->policy, r, ENGINE_ADMISSION).reported && !enforce)
				continue;
			o = &it->results[it->nresults++];
			o->enforce = enforce;
			o->exceptions = r->exceptions ? gv_xstrdup(r->exceptions) : NULL;
			/* a copy: the properties may hold values of the review's arena */
			o->properties = r->properties ? json_deep_copy(r->properties) : NULL;
			o->policy = engine_policy_ref((struct engine_policy *)resp->policy);
			o->rule = gv_xstrdup(r->rule);
			o->status = r->status;
			o->message = gv_xstrdup(r->message ? r->message : "");
			o->exception = r->exception;
		}
	}
	for (size_t i = 0; vaudit && i < vaudit->nresults; i++)
		it->results[it->nresults++] = vaudit->results[i];
	if (vaudit)
		vaudit->nresults = 0;
	return it;
}

static void judge(struct admission_handler *h, const struct review *rv, struct view_state *state,
		  int only, struct admission_reply *out)
{
	const json_t *judged = !strcmp(rv->operation, "DELETE") ? rv->old_object : rv->object;
	const struct view_config *cfg = view_state_config(state);
	const char *op = op_label(rv->operation);
	struct engine_input in = {0};
	struct engine_report rep = {0};
	json_t *roles = NULL, *cluster_roles = NULL;
	struct admission_msg_entry *entries = NULL;
	struct admission_warnings warnings = {0}, vwarnings = {0};
	struct gv_buf vdeny = {0};
	struct view_audit_item *vaudit = NULL; /* the CEL policies' results for the reports */
	size_t nentries = 0, nreported = 0;
	bool blocked = false, vblocked;
	struct gv_err err = {0};
	enum gv_code rc;
	char *parent_kind = NULL;

	if (!judged) {
		/* A DELETE from an API server older than 1.15 (no oldObject), a bare CONNECT. */
		reply_allowed(out, rv, NULL);
		return;
	}
	if (h->namespace &&
	    (!strcmp(rv->namespace, h->namespace) ||
	     (!*rv->group && !strcmp(rv->kind, "Namespace") && !strcmp(rv->name, h->namespace)))) {
		reply_allowed(out, rv, NULL);
		return;
	}
	if (view_config_filtered(cfg, rv->group, rv->version, rv->kind, rv->subresource,
				 rv->namespace, rv->name) ||
	    view_config_user_excluded(cfg, rv->user_info)) {
		reply_allowed(out, rv, NULL);
		return;
	}
	/* Only for requests that are judged: filtered ones need no bindings. */
	if (h->roles && h->roles->lookup(h->roles->ud, rv->user_info, rv->namespace, &roles,
					 &cluster_roles, &err)) {
		reply_text(out, 503, "not ready: %s", err.msg);
		return;
	}
	out->evaluated = true;
	in.object = !strcmp(rv->operation, "DELETE") ? NULL : rv->object;
	in.old_object = rv->old_object;
	in.operation = rv->operation;
	in.namespace = rv->namespace;
	in.group = rv->group;
	in.version = rv->version;
	in.kind = rv->kind;
	in.subresource = rv->subresource;
	if (rv->subresource && *rv->subresource && h->resource_kind) {
		/* matched as the top-level resource's kind (section 2.3) */
		const json_t *res = obj_field(rv->req, "resource");
		const char *g = str_field(res, "group"), *v = str_field(res, "version");
		const char *r = str_field(res, "resource");
		if (v && r)
			parent_kind = h->resource_kind(h->resource_kind_ud, g ? g : "", v, r);
		if (parent_kind) {
			in.group = g ? g : "";
			in.version = v;
			in.kind = parent_kind;
		}
	}
	in.user_info = rv->user_info;
	in.roles = roles;
	in.cluster_roles = cluster_roles;
	in.namespace_labels = view_state_namespace_labels(state, rv->namespace);
	in.request = rv->req;
	if (h->context)
		in.hooks = h->context->open(h->context->ud, view_state_policyset(state), 0);
	rc = engine_evaluate(view_state_policyset(state), &in, ENGINE_ADMISSION, &rep, &err);
	if (h->context)
		h->context->close(h->context->ud, in.hooks);
	if (rc) {
		char *msg = gv_xasprintf("failed to create policy context: %s", err.msg);
		reply_denied(out, rv, msg);
		free(msg);
		goto out;
	}
	for (size_t i = 0; i < rep.n; i++) {
		const struct engine_response *resp = &rep.v[i];
		const char *pname = engine_policy_name(resp->policy);
		if (only >= 0 && (int)engine_policy_failure_policy(resp->policy) != only)
			continue; /* the other failure policy's webhook judges this one */
		for (size_t j = 0; j < resp->nrules; j++) {
			const struct engine_rule_result *r = &resp->rules[j];
			struct engine_decision d = engine_decide(resp->policy, r, ENGINE_ADMISSION);
			bool bad = r->status == ENGINE_FAIL || r->status == ENGINE_ERROR ||
				   r->status == ENGINE_WARN;
			blocked |= d.blocks;
			if (bad && r->action == ENGINE_ENFORCE) {
				entries = gv_xrealloc(entries, (nentries + 1) * sizeof(*entries));
				entries[nentries].policy = pname;
				entries[nentries].rule = r->rule;
				entries[nentries].message = r->message ? r->message : "";
				nentries++;
			}
			if (d.warns) {
				char *w = gv_xasprintf("policy %s.%s: %s", pname, r->rule,
						       r->message ? r->message : "");
				admission_warnings_add(&warnings, w);
				free(w);
			}
			/* Enforce results of an allowed request: for the resource layout */
			nreported += d.reported || r->action == ENGINE_ENFORCE;
			if (h->results) {
				struct view_result_labels ml = {
				    .resource_kind = rv->kind,
				    .resource_namespace = rv->namespace,
				    .resource_request_operation = op,
				    .rule_name = r->rule,
				    .rule_result = engine_status_name(r->status),
				    .rule_execution_cause = "admission_request",
				    .dry_run = rv->dry_run ? "true" : "false"};
				view_result_labels_policy(&ml, resp->policy, r->action);
				view_result_record(h->results, h->rule_time, &ml, r->seconds);
			}
		}
	}
	const json_t *emd = obj_field(judged, "metadata");
	struct admission_event_request erq = {
	    .api_version = str_field(judged, "apiVersion"),
	    .kind = str_field(judged, "kind") ? str_field(judged, "kind") : rv->kind,
	    .namespace = rv->namespace,
	    .name = str_field(emd, "name") ? str_field(emd, "name") : rv->name,
	    .uid = str_field(emd, "uid"),
	    .dry_run = rv->dry_run,
	};
	{
		struct admission_vpol_request vrq = {
		    .request = rv->req,
		    .object = in.object,
		    .old_object = rv->old_object,
		    .operation = rv->operation,
		    .kind = rv->kind,
		    .namespace = rv->namespace,
		    .op_label = op,
		    .only = only,
		    .results = h->results,
		    .events = h->events,
		    .event_object = &erq,
		};
		if (h->emit && !rv->dry_run && strcmp(rv->operation, "DELETE") &&
		    view_vpolset_count(view_state_vpols(state)))
			vrq.audit = vaudit = gv_xcalloc(1, sizeof(*vaudit));
		if (h->context && view_vpolset_count(view_state_vpols(state)))
			vrq.hooks =
			    h->context->open(h->context->ud, view_state_policyset(state), 0);
		vblocked = admission_vpol_judge(state, &vrq, &vwarnings, &vdeny);
		if (vrq.hooks)
			h->context->close(h->context->ud, vrq.hooks);
	}
	if (h->events)
		admission_events_emit(h->events, &erq, &rep, only);
	if (blocked) {
		const json_t *meta = obj_field(judged, "metadata");
		const char *kind = str_field(judged, "kind");
		const char *ns = str_field(meta, "namespace");
		char *msg = admission_denial_message(kind ? kind : rv->kind, ns ? ns : "", rv->name,
						     entries, nentries);
		if (vblocked)
			gv_buf_addf(&vdeny, "\n%s", msg);
		reply_denied_w(out, rv, vblocked ? gv_buf_str(&vdeny) : msg, &vwarnings);
		free(msg);
	} else if (vblocked) {
		reply_denied_w(out, rv, gv_buf_str(&vdeny), &vwarnings);
	} else {
		const char *uid = str_field(obj_field(judged, "metadata"), "uid");
		for (size_t i = 0; i < vwarnings.n; i++)
			admission_warnings_add(&warnings, vwarnings.v[i]);
		reply_allowed(out, rv, &warnings);
		if (h->emit && (nreported || (vaudit && vaudit->nresults)) && !rv->dry_run &&
		    strcmp(rv->operation, "DELETE") && uid && *uid)
			h->emit(h->emit_ud, report_item(rv, judged, &rep, nreported, vaudit));
	}
	view_audit_item_free(vaudit);
	if (warnings.dropped)
		gv_debug("admission: request %s: %zu warnings left out (API server limits)",
			 rv->uid, warnings.dropped);
	admission_warnings_release(&warnings);
	admission_warnings_release(&vwarnings);
	gv_buf_release(&vdeny);
	free(entries);
	engine_report_release(&rep);
out:
	free(parent_kind);
	json_decref(roles);
	json_decref(cluster_roles);
}

void admission_handle(struct admission_handler *h, const char *body, size_t len,
		      struct admission_reply *out)
{
	admission_handle_only(h, body, len, -1, out);
}

void admission_handle_only(struct admission_handler *h, const char *body, size_t len, int only,
			   struct admission_reply *out)
{
	struct timespec t0;
	struct review rv;
	struct view_state *state;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(out, 0, sizeof(*out));
	/*
	 * The review in the arena: nothing of it outlives this call (the
	 * audit item and the metrics copy what they keep)
	 */
	if (!decode(body, len, true, &rv, out))
		goto out;
	/*
	 * kyverno.io writes never wait (the write awaited may be this one), nor
	 * a Namespace's (its request names the namespace it creates)
	 */
	if (h->source->acquire_fresh && strcmp(rv.group, "kyverno.io") &&
	    (*rv.group || strcmp(rv.kind, "Namespace")))
		state = h->source->acquire_fresh(h->source->ud, rv.namespace);
	else
		state = h->source->acquire(h->source->ud);
	if (!state) {
		reply_text(out, 503, "not ready: no policy snapshot loaded yet");
		goto out;
	}
	judge(h, &rv, state, only, out);
	view_state_unref(state);
	{
		const char *const labels[] = {rv.kind, rv.namespace, op_label(rv.operation),
					      out->allowed ? "true" : "false"};
		metrics_inc(h->requests, labels);
		metrics_observe(h->duration, labels, seconds_since(&t0));
	}
	gv_debug("admission: %s %s %s/%s/%s: %s%s (%.3f ms)", rv.uid, rv.operation, rv.kind,
		 rv.namespace, rv.name, out->allowed ? "allowed" : "denied",
		 out->evaluated ? "" : " without evaluation", seconds_since(&t0) * 1e3);
out:
	gv_json_arena_release(rv.root);
}

/* ---- POST /validate-policy ---- */

/* The PolicyException versions Kyverno has served (kyverno.io/v2alpha1 to v2). */
static const char *const exception_versions[] = {"kyverno.io/v2", "kyverno.io/v2beta1",
						 "kyverno.io/v2alpha1"};

/*
 * An exception that applies in background scans (spec.background, default
 * true) may not match on who made a request: a scan has no user (Kyverno's
 * MatchResources.ValidateNoUserInfo: "spec.match.any[0]: Forbidden: invalid
 * variables").
 */
static bool exception_background_valid(const json_t *doc, struct gv_err *err)
{
	static const char *const lists[] = {"any", "all"};
	static const char *const who[] = {"subjects", "roles", "clusterRoles"};
	const json_t *spec = json_object_get(doc, "spec");
	const json_t *bg = json_object_get(spec, "background");
	const json_t *match = json_object_get(spec, "match"), *f;
	size_t i;

	if (json_is_false(bg))
		return true;
	for (size_t l = 0; l < GV_ARRAY_LEN(lists); l++) {
		json_array_foreach(json_object_get(match, lists[l]), i, f)
		{
			for (size_t k = 0; k < GV_ARRAY_LEN(who); k++) {
				if (!json_array_size(json_object_get(f, who[k])))
					continue;
				char at[48];
				snprintf(at, sizeof(at), "/spec/match/%s/%zu", lists[l], i);
				gv_err_setp(err, GV_EINVAL, at, "Forbidden: invalid variables");
				return false;
			}
		}
	}
	return true;
}

/* Compiles a PolicyException; false with err set when it is malformed. */
static bool exception_valid(const json_t *doc, struct gv_err *err)
{
	const char *api = str_field(doc, "apiVersion");
	struct engine_exception *e;
	bool known = false, ok;

	for (size_t i = 0; api && i < GV_ARRAY_LEN(exception_versions); i++)
		known |= !strcmp(api, exception_versions[i]);
	if (!known) {
		gv_err_setp(err, GV_EINVAL, "/apiVersion",
			    "unsupported apiVersion \"%s\" for PolicyException (want "
			    "kyverno.io/v2, kyverno.io/v2beta1 or kyverno.io/v2alpha1)",
			    api ? api : "");
		return false;
	}
	e = engine_exception_compile(doc, err);
	ok = e != NULL;
	engine_exception_free(e);
	return ok && exception_background_valid(doc, err);
}

void admission_handle_policy(struct admission_handler *h, const char *body, size_t len,
			     struct admission_reply *out)
{
	struct review rv;
	struct gv_err err = {0};
	const char *kind, *api;
	bool valid = true;
	struct admission_warnings w = {0};

	memset(out, 0, sizeof(*out));
	/* on the heap: source->written may keep the policy */
	if (!decode(body, len, false, &rv, out))
		goto out;
	kind = str_field(rv.object, "kind");
	api = str_field(rv.object, "apiVersion");
	if (!rv.object || !strcmp(rv.operation, "DELETE") || !kind) {
		reply_allowed(out, &rv, NULL);
		goto out;
	}
	if (!strcmp(kind, "ClusterPolicy") || !strcmp(kind, "Policy")) {
		struct engine_policy *p = engine_policy_compile(rv.object, &err);
		valid = p != NULL;
		if (valid && h->kind_known)
			valid = admission_policy_kinds_known(rv.object, h->kind_known,
							     h->kind_known_ud, &err);
		if (valid) {
			/* mutate/generate/verifyImages: accepted, said once, never a pass */
			char *note = engine_policy_unsupported_note(p);
			if (note)
				admission_warnings_add(&w, note);
			free(note);
			admission_policy_deprecations(rv.object, &w);
		}
		engine_policy_unref(p);
	} else if (!strcmp(kind, "PolicyException") && api && !strncmp(api, "kyverno.io/", 11)) {
		valid = exception_valid(rv.object, &err);
	} else if (!strcmp(kind, "GlobalContextEntry") && api && !strncmp(api, "kyverno.io/", 11)) {
		valid = admission_gctx_valid(rv.object, &err);
	} else if (api && !strncmp(api, "policies.kyverno.io/", 20)) {
		valid = admission_vpol_valid(rv.object, &err);
		if (!valid) {
			char msg[sizeof(err.pointer) + sizeof(err.msg) + 4];
			char *m = gv_xasprintf("%s %s: %s", kind, rv.name,
					       gv_err_str(&err, msg, sizeof(msg)));
			reply_denied(out, &rv, m);
			free(m);
			out->evaluated = true;
			goto out;
		}
	}
	if (valid) {
		reply_allowed(out, &rv, &w);
		if (h->source->written && !rv.dry_run)
			h->source->written(h->source->ud, rv.object, rv.old_object);
	} else if (strcmp(kind, "PolicyException") && strcmp(kind, "GlobalContextEntry")) {
		/*
		 * policies: the engine's message as is; a value outside a CRD enum
		 * or of the wrong type gets the field path in front, as the API
		 * server's schema validation writes it ("spec.x: Unsupported
		 * value: ...").
		 */
		if (err.pointer[0] && (!strncmp(err.msg, "Unsupported value:", 18) ||
				       !strncmp(err.msg, "Invalid value:", 14))) {
			struct gv_buf m = {0};
			for (const char *c = err.pointer + 1; *c; c++)
				gv_buf_addc(&m, *c == '/' ? '.' : *c);
			gv_buf_addf(&m, ": %s", err.msg);
			reply_denied(out, &rv, gv_buf_str(&m));
			gv_buf_release(&m);
		} else if (strstr(err.pointer, "/podSecurity")) {
			/* Kyverno's field path in front:
			 * spec.rules[0].podSecurity.exclude[0].values */
			struct gv_buf m = {0};
			admission_field_path(&m, err.pointer);
			gv_buf_addf(&m, ": %s", err.msg);
			reply_denied(out, &rv, gv_buf_str(&m));
			gv_buf_release(&m);
		} else {
			reply_denied(out, &rv, err.msg);
		}
	} else {
		/* "<field path>: <reason>", the path into the submitted object as Kyverno writes it
		 */
		struct gv_buf m = {0};
		admission_field_path(&m, err.pointer);
		gv_buf_addf(&m, "%s%s", m.len ? ": " : "", err.msg);
		reply_denied(out, &rv, gv_buf_str(&m));
		gv_buf_release(&m);
	}
	out->evaluated = true;
	gv_debug("admission: policy %s %s %s/%s: %s", rv.uid, rv.operation, kind, rv.name,
		 out->allowed ? "allowed" : "denied");
out:
	admission_warnings_release(&w);
	json_decref(rv.root);
}
