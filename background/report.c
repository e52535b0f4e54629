/*
 * report.c - results into the PolicyReport model (report.h): entries
 * converted from the engine's and admission's results, parsed from and
 * rendered into report objects, and the changes to the model (replace,
 * upsert, deletions, retention, pruning). The model, rendering and the
 * writer are in the other report_*.c files (report_int.h).
 */
#include "background/report_int.h"

#include <stdio.h>

#include "view/view.h"
#include "background/vpscan.h"
#include "common/banned.h"

/* ---- entries: conversion in, parsing, rendering ---- */

/* The severity the CRD allows (interned), or NULL (engine_report_severity). */
static const char *severity_norm(struct report_set *rs, const char *s)
{
	const char *v = engine_report_severity(s);

	return v ? report_intern(rs, v) : NULL;
}

static const char *category_norm(struct report_set *rs, const char *s)
{
	char *b;
	const char *v;

	if (!s || !*s)
		return NULL;
	if (strlen(s) <= REPORT_MAX_CATEGORY)
		return report_intern(rs, s);
	b = bounded_dup(s, REPORT_MAX_CATEGORY);
	v = report_intern(rs, b);
	free(b);
	return v;
}

/*
 * The message a result's properties give (kyverno-semantics.md 8.6: a
 * kyverno.io rule's reportProperties; cel-semantics.md 7: also a CEL
 * policy's audit annotations): "<result>Message" for the result reported
 * (passMessage, failMessage, warnMessage, errorMessage, skipMessage), else
 * "message"; NULL when neither (the engine's message stays).
 */
static const char *message_override(const struct report_entry *in)
{
	return engine_report_message(in->properties, in->result);
}

/* e's message: s cut to REPORT_MAX_MESSAGE, interned with report_options.intern_messages. */
static void message_set(struct report_set *rs, struct rentry *e, const char *s)
{
	char *m;

	if (!rs->opt.intern_messages) {
		e->message = bounded_dup(s, REPORT_MAX_MESSAGE);
		return;
	}
	e->pooled = true;
	if (strlen(s) <= REPORT_MAX_MESSAGE) {
		e->message = (char *)report_intern(rs, s);
		return;
	}
	m = bounded_dup(s, REPORT_MAX_MESSAGE);
	e->message = (char *)report_intern(rs, m);
	free(m);
}

static void entry_in(struct report_set *rs, const struct report_entry *in, const char *policy,
		     struct rentry *e)
{
	const char *override = message_override(in);

	memset(e, 0, sizeof(*e));
	e->policy = report_intern(rs, policy);
	e->rule = report_intern(rs, in->rule);
	e->source = report_intern(rs, in->source ? in->source : report_managed_by(rs));
	e->severity = severity_norm(rs, in->severity);
	e->category = category_norm(rs, in->category);
	e->process = report_intern(rs, report_process_name(in->process));
	message_set(rs, e, override ? override : str_or(in->message, ""));
	e->result = in->result;
	e->scored = in->scored;
	e->seconds = in->seconds;
	e->nanos = in->nanos;
	if (json_is_object(in->properties)) {
		const char *key;
		json_t *v;

		json_object_foreach((json_t *)in->properties, key, v)
		{
			if (!json_is_string(v) || !strcmp(key, "process"))
				continue;
			if (!e->props)
				e->props = json_object();
			char *t = bounded_dup(json_string_value(v), REPORT_MAX_MESSAGE);

			json_object_set_new(e->props, key, jstring(t));
			free(t);
		}
	}
}

static void rinfo_in(struct report_set *rs, const struct report_resource *res, struct rinfo *ri)
{
	ri->uid = res->uid;
	ri->api_version = report_intern(rs, str_or(res->api_version, ""));
	ri->kind = report_intern(rs, str_or(res->kind, ""));
	ri->namespace = report_intern(rs, str_or(res->namespace, ""));
	ri->name = str_or(res->name, "");
}

bool report_status_parse(const char *s, enum engine_status *out)
{
	static const enum engine_status all[] = {ENGINE_PASS, ENGINE_FAIL, ENGINE_WARN,
						 ENGINE_ERROR, ENGINE_SKIP};

	for (size_t i = 0; s && i < GV_ARRAY_LEN(all); i++) {
		if (!strcmp(s, engine_status_name(all[i]))) {
			*out = all[i];
			return true;
		}
	}
	return false;
}

bool report_entry_parse(struct report_set *rs, const json_t *r, const json_t *scope,
			struct rentry *e, struct rinfo *ri)
{
	const json_t *res = json_array_get(json_object_get(r, "resources"), 0);
	const json_t *ts = json_object_get(r, "timestamp");
	const json_t *props = json_object_get(r, "properties");
	const json_t *scored = json_object_get(r, "scored");
	const char *policy = jstr(r, "policy"), *key;
	enum engine_status st;
	json_t *v;

	if (!policy || !report_status_parse(jstr(r, "result"), &st))
		return false;
	memset(e, 0, sizeof(*e));
	e->policy = report_intern(rs, policy);
	e->rule = report_intern(rs, str_or(jstr(r, "rule"), ""));
	e->source = report_intern(rs, jstr(r, "source"));
	e->severity = severity_norm(rs, jstr(r, "severity"));
	e->category = category_norm(rs, jstr(r, "category"));
	message_set(rs, e, str_or(jstr(r, "message"), ""));
	e->result = st;
	e->scored = json_is_boolean(scored) ? json_is_true(scored) : true;
	e->seconds = json_integer_value(json_object_get(ts, "seconds"));
	e->nanos = (int32_t)json_integer_value(json_object_get(ts, "nanos"));
	json_object_foreach((json_t *)props, key, v)
	{
		if (!json_is_string(v))
			continue;
		if (!strcmp(key, "process")) {
			e->process = report_intern(rs, json_string_value(v));
			continue;
		}
		if (!e->props)
			e->props = json_object();
		json_object_set(e->props, key, v);
	}
	if (!res && json_is_object(scope))
		res = scope;
	ri->uid = str_or(jstr(res, "uid"), "");
	ri->api_version = report_intern(rs, str_or(jstr(res, "apiVersion"), ""));
	ri->kind = report_intern(rs, str_or(jstr(res, "kind"), ""));
	ri->namespace = report_intern(rs, str_or(jstr(res, "namespace"), ""));
	ri->name = str_or(jstr(res, "name"), "");
	return true;
}

json_t *report_entry_render(const struct rnode *nd, const struct rentry *e, bool with_resource)
{
	json_t *o = json_object(), *ts = json_object();

	if (e->source)
		json_object_set_new(o, "source", json_string(e->source));
	json_object_set_new(o, "policy", jstring(e->policy));
	if (*e->rule)
		json_object_set_new(o, "rule", jstring(e->rule));
	if (e->category)
		json_object_set_new(o, "category", jstring(e->category));
	if (e->severity)
		json_object_set_new(o, "severity", json_string(e->severity));
	json_object_set_new(ts, "seconds", json_integer(e->seconds));
	json_object_set_new(ts, "nanos", json_integer(e->nanos));
	json_object_set_new(o, "timestamp", ts);
	json_object_set_new(o, "result", json_string(engine_status_name(e->result)));
	json_object_set_new(o, "scored", json_boolean(e->scored));
	if (*e->message)
		json_object_set_new(o, "message", jstring(e->message));
	if (with_resource && (*nd->uid || *nd->kind || *nd->name)) {
		json_t *r = json_object(), *list = json_array();

		json_object_set_new(r, "apiVersion", jstring(nd->api_version));
		json_object_set_new(r, "kind", jstring(nd->kind));
		if (*nd->namespace)
			json_object_set_new(r, "namespace", jstring(nd->namespace));
		json_object_set_new(r, "name", jstring(nd->name));
		json_object_set_new(r, "uid", jstring(nd->uid));
		json_array_append_new(list, r);
		json_object_set_new(o, "resources", list);
	}
	if (e->process || e->props) {
		json_t *p = json_object();

		if (e->props)
			json_object_update(p, e->props);
		if (e->process)
			json_object_set_new(p, "process", jstring(e->process));
		json_object_set_new(o, "properties", p);
	}
	return o;
}

/* ---- changes to the model ---- */

/*
 * The results of (ri, policy) in g become e[0..n) (ownership of the
 * entries moves here). Results equal to the recorded ones keep their
 * timestamps; nothing changes (and g stays in sync) when all are equal.
 */
static void model_replace(struct report_set *rs, struct rgroup *g, const struct rinfo *ri,
			  const char *policy, struct rentry *e, size_t n)
{
	struct rnode *nd = gv_map_get(&g->model.nodes, ri->uid);
	size_t old = 0, same = 0;

	for (size_t i = 0; nd && i < nd->n; i++)
		old += nd->v[i].policy == policy;
	for (size_t i = 0; i < n; i++) {
		struct rentry *o = report_rnode_find(nd, policy, e[i].rule);
		bool dup = false;

		for (size_t j = i + 1; j < n; j++)
			dup |= e[j].rule == e[i].rule;
		if (dup) {
			/* the last result of a rule counts */
			report_rentry_release(&e[i]);
			e[i].rule = NULL;
			continue;
		}
		if (o && report_rentry_same(o, &e[i])) {
			e[i].seconds = o->seconds;
			e[i].nanos = o->nanos;
			same++;
		}
	}
	{
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (e[i].rule)
				e[k++] = e[i];
		n = k;
	}
	if (same == n && old == n && (!n || report_rnode_same_info(nd, ri))) {
		for (size_t i = 0; i < n; i++)
			report_rentry_release(&e[i]);
		return;
	}
	report_group_touch(g);
	if (nd) {
		for (size_t i = nd->n; i-- > 0;)
			if (nd->v[i].policy == policy)
				report_rnode_remove(&g->model, nd, i);
	}
	for (size_t i = 0; i < n; i++)
		report_gstate_set(&g->model, ri, &e[i]);
	if (nd && !n)
		report_gstate_drop_if_empty(&g->model, nd);
}

void report_model_upsert(struct report_set *rs, struct rgroup *g, const struct rinfo *ri,
			 struct rentry *e, bool newer_wins)
{
	struct rnode *nd = gv_map_get(&g->model.nodes, ri->uid);
	struct rentry *o = report_rnode_find(nd, e->policy, e->rule);

	if (o && ((report_rentry_same(o, e) && report_rnode_same_info(nd, ri)) ||
		  (newer_wins && report_ts_newer(o, e)))) {
		report_rentry_release(e);
		return;
	}
	report_group_touch(g);
	report_gstate_set(&g->model, ri, e);
}

char *report_base_of(const struct report_set *rs, const char *ns, const char *uid,
		     const char *policy)
{
	if (rs->opt.resource)
		return gv_xstrdup(uid);
	return report_base_name(rs->opt.split, ns, policy);
}

static enum gv_code check_entries(const struct report_resource *res, const struct report_entry *e,
				  size_t n, bool need_policy, struct gv_err *err)
{
	if (!res->uid || !*res->uid)
		return gv_err_set(err, GV_EINVAL, "report: %s %s: no uid", str_or(res->kind, "?"),
				  str_or(res->name, "?"));
	for (size_t i = 0; i < n; i++) {
		/* a ValidatingPolicy's result has rule "" (left out of the entry, as Kyverno) */
		if (!e[i].rule || (!*e[i].rule && !e[i].source))
			return gv_err_set(err, GV_EINVAL, "report: result %zu has no rule", i);
		if (need_policy && (!e[i].policy || !*e[i].policy))
			return gv_err_set(err, GV_EINVAL, "report: result %zu has no policy", i);
		if (e[i].result > ENGINE_SKIP)
			return gv_err_set(err, GV_EINVAL, "report: result %zu: bad status", i);
	}
	return GV_OK;
}

enum gv_code report_replace(struct report_set *rs, const struct report_resource *res,
			    const char *policy, const struct report_entry *e, size_t n,
			    struct gv_err *err)
{
	struct rentry *v;
	struct rinfo ri;
	struct rgroup *g;
	struct jrec *j;
	char *base;
	enum gv_code rc;

	rc = check_entries(res, e, n, false, err);
	if (rc)
		return rc;
	if (!policy || !*policy)
		return gv_err_set(err, GV_EINVAL, "report: no policy");
	if ((j = report_journal_add(rs, J_REPLACE))) {
		j->policy = report_intern(rs, policy);
		report_resource_copy(rs, &j->res, res);
		j->e = report_entries_copy(rs, e, n);
		j->n = n;
	}
	rinfo_in(rs, res, &ri);
	base = report_base_of(rs, ri.namespace, ri.uid, policy);
	g = report_group_find(rs, ri.namespace, base);
	if (!g && !n) {
		free(base);
		return GV_OK;
	}
	g = report_group_get(rs, ri.namespace, base);
	free(base);
	v = gv_xcalloc(n ? n : 1, sizeof(*v));
	{
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (report_allowed(rs, e[i].result))
				entry_in(rs, &e[i], policy, &v[k++]);
		model_replace(rs, g, &ri, report_intern(rs, policy), v, k);
	}
	free(v);
	return GV_OK;
}

enum gv_code report_upsert(struct report_set *rs, const struct report_resource *res,
			   const struct report_entry *e, size_t n, struct gv_err *err)
{
	struct rinfo ri;
	struct jrec *j;
	enum gv_code rc;

	rc = check_entries(res, e, n, true, err);
	if (rc)
		return rc;
	if ((j = report_journal_add(rs, J_UPSERT))) {
		report_resource_copy(rs, &j->res, res);
		j->e = report_entries_copy(rs, e, n);
		j->n = n;
	}
	rinfo_in(rs, res, &ri);
	for (size_t i = 0; i < n; i++) {
		char *base = report_base_of(rs, ri.namespace, ri.uid, e[i].policy);
		struct rgroup *g;
		struct rentry re;

		if (!report_allowed(rs, e[i].result)) {
			/* left out: it takes the place of the result it replaces */
			const char *pol = report_intern(rs, e[i].policy),
				   *rule = report_intern(rs, e[i].rule);
			struct rnode *nd;

			g = report_group_find(rs, ri.namespace, base);
			free(base);
			nd = g ? gv_map_get(&g->model.nodes, ri.uid) : NULL;
			if (report_rnode_find(nd, pol, rule)) {
				report_group_touch(g);
				report_gstate_remove(&g->model, ri.uid, pol, rule);
			}
			continue;
		}
		g = report_group_get(rs, ri.namespace, base);
		free(base);
		entry_in(rs, &e[i], e[i].policy, &re);
		report_model_upsert(rs, g, &ri, &re, false);
	}
	return GV_OK;
}

static void entry_from_engine(const struct engine_policy *p, const char *ref, const char *rule,
			      enum engine_status st, const char *msg, enum report_process proc,
			      int64_t seconds, int32_t nanos, struct report_entry *e)
{
	e->policy = ref;
	e->rule = rule;
	e->result = report_status(p, st);
	e->message = msg;
	e->severity = engine_policy_annotation(p, "policies.kyverno.io/severity");
	e->category = engine_policy_annotation(p, "policies.kyverno.io/category");
	e->scored = report_policy_scored(p);
	e->seconds = seconds;
	e->nanos = nanos;
	e->process = proc;
}

/*
 * A result's own properties: the rule's reportProperties and "exceptions"
 * (the names of the PolicyExceptions that made it a skip, which win over
 * a reportProperty of that name). New reference, or NULL when none.
 */
static json_t *result_props(const json_t *rule_props, const char *exceptions)
{
	json_t *o;

	if (!json_object_size(rule_props) && !exceptions)
		return NULL;
	o = json_is_object(rule_props) ? json_copy((json_t *)rule_props) : json_object();
	if (exceptions)
		json_object_set_new(o, "exceptions", json_string(exceptions));
	return o;
}

enum gv_code report_put_response(struct report_set *rs, const struct report_resource *res,
				 const struct engine_response *resp, enum engine_mode mode,
				 int64_t seconds, int32_t nanos, struct gv_err *err)
{
	enum report_process proc =
	    mode == ENGINE_BACKGROUND ? REPORT_BACKGROUND_SCAN : REPORT_ADMISSION_REVIEW;
	struct report_entry *e = gv_xcalloc(resp->nrules ? resp->nrules : 1, sizeof(*e));
	char *ref = report_policy_ref(resp->policy);
	size_t n = 0;
	enum gv_code rc;

	json_t **props = gv_xcalloc(resp->nrules ? resp->nrules : 1, sizeof(*props));

	if ((mode == ENGINE_BACKGROUND && !engine_policy_background(resp->policy)) ||
	    report_policy_disabled(resp->policy)) {
		/* never scanned: its admission results are not the scan's to replace */
		free(ref);
		free(e);
		free(props);
		return GV_OK;
	}
	for (size_t i = 0; i < resp->nrules; i++) {
		const struct engine_rule_result *r = &resp->rules[i];

		if (!engine_decide(resp->policy, r, mode).reported)
			continue;
		entry_from_engine(resp->policy, ref, r->rule, r->status, r->message, proc, seconds,
				  nanos, &e[n]);
		e[n].properties = props[n] = result_props(r->properties, r->exceptions);
		n++;
	}
	if (mode == ENGINE_BACKGROUND)
		rc = report_replace(rs, res, ref, e, n, err);
	else
		rc = report_upsert(rs, res, e, n, err);
	for (size_t i = 0; i < n; i++)
		json_decref(props[i]);
	free(props);
	free(ref);
	free(e);
	return rc;
}

enum gv_code report_put_admission(struct report_set *rs, const struct view_audit_item *it,
				  struct gv_err *err)
{
	struct report_resource res = {it->api_version, it->kind, it->namespace, it->name, it->uid};
	size_t cap = it->nresults ? it->nresults : 1, n = 0;
	struct report_entry *e = gv_xcalloc(cap, sizeof(*e));
	char **refs = gv_xcalloc(cap, sizeof(*refs));
	json_t **props = gv_xcalloc(cap, sizeof(*props));
	enum gv_code rc;

	for (size_t i = 0; i < it->nresults; i++) {
		const struct view_audit_result *r = &it->results[i];

		if (r->vpol) {
			/* a CEL policy's: the fields its background scan writes (vpscan.c) */
			const char *sc = vpol_annotation(r->vpol, "policies.kyverno.io/scored");
			if (json_object_get(
				json_object_get(json_object_get(vpol_doc(r->vpol), "metadata"),
						"labels"),
				REPORT_LABEL_DISABLED))
				continue;
			refs[n] = vpscan_policy_ref(r->vpol);
			e[n] = (struct report_entry){
			    .policy = refs[n],
			    .rule = r->rule,
			    .result = sc && !strcmp(sc, "false") && r->status == ENGINE_FAIL
					  ? ENGINE_WARN
					  : r->status,
			    .message = r->message,
			    .severity = vpol_annotation(r->vpol, "policies.kyverno.io/severity"),
			    .category = vpol_annotation(r->vpol, "policies.kyverno.io/category"),
			    .scored = !(sc && !strcmp(sc, "false")),
			    .seconds = it->timestamp,
			    /* cel-semantics.md 7: by the policy's background setting */
			    .process = vpscan_background(r->vpol) ? REPORT_BACKGROUND_SCAN
								  : REPORT_ADMISSION_REVIEW,
			    .source = vpscan_source(r->vpol),
			    .properties = r->properties};
			n++;
			continue;
		}
		/* Enforce results: the resource layout reports them, as Kyverno */
		if ((r->enforce && !rs->opt.resource) || report_policy_disabled(r->policy))
			continue;
		refs[n] = report_policy_ref(r->policy);
		entry_from_engine(r->policy, refs[n], r->rule, r->status, r->message,
				  REPORT_ADMISSION_REVIEW, it->timestamp, 0, &e[n]);
		e[n].properties = props[n] = result_props(r->properties, r->exceptions);
		n++;
	}
	rc = n ? report_upsert(rs, &res, e, n, err) : GV_OK;
	for (size_t i = 0; i < n; i++) {
		free(refs[i]);
		json_decref(props[i]);
	}
	free(refs);
	free(props);
	free(e);
	return rc;
}

/*
 * Removes, in every group that `applies` accepts, the results `match`
 * selects. Returns the number removed.
 */
struct sweep {
	bool (*applies)(const struct report_set *rs, const struct rgroup *g, const void *arg);
	bool (*match)(const struct rnode *nd, const struct rentry *e, const void *arg);
	const void *arg;
};

static size_t group_sweep(struct report_set *rs, struct rgroup *g, const struct sweep *sw)
{
	struct rnode **nodes;
	size_t nn, hits = 0;

	nodes = report_gstate_nodes(&g->model, &nn);
	for (size_t i = 0; i < nn; i++)
		for (size_t j = 0; j < nodes[i]->n; j++)
			hits += sw->match(nodes[i], &nodes[i]->v[j], sw->arg);
	if (hits) {
		report_group_touch(g);
		for (size_t i = 0; i < nn; i++) {
			struct rnode *nd = nodes[i];

			for (size_t j = nd->n; j-- > 0;)
				if (sw->match(nd, &nd->v[j], sw->arg))
					report_rnode_remove(&g->model, nd, j);
			report_gstate_drop_if_empty(&g->model, nd);
		}
	}
	free(nodes);
	return hits;
}

static size_t sweep_all(struct report_set *rs, const struct sweep *sw)
{
	size_t hits = 0;

	/* sweeps remove results, never groups: the map can be walked directly */
	for (size_t i = 0; i < rs->groups.cap; i++) {
		struct rgroup *g = rs->groups.v[i].val;

		if (rs->groups.v[i].key && (!sw->applies || sw->applies(rs, g, sw->arg)))
			hits += group_sweep(rs, g, sw);
	}
	return hits;
}

struct sweep_arg {
	const char *policy; /* interned */
	const char *rule;   /* interned */
	const char *process;
	const struct gv_map *keep; /* report_retain: uids */
	int64_t since;		   /* report_retain_since: results this new are kept */
	const char *group, *kind;  /* report_retain_objects */
	const char *ns;		   /* report_retain_objects: NULL = every namespace */
};

/* Split layout: only the groups of that policy can hold its results. */
static bool applies_policy(const struct report_set *rs, const struct rgroup *g, const void *arg)
{
	const struct sweep_arg *a = arg;
	char *base;
	bool ok;

	if (!rs->opt.split || rs->opt.resource)
		return true;
	base = report_base_of(rs, g->ns, NULL, a->policy);
	ok = !strcmp(base, g->base);
	free(base);
	return ok;
}

static bool match_policy(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct sweep_arg *a = arg;

	(void)nd;
	return e->policy == a->policy && (!a->rule || e->rule == a->rule) &&
	       (!a->process || e->process == a->process);
}

static bool match_not_kept(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct sweep_arg *a = arg;

	return e->policy == a->policy && !gv_map_get(a->keep, nd->uid) &&
	       !(a->since && e->seconds > a->since);
}

void report_delete_object(struct report_set *rs, const char *ns, const char *uid)
{
	struct jrec *j;

	if (!uid)
		return;
	if ((j = report_journal_add(rs, J_DELETE_OBJECT))) {
		j->ns = report_intern(rs, ns);
		j->uid = report_intern(rs, uid);
	}
	for (size_t i = 0; i < rs->groups.cap; i++) {
		struct rgroup *g = rs->groups.v[i].val;
		struct rnode *nd;

		if (!rs->groups.v[i].key || (ns && strcmp(ns, g->ns)))
			continue;
		if (!(nd = gv_map_get(&g->model.nodes, uid)))
			continue;
		report_group_touch(g);
		g->model.nresults -= nd->n;
		report_rnode_free(gv_map_del(&g->model.nodes, uid));
	}
}

void report_delete_policy(struct report_set *rs, const char *policy)
{
	struct sweep_arg a = {.policy = report_intern(rs, policy)};
	struct sweep sw = {applies_policy, match_policy, &a};

	if (policy)
		sweep_all(rs, &sw);
}

void report_delete_rule(struct report_set *rs, const char *policy, const char *rule)
{
	struct sweep_arg a = {.policy = report_intern(rs, policy), .rule = report_intern(rs, rule)};
	struct sweep sw = {applies_policy, match_policy, &a};

	if (policy && rule)
		sweep_all(rs, &sw);
}

void report_delete_background(struct report_set *rs, const char *policy)
{
	struct sweep_arg a = {.policy = report_intern(rs, policy),
			      .process =
				  report_intern(rs, report_process_name(REPORT_BACKGROUND_SCAN))};
	struct sweep sw = {applies_policy, match_policy, &a};

	if (policy)
		sweep_all(rs, &sw);
}

void report_retain(struct report_set *rs, const char *policy, const char *const *uids, size_t n)
{
	report_retain_since(rs, policy, uids, n, 0);
}

/* report_retain_objects: groups of the namespace asked. */
static bool applies_ns(const struct report_set *rs, const struct rgroup *g, const void *arg)
{
	const struct sweep_arg *a = arg;

	(void)rs;
	return !a->ns || !strcmp(a->ns, g->ns);
}

/* report_retain_objects: a result, of any policy, about a gone object of the kind. */
static bool match_gone(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct sweep_arg *a = arg;
	const char *slash = strchr(nd->api_version, '/');
	size_t glen = slash ? (size_t)(slash - nd->api_version) : 0;

	return !strcmp(nd->kind, a->kind) && strlen(a->group) == glen &&
	       !strncmp(nd->api_version, a->group, glen) && !gv_map_get(a->keep, nd->uid) &&
	       !(a->since && e->seconds > a->since);
}

/* The journal copy of a retain's uid list (NULL entries left out). */
static void journal_uids(struct report_set *rs, struct jrec *j, const char *const *uids, size_t n)
{
	j->uids = gv_xcalloc(n ? n : 1, sizeof(*j->uids));
	for (size_t i = 0; i < n; i++)
		if (uids[i])
			j->uids[j->nuids++] = report_intern(rs, uids[i]);
}

/* Sweeps with keep holding uids (the sweep's argument points at keep). */
static void sweep_kept(struct report_set *rs, struct sweep *sw, struct gv_map *keep,
		       const char *const *uids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (uids[i])
			gv_map_put(keep, uids[i], (void *)uids[i]);
	sweep_all(rs, sw);
	gv_map_release(keep);
}

void report_retain_objects(struct report_set *rs, const char *group, const char *kind,
			   const char *ns, const char *const *uids, size_t n, int64_t since)
{
	struct gv_map keep = {0};
	struct sweep_arg a = {
	    .keep = &keep, .since = since, .group = group ? group : "", .kind = kind, .ns = ns};
	struct sweep sw = {applies_ns, match_gone, &a};
	struct jrec *j;

	if (!kind || !*kind)
		return;
	if ((j = report_journal_add(rs, J_RETAIN_OBJECTS))) {
		j->res.api_version = report_intern(rs, a.group);
		j->res.kind = report_intern(rs, kind);
		j->ns = report_intern(rs, ns);
		j->since = since;
		journal_uids(rs, j, uids, n);
	}
	sweep_kept(rs, &sw, &keep, uids, n);
}

void report_retain_since(struct report_set *rs, const char *policy, const char *const *uids,
			 size_t n, int64_t since)
{
	struct gv_map keep = {0};
	struct sweep_arg a = {.policy = report_intern(rs, policy), .keep = &keep, .since = since};
	struct sweep sw = {applies_policy, match_not_kept, &a};
	struct jrec *j;

	if (!policy)
		return;
	if ((j = report_journal_add(rs, J_RETAIN))) {
		j->policy = report_intern(rs, policy);
		j->since = since;
		journal_uids(rs, j, uids, n);
	}
	sweep_kept(rs, &sw, &keep, uids, n);
}

struct prune_arg {
	struct gv_map policies; /* interned ref -> const struct engine_policy */
	const char *background;
	const char *src_vpol, *src_vap; /* interned sources of CEL results */
	struct gv_map vpol, vap;	/* interned ref -> const struct report_live */
};

static bool match_pruned(const struct rnode *nd, const struct rentry *e, const void *arg)
{
	const struct prune_arg *a = arg;
	const struct engine_policy *p;
	size_t nr;

	(void)nd;
	if (e->source && (e->source == a->src_vpol || e->source == a->src_vap)) {
		const struct report_live *l =
		    gv_map_get(e->source == a->src_vpol ? &a->vpol : &a->vap, e->policy);
		return !l || (!l->background && e->process == a->background);
	}
	p = gv_map_get(&a->policies, e->policy);
	if (!p)
		return true;
	if (!engine_policy_background(p) && e->process == a->background)
		return true;
	nr = engine_policy_rule_count(p);
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(engine_policy_rule_name(p, i), e->rule))
			return false;
	return true;
}

size_t report_prune(struct report_set *rs, const struct engine_policyset *set)
{
	return report_prune_live(rs, set, NULL, 0);
}

size_t report_prune_live(struct report_set *rs, const struct engine_policyset *set,
			 const struct report_live *live, size_t nlive)
{
	struct prune_arg a = {.background =
				  report_intern(rs, report_process_name(REPORT_BACKGROUND_SCAN)),
			      .src_vpol = report_intern(rs, REPORT_SOURCE_VPOL),
			      .src_vap = report_intern(rs, REPORT_SOURCE_VAP)};
	struct sweep sw = {NULL, match_pruned, &a};
	size_t n = set ? engine_policyset_count(set) : 0, hits;

	for (size_t i = 0; i < nlive; i++) {
		const char *src = report_intern(rs, live[i].source);

		if (src == a.src_vpol || src == a.src_vap)
			gv_map_put(src == a.src_vpol ? &a.vpol : &a.vap,
				   report_intern(rs, live[i].ref), (void *)&live[i]);
	}

	for (size_t i = 0; i < n; i++) {
		const struct engine_policy *p = engine_policyset_get(set, i);
		char *ref = report_policy_ref(p);

		gv_map_put(&a.policies, report_intern(rs, ref), (void *)p);
		free(ref);
	}
	hits = sweep_all(rs, &sw);
	gv_map_release(&a.policies);
	gv_map_release(&a.vpol);
	gv_map_release(&a.vap);
	return hits;
}
