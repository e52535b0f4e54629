/*
 * vpscan.c - CEL policies in background scans (vpscan.h).
 */
#include "background/vpscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/log.h"
#include "common/banned.h"

/* ---- policies ---- */

const char *vpscan_source(const struct vpol_policy *p)
{
	return vpol_kind(p) == VPOL_VAP ? REPORT_SOURCE_VAP : REPORT_SOURCE_VPOL;
}

char *vpscan_policy_ref(const struct vpol_policy *p)
{
	const char *ns = vpol_namespace(p);

	return ns && *ns ? gv_xasprintf("%s/%s", ns, vpol_name(p)) : gv_xstrdup(vpol_name(p));
}

char *vpscan_state_key(const struct vpol_policy *p)
{
	const char *ns = vpol_namespace(p);

	if (ns && *ns)
		return gv_xasprintf("%s.%s.%s", vpol_kind_name(p), ns, vpol_name(p));
	return gv_xasprintf("%s.%s", vpol_kind_name(p), vpol_name(p));
}

bool vpscan_background(const struct vpol_policy *p)
{
	if (vpol_kind(p) == VPOL_VAP)
		return true;
	return view_vpol_background(p) && !vpol_json_mode(p);
}

uint64_t vpscan_fingerprint(const struct vpol_policy *p)
{
	return scan_doc_fingerprint(vpol_kind_name(p), vpol_namespace(p), vpol_name(p),
				    vpol_doc(p));
}

bool vpscan_reads_outside(const struct vpol_policy *p)
{
	static const char *const libs[] = {"resource.", "http.",  "globalContext.", "image.",
					   "time.now",	"random", "x509.",	    "imagedata."};
	char *text = json_dumps(json_object_get(vpol_doc(p), "spec"), JSON_COMPACT);
	bool hit = false;

	for (size_t i = 0; text && i < GV_ARRAY_LEN(libs) && !hit; i++)
		hit = strstr(text, libs[i]) != NULL;
	free(text);
	return hit;
}

/* ---- plans ---- */

/* A resolved collection. */
struct vtarget {
	char *key;		       /* owned: "<group>/<version>/<resource>" */
	char *api_version;	       /* owned: "v1", "apps/v1" */
	char *group, *resource, *kind; /* owned */
	bool namespaced;
	size_t *pols; /* owned: indices into plan->pols */
	size_t npols;
};

struct vplan_pol {
	const struct vpol_policy *p;
	bool complete;
};

struct vpscan_plan {
	struct vplan_pol *pols; /* owned */
	size_t npols;
	struct vtarget *t; /* owned, sorted by key */
	size_t nt;
};

/* Discovery documents fetched while a plan is made: {"<group>/<version>" or "<group>": doc}. */
struct disc {
	struct kube_client *c;
	json_t *docs;
};

static const json_t *disc_get(struct disc *d, const char *path)
{
	const json_t *v = json_object_get(d->docs, path);
	struct kube_status st = {0};
	struct gv_err err = {0};
	json_t *out = NULL;

	if (v)
		return json_is_null(v) ? NULL : v;
	if (kube_request(d->c, "GET", path, NULL, &out, &st, &err)) {
		gv_debug("background: %s: %s (not served: its CEL policy targets are skipped)",
			 path, err.msg);
		json_decref(out);
		out = json_null();
	}
	json_object_set_new(d->docs, path, out ? out : json_null());
	return json_is_null(out) ? NULL : out;
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The version a "*" apiVersions entry means: the group's preferred one (v1 for the core group). */
static char *preferred_version(struct disc *d, const char *group)
{
	char *path;
	const json_t *doc;
	const char *v;

	if (!*group)
		return gv_xstrdup("v1");
	path = gv_xasprintf("/apis/%s", group);
	doc = disc_get(d, path);
	free(path);
	v = jstr(json_object_get(doc, "preferredVersion"), "version");
	return v ? gv_xstrdup(v) : NULL;
}

static struct vtarget *plan_target(struct vpscan_plan *plan, struct disc *d, const char *group,
				   const char *version, const char *resource, bool *ok)
{
	char *path =
	    *group ? gv_xasprintf("/apis/%s/%s", group, version) : gv_xasprintf("/api/%s", version);
	char *key = gv_xasprintf("%s/%s/%s", group, version, resource);
	const json_t *doc = disc_get(d, path), *r;
	const json_t *found = NULL;
	size_t i;

	free(path);
	for (i = 0; i < plan->nt; i++) {
		if (!strcmp(plan->t[i].key, key)) {
			free(key);
			return &plan->t[i];
		}
	}
	json_array_foreach(json_object_get(doc, "resources"), i, r)
	{
		if (jstr(r, "name") && !strcmp(jstr(r, "name"), resource))
			found = r;
	}
	if (!found) {
		/* not served: quietly empty (a Kubernetes without that API) */
		gv_debug("background: %s is not served: CEL policies listing it skip it", key);
		free(key);
		if (!doc)
			*ok = false;
		return NULL;
	}
	plan->t = gv_xrealloc(plan->t, (plan->nt + 1) * sizeof(*plan->t));
	memset(&plan->t[plan->nt], 0, sizeof(plan->t[0]));
	plan->t[plan->nt].key = key;
	plan->t[plan->nt].group = gv_xstrdup(group);
	plan->t[plan->nt].api_version =
	    *group ? gv_xasprintf("%s/%s", group, version) : gv_xstrdup(version);
	plan->t[plan->nt].resource = gv_xstrdup(resource);
	plan->t[plan->nt].kind = gv_xstrdup(jstr(found, "kind") ? jstr(found, "kind") : "");
	plan->t[plan->nt].namespaced = json_is_true(json_object_get(found, "namespaced"));
	return &plan->t[plan->nt++];
}

static void target_add_pol(struct vtarget *t, size_t pi)
{
	for (size_t i = 0; i < t->npols; i++)
		if (t->pols[i] == pi)
			return;
	t->pols = gv_xrealloc(t->pols, (t->npols + 1) * sizeof(*t->pols));
	t->pols[t->npols++] = pi;
}

static bool str_in(const json_t *arr, const char *s)
{
	size_t i;
	const json_t *v;

	json_array_foreach(arr, i, v)
	{
		if (json_string_value(v) && !strcmp(json_string_value(v), s))
			return true;
	}
	return false;
}

static bool only(const json_t *arr, const char *s)
{
	return json_array_size(arr) == 1 && str_in(arr, s);
}

/* The autogen conditions of section 2.7: one plain pod rule. */
static bool pod_autogen(const json_t *spec)
{
	const json_t *mc = json_object_get(spec, "matchConstraints");
	const json_t *rr = json_object_get(mc, "resourceRules"), *r = json_array_get(rr, 0);

	return json_array_size(rr) == 1 && only(json_object_get(r, "apiGroups"), "") &&
	       only(json_object_get(r, "apiVersions"), "v1") &&
	       only(json_object_get(r, "resources"), "pods") &&
	       !json_array_size(json_object_get(r, "resourceNames")) &&
	       !json_array_size(json_object_get(mc, "excludeResourceRules")) &&
	       !json_object_size(
		   json_object_get(json_object_get(mc, "objectSelector"), "matchLabels")) &&
	       !json_array_size(
		   json_object_get(json_object_get(mc, "objectSelector"), "matchExpressions"));
}

static void plan_policy(struct vpscan_plan *plan, struct disc *d, size_t pi)
{
	struct vplan_pol *pp = &plan->pols[pi];
	const json_t *spec = json_object_get(vpol_doc(pp->p), "spec");
	const json_t *rules =
	    json_object_get(json_object_get(spec, "matchConstraints"), "resourceRules");
	size_t i, j, k, l;
	const json_t *r, *g, *v, *res;

	pp->complete = true;
	json_array_foreach(rules, i, r)
	{
		json_array_foreach(json_object_get(r, "apiGroups"), j, g)
		{
			const char *group = json_string_value(g);
			if (!group || !strcmp(group, "*")) {
				pp->complete = false;
				continue;
			}
			json_array_foreach(json_object_get(r, "apiVersions"), k, v)
			{
				const char *ver = json_string_value(v);
				char *version;
				if (!ver) {
					pp->complete = false;
					continue;
				}
				version = !strcmp(ver, "*") ? preferred_version(d, group)
							    : gv_xstrdup(ver);
				if (!version) {
					pp->complete = false;
					continue;
				}
				json_array_foreach(json_object_get(r, "resources"), l, res)
				{
					const char *rs = json_string_value(res);
					struct vtarget *t;
					bool ok = true;
					if (!rs || strchr(rs, '/') || strchr(rs, '*')) {
						pp->complete = false;
						continue;
					}
					t = plan_target(plan, d, group, version, rs, &ok);
					if (t)
						target_add_pol(t, pi);
					pp->complete &= ok;
				}
				free(version);
			}
		}
	}
	if (vpol_kind(pp->p) != VPOL_VAP && pod_autogen(spec)) {
		static const char *const ctl[][3] = {
		    {"apps", "v1", "daemonsets"},  {"apps", "v1", "deployments"},
		    {"apps", "v1", "replicasets"}, {"apps", "v1", "statefulsets"},
		    {"batch", "v1", "jobs"},	   {"batch", "v1", "cronjobs"}};
		const json_t *want = json_object_get(
		    json_object_get(json_object_get(spec, "autogen"), "podControllers"),
		    "controllers");

		for (i = 0; i < GV_ARRAY_LEN(ctl); i++) {
			struct vtarget *t;
			bool ok = true;
			if (json_is_array(want) && !str_in(want, ctl[i][2]))
				continue;
			t = plan_target(plan, d, ctl[i][0], ctl[i][1], ctl[i][2], &ok);
			if (t)
				target_add_pol(t, pi);
			pp->complete &= ok;
		}
	}
}

static int target_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vtarget *)a)->key, ((const struct vtarget *)b)->key);
}

struct vpscan_plan *vpscan_plan_new(struct kube_client *client,
				    const struct vpol_policy *const *pols, size_t n)
{
	struct vpscan_plan *plan = gv_xcalloc(1, sizeof(*plan));
	struct disc d = {client, json_object()};

	plan->pols = gv_xcalloc(n + 1, sizeof(*plan->pols));
	plan->npols = n;
	for (size_t i = 0; i < n; i++)
		plan->pols[i].p = pols[i];
	for (size_t i = 0; i < n; i++)
		plan_policy(plan, &d, i);
	if (plan->nt)
		qsort(plan->t, plan->nt, sizeof(*plan->t), target_cmp);
	json_decref(d.docs);
	return plan;
}

void vpscan_plan_free(struct vpscan_plan *plan)
{
	if (!plan)
		return;
	for (size_t i = 0; i < plan->nt; i++) {
		free(plan->t[i].key);
		free(plan->t[i].api_version);
		free(plan->t[i].group);
		free(plan->t[i].resource);
		free(plan->t[i].kind);
		free(plan->t[i].pols);
	}
	free(plan->t);
	free(plan->pols);
	free(plan);
}

/* ---- one namespace ---- */

/* Per due policy: its index in the plan, ref, and the uids it evaluated. */
struct vdue {
	size_t pi;
	char *ref;
	json_t *uids; /* owned: the uids evaluated */
	bool complete;
};

static bool scored(const struct vpol_policy *p)
{
	const char *s = vpol_annotation(p, "policies.kyverno.io/scored");

	return !(s && !strcmp(s, "false"));
}

static json_t *namespace_object(const struct view_state *st, const char *ns)
{
	const json_t *labels;

	if (!ns || !*ns)
		return NULL;
	labels = view_state_namespace_labels(st, ns);
	return json_pack("{s:s, s:s, s:{s:s, s:o}}", "apiVersion", "v1", "kind", "Namespace",
			 "metadata", "name", ns, "labels",
			 json_is_object(labels) ? json_incref((json_t *)labels) : json_object());
}

/* Whether p carries label REPORT_LABEL_DISABLED (report.h). */
static bool vpscan_disabled(const struct vpol_policy *p)
{
	const json_t *labels = json_object_get(json_object_get(vpol_doc(p), "metadata"), "labels");

	return json_object_get(labels, REPORT_LABEL_DISABLED) != NULL;
}

/* Evaluates one object for one policy and replaces its results. */
static void eval_one(const struct vpscan_args *a, const struct vtarget *t, struct vdue *vd,
		     const struct vpol_policy *p, const json_t *obj, struct vpol_input *in,
		     struct view_cel_host *host, const json_t *vapu, struct vpscan_stats *stats)
{
	struct report_resource res;
	struct vpol_report rep = {0};
	struct gv_err err = {0};
	struct report_entry *e = NULL;
	size_t n = 0, cap = 0;
	struct timespec now;
	const char *src = vpscan_source(p);
	bool sc = scored(p);

	if (report_resource_from_object(obj, &res, &err))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	in->object = obj;
	/* cel-semantics.md section 5: a VAP's background user */
	in->user_info = vpol_kind(p) == VPOL_VAP ? vapu : NULL;
	host->policy_ns = vpol_namespace(p);
	if (vpol_evaluate(p, in, &rep, &err)) {
		gv_warn("background: %s %s: %s %s/%s not evaluated: %s", vpol_kind_name(p), vd->ref,
			t->kind, res.namespace ? res.namespace : "", res.name, err.msg);
		return;
	}
	stats->evaluated++;
	for (size_t r = 0; r < rep.n; r++) {
		for (size_t j = 0; j < rep.v[r].n; j++) {
			const struct vpol_rule_result *rr = &rep.v[r].rules[j];
			bool dup = false;
			/* match-condition skips are not reported in background (section 2.6) */
			if (rr->status == ENGINE_SKIP && !*rr->rule)
				continue;
			for (size_t k = 0; k < n && !dup; k++)
				dup = !strcmp(e[k].rule, rr->rule);
			if (dup)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 4;
				e = gv_xrealloc(e, cap * sizeof(*e));
			}
			memset(&e[n], 0, sizeof(e[n]));
			e[n].policy = vd->ref;
			e[n].rule = rr->rule;
			e[n].result = !sc && rr->status == ENGINE_FAIL ? ENGINE_WARN : rr->status;
			e[n].message = rr->message;
			e[n].severity = vpol_annotation(p, "policies.kyverno.io/severity");
			e[n].category = vpol_annotation(p, "policies.kyverno.io/category");
			e[n].scored = sc;
			e[n].seconds = (int64_t)now.tv_sec;
			e[n].nanos = (int32_t)now.tv_nsec;
			e[n].process = REPORT_BACKGROUND_SCAN;
			e[n].source = src;
			e[n].properties = rr->properties;
			n++;
			if (a->results) {
				/* a background scan evaluates as a CREATE (section 6.5) */
				struct view_result_labels ml = {
				    .resource_kind = t->kind,
				    .resource_namespace = a->ns,
				    .resource_request_operation = "create",
				    .rule_name = rr->rule,
				    .rule_result = engine_status_name(rr->status),
				    .rule_execution_cause = "background_scan"};
				view_result_labels_vpol(&ml, p);
				view_result_count(a->results, &ml);
			}
		}
	}
	if (vpscan_disabled(p))
		n = 0; /* reports.kyverno.io/disabled: evaluated and counted, never reported */
	if (report_replace(a->rs, &res, vd->ref, e, n, &err))
		gv_warn("background: %s %s: %s", vpol_kind_name(p), vd->ref, err.msg);
	stats->results += n;
	free(e);
	vpol_report_release(&rep);
}

/* Whether policy p looks at namespace ns ("" = cluster-scoped) through target t. */
static bool pol_in(const struct vpol_policy *p, const struct vtarget *t, const char *ns)
{
	if (t->namespaced != (*ns != '\0'))
		return false;
	return vpol_kind(p) != VPOL_NAMESPACED || !strcmp(vpol_namespace(p), ns);
}

static void digest_add(EVP_MD_CTX *ctx, const char *key, const json_t *md)
{
	const char *parts[3] = {key, jstr(md, "uid"), jstr(md, "resourceVersion")};

	for (int i = 0; i < 3; i++) {
		const char *s = parts[i] ? parts[i] : "";
		EVP_DigestUpdate(ctx, s, strlen(s) + 1);
	}
}

enum gv_code vpscan_namespace(const struct vpscan_plan *plan, const struct vpscan_args *a,
			      struct vpscan_stats *stats, struct gv_err *err)
{
	struct vdue *vd = gv_xcalloc(a->ndue + 1, sizeof(*vd));
	const struct view_config *cfg = view_state_config(a->state);
	struct view_vpolset *set = view_state_vpols(a->state);
	struct vpol_exception **xs;
	size_t nx = 0;
	json_t *nso = namespace_object(a->state, a->ns);
	/* the user a ValidatingAdmissionPolicy sees in background (section 5) */
	json_t *vapu =
	    json_pack("{s:s, s:s, s:[s]}", "username", "system:kyverno:background-scan", "uid",
		      "system:kyverno:background-scan", "groups", "system:kyverno:background-scan");
	struct vpol_input in = {0};
	/* Kyverno's CEL libraries through the context loader, as at admission */
	const struct engine_hooks *hooks =
	    a->context && !a->metadata_only ? a->context->open(a->context->ud, NULL, -1) : NULL;
	struct view_cel_host host;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool lost = !ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	enum gv_code rc = GV_OK;
	int limit = a->batch_size > 0 ? a->batch_size : SCAN_DEFAULT_BATCH;

	memset(stats, 0, sizeof(*stats));
	view_vpolset_exceptions(set, &nx);
	xs = gv_xcalloc(nx + 1, sizeof(*xs));
	nx = view_vpolset_exceptions_at(set, (int64_t)time(NULL), xs);
	in.operation = "CREATE";
	in.namespace_object = nso;
	in.exceptions = xs;
	in.nexceptions = nx;
	in.user_info = NULL;
	in.bindings = view_vpolset_bindings(set, &in.nbindings);
	in.hooks = hooks; /* the bindings' paramRef objects, from the cluster */
	view_cel_host_init(&host, hooks, "gavel background scans");
	in.host = &host.host;
	for (size_t i = 0; i < a->ndue; i++) {
		vd[i].pi = plan->npols;
		for (size_t k = 0; k < plan->npols; k++)
			if (plan->pols[k].p == a->due[i])
				vd[i].pi = k;
		vd[i].ref = vpscan_policy_ref(a->due[i]);
		vd[i].uids = json_array();
		vd[i].complete = vd[i].pi < plan->npols && plan->pols[vd[i].pi].complete;
	}
	for (size_t ti = 0; ti < plan->nt && !rc; ti++) {
		const struct vtarget *t = &plan->t[ti];
		size_t *which = gv_xcalloc(t->npols + 1, sizeof(*which)), nw = 0;
		struct kube_list_options lo = {
		    .limit = limit, .metadata = a->metadata_only, .max_restarts = -1};
		struct kube_resource kr = {
		    .group = t->group, .resource = t->resource, .namespaced = t->namespaced};
		struct kube_pager *pg;
		struct kube_page *page;
		char *coll;

		if (*a->ns && !strcmp(a->ns, a->self)) {
			free(which);
			break; /* gavel's namespace is never scanned */
		}
		for (size_t k = 0; k < a->ndue; k++) {
			bool has = false;
			for (size_t j = 0; j < t->npols && !has; j++)
				has = t->pols[j] == vd[k].pi;
			if (has && pol_in(a->due[k], t, a->ns))
				which[nw++] = k;
		}
		if (!nw) {
			free(which);
			continue;
		}
		{
			/* kube_path reads group, version, resource */
			char *ver = strchr(t->api_version, '/');
			kr.version = ver ? ver + 1 : t->api_version;
		}
		coll = kube_path(&kr, *a->ns ? a->ns : NULL, NULL);
		pg = kube_pager_new(a->client, coll, &lo);
		for (;;) {
			struct kube_status st = {0};
			struct gv_err e = {0};
			const json_t *item;
			size_t k;

			if (kube_pager_next(pg, &page, &st, &e)) {
				if (st.http == 403 || st.http == 404) {
					gv_debug("background: %s: %s (skipped)", coll, e.msg);
					if (st.http == 403) {
						stats->forbidden = true;
						for (size_t w = 0; w < nw; w++)
							vd[which[w]].complete = false;
					}
				} else {
					rc =
					    gv_err_set(err, GV_ENET, "listing %s: %s", coll, e.msg);
				}
				lost = true;
				break;
			}
			if (!page)
				break;
			if (page->restarted)
				lost = true;
			json_array_foreach(json_object_get(page->list, "items"), k, item)
			{
				const json_t *md = json_object_get(item, "metadata");
				const char *ons = jstr(md, "namespace"), *name = jstr(md, "name");
				stats->listed++;
				if (!lost)
					digest_add(ctx, t->key, md);
				if (a->metadata_only)
					continue;
				if (!jstr(md, "uid") || (ons && !strcmp(ons, a->self)) ||
				    view_config_filtered(cfg, t->group, kr.version, t->kind, "",
							 ons ? ons : "", name ? name : "")) {
					stats->filtered++;
					continue;
				}
				in.resource = t->resource;
				for (size_t w = 0; w < nw; w++) {
					struct vdue *d = &vd[which[w]];
					eval_one(a, t, d, a->due[which[w]], item, &in, &host, vapu,
						 stats);
					json_array_append_new(d->uids,
							      json_string(jstr(md, "uid")));
				}
			}
		}
		stats->requests += kube_pager_requests(pg);
		kube_pager_free(pg);
		free(coll);
		free(which);
	}
	for (size_t k = 0; k < a->ndue && !a->metadata_only && !rc; k++) {
		/* a complete listing: results about objects not seen are stale */
		size_t n = json_array_size(vd[k].uids);
		const char **uids;
		if (!vd[k].complete || (*a->ns && !strcmp(a->ns, a->self)))
			continue;
		uids = gv_xcalloc(n + 1, sizeof(*uids));
		for (size_t i = 0; i < n; i++)
			uids[i] = json_string_value(json_array_get(vd[k].uids, i));
		report_retain_since(a->rs, vd[k].ref, uids, n, a->since);
		free(uids);
	}
	if (lost || rc) {
		stats->inputs[0] = '\0';
		EVP_MD_CTX_free(ctx);
	} else {
		unsigned char md[EVP_MAX_MD_SIZE];
		unsigned int n = 0;

		if (EVP_DigestFinal_ex(ctx, md, &n) && n == 32)
			gv_sha256_text(md, stats->inputs);
		EVP_MD_CTX_free(ctx);
	}
	json_decref(nso);
	json_decref(vapu);
	view_cel_host_release(&host);
	if (hooks)
		a->context->close(a->context->ud, hooks);
	for (size_t i = 0; i < a->ndue; i++) {
		free(vd[i].ref);
		json_decref(vd[i].uids);
	}
	free(vd);
	free(xs);
	return rc;
}

size_t vpscan_prune(struct report_set *rs, const struct view_state *st)
{
	struct view_vpolset *vs = view_state_vpols(st);
	size_t n = view_vpolset_count(vs), hits;
	struct report_live *live = gv_xcalloc(n + 1, sizeof(*live));
	char **refs = gv_xcalloc(n + 1, sizeof(*refs));

	for (size_t i = 0; i < n; i++) {
		const struct vpol_policy *p = view_vpolset_policy(vs, i);

		refs[i] = vpscan_policy_ref(p);
		live[i].ref = refs[i];
		live[i].source = vpscan_source(p);
		live[i].background = vpscan_background(p);
	}
	hits = report_prune_live(rs, view_state_policyset(st), live, n);
	for (size_t i = 0; i < n; i++)
		free(refs[i]);
	free(refs);
	free(live);
	return hits;
}
